// A pointer to an object that carries its own atomic reference count.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace ember {

/** Base of intrusively counted objects; the count starts at zero. */
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  /** Current count, for tests and diagnostics only. */
  uint32_t use_count() const { return refs_.load(std::memory_order_relaxed); }

 protected:
  ~RefCounted() = default;

 private:
  template <typename T>
  friend class IntrusivePtr;
  mutable std::atomic<uint32_t> refs_{0};
};

/** Shared ownership of a RefCounted T; deletes it when the last pointer goes. */
template <typename T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  /** Takes a reference to `p` (may be null). */
  explicit IntrusivePtr(T* p) : p_(p) { retain(); }
  IntrusivePtr(const IntrusivePtr& o) : p_(o.p_) { retain(); }
  IntrusivePtr(IntrusivePtr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  IntrusivePtr& operator=(const IntrusivePtr& o) {
    IntrusivePtr(o).swap(*this);
    return *this;
  }
  IntrusivePtr& operator=(IntrusivePtr&& o) noexcept {
    IntrusivePtr(std::move(o)).swap(*this);
    return *this;
  }
  ~IntrusivePtr() { release(); }

  /** Exchanges the pointees. */
  void swap(IntrusivePtr& o) noexcept { std::swap(p_, o.p_); }
  /** The raw pointer, still owned. */
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  /** Number of owners, for tests. */
  uint32_t use_count() const { return p_ ? p_->use_count() : 0; }

 private:
  void retain() {
    if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (p_ && p_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }
  T* p_ = nullptr;
};

/** Allocates a T and returns the first owning pointer. */
template <typename T, typename... Args>
IntrusivePtr<T> make_intrusive(Args&&... args) {
  return IntrusivePtr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace ember
