#include "trace_tools/kineto_names.h"

#include <filesystem>

namespace redsim::kineto {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string_view kernel_base_name(std::string_view name) { return name.substr(0, name.find('(')); }

namespace {

std::vector<std::string> split_tokens(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '_' || c == ' ' || c == ':' || c == '<' || c == '>' || c == ',') {
      if (!cur.empty()) out.push_back(lower(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(lower(cur));
  return out;
}

}  // namespace

std::string normalise_collective(std::string_view name) {
  std::string n;
  for (char c : lower(name))
    if (c != '_' && c != ' ') n += c;
  for (const char* k : {"allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "sendrecv"})
    if (n.find(k) != std::string::npos) return k;
  if (n.find("reduce") != std::string::npos) return "reduce";
  if (n.find("send") != std::string::npos) return "send";
  if (n.find("recv") != std::string::npos) return "recv";
  return "";
}

bool is_comm_op_name(std::string_view name) {
  auto n = lower(name);
  return n == "record_param_comms" || starts_with(n, "nccl:") || starts_with(n, "c10d::") ||
         !normalise_collective(n).empty();
}

DTypeGuess dtype_from_kernel_name(std::string_view name) {
  DTypeGuess g;
  for (const auto& t : split_tokens(kernel_base_name(name))) {
    if (t == "float" || t == "f32")
      g.dtype = DType::fp32;
    else if (t == "half" || t == "f16")
      g.dtype = DType::fp16;
    else if (t == "bf16" || t == "bfloat16")
      g.dtype = DType::bf16;
    else if (t == "double" || t == "f64")
      g.dtype = DType::fp64;
    else if (t == "i64" || t == "int64" || t == "u64" || t == "uint64")
      g.dtype = DType::int64, g.integer = true;
    else if (t == "i32" || t == "int32" || t == "u32" || t == "uint32")
      g.dtype = DType::int32, g.integer = true;
    else if (t == "u8" || t == "uint8")
      g.dtype = DType::uint8, g.integer = true;
    else if (t == "i8" || t == "int8")
      g.integer = true;
    else
      continue;
    break;
  }
  return g;
}

DTypeGuess dtype_from_text(std::string_view text) {
  std::string t = lower(text);
  if (starts_with(t, "c10::")) t = t.substr(5);
  DTypeGuess g;
  if (t == "float" || t == "float32" || t == "fp32")
    g.dtype = DType::fp32;
  else if (t == "half" || t == "float16" || t == "fp16")
    g.dtype = DType::fp16;
  else if (t == "bfloat16" || t == "bf16")
    g.dtype = DType::bf16;
  else if (t == "double" || t == "float64" || t == "fp64")
    g.dtype = DType::fp64;
  else if (t == "long" || t == "int64" || t == "long int")
    g.dtype = DType::int64, g.integer = true;
  else if (t == "int" || t == "int32")
    g.dtype = DType::int32, g.integer = true;
  else if (t == "byte" || t == "uint8" || t == "unsigned char")
    g.dtype = DType::uint8, g.integer = true;
  else if (t == "bool")
    g.dtype = DType::bool8, g.integer = true;
  else if (t == "char" || t == "short" || t == "int8" || t == "int16")
    g.integer = true;
  return g;
}

std::string join_numbers(const std::vector<std::int64_t>& v) {
  bool consecutive = v.size() > 2;
  for (std::size_t i = 1; i < v.size(); ++i) consecutive = consecutive && v[i] == v[i - 1] + 1;
  if (consecutive) return std::to_string(v.front()) + "-" + std::to_string(v.back());
  std::string s;
  for (auto n : v) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s;
}

std::string model_from_file(const std::string& file) {
  std::string stem = std::filesystem::path(file).filename().string();
  for (const char* suffix : {".gz", ".json", ".pt.trace"}) {
    std::string s = suffix;
    if (stem.size() > s.size() && stem.compare(stem.size() - s.size(), s.size(), s) == 0)
      stem.resize(stem.size() - s.size());
  }
  return stem.empty() ? "imported" : stem;
}

}  // namespace redsim::kineto
