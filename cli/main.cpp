// redsim: one binary, subcommands in cmd_*.cpp. Bad input exits 2 with a one-line message.
#include <malloc.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  // Large simulations allocate and free per-rank vectors (a few MB at 131,072 ranks) for every
  // collective: a fixed mmap threshold and a high trim threshold keep glibc from handing those
  // pages back to the kernel and faulting them in again each time (measured: half of an FSDP
  // step's CPU at 16,384 ranks went to zeroing freshly faulted pages).
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  CLI::App app{
      "redsim: simulate, tune and validate gradient-reduction strategies for data-parallel training.\n"
      "Units are in every option name or its help: MiB for bucket sizes (as PyTorch DDP's bucket_cap_mb),\n"
      "seconds for times, GB/s (decimal) for bandwidths."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "redsim 0.1.0");
  redsim::cli::add_simulate_command(app);
  redsim::cli::add_collective_command(app);
  redsim::cli::add_trace_commands(app);
  redsim::cli::add_run_command(app);
  redsim::cli::add_validate_command(app);
  redsim::cli::add_calibrate_command(app);
  redsim::cli::add_tune_command(app);
  // CLI11 would print the main help for "redsim nosuch --help" (exit 0) and say only "A subcommand
  // is required" for "redsim bogus": name the unknown word instead, as git does.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      std::string names;
      for (const auto* sub : app.get_subcommands({})) names += (names.empty() ? "" : "|") + sub->get_name();
      std::cerr << "redsim: error: unknown subcommand \"" << redsim::printable(argv[1]) << "\"; expected " << names
                << " (redsim --help)\n";
      return redsim::kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, as every other bad input: CLI11's own message and its "Run with --help" line
    // become "redsim: error: ...".
    std::string what = e.what();
    for (auto& ch : what) ch = ch == '\n' ? ';' : ch;
    std::cerr << "redsim: error: " << redsim::printable(what) << " (run with --help for the options)\n";
    return redsim::kExitBadInput;
  } catch (const redsim::InputError& e) {
    std::cerr << "redsim: error: " << e.what() << "\n";
    return redsim::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "redsim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
