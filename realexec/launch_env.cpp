#include "realexec/launch_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace redsim::realexec {
namespace {

struct Scheme {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

constexpr Scheme kSchemes[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH/PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

// A non-negative integer at the start of the value ("4(x2)" from Slurm reads as 4).
std::optional<int> leading_int(const char* v) {
  if (v == nullptr || *v < '0' || *v > '9') return std::nullopt;
  long n = 0;
  for (const char* p = v; *p >= '0' && *p <= '9'; ++p) {
    n = n * 10 + (*p - '0');
    if (n > 100000000) return std::nullopt;
  }
  return static_cast<int>(n);
}

int require_int(const GetEnv& env, const char* name, const char* launcher, bool whole) {
  const char* v = env(name);
  if (v == nullptr)
    throw std::invalid_argument(std::string(name) + " is not set, but other " + launcher + " variables are");
  auto n = leading_int(v);
  if (!n || (whole && std::to_string(*n) != v))
    throw std::invalid_argument(std::string(name) + "=\"" + v + "\" is not a non-negative integer");
  return *n;
}

std::string secret_from_file(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0)
    throw std::invalid_argument(std::string("REDSIM_STORE_SECRET_FILE=") + path + ": cannot read the file");
  if (st.st_uid != ::getuid() || (st.st_mode & 077) != 0)
    throw std::invalid_argument(std::string("REDSIM_STORE_SECRET_FILE=") + path +
                                ": expected a file owned by this user and readable by no one else (chmod 600)");
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

std::string store_secret_from(const GetEnv& env) {
  std::string secret;
  if (const char* v = env(kStoreSecretVar); v != nullptr && *v != '\0')
    secret = v;
  else if (const char* f = env("REDSIM_STORE_SECRET_FILE"); f != nullptr && *f != '\0')
    secret = secret_from_file(f);
  else
    throw std::invalid_argument(
        "REDSIM_STORE_SECRET is not set: every rank of a launched job needs the same secret for the rendezvous "
        "store (e.g. export REDSIM_STORE_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n') before "
        "torchrun/mpirun/srun, or REDSIM_STORE_SECRET_FILE naming a chmod-600 file)");
  if (secret.empty() || secret.size() > 1024)
    throw std::invalid_argument("the rendezvous store secret must be 1 to 1024 bytes");
  return secret;
}

std::optional<LaunchEnv> launch_env_from(const GetEnv& env) {
  for (const auto& s : kSchemes) {
    if (env(s.rank) == nullptr && env(s.size) == nullptr) continue;
    LaunchEnv e;
    e.launcher = s.launcher;
    e.rank = require_int(env, s.rank, s.launcher, true);
    e.world_size = require_int(env, s.size, s.launcher, true);
    if (e.world_size < 1) throw std::invalid_argument(std::string(s.size) + " must be at least 1");
    if (e.rank >= e.world_size)
      throw std::invalid_argument(std::string(s.rank) + "=" + std::to_string(e.rank) + " is not below " + s.size + "=" +
                                  std::to_string(e.world_size));
    e.local_rank = leading_int(env(s.local_rank)).value_or(0);
    e.local_world_size = std::max(1, leading_int(env(s.local_size)).value_or(1));
    const char* addr = env("MASTER_ADDR");
    if (addr == nullptr || *addr == '\0')
      throw std::invalid_argument(std::string("MASTER_ADDR is not set: a ") + s.launcher +
                                  " job needs MASTER_ADDR and MASTER_PORT naming rank 0's host and a free port");
    e.master_addr = addr;
    int port = 0;
    if (env("REDSIM_STORE_PORT") != nullptr) {
      port = require_int(env, "REDSIM_STORE_PORT", s.launcher, true);
    } else {
      port = require_int(env, "MASTER_PORT", s.launcher, true);
      if (env("TORCHELASTIC_RUN_ID") != nullptr) port += 1;  // torchrun's agent serves MASTER_PORT itself
    }
    if (port < 1 || port > 65535) throw std::invalid_argument("store port " + std::to_string(port) + " is not a TCP port");
    e.store_port = port;
    const char* bind = env("REDSIM_STORE_ADDR");
    e.store_bind_addr = bind != nullptr && *bind != '\0' ? bind : e.master_addr;
    e.store_secret = store_secret_from(env);
    if (const char* v = env("GLOO_SOCKET_IFNAME")) e.gloo_iface = v;
    if (const char* v = env("REDSIM_GLOO_HOSTNAME")) e.gloo_hostname = v;
    return e;
  }
  return std::nullopt;
}

std::optional<LaunchEnv> launch_env() {
  return launch_env_from([](const char* name) { return std::getenv(name); });
}

}  // namespace redsim::realexec
