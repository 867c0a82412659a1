// Reading a node's attributes with their defaults: shared by the graph ops and the passes.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ember/graph/graph.h>

namespace ember::graph::detail {

/** "[op] node 'name':", the prefix of a node's errors. */
inline std::string label(const Node& n) {
  return n.name.empty() ? fmt::format("[{}]", n.op) : fmt::format("[{}] node '{}':", n.op, n.name);
}

/** The attribute `name` of `n`, or nullptr. */
inline const Attribute* find_attr(const Node& n, std::string_view name) {
  auto it = n.attrs.find(std::string(name));
  return it == n.attrs.end() ? nullptr : &it->second;
}

/** An int attribute, or `def`. */
inline int64_t attr_int(const Node& n, std::string_view name, int64_t def) {
  const Attribute* a = find_attr(n, name);
  return a ? std::get<int64_t>(*a) : def;
}

/** A float attribute, or `def`. */
inline double attr_float(const Node& n, std::string_view name, double def) {
  const Attribute* a = find_attr(n, name);
  return a ? std::get<double>(*a) : def;
}

/** A string attribute, or `def`. */
inline std::string attr_string(const Node& n, std::string_view name, std::string def) {
  const Attribute* a = find_attr(n, name);
  return a ? std::get<std::string>(*a) : def;
}

/** A floats attribute, or an empty list. */
inline std::vector<double> attr_floats(const Node& n, std::string_view name) {
  const Attribute* a = find_attr(n, name);
  return a ? std::get<std::vector<double>>(*a) : std::vector<double>{};
}

/** An ints attribute, or nothing. */
inline std::optional<std::vector<int64_t>> attr_ints(const Node& n, std::string_view name) {
  const Attribute* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return std::get<std::vector<int64_t>>(*a);
}

}  // namespace ember::graph::detail
