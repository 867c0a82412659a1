// SmallVec: a vector of trivially copyable values that keeps up to N of them inline.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <span>
#include <type_traits>

namespace ember {

/** A vector of trivially copyable T with inline room for N elements. */
template <typename T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  SmallVec() = default;
  /** `n` copies of `value`. */
  explicit SmallVec(size_t n, T value = T()) { resize(n, value); }
  SmallVec(std::initializer_list<T> init) { assign(init.begin(), init.size()); }
  /** Copies any contiguous range of T (a span, a vector, an IntList). */
  template <typename R>
  requires requires(const R& r) {
    { r.data() } -> std::convertible_to<const T*>;
    r.size();
  }
  SmallVec(const R& r) {  // NOLINT(google-explicit-constructor)
    assign(r.data(), r.size());
  }
  SmallVec(const SmallVec& o) { assign(o.data(), o.size()); }
  SmallVec(SmallVec&& o) noexcept { steal(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~SmallVec() { release(); }

  T* data() { return heap_ ? heap_ : inline_; }
  const T* data() const { return heap_ ? heap_ : inline_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  /** Read-only view. */
  operator std::span<const T>() const { return {data(), size_}; }  // NOLINT

  /** Appends one value. */
  void push_back(T v) {
    reserve(size_ + 1);
    data()[size_++] = v;
  }
  /** Inserts `v` before position `pos`. */
  void insert(size_t pos, T v) {
    reserve(size_ + 1);
    T* d = data();
    std::memmove(d + pos + 1, d + pos, (size_ - pos) * sizeof(T));
    d[pos] = v;
    ++size_;
  }
  /** Removes the element at `pos`. */
  void erase(size_t pos) {
    T* d = data();
    std::memmove(d + pos, d + pos + 1, (size_ - pos - 1) * sizeof(T));
    --size_;
  }
  /** Grows or shrinks to `n` elements, filling new ones with `value`. */
  void resize(size_t n, T value = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = value;
    size_ = n;
  }
  /** Makes room for `n` elements. */
  void reserve(size_t n) {
    if (n <= capacity()) return;
    const size_t cap = std::max(n, 2 * capacity());
    T* p = static_cast<T*>(std::malloc(cap * sizeof(T)));
    if (!p) throw std::bad_alloc();
    std::memcpy(p, data(), size_ * sizeof(T));
    std::free(heap_);
    heap_ = p;
    heap_capacity_ = cap;
  }
  bool operator==(const SmallVec& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }

 private:
  size_t capacity() const { return heap_ ? heap_capacity_ : N; }
  void assign(const T* src, size_t n) {
    size_ = 0;
    reserve(n);
    if (n) std::memmove(data(), src, n * sizeof(T));
    size_ = n;
  }
  void release() {
    std::free(heap_);
    heap_ = nullptr;
    size_ = 0;
  }
  void steal(SmallVec& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      heap_capacity_ = o.heap_capacity_;
      o.heap_ = nullptr;
    } else {
      heap_ = nullptr;
      std::memcpy(inline_, o.inline_, size_ * sizeof(T));
    }
    o.size_ = 0;
  }

  T* heap_ = nullptr;
  size_t size_ = 0;
  union {
    T inline_[N];
    size_t heap_capacity_;
  };
};

}  // namespace ember
