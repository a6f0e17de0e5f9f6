// The rendezvous store against a hostile network (issue 15): malformed packets, wrong secrets,
// and where it listens. Before the hardening, the first test aborted the whole process
// (std::bad_alloc in a server thread) and the store answered anyone on every interface.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "realexec/launch_env.h"
#include "realexec/rank_runner.h"
#include "realexec/tcp_store.h"

using namespace redsim::realexec;

namespace {

int connect_raw(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

template <class T>
void put(std::vector<char>& out, T v) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_text(std::vector<char>& out, const std::string& s) {
  for (char c : s) out.push_back(c);
}

std::vector<char> handshake(const std::string& secret) {
  std::vector<char> m;
  put(m, static_cast<std::uint32_t>(secret.size()));
  put_text(m, secret);
  return m;
}

// op set, one key "k", a value length of 2^62 bytes, then nothing: 21 bytes.
std::vector<char> huge_set() {
  std::vector<char> m;
  put(m, static_cast<std::uint8_t>(1));
  put(m, static_cast<std::uint32_t>(1));
  put(m, static_cast<std::uint32_t>(4));
  put_text(m, "key!");
  put(m, std::uint64_t{1} << 62);
  return m;
}

// 0 accepted, 1 rejected, -1 the connection was closed without an answer. `last`: nothing more
// will be sent (the server sees the end of the stream instead of waiting for the rest).
int send_and_read_byte(int fd, const std::vector<char>& msg, bool last = false) {
  REQUIRE(::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(msg.size()));
  if (last) ::shutdown(fd, SHUT_WR);
  unsigned char b = 0;
  return ::recv(fd, &b, 1, 0) == 1 ? b : -1;
}

void check_still_serves(int port) {
  TcpStore c("127.0.0.1", port, std::chrono::seconds(5), std::chrono::seconds(5), "job-secret");
  c.set("alive", {'y'});
  CHECK(c.get("alive") == std::vector<char>{'y'});
}

}  // namespace

TEST_CASE("store: a malformed packet drops that client, never the store", "[realexec][store][hardening]") {
  TcpStoreServer server(listen_tcp("127.0.0.1", 0), "job-secret");
  REQUIRE(huge_set().size() == 21);
  // Unauthenticated: the 21 bytes are read as a secret length far over the 1 KiB bound.
  const int a = connect_raw(server.port());
  CHECK(send_and_read_byte(a, huge_set(), true) == -1);
  ::close(a);
  // Authenticated: the 2^62-byte value is refused before anything is allocated.
  const int b = connect_raw(server.port());
  REQUIRE(send_and_read_byte(b, handshake("job-secret")) == 0);
  CHECK(send_and_read_byte(b, huge_set()) == -1);
  ::close(b);
  // A negative timeout and an unknown op are malformed too.
  const int c = connect_raw(server.port());
  REQUIRE(send_and_read_byte(c, handshake("job-secret")) == 0);
  std::vector<char> bad_op;
  put(bad_op, static_cast<std::uint8_t>(9));
  put(bad_op, static_cast<std::uint32_t>(0));
  put(bad_op, static_cast<std::uint64_t>(0));
  put(bad_op, static_cast<std::int64_t>(-1));
  CHECK(send_and_read_byte(c, bad_op) == -1);
  ::close(c);
  check_still_serves(server.port());
}

TEST_CASE("store: a client without the job's secret is rejected", "[realexec][store][hardening]") {
  TcpStoreServer server(listen_tcp("127.0.0.1", 0), "job-secret");
  CHECK_THROWS_WITH(TcpStore("127.0.0.1", server.port(), std::chrono::seconds(2), std::chrono::seconds(2), "guess"),
                    Catch::Contains("rejected this rank's secret"));
  const int fd = connect_raw(server.port());
  CHECK(send_and_read_byte(fd, handshake("job-secreT")) == 1);
  unsigned char b = 0;
  CHECK(::recv(fd, &b, 1, 0) == 0);  // and then closed
  ::close(fd);
  CHECK_FALSE(server.peek("alive"));
  check_still_serves(server.port());
  CHECK_THROWS(TcpStoreServer(listen_tcp("127.0.0.1", 0), ""));  // a store without a secret is refused
}

TEST_CASE("store: rank 0 listens only where MASTER_ADDR or REDSIM_STORE_ADDR says", "[realexec][store][hardening]") {
  std::map<std::string, std::string> vars{{"RANK", "0"},          {"WORLD_SIZE", "2"},
                                          {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"},
                                          {"REDSIM_STORE_SECRET", "s"}};
  auto env = [&vars](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  RankJob job = launched_rank_job(*launch_env_from(env), std::chrono::seconds(1));
  CHECK(job.store_bind_host == "127.0.0.1");
  CHECK(job.store_secret == "s");
  vars["REDSIM_STORE_ADDR"] = "127.0.0.2";
  CHECK(launched_rank_job(*launch_env_from(env), std::chrono::seconds(1)).store_bind_host == "127.0.0.2");

  const ListeningSocket sock = listen_tcp(job.store_bind_host, 0);
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  REQUIRE(::getsockname(sock.fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &bound.sin_addr, text, sizeof text);
  CHECK(std::string(text) == "127.0.0.1");  // not 0.0.0.0: other interfaces cannot reach it
  ::close(sock.fd);

  vars.erase("REDSIM_STORE_SECRET");
  CHECK_THROWS_WITH(launch_env_from(env), Catch::Contains("REDSIM_STORE_SECRET is not set"));
}

TEST_CASE("store: the secret file must be readable by its owner only", "[realexec][store][hardening]") {
  const auto path = std::filesystem::temp_directory_path() / ("redsim-secret-test-" + std::to_string(::getpid()));
  std::ofstream(path) << "from-file\n";
  auto env = [&path](const char* n) -> const char* {
    static std::string p;
    p = path.string();
    return std::strcmp(n, "REDSIM_STORE_SECRET_FILE") == 0 ? p.c_str() : nullptr;
  };
  ::chmod(path.c_str(), 0644);
  CHECK_THROWS_WITH(store_secret_from(env), Catch::Contains("readable by no one else"));
  ::chmod(path.c_str(), 0600);
  CHECK(store_secret_from(env) == "from-file");
  std::filesystem::remove(path);
}
