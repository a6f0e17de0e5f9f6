#include "validate/temp_file.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace redsim {

TempFile::TempFile(const std::string& stem, const std::string& suffix) {
  static std::atomic<int> counter{0};
  path_ = (std::filesystem::temp_directory_path() /
           ("redsim-" + stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + suffix))
              .string();
}

TempFile::~TempFile() {
  std::error_code ec;  // a destructor must not throw; a file never written is no error
  std::filesystem::remove(path_, ec);
}

void TempFile::write(const std::string& contents) const {
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) throw std::runtime_error("cannot write the temporary file " + path_);
}

}  // namespace redsim
