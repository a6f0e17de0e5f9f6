#include "bench/fidelity/published_table.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace redsim::fidelity {
namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) {
    while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
    while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
    out.push_back(cell);
  }
  return out;
}

bool parse_double(const std::string& s, double& v) {
  std::size_t used = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size() && std::isfinite(v);
}

}  // namespace

std::int64_t size_of_label(const std::string& label) {
  double v = 0;
  std::string num = label, unit;
  while (!num.empty() && std::isalpha(static_cast<unsigned char>(num.back()))) unit.insert(unit.begin(), num.back()), num.pop_back();
  const double scale = unit.empty() ? 1 : unit == "K" ? 1e3 : unit == "M" ? 1e6 : unit == "G" ? 1e9 : -1;
  if (scale < 0 || !parse_double(num, v) || v <= 0)
    throw InputError("", "", "expected a size label such as 65K, 1M or 2G, got \"" + label + "\"");
  // nccl-tests' labels round the bytes; the size is the power of two nearest to the label.
  const double bytes = v * scale;
  return std::int64_t{1} << static_cast<int>(std::lround(std::log2(bytes)));
}

std::vector<TableRow> read_published_table(const std::string& file, const std::string& column) {
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "cannot open the file");
  std::vector<TableRow> rows;
  std::string line;
  int number = 0, size_col = -1, value_col = -1;
  bool labels = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const auto cells = split_csv(line);
    const std::string where = "line " + std::to_string(number);
    if (size_col < 0) {
      for (int i = 0; i < static_cast<int>(cells.size()); ++i) {
        if (cells[static_cast<std::size_t>(i)] == "size_bytes" || cells[static_cast<std::size_t>(i)] == "size_label") {
          size_col = i;
          labels = cells[static_cast<std::size_t>(i)] == "size_label";
        }
        if (cells[static_cast<std::size_t>(i)] == column) value_col = i;
      }
      if (size_col < 0) throw InputError(file, where, "expected a header with a size_bytes or size_label column");
      if (value_col < 0) throw InputError(file, where, "expected a column named \"" + column + "\"");
      continue;
    }
    if (static_cast<int>(cells.size()) <= std::max(size_col, value_col))
      throw InputError(file, where, "expected " + std::to_string(std::max(size_col, value_col) + 1) + " cells");
    TableRow r;
    const auto& size = cells[static_cast<std::size_t>(size_col)];
    double bytes = 0;
    if (labels) {
      try {
        r.size_bytes = size_of_label(size);
      } catch (const InputError& e) {
        throw InputError(file, where, e.what());
      }
    } else if (parse_double(size, bytes) && bytes >= 1 && bytes == std::floor(bytes)) {
      r.size_bytes = static_cast<std::int64_t>(bytes);
    } else {
      throw InputError(file, where, "expected a size in bytes, got \"" + size + "\"");
    }
    if (!parse_double(cells[static_cast<std::size_t>(value_col)], r.busbw_GBps) || r.busbw_GBps < 0)
      throw InputError(file, where, "expected a bandwidth in GB/s, got \"" + cells[static_cast<std::size_t>(value_col)] + "\"");
    rows.push_back(r);
  }
  if (size_col < 0) throw InputError(file, "", "expected a header line and rows; the file has none");
  return rows;
}

std::vector<RowError> compare(const std::vector<TableRow>& measured, const std::vector<TableRow>& predicted) {
  std::vector<RowError> out;
  for (const auto& m : measured) {
    if (m.busbw_GBps <= 0) continue;  // printed as 0.00: below the table's resolution
    for (const auto& p : predicted)
      if (p.size_bytes == m.size_bytes) {
        out.push_back({m.size_bytes, m.busbw_GBps, p.busbw_GBps, p.busbw_GBps / m.busbw_GBps - 1});
        break;
      }
  }
  return out;
}

std::vector<SpreadRow> spread(const std::vector<std::vector<TableRow>>& tables, double tolerance) {
  std::vector<SpreadRow> out;
  if (tables.empty()) return out;
  for (const auto& first : tables.front()) {
    SpreadRow r;
    r.size_bytes = first.size_bytes;
    for (const auto& t : tables) {
      const auto it = std::find_if(t.begin(), t.end(), [&](const TableRow& x) { return x.size_bytes == r.size_bytes; });
      if (it == t.end() || it->busbw_GBps <= 0) break;
      r.busbw_GBps.push_back(it->busbw_GBps);
    }
    if (r.busbw_GBps.size() != tables.size()) continue;
    const auto [lo, hi] = std::minmax_element(r.busbw_GBps.begin(), r.busbw_GBps.end());
    r.min_GBps = *lo;
    r.max_GBps = *hi;
    r.lo_GBps = r.max_GBps * (1 - tolerance);
    r.hi_GBps = r.min_GBps * (1 + tolerance);
    out.push_back(r);
  }
  return out;
}

}  // namespace redsim::fidelity
