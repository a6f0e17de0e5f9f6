#include "core/knobs_json.h"

#include "core/json_in.h"

namespace redsim {

json knobs_to_json(const Knobs& k) {
  json j;
  j["strategy"] = k.strategy;
  j["bucket_cap_bytes"] = k.bucket_cap_bytes;
  j["first_bucket_cap_bytes"] = k.first_bucket_cap_bytes;
  j["bucket_order"] = bucket_order_name(k.bucket_order);
  j["channels"] = k.channels;
  j["algorithm"] = algorithm_name(k.algorithm);
  j["wire_dtype"] = k.wire_dtype ? json(dtype_name(*k.wire_dtype)) : json(nullptr);
  j["reduce_op"] = reduce_op_name(k.reduce_op);
  j["broadcast_buffers"] = k.broadcast_buffers;
  j["zero_stage"] = k.zero_stage;
  j["allgather_bucket_bytes"] = k.allgather_bucket_bytes;
  j["overlap_comm"] = k.overlap_comm;
  j["microbatches"] = k.microbatches;
  j["sync_every_microbatch"] = k.sync_every_microbatch;
  j["localsgd_period"] = k.localsgd_period;
  return j;
}

Knobs knobs_from_json(const json& root, const std::string& file, const std::string& json_path, Knobs k) {
  JsonIn j(root, json_path, file);
  j.allow_only({"strategy", "bucket_cap_bytes", "first_bucket_cap_bytes", "bucket_order", "channels", "algorithm",
                "wire_dtype", "reduce_op", "broadcast_buffers", "zero_stage", "allgather_bucket_bytes", "overlap_comm",
                "microbatches", "sync_every_microbatch", "localsgd_period"});
  if (auto v = j.find("strategy")) k.strategy = v->nonempty_string();
  if (auto v = j.find("bucket_cap_bytes")) k.bucket_cap_bytes = v->positive_integer();
  if (auto v = j.find("first_bucket_cap_bytes")) k.first_bucket_cap_bytes = v->positive_integer();
  if (auto v = j.find("bucket_order"))
    k.bucket_order = v->one_of({"definition", "execution"}) == "definition" ? BucketOrder::definition
                                                                           : BucketOrder::execution;
  if (auto v = j.find("channels")) {
    auto c = v->positive_integer();
    if (c > 64) v->fail("a channel count from 1 to 64");
    k.channels = static_cast<int>(c);
  }
  if (auto v = j.find("algorithm")) k.algorithm = *parse_algorithm(v->one_of({"ring", "tree", "hierarchical"}));
  if (auto v = j.find("wire_dtype")) {
    auto t = parse_dtype(v->one_of({"fp32", "fp16", "bf16"}));
    k.wire_dtype = t;
  }
  if (auto v = j.find("reduce_op")) k.reduce_op = *parse_reduce_op(v->one_of({"sum", "avg", "max", "min", "prod"}));
  if (auto v = j.find("broadcast_buffers")) k.broadcast_buffers = v->boolean();
  if (auto v = j.find("zero_stage")) {
    auto s = v->integer();
    if (s != 1 && s != 2) v->fail("ZeRO stage 1 or 2");
    k.zero_stage = static_cast<int>(s);
  }
  if (auto v = j.find("allgather_bucket_bytes")) k.allgather_bucket_bytes = v->positive_integer();
  if (auto v = j.find("overlap_comm")) k.overlap_comm = v->boolean();
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
  return k;
}

}  // namespace redsim
