#include "sim/child_process.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace redsim {
namespace {

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string run_in_child(const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    // First byte: 'R' result or 'E' error message. _exit: the parent's atexit handlers and
    // buffers are not the child's to run.
    try {
      std::string result = work();
      bool ok = write_all(fds[1], "R", 1) && write_all(fds[1], result.data(), result.size());
      ::_exit(ok ? 0 : 3);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      write_all(fds[1], "E", 1);
      write_all(fds[1], msg.data(), msg.size());
      ::_exit(1);
    } catch (...) {
      ::_exit(1);
    }
  }
  ::close(fds[1]);
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!data.empty() && data[0] == 'E') throw std::runtime_error("simulation failed: " + data.substr(1));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || data.empty() || data[0] != 'R') {
    std::string why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "exit status " + std::to_string(WEXITSTATUS(status));
    throw std::runtime_error("simulation process failed (" + why + ")");
  }
  return data.substr(1);
}

}  // namespace redsim
