// validate's temporary files (the knobs and result of the run it starts): created exclusively
// at construction under an unpredictable name, readable by the user only, removed on every path
// out of their scope (issue 15 item 3: they were <pid>-<n> names, opened with truncation).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "validate/temp_file.h"

using redsim::TempFile;

TEST_CASE("temp files are created exclusively, private, unpredictable and always removed", "[validate][hardening]") {
  std::string kept;
  {
    const TempFile a("validate-knobs", ".json");
    const TempFile b("validate-knobs", ".json");
    kept = a.path();
    REQUIRE(std::filesystem::is_regular_file(a.path()));  // exists before anything is written
    CHECK(a.path() != b.path());
    CHECK(a.path().find("redsim-validate-knobs-") != std::string::npos);
    CHECK(a.path().size() > std::string("redsim-validate-knobs-.json").size() + 5);  // 6 random characters
    struct stat st {};
    REQUIRE(::stat(a.path().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    a.write("{\"knobs\": {}}\n");
    std::ifstream in(a.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text == "{\"knobs\": {}}\n");
  }
  CHECK_FALSE(std::filesystem::exists(kept));
  try {
    const TempFile c("validate-result", ".json");
    kept = c.path();
    throw std::runtime_error("a failed run");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(std::filesystem::exists(kept));
}
