#include "realexec/buffer_pattern.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "realexec/half.h"

namespace redsim::realexec {
namespace {

// Largest integer magnitude the dtype represents exactly (with every smaller integer).
double exact_integer_limit(DType t) {
  switch (t) {
    case DType::fp16:
      return 2048;
    case DType::bf16:
      return 256;
    default:
      return 16777216;  // fp32: 2^24
  }
}

std::size_t elem_size(DType t) { return static_cast<std::size_t>(dtype_size_bytes(t)); }

// Raw element bits (little-endian hosts), for any element size up to 8 bytes.
std::uint64_t load_bits(const void* buf, std::int64_t i, std::size_t es) {
  std::uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(buf) + static_cast<std::size_t>(i) * es, es);
  return v;
}

// The shard owning element i (shards are disjoint; -1 if none).
int owner_of(std::int64_t i, const std::vector<Segment>& shards) {
  for (std::size_t r = 0; r < shards.size(); ++r)
    if (i >= shards[r].offset && i < shards[r].offset + shards[r].count) return static_cast<int>(r);
  return -1;
}

std::string fmt_value(float v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace

std::uint64_t encode_value(float v, DType dtype) {
  switch (dtype) {
    case DType::fp16:
      return float_to_fp16(v);
    case DType::bf16:
      return float_to_bf16(v);
    case DType::fp32:
      return std::bit_cast<std::uint32_t>(v);
    case DType::fp64:
      return std::bit_cast<std::uint64_t>(static_cast<double>(v));
    case DType::int64:
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
    case DType::int32:
      return static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
    case DType::uint8:
    case DType::bool8:  // moved as bytes: the pattern's small integers fit
      return static_cast<std::uint8_t>(static_cast<int>(v));
  }
  return 0;
}

float decode_value(const void* buf, std::int64_t i, DType dtype) {
  const std::uint64_t b = load_bits(buf, i, elem_size(dtype));
  switch (dtype) {
    case DType::fp16:
      return fp16_to_float(static_cast<std::uint16_t>(b));
    case DType::bf16:
      return bf16_to_float(static_cast<std::uint16_t>(b));
    case DType::fp32:
      return std::bit_cast<float>(static_cast<std::uint32_t>(b));
    case DType::fp64:
      return static_cast<float>(std::bit_cast<double>(b));
    case DType::int64:
      return static_cast<float>(static_cast<std::int64_t>(b));
    case DType::int32:
      return static_cast<float>(static_cast<std::int32_t>(static_cast<std::uint32_t>(b)));
    case DType::uint8:
    case DType::bool8:
      return static_cast<float>(static_cast<std::uint8_t>(b));
  }
  return 0;
}

void store_value_bits(void* buf, std::int64_t i, DType dtype, std::uint64_t bits) {
  const std::size_t es = elem_size(dtype);
  std::memcpy(static_cast<char*>(buf) + static_cast<std::size_t>(i) * es, &bits, es);
}

ValuePattern::ValuePattern(OpKind kind, ReduceOp op, DType dtype, int world_size, int root, std::uint32_t salt)
    : kind_(kind), op_(op), dtype_(dtype), world_(std::max(1, world_size)), root_(root), salt_(salt) {
  const bool sums = (kind == OpKind::allreduce || kind == OpKind::reduce || kind == OpKind::reduce_scatter) &&
                    (op == ReduceOp::sum || op == ReduceOp::avg);
  if (sums) {
    // Keep N (A - 1 + B - 1) within the exact range: halve the larger range until it fits.
    const double limit = exact_integer_limit(dtype);
    while (static_cast<double>(world_) * (a_range_ + b_range_ - 2) > limit && (a_range_ > 1 || b_range_ > 1)) {
      if (a_range_ >= b_range_)
        a_range_ /= 2;
      else
        b_range_ /= 2;
    }
  }
  max_b_ = 0;
  min_b_ = b(0);
  for (int r = 0; r < world_; ++r) {
    sum_b_ += b(r);
    max_b_ = std::max(max_b_, b(r));
    min_b_ = std::min(min_b_, b(r));
  }
}

float ValuePattern::prod_value(std::int64_t i, int r) const {
  float v = ((i + r) % 3 == 0) ? -1.0f : 1.0f;
  if (r == static_cast<int>(i % world_)) v *= 2.0f;
  return v;
}

float ValuePattern::reduced(std::int64_t i) const {
  switch (op_) {
    case ReduceOp::sum:
      return static_cast<float>(world_ * a(i) + sum_b_);
    case ReduceOp::avg: {
      // As the backends compute it: the exact sum, divided by N in float, then rounded to the
      // dtype (by the caller's encode).
      return static_cast<float>(world_ * a(i) + sum_b_) / static_cast<float>(world_);
    }
    case ReduceOp::max:
      return static_cast<float>(a(i) + max_b_);
    case ReduceOp::min:
      return static_cast<float>(a(i) + min_b_);
    case ReduceOp::prod: {
      // Count ranks r in [0, N) with (i + r) % 3 == 0: each contributes a factor -1.
      int negatives = 0;
      const int first = static_cast<int>((3 - i % 3) % 3);
      if (first < world_) negatives = (world_ - 1 - first) / 3 + 1;
      return (negatives % 2 ? -1.0f : 1.0f) * 2.0f;
    }
  }
  return 0;
}

float ValuePattern::contribution(std::int64_t i, int rank, const std::vector<Segment>& shards) const {
  switch (kind_) {
    case OpKind::broadcast:
      return rank == root_ ? static_cast<float>(a(i) + b(rank)) : kPoison;
    case OpKind::allgather:
      return owner_of(i, shards) == rank ? static_cast<float>(a(i) + b(rank)) : kPoison;
    default:
      return op_ == ReduceOp::prod ? prod_value(i, rank) : static_cast<float>(a(i) + b(rank));
  }
}

std::optional<float> ValuePattern::expected(std::int64_t i, int rank, const std::vector<Segment>& shards) const {
  switch (kind_) {
    case OpKind::broadcast:
      return static_cast<float>(a(i) + b(root_));
    case OpKind::allgather: {
      const int o = owner_of(i, shards);
      if (o < 0) return std::nullopt;
      return static_cast<float>(a(i) + b(o));
    }
    case OpKind::reduce:
      if (rank != root_) return std::nullopt;
      return reduced(i);
    case OpKind::reduce_scatter:
      if (owner_of(i, shards) != rank) return std::nullopt;
      return reduced(i);
    default:
      return reduced(i);
  }
}

void ValuePattern::fill(void* host, std::int64_t count, int rank, const std::vector<Segment>& shards) const {
  const bool simple = kind_ != OpKind::allgather && kind_ != OpKind::broadcast && op_ != ReduceOp::prod;
  if (simple) {
    // a(i) cycles with period a_range_: encode the a_range_ possible values once.
    std::uint64_t table[8];
    for (unsigned v = 0; v < a_range_; ++v)
      table[v] = encode_value(static_cast<float>(static_cast<int>(v) + b(rank)), dtype_);
    switch (elem_size(dtype_)) {
      case 2: {
        auto* p = static_cast<std::uint16_t*>(host);
        for (std::int64_t i = 0; i < count; ++i) p[i] = static_cast<std::uint16_t>(table[a(i)]);
        return;
      }
      case 4: {
        auto* p = static_cast<std::uint32_t*>(host);
        for (std::int64_t i = 0; i < count; ++i) p[i] = static_cast<std::uint32_t>(table[a(i)]);
        return;
      }
      default:
        for (std::int64_t i = 0; i < count; ++i) store_value_bits(host, i, dtype_, table[a(i)]);
        return;
    }
  }
  for (std::int64_t i = 0; i < count; ++i) store_value_bits(host, i, dtype_, encode_value(contribution(i, rank, shards), dtype_));
}

std::optional<std::string> ValuePattern::check(const void* host, std::int64_t count, int rank,
                                               const std::vector<Segment>& shards, double rel_tolerance) const {
  // Which range this rank must check.
  std::int64_t lo = 0, hi = count;
  if (kind_ == OpKind::reduce && rank != root_) return std::nullopt;
  if (kind_ == OpKind::reduce_scatter) {
    lo = shards[static_cast<std::size_t>(rank)].offset;
    hi = lo + shards[static_cast<std::size_t>(rank)].count;
  }
  const std::size_t es = elem_size(dtype_);
  auto wrong = [&](std::int64_t i, std::uint64_t want_bits) {
    std::uint64_t tmp = want_bits;
    return "element " + std::to_string(i) + " of " + std::to_string(count) + " is " +
           fmt_value(decode_value(host, i, dtype_)) + ", expected " + fmt_value(decode_value(&tmp, 0, dtype_));
  };
  if (rel_tolerance <= 0 && kind_ != OpKind::allgather && op_ != ReduceOp::prod) {
    // Expected values depend on a(i) only: compare raw bits against a table.
    std::uint64_t table[8];
    for (unsigned v = 0; v < a_range_; ++v) {
      std::int64_t probe = 0;  // an element with a(probe) == v
      while (a(probe) != static_cast<int>(v)) ++probe;
      const float want = kind_ == OpKind::broadcast ? static_cast<float>(static_cast<int>(v) + b(root_)) : reduced(probe);
      table[v] = encode_value(want, dtype_);
    }
    for (std::int64_t i = lo; i < hi; ++i)
      if (load_bits(host, i, es) != table[a(i)]) return wrong(i, table[a(i)]);
    return std::nullopt;
  }
  for (std::int64_t i = lo; i < hi; ++i) {
    const auto want_opt = expected(i, rank, shards);
    if (!want_opt) continue;
    const std::uint64_t want_bits = encode_value(*want_opt, dtype_);
    bool ok;
    if (rel_tolerance > 0) {
      std::uint64_t tmp = want_bits;
      const float want = decode_value(&tmp, 0, dtype_);
      const float got = decode_value(host, i, dtype_);
      ok = std::fabs(got - want) <= static_cast<float>(rel_tolerance) * std::max(1.0f, std::fabs(want));
    } else {
      ok = load_bits(host, i, es) == want_bits;
    }
    if (!ok) return wrong(i, want_bits);
  }
  return std::nullopt;
}

}  // namespace redsim::realexec
