// A small TCP key-value store for rendezvous across hosts: one server (rank 0, or the local
// launcher) and one client per rank. The client implements gloo::rendezvous::Store, so Gloo
// contexts connect through it (under a gloo::rendezvous::PrefixStore per communicator); the
// NCCL backend passes its ncclUniqueIds through it, and rank 0 gathers timings through it.
//
// Wire protocol (all integers little-endian as on x86/ARM hosts; one request at a time per
// connection): first a handshake, u32 length and the job's secret, answered by u8 0 (accepted;
// anything else: rejected and closed); then requests: request = u8 op, u32 key count, keys as (u32 length, bytes), u64 value length,
// value bytes, i64 timeout in ms. Reply = u8 status (0 ok, 1 timed out), u64 length, bytes.
// op: 1 set, 2 get (waits for the key), 3 wait (for every key).
//
// The server trusts nothing from the network: every length is bounded (kMaxStore*), a client
// must present the per-job secret before anything else is read, a malformed or oversized
// request drops that client only, and no exception leaves a server thread.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace redsim::realexec {

// A listening TCP socket on bind_host:port (port 0: the kernel picks one). Throws
// std::runtime_error naming the address if it cannot bind.
// Bounds on what one peer can make the server allocate or hold.
inline constexpr std::uint32_t kMaxStoreSecretBytes = 1024;
inline constexpr std::uint32_t kMaxStoreKeys = 4096;
inline constexpr std::uint32_t kMaxStoreKeyBytes = 4096;
inline constexpr std::uint64_t kMaxStoreValueBytes = 256ull << 20;  // rank reports of a 10^6-op plan fit
inline constexpr std::int64_t kMaxStoreTimeoutMs = 7 * 24 * 3600 * 1000ll;
inline constexpr std::size_t kMaxStoreClients = 4096;

// A fresh random secret (256 bits from the system's CSPRNG, hex) for one job.
std::string make_store_secret();

struct ListeningSocket {
  int fd = -1;
  int port = 0;
};
ListeningSocket listen_tcp(const std::string& bind_host, int port);

class TcpStoreServer {
 public:
  // Takes ownership of a socket from listen_tcp and serves it on a background thread to
  // clients that present `secret` (non-empty).
  TcpStoreServer(ListeningSocket sock, std::string secret);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  // The value of a key if it is set (used by the launcher to read what ranks reported).
  std::optional<std::vector<char>> peek(const std::string& key);

 private:
  void accept_loop();
  void serve_client(int fd);
  bool serve_request(int fd);
  bool authenticate(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::string secret_;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<char>> data_;
  std::vector<int> client_fds_;
  std::vector<std::thread> client_threads_;
  std::thread accept_thread_;
};

class TcpStore final : public gloo::rendezvous::Store {
 public:
  // Connects to host:port, retrying until connect_timeout passes (the server may start later
  // than its clients), and presents `secret`. `timeout` bounds get() and wait() without an
  // explicit timeout. Throws std::runtime_error when the server rejects the secret.
  TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout,
           std::chrono::milliseconds connect_timeout, const std::string& secret);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  void connect_until(const std::string& host, int port, std::chrono::milliseconds connect_timeout);
  void present_secret(const std::string& secret);
  std::vector<char> request(std::uint8_t op, const std::vector<std::string>& keys, const std::vector<char>& value,
                            std::chrono::milliseconds timeout);
  int fd_ = -1;
  std::string where_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
};

}  // namespace redsim::realexec
