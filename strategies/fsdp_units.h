// FSDP's units and flat parameters (torch.distributed.fsdp): the model is wrapped into units of
// consecutive layers; each unit's parameters of one dtype are flattened into a FlatParameter,
// padded to a multiple of the shard group's size, and every rank of the group owns an equal,
// contiguous 1/G of it.
#pragma once
#include <cstdint>
#include <vector>

#include "core/trace.h"

namespace redsim {

struct FlatParam {
  DType dtype = DType::fp32;
  std::vector<std::size_t> params;       // gathered: every parameter not excluded (frozen ones too)
  std::vector<std::size_t> grad_params;  // reduce-scattered: the reduced parameters among them
  std::int64_t numel = 0;                // before padding
  std::int64_t grad_numel = 0;
  std::int64_t padded_numel = 0;         // numel rounded up to the shard group (FSDP pads the FlatParameter)
  std::int64_t padded_grad_numel = 0;
};

struct FsdpUnit {
  std::vector<std::size_t> layers;  // consecutive, forward order
  std::vector<FlatParam> flats;     // one per dtype; empty for a unit without parameters
  std::int64_t param_bytes() const;  // unsharded, padded
  std::int64_t grad_bytes() const;
};

// Units in forward order. wrap_elems 0: one unit per trace layer. Otherwise consecutive layers
// are accumulated until their parameters reach wrap_elems elements, as
// size_based_auto_wrap_policy(min_num_params) wraps the modules it walks; the rest closes the
// last unit (FSDP's root). Padding is to a multiple of `group` ranks.
std::vector<FsdpUnit> fsdp_units(const ModelTrace& trace, std::int64_t wrap_elems, int group);
// Units per repeated block (a run of layers of one block, checkpointing.h), as ModuleWrapPolicy
// on the block class wraps them; each run of layers outside blocks is a unit too (FSDP's root
// holds them: the embedding before the blocks, the final norm and head after them).
std::vector<FsdpUnit> fsdp_block_units(const ModelTrace& trace, int group);

}  // namespace redsim
