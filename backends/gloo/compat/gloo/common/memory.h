// Note [Gloo's missing memory.h]
// libgloo-dev ships the tcp transport's headers (gloo/transport/tcp/pair.h, unbound_buffer.h,
// context.h), which include gloo/common/memory.h, but not that header. The gloo plugin includes
// the transport's headers (Note [A dead peer fails the waits on it] in ../../../plugin.cpp), so
// this file declares what they use from it, written for Ember: three pointer wrappers, each
// holding exactly one standard smart pointer, as libgloo's compiled code expects of the objects
// it shares with the plugin (an UnboundBuffer holds a ShareableNonOwningPtr to itself; a Pair
// keeps WeakNonOwningPtrs to the buffers it moves and locks them into NonOwningPtrs while it
// touches them). The plugin finds this file after the system's (-idirafter), so a libgloo-dev
// that ships the header wins.
#pragma once

#include <memory>
#include <thread>

namespace gloo {

template <typename T>
class WeakNonOwningPtr;

/** The root reference an object holds to itself: destroying it waits until no NonOwningPtr to
 *  the object is left, so no other thread touches the object once its destructor goes on. */
template <typename T>
class ShareableNonOwningPtr final {
 public:
  /** Refers to `object` without owning it (the deleter does nothing). */
  explicit ShareableNonOwningPtr(T* object) : ptr_(object, [](T*) {}) {}
  ShareableNonOwningPtr(const ShareableNonOwningPtr&) = delete;
  ShareableNonOwningPtr& operator=(const ShareableNonOwningPtr&) = delete;
  /** Drops the root reference, then waits for the locked references to go. */
  ~ShareableNonOwningPtr() {
    std::weak_ptr<T> watch = ptr_;
    ptr_.reset();
    while (!watch.expired()) std::this_thread::yield();
  }

 private:
  std::shared_ptr<T> ptr_;
  friend class WeakNonOwningPtr<T>;
};

template <typename T>
class NonOwningPtr;

/** A reference that does not keep the object: it can be locked into a NonOwningPtr while the
 *  object's ShareableNonOwningPtr lives. */
template <typename T>
class WeakNonOwningPtr final {
 public:
  /** An empty reference. */
  WeakNonOwningPtr() = default;
  /** A reference to the object behind `root`. */
  explicit WeakNonOwningPtr(const ShareableNonOwningPtr<T>& root) : ptr_(root.ptr_) {}
  /** True if this was made from a root reference (whether or not that still lives). */
  explicit operator bool() const noexcept {
    const std::weak_ptr<T> empty;
    return ptr_.owner_before(empty) || empty.owner_before(ptr_);
  }

 private:
  std::weak_ptr<T> ptr_;
  friend class NonOwningPtr<T>;
};

/** A locked reference: while it lives, the object's destructor waits. */
template <typename T>
class NonOwningPtr final {
 public:
  /** A null reference. */
  NonOwningPtr() = default;
  /** Locks `weak`: null if the object's root reference is gone. */
  explicit NonOwningPtr(const WeakNonOwningPtr<T>& weak) : ptr_(weak.ptr_.lock()) {}
  /** The object. */
  T* operator->() const noexcept { return ptr_.get(); }
  /** True if the object was still alive when this was made. */
  explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }

 private:
  std::shared_ptr<T> ptr_;
};

}  // namespace gloo
