#include "ember/nn/container.h"

#include <algorithm>
#include <string>

#include "ember/autograd/checkpoint.h"
#include "ember/util/error.h"

namespace ember::nn {
namespace {

std::shared_ptr<Module> at(const std::vector<NamedModule>& list, int64_t i, const char* type) {
  const auto n = static_cast<int64_t>(list.size());
  EMBER_CHECK_INDEX(i >= -n && i < n, "[nn.{}] index {} out of range for {} modules", type, i, n);
  return list[static_cast<size_t>(i < 0 ? i + n : i)].second;
}

}  // namespace

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  push_back(std::to_string(size()), std::move(module));
}

void Sequential::push_back(std::string name, std::shared_ptr<Module> module) {
  add_child(std::move(name), std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, m] : child_list()) y = (*m)(y);
  return y;
}

std::shared_ptr<Module> Sequential::operator[](int64_t i) const {
  return at(child_list(), i, "Sequential");
}

Tensor checkpoint_sequential(const Sequential& seq, int64_t segments, const Tensor& x,
                             bool preserve_rng_state) {
  const int64_t n = seq.size();
  EMBER_CHECK(segments >= 1 && segments <= std::max<int64_t>(n, 1),
              "[nn.checkpoint_sequential] segments must be in [1, {}] for {} modules: got {}",
              std::max<int64_t>(n, 1), n, segments);
  // Segment s runs modules [n * s / segments, n * (s + 1) / segments).
  Tensor y = x;
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t begin = n * s / segments, end = n * (s + 1) / segments;
    auto run = [&seq, begin, end](const Tensor& v) {
      Tensor h = v;
      for (int64_t i = begin; i < end; ++i) h = (*seq[i])(h);
      return h;
    };
    // A segment whose input needs no gradient (the first, on data) keeps its activations: its
    // parameters' gradients need them (Note [Activation checkpointing]).
    const bool last = s + 1 == segments;
    y = !last && y.requires_grad() ? autograd::checkpoint(run, y, preserve_rng_state) : run(y);
  }
  return y;
}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(size()), std::move(module));
}

std::shared_ptr<Module> ModuleList::operator[](int64_t i) const {
  return at(child_list(), i, "ModuleList");
}

}  // namespace ember::nn
