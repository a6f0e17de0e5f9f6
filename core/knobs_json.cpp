#include "core/knobs_json.h"

#include "core/json_in.h"
#include "core/nccl_list.h"

namespace redsim {
namespace {

// "auto", one name or an NCCL list (core/nccl_list.h).
void parse_algorithm_knob(const JsonIn& v, Knobs& k) {
  std::string why;
  if (!parse_algorithm_setting(v.string(), &k.algorithm, &k.algorithm_list, &why)) v.fail("an algorithm: " + why);
}

void parse_protocol_knob(const JsonIn& v, Knobs& k) {
  std::string why;
  if (!parse_protocol_setting(v.string(), &k.protocol, &k.protocol_list, &why)) v.fail("a protocol: " + why);
}

// The fsdp/hsdp and DDP comm-hook members (apart to keep knobs_from_json short).
Knobs sharding_and_hook_knobs(const JsonIn& j, Knobs k) {
  if (auto v = j.find("fsdp_wrap_elems")) k.fsdp_wrap_elems = v->nonnegative_integer();
  if (auto v = j.find("fsdp_wrap_blocks")) k.fsdp_wrap_blocks = v->boolean();
  if (auto v = j.find("reshard_after_forward")) k.reshard_after_forward = v->boolean();
  if (auto v = j.find("backward_prefetch"))
    k.backward_prefetch = *parse_backward_prefetch(v->one_of({"backward_pre", "backward_post", "none"}));
  if (auto v = j.find("forward_prefetch")) k.forward_prefetch = v->boolean();
  if (auto v = j.find("shard_group")) {
    auto g = v->nonnegative_integer();
    if (g > 1'000'000) v->fail("a shard group size from 1 to 1,000,000 ranks, or 0 (a node)");
    k.shard_group = static_cast<int>(g);
  }
  if (auto v = j.find("comm_hook")) k.comm_hook = *parse_comm_hook(v->one_of({"none", "fp16", "bf16", "powersgd"}));
  if (auto v = j.find("powersgd_rank")) {
    auto r = v->positive_integer();
    if (r > 1024) v->fail("a PowerSGD rank from 1 to 1024");
    k.powersgd_rank = static_cast<int>(r);
  }
  if (auto v = j.find("powersgd_start_iter")) {
    auto it = v->nonnegative_integer();
    if (it > 1'000'000'000) v->fail("an iteration from 0 to 1e9");
    k.powersgd_start_iter = static_cast<int>(it);
  }
  if (auto v = j.find("activation_checkpointing"))
    k.activation_checkpointing = *parse_activation_checkpointing(v->one_of({"none", "blocks"}));
  if (auto v = j.find("checkpointed_blocks")) {
    const auto n = v->nonnegative_integer();
    if (n > 1'000'000) v->fail("a block count from 0 (all) to 1,000,000");
    k.checkpointed_blocks = static_cast<int>(n);
  }
  if (auto v = j.find("optimizer_impl"))
    k.optimizer_impl = *parse_optimizer_impl(v->one_of({"auto", "for-loop", "foreach", "fused"}));
  return k;
}

}  // namespace

json knobs_to_json(const Knobs& k) {
  json j;
  j["strategy"] = k.strategy;
  j["bucket_cap_bytes"] = k.bucket_cap_bytes;
  j["first_bucket_cap_bytes"] = k.first_bucket_cap_bytes;
  j["bucket_order"] = bucket_order_name(k.bucket_order);
  j["channels"] = k.channels > 0 ? json(k.channels) : json("auto");
  j["algorithm"] = requested_algorithm(collective_request(k));
  j["protocol"] = requested_protocol(collective_request(k));
  j["wire_dtype"] = k.wire_dtype ? json(dtype_name(*k.wire_dtype)) : json(nullptr);
  j["reduce_op"] = reduce_op_name(k.reduce_op);
  j["broadcast_buffers"] = k.broadcast_buffers;
  j["zero_stage"] = k.zero_stage;
  j["allgather_bucket_bytes"] = k.allgather_bucket_bytes;
  j["overlap_comm"] = k.overlap_comm;
  j["zero_impl"] = zero_impl_name(k.zero_impl);
  j["microbatches"] = k.microbatches;
  j["sync_every_microbatch"] = k.sync_every_microbatch;
  j["localsgd_period"] = k.localsgd_period;
  j["localsgd_averaging"] = averaging_name(k.localsgd_averaging);
  j["fsdp_wrap_elems"] = k.fsdp_wrap_elems;
  j["fsdp_wrap_blocks"] = k.fsdp_wrap_blocks;
  j["reshard_after_forward"] = k.reshard_after_forward;
  j["backward_prefetch"] = backward_prefetch_name(k.backward_prefetch);
  j["forward_prefetch"] = k.forward_prefetch;
  j["shard_group"] = k.shard_group;
  j["comm_hook"] = comm_hook_name(k.comm_hook);
  j["powersgd_rank"] = k.powersgd_rank;
  j["powersgd_start_iter"] = k.powersgd_start_iter;
  j["activation_checkpointing"] = activation_checkpointing_name(k.activation_checkpointing);
  j["checkpointed_blocks"] = k.checkpointed_blocks;
  j["optimizer_impl"] = optimizer_impl_name(k.optimizer_impl);
  return j;
}

Knobs knobs_from_json(const json& root, const std::string& file, const std::string& json_path, Knobs k) {
  JsonIn j(root, json_path, file);
  j.allow_only({"strategy", "bucket_cap_bytes", "first_bucket_cap_bytes", "bucket_order", "channels", "algorithm",
                "protocol", "wire_dtype", "reduce_op", "broadcast_buffers", "zero_stage", "allgather_bucket_bytes", "overlap_comm", "zero_impl",
                "microbatches", "sync_every_microbatch", "localsgd_period", "localsgd_averaging", "fsdp_wrap_elems", "fsdp_wrap_blocks",
                "reshard_after_forward", "backward_prefetch", "forward_prefetch", "shard_group", "comm_hook",
                "powersgd_rank", "powersgd_start_iter", "activation_checkpointing", "checkpointed_blocks",
                "optimizer_impl"});
  if (auto v = j.find("strategy")) k.strategy = v->nonempty_string();
  if (auto v = j.find("bucket_cap_bytes")) k.bucket_cap_bytes = v->positive_integer();
  if (auto v = j.find("first_bucket_cap_bytes")) k.first_bucket_cap_bytes = v->positive_integer();
  if (auto v = j.find("bucket_order"))
    k.bucket_order = v->one_of({"definition", "execution"}) == "definition" ? BucketOrder::definition
                                                                           : BucketOrder::execution;
  if (auto v = j.find("channels")) {
    if (v->raw().is_string()) {
      v->one_of({"auto"});
      k.channels = 0;
    } else {
      auto c = v->positive_integer();
      if (c > 64) v->fail("a channel count from 1 to 64, or \"auto\"");
      k.channels = static_cast<int>(c);
    }
  }
  if (auto v = j.find("algorithm")) parse_algorithm_knob(*v, k);
  if (auto v = j.find("protocol")) parse_protocol_knob(*v, k);
  if (auto v = j.find("wire_dtype")) {
    auto t = parse_dtype(v->one_of({"fp32", "fp16", "bf16"}));
    k.wire_dtype = t;
  }
  if (auto v = j.find("reduce_op")) k.reduce_op = *parse_reduce_op(v->one_of({"sum", "avg", "max", "min", "prod"}));
  if (auto v = j.find("broadcast_buffers")) k.broadcast_buffers = v->boolean();
  if (auto v = j.find("zero_stage")) {
    auto s = v->integer();
    if (s != 1 && s != 2) v->fail("ZeRO stage 1 or 2 (stage 3 is strategy fsdp)");
    k.zero_stage = static_cast<int>(s);
  }
  if (auto v = j.find("allgather_bucket_bytes")) k.allgather_bucket_bytes = v->positive_integer();
  if (auto v = j.find("overlap_comm")) k.overlap_comm = v->boolean();
  if (auto v = j.find("zero_impl")) {
    k.zero_impl = *parse_zero_impl(v->one_of({"deepspeed", "pytorch"}));
    // ZeroRedundancyOptimizer shards the optimizer state only: ZeRO stage 1.
    if (k.zero_impl == ZeroImpl::pytorch) {
      if (k.zero_stage != 1 && j.find("zero_stage"))
        v->fail("\"deepspeed\" with zero_stage 2 (PyTorch's ZeroRedundancyOptimizer is ZeRO stage 1)");
      k.zero_stage = 1;
    }
  }
  if (auto v = j.find("microbatches")) {
    auto m = v->positive_integer();
    if (m > 4096) v->fail("a micro-batch count from 1 to 4096");
    k.microbatches = static_cast<int>(m);
  }
  if (auto v = j.find("sync_every_microbatch")) k.sync_every_microbatch = v->boolean();
  if (auto v = j.find("localsgd_period")) {
    auto h = v->positive_integer();
    if (h > 4096) v->fail("a LocalSGD period from 1 to 4096 steps");
    k.localsgd_period = static_cast<int>(h);
  }
  if (auto v = j.find("localsgd_averaging"))
    k.localsgd_averaging = *parse_averaging(v->one_of({"flat", "bucketed", "per-param"}));
  return sharding_and_hook_knobs(j, k);
}

}  // namespace redsim
