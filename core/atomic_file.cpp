#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#include "core/error.h"

namespace redsim {

namespace fs = std::filesystem;

namespace {

bool write_all(int fd, std::string_view contents) {
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  return true;
}

// "<target>.tmp.<random>", created with O_EXCL|O_NOFOLLOW: never an existing file or a symlink.
int create_temp_beside(const std::string& path, std::string& tmp) {
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::uint64_t r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".tmp.%016llx", static_cast<unsigned long long>(r));
    tmp = path + suffix;
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

// Buffers the pieces and writes them to fd; remembers a failed write (the rest is dropped).
class FdWriter {
 public:
  explicit FdWriter(int fd) : fd_(fd) {}
  void operator()(std::string_view piece) {
    buf_.append(piece);
    if (buf_.size() >= (1u << 20)) flush();
  }
  bool flush() {
    ok_ = ok_ && write_all(fd_, buf_);
    buf_.clear();
    return ok_;
  }

 private:
  int fd_;
  std::string buf_;
  bool ok_ = true;
};

// Runs produce into fd; false when a write failed. The fd is closed either way.
bool produce_into(int fd, const std::function<void(const OutputSink&)>& produce) {
  FdWriter w(fd);
  try {
    produce([&w](std::string_view piece) { w(piece); });
  } catch (...) {
    ::close(fd);
    throw;
  }
  const bool written = w.flush();
  return (::close(fd) == 0) && written;
}

// /dev/null, a FIFO, a terminal: write in place (renaming would replace the device with a file).
void write_in_place(const std::string& path, const std::function<void(const OutputSink&)>& produce) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "", std::string("cannot open output for writing: ") + std::strerror(errno));
  if (!produce_into(fd, produce)) throw InputError(path, "", "failed while writing output");
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents) {
  write_file_atomically(path, [contents](const OutputSink& out) { out(contents); });
}

namespace {

// An existing output that is not a regular file: true for a device or FIFO (written in place),
// InputError for anything else.
bool writes_in_place(const std::string& path, const std::string& option = "") {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return false;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return true;
  throw InputError(path, "", (option.empty() ? "" : option + ": ") + "expected a regular file, a character device or a FIFO as output, got " +
                                 std::string(S_ISDIR(st.st_mode) ? "a directory" : "another kind of file"));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(const OutputSink&)>& produce) {
  if (writes_in_place(path)) return write_in_place(path, produce);
  std::string tmp;
  const int fd = create_temp_beside(path, tmp);
  if (fd < 0) throw InputError(path, "", "cannot write output file (is the directory there and writable?)");
  bool ok = false;
  try {
    ok = produce_into(fd, produce);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    throw InputError(path, "", "failed while writing output file");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw InputError(path, "", "cannot rename temporary file into place");
  }
}

namespace {

// The same file for both paths: an existing pair is compared by device and inode (hard links,
// symlinks), otherwise by the canonical form of the path.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool eq = fs::equivalent(a, b, ec);
    return !ec && eq;
  }
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

bool is_regular_or_absent(const std::string& p) {
  std::error_code ec;
  const auto s = fs::status(p, ec);
  return !fs::exists(s) || fs::is_regular_file(s);
}

}  // namespace

void check_outputs_distinct(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    if (out.path.empty()) continue;
    for (const auto& in : inputs)
      if (!in.path.empty() && same_file(out.path, in.path))
        throw InputError(out.path, "", out.option + ": expected an output other than the input given to " +
                                           in.option + " (writing it would destroy the input)");
    // /dev/null twice is fine: only a regular file would keep one output and lose the other.
    for (std::size_t j = i + 1; j < outputs.size(); ++j)
      if (!outputs[j].path.empty() && is_regular_or_absent(out.path) && same_file(out.path, outputs[j].path))
        throw InputError(out.path, "", out.option + " and " + outputs[j].option +
                                           ": expected different output files, got the same file twice");
  }
}

void check_output_targets(const std::vector<NamedPath>& outputs) {
  for (const auto& out : outputs) {
    if (out.path.empty() || writes_in_place(out.path, out.option)) continue;
    fs::path dir = fs::path(out.path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
      throw InputError(out.path, "", out.option + ": cannot write here (directory \"" + dir.string() +
                                         "\" is missing or not writable)");
  }
}

}  // namespace redsim
