// Activation checkpointing (torch.utils.checkpoint around each repeated block, as HF's
// gradient_checkpointing_enable and FSDP's apply_activation_checkpointing use it): a block keeps
// only its input after forward, and at the start of its backward runs its forward again,
// which saves the block's activations anew for its backward.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/knobs.h"
#include "core/trace.h"

namespace redsim {

// The repeated block a layer belongs to: its name up to and including its first all-digit
// component ("model.layers.7.mlp.up_proj" -> "model.layers.7"); "" for a layer outside blocks.
std::string block_of_layer_name(const std::string& name);

struct CheckpointBlock {
  std::string name;                  // the common prefix, e.g. "model.layers.7"
  std::size_t first_layer = 0, last_layer = 0;  // consecutive trace layers, forward order
  std::int64_t input_bytes = 0;      // kept from forward to backward: its first layer's input
  std::int64_t recompute_bytes = 0;  // what the recompute adds to what is held (its input is held already)
  double forward_s = 0;              // its layers' forward, on the trace's reference device
};

struct Checkpointing {
  std::vector<CheckpointBlock> blocks;
  std::vector<int> block_of_layer;   // per trace layer: its block, or -1 for a layer not checkpointed
  bool on() const { return !blocks.empty(); }
  // The block whose last layer is l (its recompute runs right before l's backward), or nullptr.
  const CheckpointBlock* block_ending_at(std::size_t l) const;
  // What layer l's forward adds to the activations held (its backward frees as much): a
  // checkpointed block's first layer its input, its other layers nothing.
  std::int64_t forward_held_bytes(const ModelTrace& trace, std::size_t l) const;
  // What layer l's backward frees of what was held (block layers: their recomputed activations,
  // the block's first layer its input too).
  std::int64_t backward_freed_bytes(const ModelTrace& trace, std::size_t l) const;
};

// The blocks of `trace` for the knob: a block is a run of consecutive layers whose names agree up
// to and including their first all-digit component ("model.layers.7.mlp.up_proj" ->
// "model.layers.7", "layer1.0.conv1" -> "layer1.0"); a layer without one is not checkpointed.
// Empty for ActivationCheckpointing::none. `first_blocks` > 0 checkpoints only the first that
// many blocks (Megatron's --recompute-method block); 0 all. Throws InputError (exit 2) when the
// trace lacks activation_bytes or input_bytes, names no block, or fewer than first_blocks.
Checkpointing checkpoint_blocks(const ModelTrace& trace, ActivationCheckpointing mode, int first_blocks = 0);
// The knobs' activation_checkpointing and checkpointed_blocks.
Checkpointing checkpoint_blocks(const ModelTrace& trace, const Knobs& knobs);

// Whether any layer of the trace belongs to a repeated block.
bool names_blocks(const ModelTrace& trace);

// Whether checkpoint_blocks(trace, blocks) would succeed: the trace gives activation_bytes and
// input_bytes and names at least one block.
bool can_checkpoint(const ModelTrace& trace);

// The most activation bytes held at once in one forward and backward: the layers' sum without
// checkpointing; with it, the most over backward of the outer layers' activations and the
// earlier blocks' inputs held while a block's recomputed activations are live.
std::int64_t activation_peak_bytes(const ModelTrace& trace, const Checkpointing& ckpt);

}  // namespace redsim
