// The files of redsim tune --target: one per framework section (pytorch_ddp.py,
// deepspeed_config.json, horovod.env, nccl.env, pytorch_fsdp.py) plus README.txt, each from that
// section's pick (its best simulated setting, or the framework's defaults when the best is within
// the model's noise of them), with the predicted step time and the gap to the defaults written in.
#pragma once
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/trace.h"
#include "tune/emitters.h"
#include "tune/targets.h"

namespace redsim::tune {

std::vector<std::string> target_files(const std::string& target);
std::vector<Snippet> emit_target_snippets(const std::vector<TargetSection>& sections, const ModelTrace& trace,
                                          const ClusterSpec& cluster, int microbatches);

}  // namespace redsim::tune
