// A file in the temporary directory for as long as this object lives: removed by the destructor,
// so on every path out of the scope that made it (a return, an exception, a failed child run).
#pragma once
#include <string>

namespace redsim {

class TempFile {
 public:
  // Creates <temporary directory>/redsim-<stem>-XXXXXX<suffix> exclusively (mkstemps: an
  // unpredictable name, mode 0600, never an existing file or a planted symlink).
  TempFile(const std::string& stem, const std::string& suffix);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  // Writes the whole file (not atomically: nobody reads it before this returns).
  void write(const std::string& contents) const;

 private:
  std::string path_;
};

}  // namespace redsim
