// Training curves as an SVG picture: loss on the left, accuracy on the right.
#pragma once

#include <string>
#include <vector>

namespace ember::tools {

/** One line of a chart: (x, y) points and a colour. */
struct Series {
  std::string label;
  std::string color;
  std::vector<std::pair<double, double>> points;
};

/** A chart: title, axis labels and its lines. */
struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

/** The SVG text of `charts` drawn side by side. */
std::string svg_charts(const std::vector<Chart>& charts);

/** Writes svg_charts(charts) to `path`; throws ember::Error if the file cannot be written. */
void write_svg(const std::string& path, const std::vector<Chart>& charts);

}  // namespace ember::tools
