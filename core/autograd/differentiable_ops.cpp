#include "core/autograd/differentiable_ops.h"

#include <algorithm>
#include <mutex>

namespace ember::autograd {
namespace {
struct Registry {
  std::mutex mu;
  std::vector<std::string> names;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

DeclareDifferentiable::DeclareDifferentiable(std::initializer_list<const char*> names) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const char* n : names) r.names.emplace_back(n);
}

std::vector<std::string> differentiable_ops() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out = r.names;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace ember::autograd
