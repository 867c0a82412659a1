#include "tools/ember/plot.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/util/file_writer.h"

namespace ember::tools {
namespace {

constexpr double kWidth = 480, kHeight = 340;                       // one chart
constexpr double kLeft = 60, kRight = 20, kTop = 40, kBottom = 50;  // plot margins

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

// A "nice" tick step covering `span` in about 5 steps (1, 2 or 5 times a power of ten).
double tick_step(double span) {
  if (span <= 0) return 1;
  const double raw = span / 5, mag = std::pow(10, std::floor(std::log10(raw)));
  const double r = raw / mag;
  return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

std::string chart_svg(const Chart& c, double ox) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : c.series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  const double ypad = y1 > y0 ? 0.05 * (y1 - y0) : 0.5;
  y0 -= ypad, y1 += ypad;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return ox + kLeft + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + (y1 - y) / (y1 - y0) * ph; };

  std::string out = fmt::format(
      "<text x='{:.1f}' y='22' font-size='15' text-anchor='middle' font-weight='bold'>{}</text>\n",
      ox + kLeft + pw / 2, escape(c.title));
  out += fmt::format(
      "<rect x='{:.1f}' y='{}' width='{:.1f}' height='{:.1f}' fill='white' "
      "stroke='#444'/>\n",
      ox + kLeft, kTop, pw, ph);
  const double ys = tick_step(y1 - y0);
  for (double y = std::ceil(y0 / ys) * ys; y <= y1; y += ys) {
    out += fmt::format(
        "<line x1='{:.1f}' x2='{:.1f}' y1='{:.1f}' y2='{:.1f}' stroke='#ddd'/>"
        "<text x='{:.1f}' y='{:.1f}' font-size='11' text-anchor='end'>{:g}</text>\n",
        ox + kLeft, ox + kLeft + pw, py(y), py(y), ox + kLeft - 5, py(y) + 4,
        std::round(y / ys) * ys);
  }
  const double xs = tick_step(x1 - x0);
  for (double x = std::ceil(x0 / xs) * xs; x <= x1 + 1e-9; x += xs) {
    out += fmt::format(
        "<text x='{:.1f}' y='{:.1f}' font-size='11' text-anchor='middle'>{:g}"
        "</text>\n",
        px(x), kTop + ph + 16, std::round(x / xs) * xs);
  }
  out += fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='12' text-anchor='middle'>{}</text>\n",
                     ox + kLeft + pw / 2, kHeight - 12, escape(c.x_label));
  out += fmt::format(
      "<text x='{:.1f}' y='{:.1f}' font-size='12' text-anchor='middle' "
      "transform='rotate(-90 {:.1f} {:.1f})'>{}</text>\n",
      ox + 16, kTop + ph / 2, ox + 16, kTop + ph / 2, escape(c.y_label));
  double legend_y = kTop + 16;
  for (const Series& s : c.series) {
    std::string pts;
    for (auto [x, y] : s.points) {
      if (std::isfinite(x) && std::isfinite(y)) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    }
    out += fmt::format("<polyline fill='none' stroke='{}' stroke-width='2' points='{}'/>\n",
                       s.color, pts);
    if (s.points.size() <= 50) {
      for (auto [x, y] : s.points) {
        if (std::isfinite(x) && std::isfinite(y)) {
          out += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='3' fill='{}'/>\n", px(x), py(y),
                             s.color);
        }
      }
    }
    out += fmt::format(
        "<line x1='{:.1f}' x2='{:.1f}' y1='{:.1f}' y2='{:.1f}' stroke='{}' "
        "stroke-width='3'/><text x='{:.1f}' y='{:.1f}' font-size='11'>{}</text>\n",
        ox + kLeft + pw - 150, ox + kLeft + pw - 130, legend_y - 4, legend_y - 4, s.color,
        ox + kLeft + pw - 125, legend_y, escape(s.label));
    legend_y += 16;
  }
  return out;
}

}  // namespace

std::string svg_charts(const std::vector<Chart>& charts) {
  std::string out = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{:.0f}' height='{:.0f}' "
      "font-family='sans-serif'>\n<rect width='100%' height='100%' fill='#fafafa'/>\n",
      kWidth * static_cast<double>(charts.size()), kHeight);
  for (size_t i = 0; i < charts.size(); ++i)
    out += chart_svg(charts[i], kWidth * static_cast<double>(i));
  return out + "</svg>\n";
}

void write_svg(const std::string& path, const std::vector<Chart>& charts) {
  ember::detail::write_file(path, svg_charts(charts), "train.curve");
}

}  // namespace ember::tools
