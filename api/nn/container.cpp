#include "ember/nn/container.h"

#include <string>

#include "ember/util/error.h"

namespace ember::nn {
namespace {

std::shared_ptr<Module> at(const std::vector<std::shared_ptr<Module>>& list, int64_t i,
                           const char* type) {
  const auto n = static_cast<int64_t>(list.size());
  EMBER_CHECK_INDEX(i >= -n && i < n, "[nn.{}] index {} out of range for {} modules", type, i, n);
  return list[static_cast<size_t>(i < 0 ? i + n : i)];
}

}  // namespace

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : modules_) y = (*m)(y);
  return y;
}

std::shared_ptr<Module> Sequential::operator[](int64_t i) const {
  return at(modules_, i, "Sequential");
}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

std::shared_ptr<Module> ModuleList::operator[](int64_t i) const {
  return at(modules_, i, "ModuleList");
}

}  // namespace ember::nn
