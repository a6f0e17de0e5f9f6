#include "core/plan_json.h"

namespace redsim {

nlohmann::json memory_to_json(const RankMemory& m) {
  return {{"params_bytes", m.params_bytes},
          {"grads_bytes", m.grads_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"comm_buffer_bytes", m.comm_buffer_bytes},
          {"activation_bytes", m.activations_known ? nlohmann::json(m.activation_bytes) : nlohmann::json(nullptr)},
          {"step_buffer_bytes", m.step_buffer_bytes},
          {"total_bytes", m.total_bytes()}};
}

nlohmann::json requested_to_json(const CollectiveRequest& req) {
  return {{"algorithm", requested_algorithm(req)},
          {"protocol", requested_protocol(req)},
          {"channels", req.channels > 0 ? nlohmann::json(req.channels) : nlohmann::json("auto")}};
}

nlohmann::json plan_to_json(const Plan& plan) {
  using nlohmann::json;
  json ops = json::array();
  for (const auto& op : plan.ops) {
    json o = {{"id", op.id}, {"name", op.name}, {"kind", op_kind_name(op.kind)}, {"stream", plan.streams[op.stream]},
              {"deps", op.deps}};
    if (op_kind_is_collective(op.kind)) {
      o["bytes"] = op.bytes;
      o["dtype"] = dtype_name(op.dtype);
      o["reduce_op"] = reduce_op_name(op.reduce_op);
      o["algorithm"] = algorithm_name(op.algorithm);
      if (op.protocol) o["protocol"] = protocol_name(*op.protocol);
      o["channels"] = op.channels;
      o["requested"] = requested_to_json(op.request);
      if (op.root >= 0) o["root"] = op.root;
      if (op.bucket >= 0) o["bucket"] = op.bucket;
      json slices = json::array();
      for (const auto& s : op.slices) slices.push_back({s.param, s.offset_elems, s.numel});
      o["slices"] = std::move(slices);
      if (!op.shard_bytes.empty()) o["shard_bytes"] = op.shard_bytes;
    } else {
      o["duration_s"] = op.duration_s;
      if (op.activation_delta_bytes != 0) o["activation_delta_bytes"] = op.activation_delta_bytes;
    }
    ops.push_back(std::move(o));
  }
  return {{"format", "redsim-plan"}, {"version", 1},          {"strategy", plan.strategy},
          {"world_size", plan.world_size}, {"samples_per_step", plan.samples_per_step},
          {"steps", plan.steps},           {"streams", plan.streams}, {"memory", memory_to_json(plan.memory)},
          {"ops", std::move(ops)}};
}

}  // namespace redsim
