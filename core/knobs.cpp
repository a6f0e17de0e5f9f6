#include "core/knobs.h"

namespace redsim {

std::string_view averaging_name(Averaging a) {
  switch (a) {
    case Averaging::flat: return "flat";
    case Averaging::bucketed: return "bucketed";
    case Averaging::per_param: return "per-param";
  }
  return "flat";
}

std::optional<Averaging> parse_averaging(std::string_view name) {
  for (auto a : {Averaging::flat, Averaging::bucketed, Averaging::per_param})
    if (averaging_name(a) == name) return a;
  return std::nullopt;
}

std::string_view bucket_order_name(BucketOrder o) {
  return o == BucketOrder::definition ? "definition" : "execution";
}

std::string_view backward_prefetch_name(BackwardPrefetch p) {
  switch (p) {
    case BackwardPrefetch::backward_pre:
      return "backward_pre";
    case BackwardPrefetch::backward_post:
      return "backward_post";
    case BackwardPrefetch::none:
      return "none";
  }
  return "?";
}

std::optional<BackwardPrefetch> parse_backward_prefetch(std::string_view name) {
  for (auto p : {BackwardPrefetch::backward_pre, BackwardPrefetch::backward_post, BackwardPrefetch::none})
    if (backward_prefetch_name(p) == name) return p;
  return std::nullopt;
}

std::string_view comm_hook_name(CommHook h) {
  switch (h) {
    case CommHook::none:
      return "none";
    case CommHook::fp16:
      return "fp16";
    case CommHook::bf16:
      return "bf16";
    case CommHook::powersgd:
      return "powersgd";
  }
  return "?";
}

std::optional<CommHook> parse_comm_hook(std::string_view name) {
  for (auto h : {CommHook::none, CommHook::fp16, CommHook::bf16, CommHook::powersgd})
    if (comm_hook_name(h) == name) return h;
  return std::nullopt;
}

std::string_view activation_checkpointing_name(ActivationCheckpointing c) {
  return c == ActivationCheckpointing::blocks ? "blocks" : "none";
}

std::optional<ActivationCheckpointing> parse_activation_checkpointing(std::string_view name) {
  for (auto c : {ActivationCheckpointing::none, ActivationCheckpointing::blocks})
    if (activation_checkpointing_name(c) == name) return c;
  return std::nullopt;
}

std::string_view zero_impl_name(ZeroImpl z) { return z == ZeroImpl::pytorch ? "pytorch" : "deepspeed"; }

std::optional<ZeroImpl> parse_zero_impl(std::string_view name) {
  for (auto z : {ZeroImpl::deepspeed, ZeroImpl::pytorch})
    if (zero_impl_name(z) == name) return z;
  return std::nullopt;
}

std::string_view optimizer_impl_name(OptimizerImpl o) {
  switch (o) {
    case OptimizerImpl::automatic: return "auto";
    case OptimizerImpl::for_loop: return "for-loop";
    case OptimizerImpl::foreach: return "foreach";
    case OptimizerImpl::fused: return "fused";
  }
  return "auto";
}

std::optional<OptimizerImpl> parse_optimizer_impl(std::string_view name) {
  for (auto o : {OptimizerImpl::automatic, OptimizerImpl::for_loop, OptimizerImpl::foreach, OptimizerImpl::fused})
    if (optimizer_impl_name(o) == name) return o;
  return std::nullopt;
}

}  // namespace redsim
