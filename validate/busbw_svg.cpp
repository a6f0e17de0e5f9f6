#include "validate/busbw_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/svg_text.h"

namespace redsim {
namespace {

constexpr double kW = 960, kLeft = 80, kRight = 40, kHeadingH = 60, kPanelH = 420;
constexpr double kPlotTop = 46, kPlotH = 290;  // within a panel; below it the choices' strip and the size axis
constexpr double kStripH = 22;

// A power of two as nccl-tests' options write it: 512, 64K, 1M, 8G.
std::string size_label(int log2_bytes) {
  const char* unit[] = {"", "K", "M", "G", "T"};
  const int u = std::min(4, log2_bytes / 10);
  return std::to_string(std::int64_t{1} << (log2_bytes - 10 * u)) + unit[u];
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

class Panel {
 public:
  Panel(const BusbwPanel& p, double top, const std::string& predicted_label)
      : p_(p), top_(top), predicted_label_(predicted_label) {
    lo_ = hi_ = std::log2(static_cast<double>(std::max<std::int64_t>(1, p.points.front().size_bytes)));
    for (const auto& q : p.points) {
      const double x = std::log2(static_cast<double>(std::max<std::int64_t>(1, q.size_bytes)));
      lo_ = std::min(lo_, x), hi_ = std::max(hi_, x);
      ymax_ = std::max({ymax_, q.measured_GBps, q.predicted_GBps, q.fitted_GBps});
      fitted_ = fitted_ || q.fitted_GBps >= 0;
      choices_ = choices_ || !q.choice.empty();
    }
    if (hi_ - lo_ < 1) hi_ = lo_ + 1;
    ymax_ = ymax_ > 0 ? ymax_ * 1.08 : 1;
    step_ = svg_nice_step(ymax_);
    ymax_ = std::ceil(ymax_ / step_) * step_;
  }

  void draw(std::ostringstream& s) const {
    s << "<text x=\"" << kLeft << "\" y=\"" << num(top_ + 16) << "\" font-size=\"13\" font-weight=\"bold\">"
      << svg_escape(p_.title, true, 110) << "</text>\n<text x=\"" << kLeft << "\" y=\"" << num(top_ + 33)
      << "\" fill=\"#444\">" << svg_escape(p_.subtitle, true, 130) << "</text>\n";
    axes(s);
    if (choices_) strip(s);
    line(s, Series::measured);
    line(s, Series::predicted);
    if (fitted_) line(s, Series::fitted);
    legend(s);
  }

 private:
  enum class Series { measured, predicted, fitted };
  const BusbwPanel& p_;
  double top_;
  const std::string& predicted_label_;
  double lo_ = 0, hi_ = 0, ymax_ = 0, step_ = 1;
  bool fitted_ = false, choices_ = false;

  static const char* color_of(Series k) {
    return k == Series::measured ? "#111" : k == Series::predicted ? "#1f64b4" : "#c0392b";
  }
  static double value_of(const BusbwPoint& q, Series k) {
    return k == Series::measured ? q.measured_GBps : k == Series::predicted ? q.predicted_GBps : q.fitted_GBps;
  }

  double X(std::int64_t bytes) const {
    const double x = std::log2(static_cast<double>(std::max<std::int64_t>(1, bytes)));
    return kLeft + (x - lo_) / (hi_ - lo_) * (kW - kLeft - kRight);
  }
  double Y(double GBps) const { return top_ + kPlotTop + kPlotH - GBps / ymax_ * kPlotH; }
  double bottom() const { return top_ + kPlotTop + kPlotH; }

  void axes(std::ostringstream& s) const {
    const double x0 = kLeft, x1 = kW - kRight;
    for (double v = 0; v <= ymax_ + step_ / 2; v += step_) {
      s << "<line x1=\"" << x0 << "\" x2=\"" << x1 << "\" y1=\"" << num(Y(v)) << "\" y2=\"" << num(Y(v))
        << "\" stroke=\"#e4e4e4\"/>\n<text x=\"" << x0 - 6 << "\" y=\"" << num(Y(v) + 4) << "\" text-anchor=\"end\">"
        << num(v) << "</text>\n";
    }
    // Size ticks every power of two, labelled every second or fourth one so the labels fit.
    const int first = static_cast<int>(std::ceil(lo_)), last = static_cast<int>(std::floor(hi_));
    const int every = last - first > 24 ? 4 : last - first > 12 ? 2 : 1;
    const double label_y = bottom() + kStripH + 18;
    for (int e = first; e <= last; ++e) {
      const double x = X(std::int64_t{1} << std::min(e, 62));
      s << "<line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << num(bottom()) << "\" y2=\""
        << num(bottom() + 4) << "\" stroke=\"#888\"/>\n";
      if ((e - first) % every == 0)
        s << "<text x=\"" << num(x) << "\" y=\"" << num(label_y) << "\" text-anchor=\"middle\">"
          << size_label(std::clamp(e, 0, 49)) << "</text>\n";
    }
    s << "<line x1=\"" << x0 << "\" x2=\"" << x1 << "\" y1=\"" << num(bottom()) << "\" y2=\"" << num(bottom())
      << "\" stroke=\"#444\"/>\n<line x1=\"" << x0 << "\" x2=\"" << x0 << "\" y1=\"" << num(Y(ymax_)) << "\" y2=\""
      << num(bottom()) << "\" stroke=\"#444\"/>\n";
    s << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << num(label_y + 20) << "\" text-anchor=\"middle\" fill=\"#444\">"
      << "size (bytes, log scale)</text>\n<text transform=\"translate(" << x0 - 52 << "," << num(Y(ymax_ / 2))
      << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#444\">busbw (GB/s)</text>\n";
  }

  // Below the plot, one band per run of sizes with the same choice, labelled where it fits.
  void strip(std::ostringstream& s) const {
    const auto& pts = p_.points;
    const double y = bottom() + 2;
    int shade = 0;
    for (std::size_t i = 0; i < pts.size();) {
      std::size_t j = i;
      while (j + 1 < pts.size() && pts[j + 1].choice == pts[i].choice) ++j;
      const double a = i == 0 ? X(pts[i].size_bytes) : (X(pts[i - 1].size_bytes) + X(pts[i].size_bytes)) / 2;
      const double b =
          j + 1 == pts.size() ? X(pts[j].size_bytes) : (X(pts[j].size_bytes) + X(pts[j + 1].size_bytes)) / 2;
      s << "<rect x=\"" << num(a) << "\" y=\"" << num(y) << "\" width=\"" << num(std::max(1.0, b - a)) << "\" height=\""
        << kStripH - 4 << "\" fill=\"" << (shade++ % 2 ? "#dbe7f5" : "#eef3fa") << "\" stroke=\"#9ab\"/>\n";
      const std::string label = svg_escape(pts[i].choice, true, 40);
      if ((b - a) > 6.5 * static_cast<double>(pts[i].choice.size()))
        s << "<text x=\"" << num((a + b) / 2) << "\" y=\"" << num(y + 13)
          << "\" text-anchor=\"middle\" font-size=\"11\">" << label << "</text>\n";
      i = j + 1;
    }
  }

  void line(std::ostringstream& s, Series k) const {
    const char* color = color_of(k);
    s << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\""
      << (k == Series::measured ? "" : k == Series::predicted ? " stroke-dasharray=\"6 3\"" : " stroke-dasharray=\"2 2\"")
      << " points=\"";
    for (const auto& q : p_.points) s << num(X(q.size_bytes)) << "," << num(Y(std::max(0.0, value_of(q, k)))) << " ";
    s << "\"/>\n";
    for (const auto& q : p_.points) {
      const double x = X(q.size_bytes), y = Y(std::max(0.0, value_of(q, k)));
      if (k == Series::measured)
        s << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"3\" fill=\"" << color << "\"/>\n";
      else if (k == Series::predicted)
        s << "<rect x=\"" << num(x - 3) << "\" y=\"" << num(y - 3) << "\" width=\"6\" height=\"6\" fill=\"" << color
          << "\"/>\n";
      else
        s << "<path d=\"M" << num(x) << "," << num(y - 4) << " l4,7 h-8 z\" fill=\"" << color << "\"/>\n";
    }
  }

  void legend(std::ostringstream& s) const {
    const double x = kLeft + 14, y = top_ + kPlotTop + 14;
    const int rows = fitted_ ? 3 : 2;
    s << "<rect x=\"" << x - 8 << "\" y=\"" << y - 12 << "\" width=\"330\" height=\"" << 20 * rows + 4
      << "\" fill=\"white\" stroke=\"#ccc\"/>\n";
    const std::string labels[] = {"measured (the log)", svg_escape(predicted_label_, true, 40) + (choices_ ? " (band below: the model's choice)" : ""),
                                  "fitted (calibrate's cluster)"};
    const char* dashes[] = {"", " stroke-dasharray=\"6 3\"", " stroke-dasharray=\"2 2\""};
    for (int i = 0; i < rows; ++i) {
      const double yy = y + 20 * i;
      s << "<line x1=\"" << x << "\" x2=\"" << x + 24 << "\" y1=\"" << yy - 4 << "\" y2=\"" << yy - 4 << "\" stroke=\""
        << color_of(static_cast<Series>(i)) << "\" stroke-width=\"2\"" << dashes[i] << "/><text x=\"" << x + 30 << "\" y=\""
        << yy << "\">" << labels[i] << "</text>\n";
    }
  }
};

}  // namespace

std::string busbw_compare_svg(const std::vector<BusbwPanel>& panels, const std::string& heading,
                              const std::string& predicted_label) {
  std::size_t drawn = 0;
  for (const auto& p : panels) drawn += p.points.empty() ? 0 : 1;
  const double h = kHeadingH + kPanelH * static_cast<double>(std::max<std::size_t>(1, drawn));
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << h << "\" viewBox=\"0 0 " << kW << " "
    << h << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << kLeft << "\" y=\"32\" font-size=\"16\" font-weight=\"bold\">" << svg_escape(heading, true, 200) << "</text>\n";
  double top = kHeadingH;
  for (const auto& p : panels) {
    if (p.points.empty()) continue;
    Panel(p, top, predicted_label).draw(s);
    top += kPanelH;
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace redsim
