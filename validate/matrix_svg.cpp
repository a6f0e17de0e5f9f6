#include "validate/matrix_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/svg_text.h"

namespace redsim {

namespace {

constexpr double kW = 720, kH = 620, kLeft = 80, kRight = 200, kTop = 70, kBottom = 60;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::string matrix_scatter_svg(const std::vector<CaseResult>& rs, const MatrixSummary& summary, double max_error) {
  double hi = 0;
  for (const auto& r : rs) hi = std::max({hi, r.cmp.predicted_step_s, r.cmp.measured_step_max_s, r.cmp.measured_step_median_s});
  hi = hi > 0 ? hi * 1e3 * (1 + std::max(0.05, max_error)) : 1;  // ms, room for the band
  const double step = svg_nice_step(hi);
  hi = std::ceil(hi / step) * step;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto X = [&](double ms) { return kLeft + ms / hi * pw; };
  auto Y = [&](double ms) { return kTop + ph - ms / hi * ph; };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH << "\" viewBox=\"0 0 " << kW << " "
    << kH << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << kLeft << "\" y=\"26\" font-size=\"16\" font-weight=\"bold\">redsim validate: predicted against "
    << "measured step time, " << rs.size() << " case(s)</text>\n";
  s << "<text x=\"" << kLeft << "\" y=\"46\" fill=\"#444\">median |error| " << fmt("%.1f%%", summary.median_abs_error * 100)
    << ", worst " << fmt("%.1f%%", summary.max_abs_error * 100) << ", " << summary.fails << " beyond --max-error "
    << fmt("%.1f%%", max_error * 100) << " (shaded band: within it)</text>\n";
  // The band between predicted = measured x (1 - e) and x (1 + e), clipped to the plot.
  const double top = std::min(hi, hi / (1 + max_error));
  s << "<polygon points=\"" << X(0) << "," << Y(0) << " " << X(top) << "," << Y(top * (1 + max_error)) << " " << X(hi) << ","
    << Y(hi * (1 + max_error) > hi ? hi : hi * (1 + max_error)) << " " << X(hi) << "," << Y(hi * (1 - max_error))
    << "\" fill=\"#d8ecd8\" stroke=\"none\"/>\n";
  for (double v = 0; v <= hi + step * 0.01; v += step) {
    s << "<line x1=\"" << X(v) << "\" x2=\"" << X(v) << "\" y1=\"" << kTop << "\" y2=\"" << kTop + ph
      << "\" stroke=\"#e4e4e4\"/>\n<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v)
      << "\" stroke=\"#e4e4e4\"/>\n";
    const std::string lab = fmt(step < 1 ? "%.2f" : "%.0f", v);
    s << "<text x=\"" << X(v) << "\" y=\"" << kTop + ph + 16 << "\" text-anchor=\"middle\">" << lab << "</text>\n";
    s << "<text x=\"" << kLeft - 6 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\">" << lab << "</text>\n";
  }
  s << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  s << "<line x1=\"" << X(0) << "\" y1=\"" << Y(0) << "\" x2=\"" << X(hi) << "\" y2=\"" << Y(hi)
    << "\" stroke=\"gray\" stroke-dasharray=\"4\"/>\n";
  s << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 18 << "\" text-anchor=\"middle\">measured step, median (ms)</text>\n";
  s << "<text x=\"22\" y=\"" << kTop + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 22 " << kTop + ph / 2
    << ")\">predicted step (ms)</text>\n";
  // Labels beside their points, moved down past labels already placed so none overlap; a leader
  // line joins a moved label to its point.
  struct Box {
    double x0, x1, y;
  };
  std::vector<Box> placed;
  for (const auto& r : rs) {
    const double mx = r.cmp.measured_step_median_s * 1e3, py = r.cmp.predicted_step_s * 1e3;
    const std::string color = r.pass ? "steelblue" : "#d00";
    // The measured spread (min..max) as a horizontal bar.
    s << "<line x1=\"" << X(r.cmp.measured_step_min_s * 1e3) << "\" x2=\"" << X(r.cmp.measured_step_max_s * 1e3) << "\" y1=\""
      << Y(py) << "\" y2=\"" << Y(py) << "\" stroke=\"" << color << "\"/>\n";
    const std::string text = svg_escape(r.label, true, 60) + fmt(" %+.1f%%", r.cmp.step_error * 100);
    s << "<circle cx=\"" << X(mx) << "\" cy=\"" << Y(py) << "\" r=\"4\" fill=\"" << color << "\"><title>" << text
      << "</title></circle>\n";
    const double tx = X(mx) + 7, width = 6.6 * static_cast<double>(text.size());
    double ty = Y(py) - 6;
    for (bool moved = true; moved;) {
      moved = false;
      for (const auto& b : placed)
        if (std::abs(b.y - ty) < 14 && tx < b.x1 && b.x0 < tx + width) ty = b.y + 14, moved = true;
    }
    placed.push_back({tx, tx + width, ty});
    if (ty > Y(py) + 2)
      s << "<line x1=\"" << X(mx) << "\" y1=\"" << Y(py) << "\" x2=\"" << tx << "\" y2=\"" << ty - 4 << "\" stroke=\"" << color
        << "\" stroke-width=\"0.5\"/>\n";
    s << "<text x=\"" << tx << "\" y=\"" << ty << "\" fill=\"" << color
      << "\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">" << text << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace redsim
