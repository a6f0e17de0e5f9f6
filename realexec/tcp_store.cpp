#include "realexec/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

namespace redsim::realexec {
namespace {

enum : std::uint8_t { kOpSet = 1, kOpGet = 2, kOpWait = 3 };
enum : std::uint8_t { kOk = 0, kTimedOut = 1 };

// Whole-buffer I/O; false when the peer closed the connection or an error occurred.
bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

template <class T>
void put(std::vector<char>& out, T v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

template <class T>
bool get_pod(int fd, T& v) {
  return read_all(fd, &v, sizeof(T));
}

std::string errno_text() { return std::strerror(errno); }

// Constant time in the secret's content: the comparison leaks its length at most.
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string make_store_secret() {
  std::random_device rd;  // getrandom(2) on Linux
  std::string hex;
  for (int i = 0; i < 8; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
    hex += buf;
  }
  return hex;
}

ListeningSocket listen_tcp(const std::string& bind_host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port_s = std::to_string(port);
  int rc = ::getaddrinfo(bind_host.empty() ? nullptr : bind_host.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0)
    throw std::runtime_error("rendezvous store: cannot resolve " + bind_host + ": " + gai_strerror(rc));
  int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
  if (fd < 0) {
    ::freeaddrinfo(res);
    throw std::runtime_error("rendezvous store: socket: " + errno_text());
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
    const std::string why = errno_text();
    ::freeaddrinfo(res);
    ::close(fd);
    throw std::runtime_error("rendezvous store: cannot listen on " + (bind_host.empty() ? std::string("*") : bind_host) +
                             ":" + port_s + ": " + why);
  }
  ::freeaddrinfo(res);
  if (::listen(fd, 1024) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    throw std::runtime_error("rendezvous store: listen: " + why);
  }
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return {fd, ntohs(addr.sin_port)};
}

TcpStoreServer::TcpStoreServer(ListeningSocket sock, std::string secret)
    : listen_fd_(sock.fd), port_(sock.port), secret_(std::move(secret)) {
  if (secret_.empty() || secret_.size() > kMaxStoreSecretBytes) {
    ::close(listen_fd_);
    throw std::invalid_argument("rendezvous store: the job's secret must be 1 to 1024 bytes");
  }
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("rendezvous store: pipe: " + errno_text());
  accept_thread_ = std::thread([this] { accept_loop(); });
}

TcpStoreServer::~TcpStoreServer() {
  stop_ = true;
  char c = 0;
  [[maybe_unused]] auto w = ::write(wake_pipe_[1], &c, 1);
  accept_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  cv_.notify_all();
  for (auto& t : client_threads_) t.join();
  for (int fd : client_fds_) ::close(fd);
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

std::optional<std::vector<char>> TcpStoreServer::peek(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

void TcpStoreServer::accept_loop() {
  while (!stop_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int rc = ::poll(fds, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || (fds[1].revents & POLLIN)) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mutex_);
    if (client_fds_.size() >= kMaxStoreClients) {
      ::close(fd);  // a flood of connections must not exhaust threads
      continue;
    }
    client_fds_.push_back(fd);
    try {
      client_threads_.emplace_back([this, fd] { serve_client(fd); });
    } catch (const std::exception&) {
      client_fds_.pop_back();
      ::close(fd);
    }
  }
}

bool TcpStoreServer::authenticate(int fd) {
  // A peer that never sends its secret must not hold a thread forever.
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::uint32_t len = 0;
  if (!get_pod(fd, len) || len == 0 || len > kMaxStoreSecretBytes) return false;
  std::string presented(len, '\0');
  if (!read_all(fd, presented.data(), len)) return false;
  const std::uint8_t verdict = same_secret(presented, secret_) ? kOk : kTimedOut;
  if (!write_all(fd, &verdict, 1) || verdict != kOk) return false;
  tv = {0, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return true;
}

void TcpStoreServer::serve_client(int fd) {
  // Whatever a peer sends, only its own connection ends: never the process.
  try {
    if (authenticate(fd))
      while (serve_request(fd)) {
      }
  } catch (...) {
  }
  ::shutdown(fd, SHUT_RDWR);
}

// One request; false when the client is gone or sent something malformed.
bool TcpStoreServer::serve_request(int fd) {
  std::uint8_t op = 0;
  std::uint32_t nkeys = 0;
  if (!get_pod(fd, op) || !get_pod(fd, nkeys) || nkeys > kMaxStoreKeys) return false;
  if (op != kOpSet && op != kOpGet && op != kOpWait) return false;
  if ((op == kOpSet || op == kOpGet) && nkeys != 1) return false;
  std::vector<std::string> keys(nkeys);
  for (auto& k : keys) {
    std::uint32_t len = 0;
    if (!get_pod(fd, len) || len > kMaxStoreKeyBytes) return false;
    k.resize(len);
    if (len > 0 && !read_all(fd, k.data(), len)) return false;
  }
  std::uint64_t vlen = 0;
  if (!get_pod(fd, vlen) || vlen > kMaxStoreValueBytes || (op != kOpSet && vlen != 0)) return false;
  std::vector<char> value(vlen);
  if (vlen > 0 && !read_all(fd, value.data(), vlen)) return false;
  std::int64_t timeout_ms = 0;
  if (!get_pod(fd, timeout_ms) || timeout_ms < 0 || timeout_ms > kMaxStoreTimeoutMs) return false;

  std::uint8_t status = kOk;
  std::vector<char> reply;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (op == kOpSet) {
      data_[keys[0]] = std::move(value);
      cv_.notify_all();
    } else {
      auto ready = [&] {
        if (stop_) return true;
        for (const auto& k : keys)
          if (data_.find(k) == data_.end()) return false;
        return true;
      };
      if (!cv_.wait_until(lock, deadline, ready) || stop_) {
        status = kTimedOut;
      } else if (op == kOpGet) {
        reply = data_[keys[0]];
      }
    }
  }
  std::vector<char> out;
  put(out, status);
  put(out, static_cast<std::uint64_t>(reply.size()));
  out.insert(out.end(), reply.begin(), reply.end());
  return write_all(fd, out.data(), out.size());
}

TcpStore::TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout,
                   std::chrono::milliseconds connect_timeout, const std::string& secret)
    : where_(host + ":" + std::to_string(port)), timeout_(timeout) {
  connect_until(host, port, connect_timeout);
  try {
    present_secret(secret);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

void TcpStore::present_secret(const std::string& secret) {
  std::vector<char> msg;
  put(msg, static_cast<std::uint32_t>(secret.size()));
  msg.insert(msg.end(), secret.begin(), secret.end());
  std::uint8_t verdict = kTimedOut;
  if (!write_all(fd_, msg.data(), msg.size()) || !get_pod(fd_, verdict) || verdict != kOk)
    throw std::runtime_error("rendezvous store at " + where_ +
                             " rejected this rank's secret (every rank needs the job's REDSIM_STORE_SECRET)");
}

void TcpStore::connect_until(const std::string& host, int port, std::chrono::milliseconds connect_timeout) {
  const auto deadline = std::chrono::steady_clock::now() + connect_timeout;
  std::string last_error = "no attempt";
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) {
      last_error = gai_strerror(rc);
    } else {
      for (addrinfo* a = res; a != nullptr && fd_ < 0; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          fd_ = fd;
        } else {
          last_error = errno_text();
          ::close(fd);
        }
      }
      ::freeaddrinfo(res);
    }
    if (fd_ >= 0) break;
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("rendezvous store: cannot connect to " + where_ + " within " +
                               std::to_string(connect_timeout.count() / 1000.0) + " s (" + last_error +
                               "); is rank 0 running and MASTER_ADDR/MASTER_PORT right?");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<char> TcpStore::request(std::uint8_t op, const std::vector<std::string>& keys,
                                    const std::vector<char>& value, std::chrono::milliseconds timeout) {
  std::vector<char> msg;
  put(msg, op);
  put(msg, static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) {
    put(msg, static_cast<std::uint32_t>(k.size()));
    msg.insert(msg.end(), k.begin(), k.end());
  }
  put(msg, static_cast<std::uint64_t>(value.size()));
  msg.insert(msg.end(), value.begin(), value.end());
  put(msg, static_cast<std::int64_t>(timeout.count()));

  std::lock_guard<std::mutex> lock(mutex_);
  std::uint8_t status = 0;
  std::uint64_t len = 0;
  if (!write_all(fd_, msg.data(), msg.size()) || !get_pod(fd_, status) || !get_pod(fd_, len))
    throw std::runtime_error("rendezvous store at " + where_ + " closed the connection (rank 0 or the launcher exited)");
  if (len > kMaxStoreValueBytes)
    throw std::runtime_error("rendezvous store at " + where_ + " sent a reply of " + std::to_string(len) +
                             " bytes, over the limit of " + std::to_string(kMaxStoreValueBytes));
  std::vector<char> reply(len);
  if (len > 0 && !read_all(fd_, reply.data(), len))
    throw std::runtime_error("rendezvous store at " + where_ + " closed the connection (rank 0 or the launcher exited)");
  if (status == kTimedOut) {
    std::string list;
    for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
    throw std::runtime_error("rendezvous store: timed out after " + std::to_string(timeout.count() / 1000.0) +
                             " s waiting for " + list + " (a rank did not arrive)");
  }
  return reply;
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) { request(kOpSet, {key}, data, timeout_); }

std::vector<char> TcpStore::get(const std::string& key) { return get(key, timeout_); }

std::vector<char> TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  return request(kOpGet, {key}, {}, timeout);
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  request(kOpWait, keys, {}, timeout);
}

}  // namespace redsim::realexec
