// bench/fidelity's table reader and error arithmetic.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bench/fidelity/published_table.h"
#include "core/error.h"

using namespace redsim;
using namespace redsim::fidelity;

namespace {
// A file in the temporary directory, removed when the test is done with it.
struct TempFile {
  std::string path;
  TempFile(const std::string& name, const std::string& text)
      : path((std::filesystem::temp_directory_path() / ("redsim-" + std::to_string(::getpid()) + "-" + name)).string()) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
};
}  // namespace

TEST_CASE("nccl-tests' rounded size labels are the powers of two they round", "[fidelity]") {
  CHECK(size_of_label("1K") == 1024);
  CHECK(size_of_label("65K") == 65536);
  CHECK(size_of_label("132K") == 131072);
  CHECK(size_of_label("524K") == 524288);
  CHECK(size_of_label("1M") == 1048576);
  CHECK(size_of_label("33M") == 33554432);
  CHECK(size_of_label("536M") == 536870912);
  CHECK(size_of_label("8G") == 8589934592LL);
  CHECK_THROWS_AS(size_of_label("12Q"), InputError);
}

TEST_CASE("the shared table reads as 24 sizes from 1 KiB to 8 GiB per column", "[fidelity]") {
  const std::string file = std::string(REDSIM_SOURCE_DIR) + "/../shared/published/nccltests_allreduce_azure_a100_h100_8gpu.csv";
  REQUIRE(std::ifstream(file).good());  // CI runs with ../shared beside the repository
  const auto a100 = read_published_table(file, "ndA100v4_busbw_GBps");
  REQUIRE(a100.size() == 24);
  CHECK(a100.front().size_bytes == 1024);
  CHECK(a100.back().size_bytes == 8589934592LL);
  for (std::size_t i = 1; i < a100.size(); ++i) CHECK(a100[i].size_bytes == 2 * a100[i - 1].size_bytes);
  CHECK(read_published_table(file, "ndH100v5_busbw_GBps").back().busbw_GBps == Approx(478.87));
}

TEST_CASE("tables in bytes, and what is not a table, with the file and line", "[fidelity]") {
  const TempFile good("fidelity_good.csv", "# a comment\nsize_bytes,busbw_GBps\n1024,0.5\n2048,1.0\n");
  const auto rows = read_published_table(good.path, "busbw_GBps");
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].size_bytes == 2048);
  CHECK(rows[1].busbw_GBps == 1.0);
  CHECK_THROWS_WITH(read_published_table(good.path, "nope"), Catch::Contains("line 2") && Catch::Contains("\"nope\""));
  const TempFile bad("fidelity_bad.csv", "size_bytes,busbw_GBps\n1024,0.5\n1.5,x\n");
  CHECK_THROWS_WITH(read_published_table(bad.path, "busbw_GBps"), Catch::Contains("fidelity_bad.csv: line 3"));
}

TEST_CASE("errors per size and per band", "[fidelity]") {
  const std::vector<TableRow> measured{{1024, 0.0}, {2048, 2.0}, {65536, 100.0}, {131072, 200.0}, {262144, 400.0}};
  const std::vector<TableRow> predicted{{1024, 1.0}, {2048, 3.0}, {65536, 115.0}, {131072, 150.0}, {262144, 400.0}};
  const auto e = compare(measured, predicted);
  REQUIRE(e.size() == 4);  // the 0.00 row is below the table's resolution
  CHECK(e[0].error == Approx(0.5));    // 3 / 2 - 1
  CHECK(e[1].error == Approx(0.15));   // 115 / 100 - 1
  CHECK(e[2].error == Approx(-0.25));  // 150 / 200 - 1
  const auto big = summarize_band(e, 65536, std::int64_t{1} << 62, 0.15);
  CHECK(big.rows == 3);
  CHECK(big.max_abs_error == Approx(0.25));
  CHECK(big.median_abs_error == Approx(0.15));
  CHECK(big.within == 2);  // |0.15| and 0 are within 15%
}

TEST_CASE("tables side by side: where one prediction can be within the tolerance of all", "[fidelity]") {
  // Sizes both tables have, a 0.00 row and a size only one table has skipped.
  const std::vector<TableRow> a{{1024, 0.0}, {2048, 100.0}, {4096, 100.0}, {8192, 50.0}};
  const std::vector<TableRow> b{{1024, 1.0}, {2048, 130.0}, {4096, 140.0}, {16384, 9.0}};
  const auto s = spread({a, b}, 0.15);
  REQUIRE(s.size() == 2);
  CHECK(s[0].size_bytes == 2048);
  CHECK(s[0].busbw_GBps == std::vector<double>{100.0, 130.0});
  CHECK(s[0].max_GBps / s[0].min_GBps == Approx(1.3));
  // Within 15% of both: x >= 130 x 0.85 = 110.5 and x <= 100 x 1.15 = 115.
  CHECK(s[0].lo_GBps == Approx(110.5));
  CHECK(s[0].hi_GBps == Approx(115.0));
  CHECK(s[0].one_prediction_fits());
  // 140 / 100 = 1.4 is above 1.15 / 0.85 = 1.353: 140 x 0.85 = 119 > 115, no x fits both.
  CHECK(s[1].lo_GBps == Approx(119.0));
  CHECK_FALSE(s[1].one_prediction_fits());
  // With 30% the same pair fits: 98 .. 130.
  CHECK(spread({a, b}, 0.30)[1].one_prediction_fits());
  CHECK(spread({}, 0.15).empty());
}
