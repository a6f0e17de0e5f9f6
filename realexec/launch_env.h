// Joining a job someone else launched: the rank, world size and rendezvous address from the
// environment torchrun, mpirun (Open MPI, MPICH/PMI) or srun sets.
//
//   torchrun:  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   Open MPI:  OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK/_SIZE
//   MPICH/PMI: PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
//   Slurm:     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE
// MPI and Slurm do not name a rendezvous host: MASTER_ADDR and MASTER_PORT must be exported
// (as for PyTorch). Rank 0 serves redsim's store on the store port: REDSIM_STORE_PORT if set,
// else MASTER_PORT, or MASTER_PORT + 1 under torchrun (TORCHELASTIC_RUN_ID set), whose agent
// already serves its own store on MASTER_PORT. Rank 0's store listens on REDSIM_STORE_ADDR if
// set, else on MASTER_ADDR (never on every interface). Every rank presents the job's secret:
// REDSIM_STORE_SECRET, or the first line of REDSIM_STORE_SECRET_FILE (a file only its owner can
// read); the store rejects any other client. Gloo binds to GLOO_SOCKET_IFNAME if set (as in
// PyTorch), else REDSIM_GLOO_HOSTNAME, else this host's name.
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace redsim::realexec {

struct LaunchEnv {
  std::string launcher;  // "torchrun", "Open MPI", "MPICH/PMI" or "Slurm"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;  // ranks sharing this host (for the memory budget)
  std::string master_addr;
  std::string store_bind_addr;  // where rank 0's store listens
  int store_port = 0;
  std::string store_secret;
  std::string gloo_iface;
  std::string gloo_hostname;
};

using GetEnv = std::function<const char*(const char*)>;

// nullopt if no launcher variables are set. Throws std::invalid_argument naming the variable
// when they are set but incomplete or malformed.
std::optional<LaunchEnv> launch_env_from(const GetEnv& getenv_fn);
std::optional<LaunchEnv> launch_env();  // from the process environment

// The variable a launcher sets in each rank's environment to pass the job's secret.
inline constexpr const char* kStoreSecretVar = "REDSIM_STORE_SECRET";
// The job's secret from REDSIM_STORE_SECRET or REDSIM_STORE_SECRET_FILE; throws
// std::invalid_argument when neither is set or the file is readable by others.
std::string store_secret_from(const GetEnv& getenv_fn);

}  // namespace redsim::realexec
