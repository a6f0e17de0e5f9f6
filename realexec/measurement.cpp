#include "realexec/measurement.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>

#include "core/statistics.h"

namespace redsim::realexec {
namespace {

class Writer {
 public:
  template <class T>
  void put(T v) {
    const char* p = reinterpret_cast<const char*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  std::vector<char> out;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& b) : buf(b) {}
  template <class T>
  T get() {
    if (pos + sizeof(T) > buf.size()) throw std::runtime_error("rank report is truncated");
    T v;
    std::memcpy(&v, buf.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint32_t>();
    if (pos + n > buf.size()) throw std::runtime_error("rank report is truncated");
    std::string s(buf.data() + pos, n);
    pos += n;
    return s;
  }
  const std::vector<char>& buf;
  std::size_t pos = 0;
};

constexpr std::uint32_t kMagic = 0x52535852;  // "RXSR"

}  // namespace

std::vector<char> serialize_report(const RankReport& r) {
  Writer w;
  w.put(kMagic);
  w.put(static_cast<std::int32_t>(r.rank));
  w.put_string(r.host);
  w.put(r.buffers_checked);
  for (const auto b : {r.held.params_bytes, r.held.grads_bytes, r.held.optimizer_bytes, r.held.buffer_bytes, r.peak_rss_bytes})
    w.put(b);
  w.put(r.state_scale);
  w.put(static_cast<std::uint32_t>(r.steps.size()));
  w.put(static_cast<std::uint32_t>(r.steps.empty() ? 0 : r.steps[0].ops.size()));
  for (const auto& s : r.steps) {
    w.put(s.origin_s);
    for (const auto& t : s.ops) {
      w.put(t.ready_s);
      w.put(t.start_s);
      w.put(t.end_s);
      w.put(t.bytes_sent);
      w.put(t.bytes_received);
    }
  }
  return w.out;
}

RankReport deserialize_report(const std::vector<char>& bytes, std::size_t op_count) {
  Reader rd(bytes);
  if (rd.get<std::uint32_t>() != kMagic) throw std::runtime_error("rank report has a bad header");
  RankReport r;
  r.rank = rd.get<std::int32_t>();
  r.host = rd.get_string();
  r.buffers_checked = rd.get<std::int64_t>();
  for (std::int64_t* b : {&r.held.params_bytes, &r.held.grads_bytes, &r.held.optimizer_bytes, &r.held.buffer_bytes,
                          &r.peak_rss_bytes})
    *b = rd.get<std::int64_t>();
  r.state_scale = rd.get<double>();
  const auto steps = rd.get<std::uint32_t>();
  const auto ops = rd.get<std::uint32_t>();
  if (steps > 0 && ops != op_count)
    throw std::runtime_error("rank " + std::to_string(r.rank) + " reports " + std::to_string(ops) + " ops, the plan has " +
                             std::to_string(op_count) + " (did every rank build the same plan?)");
  r.steps.resize(steps);
  for (auto& s : r.steps) {
    s.origin_s = rd.get<double>();
    s.ops.resize(ops);
    for (auto& t : s.ops) {
      t.ready_s = rd.get<double>();
      t.start_s = rd.get<double>();
      t.end_s = rd.get<double>();
      t.bytes_sent = rd.get<std::int64_t>();
      t.bytes_received = rd.get<std::int64_t>();
    }
  }
  return r;
}

std::string host_identity() {
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  return std::string(name) + "/" + boot;
}

Timeline step_timeline(const Plan& plan, const std::vector<RankReport>& reports, std::size_t step, bool shared_clock) {
  const int world = static_cast<int>(reports.size());
  const std::size_t n = plan.ops.size();
  Timeline tl("measured", world, n);
  double common = std::numeric_limits<double>::infinity();
  for (const auto& r : reports) common = std::min(common, r.steps[step].origin_s);
  auto origin = [&](int r) { return shared_clock ? common : reports[static_cast<std::size_t>(r)].steps[step].origin_s; };
  for (int r = 0; r < world; ++r) {
    const auto& rec = reports[static_cast<std::size_t>(r)].steps[step];
    const double o = origin(r);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& raw = rec.ops[i];
      auto& t = tl.mutable_at(r, i);
      t.ready_s = raw.ready_s - o;
      t.start_s = raw.start_s - o;
      t.end_s = raw.end_s - o;
      t.bytes_sent = raw.bytes_sent;
      t.bytes_received = raw.bytes_received;
    }
  }
  if (shared_clock) {
    // A collective starts when the last rank has issued it.
    for (std::size_t i = 0; i < n; ++i) {
      if (!op_kind_is_collective(plan.ops[i].kind)) continue;
      double last_issue = -std::numeric_limits<double>::infinity();
      for (int r = 0; r < world; ++r) last_issue = std::max(last_issue, tl.at(r, i).start_s);
      for (int r = 0; r < world; ++r) {
        auto& t = tl.mutable_at(r, i);
        t.start_s = std::max(t.start_s, std::min(last_issue, t.end_s));
      }
    }
  }
  return tl;
}

Measured assemble(const Plan& plan, const std::vector<RankReport>& reports) {
  if (reports.empty()) throw std::invalid_argument("no rank reports to assemble");
  const std::size_t steps = reports[0].steps.size();
  if (steps == 0) throw std::invalid_argument("no measured steps (--steps must be at least 1)");
  Measured m;
  std::set<std::string> hosts;
  for (std::size_t r = 0; r < reports.size(); ++r) {
    const auto& rep = reports[r];
    if (rep.rank != static_cast<int>(r)) throw std::invalid_argument("report " + std::to_string(r) + " is from rank " + std::to_string(rep.rank));
    if (rep.steps.size() != steps)
      throw std::invalid_argument("rank " + std::to_string(r) + " measured " + std::to_string(rep.steps.size()) +
                                  " steps, rank 0 " + std::to_string(steps));
    for (const auto& s : rep.steps)
      if (s.ops.size() != plan.ops.size()) throw std::invalid_argument("rank " + std::to_string(r) + " timed a different plan");
    hosts.insert(rep.host);
    m.buffers_checked += rep.buffers_checked;
    m.held.push_back(rep.held);
    m.peak_rss_bytes.push_back(rep.peak_rss_bytes);
    m.state_scale.push_back(rep.state_scale);
  }
  m.hosts.assign(hosts.begin(), hosts.end());
  m.shared_clock = hosts.size() == 1;
  for (std::size_t s = 0; s < steps; ++s) {
    const Timeline tl = step_timeline(plan, reports, s, m.shared_clock);
    m.step_times_s.push_back(tl.last_end_s() / std::max(1, plan.steps));
  }
  m.median_step = static_cast<int>(median_index(m.step_times_s));
  m.timeline = step_timeline(plan, reports, static_cast<std::size_t>(m.median_step), m.shared_clock);
  return m;
}

}  // namespace redsim::realexec
