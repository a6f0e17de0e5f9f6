#include "tune/report_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

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

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '&')
      o += "&amp;";
    else if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
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

double nice_step(double range) {
  const double raw = range / 6;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

}  // namespace

std::string tune_report_svg(const TuneResult& r, const TuneInputs& in) {
  struct Series {
    std::string family;
    int channels;
    std::string algorithm;
    std::map<std::int64_t, double> by_bucket;  // bucket bytes -> best simulated objective (ms)
    std::optional<double> flat_ms;
  };
  // One line per (strategy, channels, algorithm), through that setting's own simulated points
  // only: the best of several algorithms at each size zig-zagged between them.
  std::map<std::tuple<int, int, std::string>, Series> series;  // (family order, channels, algorithm)
  std::vector<std::string> algorithm_values;
  const auto fams = searchable_families();
  auto ford = [&](const std::string& fam) { return static_cast<int>(std::find(fams.begin(), fams.end(), fam) - fams.begin()); };
  std::vector<int> channel_values;
  std::int64_t bmin = 0, bmax = 0;
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    const auto& c = r.candidate(p);
    if (!no_buckets(c.family)) {
      bmin = bmin == 0 ? c.knobs.bucket_cap_bytes : std::min(bmin, c.knobs.bucket_cap_bytes);
      bmax = std::max(bmax, c.knobs.bucket_cap_bytes);
    }
    if (std::find(channel_values.begin(), channel_values.end(), c.knobs.channels) == channel_values.end())
      channel_values.push_back(c.knobs.channels);
    if (std::find(algorithm_values.begin(), algorithm_values.end(), algorithm_label(c.knobs)) == algorithm_values.end())
      algorithm_values.push_back(algorithm_label(c.knobs));
  }
  auto dash_index = [&](const std::string& alg) {
    return static_cast<int>(std::find(algorithm_values.begin(), algorithm_values.end(), alg) - algorithm_values.begin());
  };
  std::sort(channel_values.begin(), channel_values.end());
  auto shade_of = [&](int ch) {
    return static_cast<int>(std::find(channel_values.begin(), channel_values.end(), ch) - channel_values.begin());
  };
  double ymin = 1e300, ymax = 0;
  for (auto p : r.ranking) {
    const auto& c = r.candidate(p);
    const std::string alg = c.family == "zero" || c.family == "fsdp" || c.family == "hsdp" ? std::string("ring") : algorithm_label(c.knobs);
    auto& s = series[{ford(c.family), c.knobs.channels, alg}];
    s.family = c.family;
    s.channels = c.knobs.channels;
    s.algorithm = alg;
    const double v = r.eval(p).objective_s * 1e3;
    if (no_buckets(c.family)) {
      s.flat_ms = std::min(s.flat_ms.value_or(v), v);
    } else {
      auto it = s.by_bucket.find(c.knobs.bucket_cap_bytes);
      if (it == s.by_bucket.end() || v < it->second) s.by_bucket[c.knobs.bucket_cap_bytes] = v;
    }
    ymin = std::min(ymin, v);
    ymax = std::max(ymax, v);
  }
  if (bmin == 0) bmin = kMiB, bmax = kGiB;
  if (bmax <= bmin) bmax = bmin * 2;
  const double best_ms = r.eval(r.best).objective_s * 1e3;
  ymax = std::min(ymax, best_ms * 3);  // far-off settings are clipped, not allowed to squash the interesting part
  double ylo = std::max(0.0, ymin - (ymax - ymin) * 0.05), yhi = ymax + (ymax - ymin) * 0.05;
  if (yhi <= ylo) yhi = ylo + std::max(1e-3, ylo * 0.1);
  const double step = nice_step(yhi - ylo);
  ylo = std::floor(ylo / step) * step;
  yhi = std::ceil(yhi / step) * step;

  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  const double lx0 = std::log2(static_cast<double>(bmin)), lx1 = std::log2(static_cast<double>(bmax));
  auto X = [&](std::int64_t b) { return kLeft + (std::log2(static_cast<double>(b)) - lx0) / (lx1 - lx0) * pw; };
  auto Y = [&](double ms) { return kTop + (yhi - ms) / (yhi - ylo) * ph; };

  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + f(kWidth) + "\" height=\"" + f(kHeight) + "\" viewBox=\"0 0 " +
       f(kWidth) + " " + f(kHeight) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<defs><clipPath id=\"plot\"><rect x=\"" + f(kLeft) + "\" y=\"" + f(kTop) + "\" width=\"" + f(pw) + "\" height=\"" +
       f(ph) + "\"/></clipPath></defs>\n";
  s += "<text x=\"" + f(kLeft) + "\" y=\"28\" font-size=\"16\" font-weight=\"bold\">" +
       esc("redsim tune: " + in.trace->model + " on " + in.cluster->name + " (" + std::to_string(in.cluster->world_size()) +
           " ranks)") +
       "</text>\n";
  s += "<text x=\"" + f(kLeft) + "\" y=\"47\" fill=\"#444\">" +
       esc("predicted time per optimizer step (" + std::to_string(in.constraints.microbatches) +
           " micro-batch(es) per rank) against bucket size; " + std::string(search_method_name(r.method)) + " search, " +
           std::to_string(r.simulations) + " simulations") +
       "</text>\n";
  s += "<text x=\"" + f(kLeft) + "\" y=\"63\" fill=\"#444\">" +
       esc("each line: one strategy, algorithm and channel count, through its simulated settings only (the best at "
           "each bucket size); red ring: the chosen setting") +
       "</text>\n";
  // Grid and axes.
  for (double v = ylo; v <= yhi + step * 0.01; v += step) {
    s += "<line x1=\"" + f(kLeft) + "\" x2=\"" + f(kLeft + pw) + "\" y1=\"" + f(Y(v)) + "\" y2=\"" + f(Y(v)) +
         "\" stroke=\"#e4e4e4\"/>\n";
    char lab[32];
    std::snprintf(lab, sizeof lab, step < 0.1 ? "%.3f" : step < 1 ? "%.2f" : "%.1f", v);
    s += "<text x=\"" + f(kLeft - 6) + "\" y=\"" + f(Y(v) + 4) + "\" text-anchor=\"end\">" + lab + "</text>\n";
  }
  for (std::int64_t b = bmin; b <= bmax; b *= 2) {
    const bool major = static_cast<int>(std::round(std::log2(static_cast<double>(b)) - lx0)) % 2 == 0;
    s += "<line x1=\"" + f(X(b)) + "\" x2=\"" + f(X(b)) + "\" y1=\"" + f(kTop) + "\" y2=\"" + f(kTop + ph) + "\" stroke=\"" +
         (major ? "#e4e4e4" : "#f2f2f2") + "\"/>\n";
    if (major)
      s += "<text x=\"" + f(X(b)) + "\" y=\"" + f(kTop + ph + 18) + "\" text-anchor=\"middle\">" + esc(format_bytes_binary(b)) +
           "</text>\n";
  }
  s += "<rect x=\"" + f(kLeft) + "\" y=\"" + f(kTop) + "\" width=\"" + f(pw) + "\" height=\"" + f(ph) +
       "\" fill=\"none\" stroke=\"#333\"/>\n";
  s += "<text x=\"" + f(kLeft + pw / 2) + "\" y=\"" + f(kHeight - 22) +
       "\" text-anchor=\"middle\">bucket size (DDP bucket_cap / ZeRO reduce bucket), log scale</text>\n";
  s += "<text transform=\"translate(22," + f(kTop + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">time per optimizer step (ms)</text>\n";

  // Series.
  s += "<g clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\">\n";
  for (const auto& [key, se] : series) {
    const std::string color = family_color(se.family, shade_of(se.channels));
    const std::string dash = dash_of(dash_index(se.algorithm));
    const std::string dash_attr = dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"";
    if (se.flat_ms) {
      s += "<line x1=\"" + f(kLeft) + "\" x2=\"" + f(kLeft + pw) + "\" y1=\"" + f(Y(*se.flat_ms)) + "\" y2=\"" +
           f(Y(*se.flat_ms)) + "\" stroke=\"" + color + "\"" + dash_attr + " stroke-width=\"1.5\"/>\n";
      continue;
    }
    std::string pts;
    for (const auto& [b, v] : se.by_bucket) pts += f(X(b)) + "," + f(Y(v)) + " ";
    if (se.by_bucket.size() > 1) s += "<polyline points=\"" + pts + "\" stroke=\"" + color + "\"" + dash_attr + "/>\n";
    for (const auto& [b, v] : se.by_bucket)
      s += "<circle cx=\"" + f(X(b)) + "\" cy=\"" + f(Y(v)) + "\" r=\"3\" fill=\"" + color + "\" stroke=\"none\"/>\n";
  }
  s += "</g>\n";

  // The chosen point.
  const auto& chosen = r.candidate(r.best);
  const double cx = no_buckets(chosen.family) ? kLeft + 12 : X(chosen.knobs.bucket_cap_bytes);
  const double cy = Y(best_ms);
  s += "<circle cx=\"" + f(cx) + "\" cy=\"" + f(cy) + "\" r=\"9\" fill=\"none\" stroke=\"#d00\" stroke-width=\"2.5\"/>\n";
  char lab[64];
  std::snprintf(lab, sizeof lab, "%.3f ms", best_ms);
  const std::string label = "chosen: " + chosen.family + ", " + describe_knobs(chosen) + ": " + lab;
  const double width = 6.6 * static_cast<double>(label.size());  // about 6.6 px a character at 12 px
  const double tx = std::clamp(cx - width / 2, kLeft + 4, std::max(kLeft + 4, kLeft + pw - width - 4));
  const double ty = cy - 16 < kTop + 14 ? cy + 24 : cy - 16;
  s += "<text x=\"" + f(tx) + "\" y=\"" + f(ty) +
       "\" fill=\"#d00\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">" + esc(label) + "</text>\n";

  // Legend.
  double ly = kTop + 6;
  const double lx = kLeft + pw + 18;
  s += "<text x=\"" + f(lx) + "\" y=\"" + f(ly) + "\" font-weight=\"bold\">strategy, algorithm x channels</text>\n";
  ly += 18;
  for (const auto& [key, se] : series) {
    if (ly > kHeight - 20) break;
    const std::string color = family_color(se.family, shade_of(se.channels));
    const std::string dash = dash_of(dash_index(se.algorithm));
    s += "<line x1=\"" + f(lx) + "\" x2=\"" + f(lx + 30) + "\" y1=\"" + f(ly - 4) + "\" y2=\"" + f(ly - 4) + "\" stroke=\"" +
         color + "\" stroke-width=\"2\"" + (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>\n";
    double lowest = se.flat_ms.value_or(1e300);
    for (const auto& [b, v] : se.by_bucket) lowest = std::min(lowest, v);
    char off[64] = "";
    if (lowest > yhi) std::snprintf(off, sizeof off, " (off scale: %.1f ms)", lowest);
    s += "<text x=\"" + f(lx + 38) + "\" y=\"" + f(ly) + "\">" +
         esc(se.family + ", " + se.algorithm + (se.channels > 0 ? " x" + std::to_string(se.channels) : "") + (se.flat_ms ? " (no buckets)" : "") + off) + "</text>\n";
    ly += 17;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace redsim::tune
