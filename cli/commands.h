// Each subcommand registers itself on the top-level app; main.cpp only dispatches.
#pragma once
#include <CLI/CLI.hpp>

namespace redsim::cli {

void add_simulate_command(CLI::App& app);  // cmd_simulate.cpp
void add_collective_command(CLI::App& app);  // cmd_collective.cpp: redsim collective (a simulated nccl-tests)
void add_trace_commands(CLI::App& app);    // cmd_trace.cpp: redsim trace synth|import|show
void add_trace_show_command(CLI::App& trace);  // cmd_trace_show.cpp: redsim trace show
void add_run_command(CLI::App& app);       // cmd_run.cpp: redsim run (real Gloo/NCCL execution)
void add_tune_command(CLI::App& app);      // cmd_tune.cpp: redsim tune (autotuner and config emitters)
void add_validate_command(CLI::App& app);   // cmd_validate.cpp: redsim validate (predicted vs measured)
void add_calibrate_command(CLI::App& app);  // cmd_calibrate.cpp: redsim calibrate (microbenchmarks, fitted cluster)

}  // namespace redsim::cli
