#include "validate/temp_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace redsim {

TempFile::TempFile(const std::string& stem, const std::string& suffix) {
  const std::string pattern =
      (std::filesystem::temp_directory_path() / ("redsim-" + stem + "-XXXXXX" + suffix)).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const int fd = ::mkstemps(buf.data(), static_cast<int>(suffix.size()));
  if (fd < 0) throw std::runtime_error("cannot create a temporary file " + pattern + ": " + std::strerror(errno));
  ::close(fd);
  path_ = buf.data();
}

TempFile::~TempFile() {
  std::error_code ec;  // a destructor must not throw
  std::filesystem::remove(path_, ec);
}

void TempFile::write(const std::string& contents) const {
  // O_NOFOLLOW: the file mkstemps made, never a symlink put in its place since.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
  bool ok = fd >= 0;
  for (std::size_t done = 0; ok && done < contents.size();) {
    const ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) done += static_cast<std::size_t>(w);
  }
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (!ok) throw std::runtime_error("cannot write the temporary file " + path_);
}

}  // namespace redsim
