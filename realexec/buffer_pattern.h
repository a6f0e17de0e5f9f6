// What each rank writes into a collective's buffer before a step, and what it must find there
// afterwards. Values are small integers whose reduction is exact in fp32, fp16 and bf16:
//   sum/avg/max/min, broadcast, allgather: rank r holds a(i) + b(r) at element i, with
//     a(i) = (7 i + salt) mod A and b(r) = r mod B (A, B powers of two, small enough that
//     N (A + B - 2) stays within the dtype's exact-integer range);
//   prod: rank r holds -1 or 1 (-1 where (i + r) mod 3 == 0), times 2 where r == i mod N, so
//     every product is +-2.
// Parts of a buffer a rank does not contribute (non-root ranks of a broadcast, other ranks'
// shards of an allgather) are filled with a poison value no correct result can contain.
// avg is checked as round(float(sum) / N) in the dtype: bit-exact for Gloo, within a
// tolerance for NCCL (which pre-multiplies by 1/N).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/collective_types.h"
#include "core/dtype.h"
#include "core/plan.h"
#include "realexec/backend.h"

namespace redsim::realexec {

class ValuePattern {
 public:
  // kind: the collective; root for reduce/broadcast; salt tells ops apart (the op id).
  ValuePattern(OpKind kind, ReduceOp op, DType dtype, int world_size, int root, std::uint32_t salt);

  // This rank's contribution to a buffer of `count` elements (host memory, in the dtype).
  // shards: rank shards for reduce_scatter/allgather (ignored otherwise).
  void fill(void* host, std::int64_t count, int rank, const std::vector<Segment>& shards) const;

  // Checks the part of the buffer this rank must hold after the collective. Returns a one-line
  // description of the first wrong element, or nullopt. rel_tolerance 0 demands bit equality.
  std::optional<std::string> check(const void* host, std::int64_t count, int rank, const std::vector<Segment>& shards,
                                   double rel_tolerance = 0.0) const;

  // The value element i of a correct result holds on `rank` (nullopt: unspecified there).
  std::optional<float> expected(std::int64_t i, int rank, const std::vector<Segment>& shards) const;
  // The value `rank` contributes at element i before the collective.
  float contribution(std::int64_t i, int rank, const std::vector<Segment>& shards) const;

  static constexpr float kPoison = 99.0f;

 private:
  int a(std::int64_t i) const { return static_cast<int>((static_cast<std::uint64_t>(i) * 7u + salt_) & (a_range_ - 1)); }
  int b(int r) const { return r & (b_range_ - 1); }
  float prod_value(std::int64_t i, int r) const;
  float reduced(std::int64_t i) const;  // the reduction over all ranks at element i

  OpKind kind_;
  ReduceOp op_;
  DType dtype_;
  int world_;
  int root_;
  std::uint32_t salt_;
  unsigned a_range_ = 8, b_range_ = 8;
  int sum_b_ = 0, max_b_ = 0, min_b_ = 0;
};

// The dtype's encoding of a (small integer) value as raw element bits, widened to 64; any dtype
// (broadcasts and allgathers move integer buffers too). decode_value reads element i back.
std::uint64_t encode_value(float v, DType dtype);
float decode_value(const void* buf, std::int64_t i, DType dtype);
void store_value_bits(void* buf, std::int64_t i, DType dtype, std::uint64_t bits);

}  // namespace redsim::realexec
