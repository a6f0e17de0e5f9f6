#include "tune/report_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "core/svg_text.h"
#include "core/units.h"

namespace redsim::tune {
namespace {

constexpr double kWidth = 1040, kHeight = 620;
constexpr double kLeft = 80, kRight = 310, kTop = 80, kBottom = 70;

std::string f(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string family_color(const std::string& fam, int shade) {
  // Hue per strategy, lighter for later channel counts.
  static const std::map<std::string, std::array<int, 3>> base{{"flat", {{90, 90, 90}}},
                                                              {"bucketed", {{31, 100, 180}}},
                                                              {"zero", {{30, 140, 60}}},
                                                              {"accumulate", {{220, 110, 20}}},
                                                              {"localsgd", {{140, 60, 170}}},
                                                              {"fsdp", {{200, 40, 60}}},
                                                              {"hsdp", {{150, 110, 40}}}};
  auto it = base.find(fam);
  std::array<int, 3> c = it == base.end() ? std::array<int, 3>{{0, 0, 0}} : it->second;
  const double t = std::min(0.6, 0.15 * shade);
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(c[0] + (255 - c[0]) * t),
                static_cast<int>(c[1] + (255 - c[1]) * t), static_cast<int>(c[2] + (255 - c[2]) * t));
  return buf;
}

const char* dash_of(int shade) {
  static const char* d[] = {"", "7 3", "3 3", "10 3 2 3", "1 3", "12 6"};
  return d[std::min(shade, 5)];
}

// Families whose time does not depend on a bucket size: a horizontal line.
bool no_buckets(const std::string& family) { return family == "flat" || family == "fsdp" || family == "hsdp"; }

// The report: one line per (strategy, channels, algorithm), through that setting's own
// simulated points only (the best of several algorithms at each size zig-zagged between them).
class Report {
 public:
  Report(const TuneResult& r, const TuneInputs& in) : r_(r), in_(in) {
    collect_axes();
    collect_series();
    scale();
  }

  std::string svg() {
    header();
    axes();
    lines();
    chosen();
    legend();
    s_ += "</svg>\n";
    return std::move(s_);
  }

 private:
  struct Series {
    std::string family;
    int channels;
    std::string algorithm;
    std::map<std::int64_t, double> by_bucket;  // bucket bytes -> best simulated objective (ms)
    std::optional<double> flat_ms;
  };

  // The bucket range, and the channel counts and algorithms that set each line's shade and dash.
  void collect_axes() {
    for (std::size_t p = 0; p < r_.points.size(); ++p) {
      const auto& c = r_.candidate(p);
      if (!no_buckets(c.family)) {
        bmin_ = bmin_ == 0 ? c.knobs.bucket_cap_bytes : std::min(bmin_, c.knobs.bucket_cap_bytes);
        bmax_ = std::max(bmax_, c.knobs.bucket_cap_bytes);
      }
      if (std::find(channel_values_.begin(), channel_values_.end(), c.knobs.channels) == channel_values_.end())
        channel_values_.push_back(c.knobs.channels);
      if (std::find(algorithm_values_.begin(), algorithm_values_.end(), algorithm_label(c.knobs)) == algorithm_values_.end())
        algorithm_values_.push_back(algorithm_label(c.knobs));
    }
    std::sort(channel_values_.begin(), channel_values_.end());
    if (bmin_ == 0) bmin_ = kMiB, bmax_ = kGiB;
    if (bmax_ <= bmin_) bmax_ = bmin_ * 2;
  }

  void collect_series() {
    const auto fams = searchable_families();
    auto ford = [&](const std::string& fam) { return static_cast<int>(std::find(fams.begin(), fams.end(), fam) - fams.begin()); };
    for (auto p : r_.ranking) {
      const auto& c = r_.candidate(p);
      const std::string alg = c.family == "zero" || c.family == "fsdp" || c.family == "hsdp" ? std::string("ring") : algorithm_label(c.knobs);
      auto& se = series_[{ford(c.family), c.knobs.channels, alg}];
      se.family = c.family;
      se.channels = c.knobs.channels;
      se.algorithm = alg;
      const double v = r_.eval(p).objective_s * 1e3;
      if (no_buckets(c.family)) {
        se.flat_ms = std::min(se.flat_ms.value_or(v), v);
      } else {
        auto it = se.by_bucket.find(c.knobs.bucket_cap_bytes);
        if (it == se.by_bucket.end() || v < it->second) se.by_bucket[c.knobs.bucket_cap_bytes] = v;
      }
      ymin_ = std::min(ymin_, v);
      ymax_ = std::max(ymax_, v);
    }
  }

  void scale() {
    best_ms_ = r_.eval(r_.best).objective_s * 1e3;
    ymax_ = std::min(ymax_, best_ms_ * 3);  // far-off settings are clipped, not allowed to squash the interesting part
    ylo_ = std::max(0.0, ymin_ - (ymax_ - ymin_) * 0.05);
    yhi_ = ymax_ + (ymax_ - ymin_) * 0.05;
    if (yhi_ <= ylo_) yhi_ = ylo_ + std::max(1e-3, ylo_ * 0.1);
    step_ = svg_nice_step(yhi_ - ylo_);
    ylo_ = std::floor(ylo_ / step_) * step_;
    yhi_ = std::ceil(yhi_ / step_) * step_;
    lx0_ = std::log2(static_cast<double>(bmin_));
    lx1_ = std::log2(static_cast<double>(bmax_));
  }

  double X(std::int64_t b) const { return kLeft + (std::log2(static_cast<double>(b)) - lx0_) / (lx1_ - lx0_) * pw_; }
  double Y(double ms) const { return kTop + (yhi_ - ms) / (yhi_ - ylo_) * ph_; }
  int shade_of(int ch) const {
    return static_cast<int>(std::find(channel_values_.begin(), channel_values_.end(), ch) - channel_values_.begin());
  }
  int dash_index(const std::string& alg) const {
    return static_cast<int>(std::find(algorithm_values_.begin(), algorithm_values_.end(), alg) - algorithm_values_.begin());
  }

  void header() {
    s_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + f(kWidth) + "\" height=\"" + f(kHeight) + "\" viewBox=\"0 0 " +
          f(kWidth) + " " + f(kHeight) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    s_ += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    s_ += "<defs><clipPath id=\"plot\"><rect x=\"" + f(kLeft) + "\" y=\"" + f(kTop) + "\" width=\"" + f(pw_) + "\" height=\"" +
          f(ph_) + "\"/></clipPath></defs>\n";
    s_ += "<text x=\"" + f(kLeft) + "\" y=\"28\" font-size=\"16\" font-weight=\"bold\">" +
          svg_escape("redsim tune: " + in_.trace->model + " on " + in_.cluster->name + " (" + std::to_string(in_.cluster->world_size()) +
              " ranks)") +
          "</text>\n";
    s_ += "<text x=\"" + f(kLeft) + "\" y=\"47\" fill=\"#444\">" +
          svg_escape("predicted time per optimizer step (" + std::to_string(in_.constraints.microbatches) +
              " micro-batch(es) per rank) against bucket size; " + std::string(search_method_name(r_.method)) + " search, " +
              std::to_string(r_.simulations) + " simulations") +
          "</text>\n";
    s_ += "<text x=\"" + f(kLeft) + "\" y=\"63\" fill=\"#444\">" +
          svg_escape("each line: one strategy, algorithm and channel count, through its simulated settings only (the best at "
              "each bucket size); red ring: the chosen setting") +
          "</text>\n";
  }

  void axes() {
    for (double v = ylo_; v <= yhi_ + step_ * 0.01; v += step_) {
      s_ += "<line x1=\"" + f(kLeft) + "\" x2=\"" + f(kLeft + pw_) + "\" y1=\"" + f(Y(v)) + "\" y2=\"" + f(Y(v)) +
            "\" stroke=\"#e4e4e4\"/>\n";
      char lab[32];
      std::snprintf(lab, sizeof lab, step_ < 0.1 ? "%.3f" : step_ < 1 ? "%.2f" : "%.1f", v);
      s_ += "<text x=\"" + f(kLeft - 6) + "\" y=\"" + f(Y(v) + 4) + "\" text-anchor=\"end\">" + lab + "</text>\n";
    }
    for (std::int64_t b = bmin_; b <= bmax_; b *= 2) {
      const bool major = static_cast<int>(std::round(std::log2(static_cast<double>(b)) - lx0_)) % 2 == 0;
      s_ += "<line x1=\"" + f(X(b)) + "\" x2=\"" + f(X(b)) + "\" y1=\"" + f(kTop) + "\" y2=\"" + f(kTop + ph_) + "\" stroke=\"" +
            (major ? "#e4e4e4" : "#f2f2f2") + "\"/>\n";
      if (major)
        s_ += "<text x=\"" + f(X(b)) + "\" y=\"" + f(kTop + ph_ + 18) + "\" text-anchor=\"middle\">" + svg_escape(format_bytes_binary(b)) +
              "</text>\n";
    }
    s_ += "<rect x=\"" + f(kLeft) + "\" y=\"" + f(kTop) + "\" width=\"" + f(pw_) + "\" height=\"" + f(ph_) +
          "\" fill=\"none\" stroke=\"#333\"/>\n";
    s_ += "<text x=\"" + f(kLeft + pw_ / 2) + "\" y=\"" + f(kHeight - 22) +
          "\" text-anchor=\"middle\">bucket size (DDP bucket_cap / ZeRO reduce bucket), log scale</text>\n";
    s_ += "<text transform=\"translate(22," + f(kTop + ph_ / 2) +
          ") rotate(-90)\" text-anchor=\"middle\">time per optimizer step (ms)</text>\n";
  }

  void lines() {
    s_ += "<g clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\">\n";
    for (const auto& [key, se] : series_) {
      const std::string color = family_color(se.family, shade_of(se.channels));
      const std::string dash = dash_of(dash_index(se.algorithm));
      const std::string dash_attr = dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"";
      if (se.flat_ms) {
        s_ += "<line x1=\"" + f(kLeft) + "\" x2=\"" + f(kLeft + pw_) + "\" y1=\"" + f(Y(*se.flat_ms)) + "\" y2=\"" +
              f(Y(*se.flat_ms)) + "\" stroke=\"" + color + "\"" + dash_attr + " stroke-width=\"1.5\"/>\n";
        continue;
      }
      std::string pts;
      for (const auto& [b, v] : se.by_bucket) pts += f(X(b)) + "," + f(Y(v)) + " ";
      if (se.by_bucket.size() > 1) s_ += "<polyline points=\"" + pts + "\" stroke=\"" + color + "\"" + dash_attr + "/>\n";
      for (const auto& [b, v] : se.by_bucket)
        s_ += "<circle cx=\"" + f(X(b)) + "\" cy=\"" + f(Y(v)) + "\" r=\"3\" fill=\"" + color + "\" stroke=\"none\"/>\n";
    }
    s_ += "</g>\n";
  }

  void chosen() {
    const auto& chosen = r_.candidate(r_.best);
    const double cx = no_buckets(chosen.family) ? kLeft + 12 : X(chosen.knobs.bucket_cap_bytes);
    const double cy = Y(best_ms_);
    s_ += "<circle cx=\"" + f(cx) + "\" cy=\"" + f(cy) + "\" r=\"9\" fill=\"none\" stroke=\"#d00\" stroke-width=\"2.5\"/>\n";
    char lab[64];
    std::snprintf(lab, sizeof lab, "%.3f ms", best_ms_);
    const std::string label = "chosen: " + chosen.family + ", " + describe_knobs(chosen) + ": " + lab;
    const double width = 6.6 * static_cast<double>(label.size());  // about 6.6 px a character at 12 px
    const double tx = std::clamp(cx - width / 2, kLeft + 4, std::max(kLeft + 4, kLeft + pw_ - width - 4));
    const double ty = cy - 16 < kTop + 14 ? cy + 24 : cy - 16;
    s_ += "<text x=\"" + f(tx) + "\" y=\"" + f(ty) +
          "\" fill=\"#d00\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">" + svg_escape(label) + "</text>\n";
  }

  void legend() {
    double ly = kTop + 6;
    const double lx = kLeft + pw_ + 18;
    s_ += "<text x=\"" + f(lx) + "\" y=\"" + f(ly) + "\" font-weight=\"bold\">strategy, algorithm x channels</text>\n";
    ly += 18;
    for (const auto& [key, se] : series_) {
      if (ly > kHeight - 20) break;
      const std::string color = family_color(se.family, shade_of(se.channels));
      const std::string dash = dash_of(dash_index(se.algorithm));
      s_ += "<line x1=\"" + f(lx) + "\" x2=\"" + f(lx + 30) + "\" y1=\"" + f(ly - 4) + "\" y2=\"" + f(ly - 4) + "\" stroke=\"" +
            color + "\" stroke-width=\"2\"" + (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>\n";
      double lowest = se.flat_ms.value_or(1e300);
      for (const auto& [b, v] : se.by_bucket) lowest = std::min(lowest, v);
      char off[64] = "";
      if (lowest > yhi_) std::snprintf(off, sizeof off, " (off scale: %.1f ms)", lowest);
      s_ += "<text x=\"" + f(lx + 38) + "\" y=\"" + f(ly) + "\">" +
            svg_escape(se.family + ", " + se.algorithm + (se.channels > 0 ? " x" + std::to_string(se.channels) : "") +
                (se.flat_ms ? " (no buckets)" : "") + off) +
            "</text>\n";
      ly += 17;
    }
  }

  const TuneResult& r_;
  const TuneInputs& in_;
  std::map<std::tuple<int, int, std::string>, Series> series_;  // (family order, channels, algorithm)
  std::vector<std::string> algorithm_values_;
  std::vector<int> channel_values_;
  std::int64_t bmin_ = 0, bmax_ = 0;
  double ymin_ = 1e300, ymax_ = 0, best_ms_ = 0;
  double ylo_ = 0, yhi_ = 0, step_ = 1, lx0_ = 0, lx1_ = 1;
  const double pw_ = kWidth - kLeft - kRight, ph_ = kHeight - kTop - kBottom;
  std::string s_;
};

}  // namespace

std::string tune_report_svg(const TuneResult& r, const TuneInputs& in) { return Report(r, in).svg(); }

}  // namespace redsim::tune
