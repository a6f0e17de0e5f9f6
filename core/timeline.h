// The Timeline: per rank, per Plan op, when it was issued, started and ended, and bytes moved.
// Simulated and measured runs produce the same type, so they compare op by op.
//
// Folded as the scalable engine folds ranks: an op whose record is the same on every rank (a
// ring collective, a compute op of an SPMD plan) keeps one record that stands for all of them,
// so a step at 131,072 ranks holds records per op, not per op and rank (issue 19). at() reads
// either form; writing through at() unfolds that op first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace redsim {

struct OpTiming {
  double ready_s = 0;  // dependencies met and the stream free: the op is issued
  double start_s = 0;  // work began (a collective begins once every rank has issued it)
  double end_s = 0;
  std::int64_t bytes_sent = 0;      // by this rank, over the network/fabric, for this op
  std::int64_t bytes_received = 0;
};

bool operator==(const OpTiming& a, const OpTiming& b);

class Timeline {
 public:
  std::string source;  // "simulated" or "measured"
  int world_size = 0;
  std::size_t op_count = 0;

  Timeline() = default;
  // Every op starts with a record per rank (engines that write rank by rank).
  Timeline(std::string src, int world, std::size_t ops);
  // Every op starts folded: one zero record for all ranks (engines that set an op whole).
  static Timeline folded(std::string src, int world, std::size_t ops);

  const OpTiming& at(int rank, std::size_t op) const {
    const auto& r = ops_[op];
    return r.size() == 1 ? r[0] : r[static_cast<std::size_t>(rank)];
  }
  OpTiming& at(int rank, std::size_t op);  // unfolds the op if it is folded

  // Every rank's record of `op` (world_size of them); kept folded when all are equal.
  void set_op(std::size_t op, std::vector<OpTiming> per_rank);
  // The records stored for `op`: one standing for every rank, or one per rank.
  const std::vector<OpTiming>& op_records(std::size_t op) const { return ops_[op]; }
  bool op_is_folded(std::size_t op) const { return ops_[op].size() == 1 && world_size != 1; }
  // Folds every op whose ranks all hold equal records.
  void fold();
  std::size_t stored_records() const;
  // The latest end over every rank and op (0 for an empty timeline).
  double last_end_s() const;

  // Raw bytes of the records as stored (folded ops stay folded), for passing a timeline between
  // processes; read back with the same world size and op count. Throws std::runtime_error on a
  // truncated or inconsistent buffer.
  std::string serialize() const;
  void deserialize(const std::string& bytes);

 private:
  std::vector<std::vector<OpTiming>> ops_;  // per op: 1 record (folded) or world_size
};

}  // namespace redsim
