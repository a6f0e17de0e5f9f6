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
#include <utility>
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
// Hashes the bits operator== compares, for grouping equal records.
struct OpTimingHash {
  std::size_t operator()(const OpTiming& t) const;
};

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
    if (!index_[op].empty()) return r[index_[op][static_cast<std::size_t>(rank)]];
    if (!except_[op].empty()) return r[sparse_slot(op, rank)];
    return r.size() == 1 ? r[0] : r[static_cast<std::size_t>(rank)];
  }
  // For writing one rank's record: unfolds the op if it is folded or indexed (a distinct name, so
  // reading a non-const Timeline never unfolds it by accident).
  OpTiming& mutable_at(int rank, std::size_t op);

  // Every rank's record of `op` (world_size of them); kept folded when all are equal, and
  // indexed when a few distinct records repeat (a tree's ranks end by depth: a handful of
  // records and two bytes per rank instead of a record per rank).
  void set_op(std::size_t op, const std::vector<OpTiming>& per_rank);
  // Sparse: one record for every rank but a few exceptions, each with its own (a chain's head
  // and tail send or receive nothing; at 131,072 ranks a ZeRO step has a chain per owner, and a
  // record per rank of each would be ranks squared). Exceptions equal to the default are
  // dropped; more exceptions than ranks/4 store a record per rank instead.
  void set_op_sparse(std::size_t op, const OpTiming& every_rank, std::vector<std::pair<int, OpTiming>> exceptions);
  // The records stored for `op`: one standing for every rank, the distinct ones (indexed), the
  // default then the exceptions (sparse), or one per rank.
  const std::vector<OpTiming>& op_records(std::size_t op) const { return ops_[op]; }
  bool op_is_indexed(std::size_t op) const { return !index_[op].empty(); }
  bool op_is_folded(std::size_t op) const { return ops_[op].size() == 1 && world_size != 1; }
  bool op_is_sparse(std::size_t op) const { return !except_[op].empty(); }
  // A sparse op's exception ranks, ascending; op_records(op)[1 + i] is the record of the i-th.
  const std::vector<int>& op_exception_ranks(std::size_t op) const { return except_[op]; }
  // True when every rank's record of `op` has the same ready, start and end times (folded, or
  // stored records that differ only in bytes).
  bool op_times_uniform(std::size_t op) const;
  // Folds (or indexes) every op whose ranks hold equal (or few distinct) records.
  void fold();
  std::size_t stored_records() const;  // records kept, an indexed op's distinct ones
  // The latest end over every rank and op (0 for an empty timeline).
  double last_end_s() const;

  // Raw bytes of the records as stored (folded ops stay folded), for passing a timeline between
  // processes; read back with the same world size and op count. Throws std::runtime_error on a
  // truncated or inconsistent buffer.
  std::string serialize() const;
  void deserialize(const std::string& bytes);

 private:
  std::vector<std::vector<OpTiming>> ops_;  // per op: 1 record (folded), the distinct ones, or world_size
  // Per op: empty, or (indexed) each rank's position in ops_[op].
  std::vector<std::vector<std::uint16_t>> index_;
  // Per op: empty, or (sparse) the exception ranks in ascending order; ops_[op][0] is the default.
  std::vector<std::vector<int>> except_;
  std::size_t sparse_slot(std::size_t op, int rank) const;
  void compact(std::size_t op);
};

}  // namespace redsim
