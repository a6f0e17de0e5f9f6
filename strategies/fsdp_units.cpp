#include "strategies/fsdp_units.h"

#include <map>

#include "strategies/checkpointing.h"

namespace redsim {

std::int64_t FsdpUnit::param_bytes() const {
  std::int64_t b = 0;
  for (const auto& f : flats) b += f.padded_numel * dtype_size_bytes(f.dtype);
  return b;
}

std::int64_t FsdpUnit::grad_bytes() const {
  std::int64_t b = 0;
  for (const auto& f : flats) b += f.padded_grad_numel * dtype_size_bytes(f.dtype);
  return b;
}

namespace {

std::int64_t round_up(std::int64_t x, int multiple) { return (x + multiple - 1) / multiple * multiple; }

// Parameters of each layer, registration order, excluded ones (model-parallel) left out: FSDP
// ignores them (ignored_modules) and they stay whole on every rank.
std::vector<std::vector<std::size_t>> params_by_layer(const ModelTrace& trace) {
  std::vector<std::vector<std::size_t>> by_layer(trace.layers.size());
  for (std::size_t i = 0; i < trace.params.size(); ++i)
    if (!trace.params[i].excluded) by_layer[trace.params[i].layer].push_back(i);
  return by_layer;
}

void finish_unit(const ModelTrace& trace, const std::vector<std::vector<std::size_t>>& by_layer, FsdpUnit& unit,
                 int group) {
  std::map<DType, FlatParam> by_dtype;
  for (auto l : unit.layers)
    for (auto i : by_layer[l]) {
      const auto& p = trace.params[i];
      auto& f = by_dtype[p.dtype];
      f.dtype = p.dtype;
      f.params.push_back(i);
      f.numel += p.numel;
      if (p.reduced()) {
        f.grad_params.push_back(i);
        f.grad_numel += p.numel;
      }
    }
  for (auto& [dtype, f] : by_dtype) {
    f.padded_numel = round_up(f.numel, group);
    f.padded_grad_numel = round_up(f.grad_numel, group);
    unit.flats.push_back(std::move(f));
  }
}

}  // namespace

std::vector<FsdpUnit> fsdp_units(const ModelTrace& trace, std::int64_t wrap_elems, int group) {
  const auto by_layer = params_by_layer(trace);
  std::vector<FsdpUnit> units;
  FsdpUnit cur;
  std::int64_t cur_elems = 0;
  for (std::size_t l = 0; l < trace.layers.size(); ++l) {
    cur.layers.push_back(l);
    for (auto i : by_layer[l]) cur_elems += trace.params[i].numel;
    if (cur_elems >= wrap_elems) {  // wrap_elems 0: every layer closes its unit
      finish_unit(trace, by_layer, cur, group);
      units.push_back(std::move(cur));
      cur = FsdpUnit{};
      cur_elems = 0;
    }
  }
  if (!cur.layers.empty()) {
    finish_unit(trace, by_layer, cur, group);
    units.push_back(std::move(cur));
  }
  return units;
}

std::vector<FsdpUnit> fsdp_block_units(const ModelTrace& trace, int group) {
  const auto by_layer = params_by_layer(trace);
  std::vector<FsdpUnit> units;
  std::string open;
  for (std::size_t l = 0; l < trace.layers.size(); ++l) {
    std::string block = block_of_layer_name(trace.layers[l].name);
    if (units.empty() || block != open) units.emplace_back();
    units.back().layers.push_back(l);
    open = std::move(block);
  }
  for (auto& u : units) finish_unit(trace, by_layer, u, group);
  return units;
}

}  // namespace redsim
