// Placeholder registration used only while realexec/ is absent from the build tree: says so.
#include "cli/commands.h"
#include "core/error.h"

namespace redsim::cli {

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "execute a strategy on real communicators (not built in this tree)");
  cmd->allow_extras();
  cmd->callback([] { throw InputError("", "", "redsim run is not part of this build (realexec/ is missing)"); });
}

}  // namespace redsim::cli
