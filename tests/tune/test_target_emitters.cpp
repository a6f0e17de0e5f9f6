// The per-framework files of tune --target: FSDP's constructor, DeepSpeed's stage-3 settings in
// elements, the DDP comm hook registration, and the section's line with the gap to the defaults.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "tests/test_support.h"
#include "tune/target_emitters.h"

using namespace redsim;
using namespace redsim::tune;

namespace {

const Snippet& find(const std::vector<Snippet>& s, const std::string& file) {
  for (const auto& x : s)
    if (x.file == file) return x;
  FAIL("no snippet " << file);
  return s.front();
}

TargetSection section(const std::string& target, const Candidate& best, double best_s, double defaults_s) {
  TargetSection s;
  s.target = target;
  s.best = best;
  s.best_s = best_s;
  s.has_defaults = true;
  s.defaults = best;
  s.defaults_s = defaults_s;
  s.keep_defaults = defaults_s <= best_s * (1 + kKeepDefaultsGap);
  return s;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("pytorch_fsdp.py carries the simulated FSDP constructor arguments and the gap", "[tune][emit][targets]") {
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  Knobs k;
  k.strategy = "fsdp";
  k.reshard_after_forward = false;
  k.backward_prefetch = BackwardPrefetch::none;
  k.fsdp_wrap_elems = 0;
  // 100 ms against defaults of 200 ms: (200 - 100) / 200 = 50% faster.
  const auto files = emit_target_snippets({section("fsdp", {"fsdp", k}, 0.100, 0.200)}, trace, cluster, 1);
  const auto& py = find(files, "pytorch_fsdp.py").contents;
  CHECK(py.rfind("# -*- coding: utf-8 -*-\n", 0) == 0);
  CHECK(has(py, "sharding_strategy=ShardingStrategy.SHARD_GRAD_OP"));
  CHECK(has(py, "backward_prefetch=None"));
  CHECK(has(py, "limit_all_gathers=True"));
  CHECK(has(py, "auto_wrap_policy=ModuleWrapPolicy(layer_classes)"));
  CHECK(has(py, "50.0% faster than the FSDP defaults"));

  k.fsdp_wrap_elems = 100'000'000;
  k.reshard_after_forward = true;
  k.backward_prefetch = BackwardPrefetch::backward_post;
  const auto f2 = emit_target_snippets({section("fsdp", {"fsdp", k}, 0.100, 0.1005)}, trace, cluster, 1);
  const auto& py2 = find(f2, "pytorch_fsdp.py").contents;
  CHECK(has(py2, "ShardingStrategy.FULL_SHARD"));
  CHECK(has(py2, "BackwardPrefetch.BACKWARD_POST"));
  CHECK(has(py2, "size_based_auto_wrap_policy, min_num_params=100000000"));
  CHECK(has(py2, "keep the defaults"));  // 0.5% apart: within the model's noise

  // hsdp: HYBRID_SHARD over a mesh of (8 / 4 = 2 replicas) x (4-rank shard groups).
  k.strategy = "hsdp";
  k.shard_group = 4;
  const auto f3 = emit_target_snippets({section("fsdp", {"hsdp", k}, 0.100, 0.200)}, trace, cluster, 1);
  const auto& py3 = find(f3, "pytorch_fsdp.py").contents;
  CHECK(has(py3, "# Setting: hsdp: shard group 4, FULL_SHARD"));
  CHECK(has(py3, "sharding_strategy=ShardingStrategy.HYBRID_SHARD,"));
  CHECK(has(py3, "init_device_mesh(\"cuda\", (torch.distributed.get_world_size() // 4, 4))"));
  CHECK(has(py3, "device_mesh=mesh,"));
  k.reshard_after_forward = false;
  const auto f4 = emit_target_snippets({section("fsdp", {"hsdp", k}, 0.100, 0.200)}, trace, cluster, 1);
  CHECK(has(find(f4, "pytorch_fsdp.py").contents, "ShardingStrategy._HYBRID_SHARD_ZERO2"));
  CHECK_FALSE(has(find(f4, "pytorch_fsdp.py").contents, "NCCL_ALGO"));  // NCCL's own choice: nothing pinned
}

TEST_CASE("pytorch_fsdp.py says how to launch with a pinned NCCL_ALGO", "[tune][emit][targets]") {
  // NCCL 2.24+ takes NCCL_ALGO per collective (src/graph/tuning.cc parseList): PAT for the
  // allgathers and reduce-scatters only, quoted for the shell because of the ';'.
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  cluster.nccl_version = 22602;
  Knobs k;
  k.strategy = "fsdp";
  k.algorithm = Algorithm::pat;
  const auto files = emit_target_snippets({section("fsdp", {"fsdp", k}, 0.100, 0.200)}, trace, cluster, 1);
  const auto& py = find(files, "pytorch_fsdp.py").contents;
  CHECK(has(py, "#   NCCL_ALGO=\"allgather:PAT;reducescatter:PAT\" torchrun ...\n"));
  CHECK(has(py, "# NCCL: allgather and reduce-scatter run pat; the other collectives keep NCCL's own choice"));
  CHECK(has(py, "# Setting: fsdp: FULL_SHARD, prefetch backward_pre, wrap per layer, pat;"));
}

TEST_CASE("DeepSpeed ZeRO-3 from an fsdp setting counts elements of the largest unit", "[tune][emit][targets]") {
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  std::map<std::size_t, std::int64_t> per_layer;
  for (const auto& p : trace.params) per_layer[p.layer] += p.numel;
  std::int64_t largest = 0;
  for (const auto& [l, n] : per_layer) largest = std::max(largest, n);
  Knobs k;
  k.strategy = "fsdp";
  for (auto prefetch : {BackwardPrefetch::backward_pre, BackwardPrefetch::none}) {
    k.backward_prefetch = prefetch;
    const auto files = emit_target_snippets({section("deepspeed", {"fsdp", k}, 0.1, 0.2)}, trace, cluster, 1);
    const auto j = nlohmann::json::parse(find(files, "deepspeed_config.json").contents);
    const auto& z = j["zero_optimization"];
    CHECK(z["stage"] == 3);
    CHECK(z["stage3_prefetch_bucket_size"] == (prefetch == BackwardPrefetch::none ? 0 : largest));
    CHECK(z["stage3_param_persistence_threshold"] == 0);  // every parameter sharded, as simulated
    CHECK(z["reduce_bucket_size"] == largest);
  }
}

TEST_CASE("pytorch_ddp.py registers the comm hook the setting was simulated with", "[tune][emit][targets]") {
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  Knobs k;
  k.comm_hook = CommHook::powersgd;
  k.powersgd_rank = 4;
  k.powersgd_start_iter = 10;
  const auto files = emit_target_snippets({section("ddp", {"bucketed", k}, 0.1, 0.2)}, trace, cluster, 1);
  const auto& py = find(files, "pytorch_ddp.py").contents;
  CHECK(has(py, "matrix_approximation_rank=4, start_powerSGD_iter=10"));
  CHECK(has(py, "model.register_comm_hook(state, powerSGD.powerSGD_hook)"));
  k.comm_hook = CommHook::bf16;
  const auto f2 = emit_target_snippets({section("ddp", {"bucketed", k}, 0.1, 0.2)}, trace, cluster, 1);
  CHECK(has(find(f2, "pytorch_ddp.py").contents, "default_hooks.bf16_compress_hook"));
}

TEST_CASE("a checkpointed setting's files apply activation checkpointing, and only then", "[tune][emit][targets][checkpointing]") {
  auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  for (std::size_t l = 0; l < trace.layers.size(); ++l) {
    trace.layers[l].name = "model.layers." + std::to_string(l / 2) + (l % 2 ? ".mlp" : ".attn");
    trace.layers[l].activation_bytes = 1000;
    trace.layers[l].input_bytes = 100;
  }
  const auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  Knobs fsdp;
  fsdp.strategy = "fsdp";
  fsdp.activation_checkpointing = ActivationCheckpointing::blocks;
  Knobs ddp;
  ddp.activation_checkpointing = ActivationCheckpointing::blocks;
  const auto files = emit_target_snippets({section("fsdp", {"fsdp", fsdp}, 0.1, 0.2), section("ddp", {"bucketed", ddp}, 0.1, 0.2),
                                           section("deepspeed", {"fsdp", fsdp}, 0.1, 0.2)},
                                          trace, cluster, 1);
  const auto& fsdp_py = find(files, "pytorch_fsdp.py").contents;
  const auto& ddp_py = find(files, "pytorch_ddp.py").contents;
  for (const auto* py : {&fsdp_py, &ddp_py}) {
    CHECK(has(*py, "apply_activation_checkpointing("));
    CHECK(has(*py, "CheckpointImpl.NO_REENTRANT"));
    CHECK(has(*py, "(4 of them, e.g. model.layers.0)"));
  }
  // DDP wraps a model already checkpointed; FSDP's units are checkpointed after wrapping.
  CHECK(ddp_py.find("apply_activation_checkpointing(") < ddp_py.find("model = DDP("));
  CHECK(fsdp_py.find("apply_activation_checkpointing(") > fsdp_py.find("model = FSDP("));
  const auto& ds = find(files, "deepspeed_config.json");
  CHECK(nlohmann::json::parse(ds.contents).contains("activation_checkpointing"));
  CHECK(has(ds.comment, "deepspeed.checkpointing.checkpoint"));

  // FSDP units per block: ModuleWrapPolicy on the block class; DeepSpeed's buckets the largest
  // unit, a block's two 2^20-element layers.
  fsdp.fsdp_wrap_blocks = true;
  const auto per_block = emit_target_snippets({section("fsdp", {"fsdp", fsdp}, 0.1, 0.2),
                                               section("deepspeed", {"fsdp", fsdp}, 0.1, 0.2)},
                                              trace, cluster, 1);
  const auto& block_py = find(per_block, "pytorch_fsdp.py").contents;
  CHECK(has(block_py, "one FSDP unit per repeated block of the trace (e.g. model.layers.0)"));
  CHECK(has(block_py, "auto_wrap_policy=ModuleWrapPolicy(layer_classes)"));
  CHECK(nlohmann::json::parse(find(per_block, "deepspeed_config.json").contents)["zero_optimization"]["reduce_bucket_size"] ==
        2 * (1 << 20));
  fsdp.fsdp_wrap_blocks = false;

  // The first 3 of the 4 blocks: check_fn picks them in registration order.
  ddp.checkpointed_blocks = 3;
  const auto some = emit_target_snippets({section("ddp", {"bucketed", ddp}, 0.1, 0.2)}, trace, cluster, 1);
  const auto& some_py = find(some, "pytorch_ddp.py").contents;
  CHECK(has(some_py, "the first 3 of the 4 repeated blocks (e.g. model.layers.0)"));
  CHECK(has(some_py, "len(chosen) < 3:"));
  CHECK(has(some_py, "check_fn=check_fn,"));
  ddp.checkpointed_blocks = 0;

  fsdp.activation_checkpointing = ddp.activation_checkpointing = ActivationCheckpointing::none;
  const auto plain = emit_target_snippets({section("fsdp", {"fsdp", fsdp}, 0.1, 0.2), section("ddp", {"bucketed", ddp}, 0.1, 0.2),
                                           section("deepspeed", {"fsdp", fsdp}, 0.1, 0.2)},
                                          trace, cluster, 1);
  CHECK_FALSE(has(find(plain, "pytorch_fsdp.py").contents, "checkpoint"));
  CHECK_FALSE(has(find(plain, "pytorch_ddp.py").contents, "checkpoint"));
  CHECK_FALSE(nlohmann::json::parse(find(plain, "deepspeed_config.json").contents).contains("activation_checkpointing"));
}

TEST_CASE("a pinned optimizer implementation is written as the AdamW the memory figure assumed", "[tune][emit][targets]") {
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  Knobs k;
  auto ddp = [&] { return find(emit_target_snippets({section("ddp", {"bucketed", k}, 0.1, 0.2)}, trace, cluster, 1),
                               "pytorch_ddp.py").contents; };
  CHECK_FALSE(has(ddp(), "torch.optim"));  // auto: PyTorch's own default was simulated
  k.optimizer_impl = OptimizerImpl::fused;
  auto py = ddp();
  CHECK(has(py, "import torch\n"));  // the file imports only torch.distributed otherwise
  CHECK(has(py, "optimizer = torch.optim.AdamW(model.parameters(), fused=True)"));
  k.optimizer_impl = OptimizerImpl::for_loop;
  CHECK(has(ddp(), "AdamW(model.parameters(), foreach=False)"));
  k.optimizer_impl = OptimizerImpl::foreach;
  const auto fsdp = find(emit_target_snippets({section("fsdp", {"fsdp", k}, 0.1, 0.2)}, trace, cluster, 1),
                         "pytorch_fsdp.py").contents;
  CHECK(has(fsdp, "AdamW(model.parameters(), foreach=True)"));
  CHECK(fsdp.find("AdamW") > fsdp.find("model = FSDP("));  // over the sharded parameters
}
