// ExitGate (Note [Exit gates] in ember/util/exit_gate.h).
#include "ember/util/exit_gate.h"

namespace ember {

namespace {
std::atomic<void (*)() noexcept> g_park_hook{nullptr};
}  // namespace

void set_park_hook(void (*hook)() noexcept) noexcept {
  g_park_hook.store(hook);
}

void park_for_exit() noexcept {
  if (auto* hook = g_park_hook.load()) hook();
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void ExitGate::enter() noexcept {
  inside_.fetch_add(1);
  if (parks_here()) {
    inside_.fetch_sub(1);
    park_for_exit();
  }
}

bool ExitGate::close() noexcept {
  if (closed_.load()) return false;
  closer_.store(std::this_thread::get_id());
  return !closed_.exchange(true);
}

bool ExitGate::wait_empty(std::chrono::milliseconds limit) const noexcept {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (inside_.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

void ExitGate::reset() noexcept {
  inside_.store(0);
  closed_.store(false);
}

}  // namespace ember
