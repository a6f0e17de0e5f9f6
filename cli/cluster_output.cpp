#include "cli/cluster_output.h"

#include <iostream>

#include "core/atomic_file.h"
#include "core/cluster_json.h"

namespace redsim::cli {

void name_fitted_cluster(ClusterSpec& c, const ClusterSpec& base, const std::string& name, const std::string& what,
                         const std::string& flag, const std::vector<std::string>& inputs) {
  c.name = name.empty() ? base.name + "-fitted" : name;
  std::string list;
  for (const auto& i : inputs) list += (list.empty() ? "" : ", ") + i;
  c.source = base.source + " " + what + " fitted by redsim calibrate " + flag + " to " + list + ".";
}

void write_calibrated_cluster(const ClusterSpec& c, const std::string& out_file) {
  const auto j = cluster_to_json(c);
  (void)cluster_from_json(j, out_file);  // what is written must load
  write_file_atomically(out_file, j.dump(1) + "\n");
  (void)load_cluster(out_file);
  std::cout << "\ncluster: " << out_file << "\n" << std::flush;
}

}  // namespace redsim::cli
