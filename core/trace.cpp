#include "core/trace.h"

#include <algorithm>

namespace redsim {

std::int64_t ModelTrace::param_count() const {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel;
  return n;
}

std::int64_t ModelTrace::reduced_bytes() const {
  std::int64_t n = 0;
  for (const auto& p : params)
    if (p.reduced()) n += p.bytes();
  return n;
}

std::optional<std::int64_t> ModelTrace::activation_bytes() const {
  if (layers.empty() || !layers.front().activation_bytes) return std::nullopt;
  std::int64_t n = 0;
  for (const auto& l : layers) n += l.activation_bytes.value_or(0);
  return n;
}

std::vector<std::size_t> derive_grad_ready_order(const ModelTrace& trace) {
  std::vector<std::vector<std::size_t>> by_layer(trace.layers.size());
  for (std::size_t i = 0; i < trace.params.size(); ++i)
    if (trace.params[i].trainable) by_layer[trace.params[i].layer].push_back(i);
  std::vector<std::size_t> order;
  for (std::size_t l = trace.layers.size(); l-- > 0;)
    for (auto it = by_layer[l].rbegin(); it != by_layer[l].rend(); ++it) order.push_back(*it);
  return order;
}

}  // namespace redsim
