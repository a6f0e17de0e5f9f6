#include "tool_runner.h"

#include <sys/wait.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace redsim::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "redsim-trace-tools.XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

RunResult run_redsim(const std::string& args, const TempDir& dir) {
  const std::string out = dir / ".stdout", err = dir / ".stderr";
  const std::string cmd = quote(REDSIM_BIN) + " " + args + " >" + quote(out) + " 2>" + quote(err);
  int raw = std::system(cmd.c_str());
  RunResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  const bool all = gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size());
  if (gzclose(f) != Z_OK || !all) throw std::runtime_error("cannot write " + path);
}

}  // namespace redsim::testing
