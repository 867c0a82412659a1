// Decoding fuzz input into tensors for the targets that run ops (op_fuzz, index_fuzz): a byte
// reader, operands of random shapes, dtypes and views, and the checks every result goes through.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember::fuzz {

/** Reads the input a byte at a time; past the end every read is 0. */
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  /** A small signed value in [-4, 11]. */
  int64_t small() { return static_cast<int64_t>(u8() % 16) - 4; }
  /** A size: mostly 0..5, sometimes negative or huge (never a middling size that would really
   *  allocate gigabytes). */
  int64_t size() {
    const uint8_t b = u8();
    if (b < 200) return b % 6;
    switch (b % 8) {
      case 0:
        return -1;
      case 1:
        return -7;
      case 2:
        return int64_t{1} << 40;
      case 3:
        return std::numeric_limits<int64_t>::max();
      case 4:
        return std::numeric_limits<int64_t>::min();
      case 5:
        return int64_t{1} << 62;
      default:
        return 7;
    }
  }
  /** An integer argument (dim, index, k, ...): mostly small, sometimes extreme. */
  int64_t arg() {
    const uint8_t b = u8();
    if (b < 230) return static_cast<int64_t>(b % 12) - 4;
    return (b & 1) ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  /** A float argument, NaN and infinities included. */
  double real() {
    const uint8_t b = u8();
    switch (b % 10) {
      case 0:
        return std::nan("");
      case 1:
        return std::numeric_limits<double>::infinity();
      case 2:
        return -1e300;
      default:
        return (static_cast<double>(b) - 128.0) / 32.0;
    }
  }
  std::vector<int64_t> sizes(size_t max_dims) {
    std::vector<int64_t> s(u8() % (max_dims + 1));
    for (auto& v : s) v = size();
    return s;
  }
  std::vector<int64_t> args(size_t max_n) {
    std::vector<int64_t> s(u8() % (max_n + 1));
    for (auto& v : s) v = arg();
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

/** The dtypes an operand may take. */
inline constexpr DType kDTypes[] = {DType::Float32,  DType::Float64, DType::Float16,
                                    DType::BFloat16, DType::Int64,   DType::Int32,
                                    DType::Int8,     DType::UInt8,   DType::Bool};

/** A dtype, float32 half of the time. */
inline DType dtype_of(Bytes& in) {
  const uint8_t b = in.u8();
  return b < 128 ? DType::Float32 : kDTypes[b % 9];
}

/** A tensor with deterministic small values, possibly a view (transposed, sliced, expanded). */
inline Tensor operand(Bytes& in, size_t max_dims = 4) {
  const DType dtype = dtype_of(in);
  Tensor t = empty(in.sizes(max_dims), dtype);
  const int64_t n = t.numel();
  const int64_t mod = 3 + in.u8() % 5;
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      p[i] = static_cast<T>(static_cast<sdk::Compute<T>>((i * 7 + 3) % mod - 1));
    }
  });
  switch (in.u8() % 6) {
    case 1:
      if (t.dim() >= 2) t = t.transpose(0, -1);
      break;
    case 2:
      if (t.dim() >= 1) t = t.slice(in.arg(), in.arg(), in.arg(), 1 + in.u8() % 3);
      break;
    case 3:
      t = t.unsqueeze(0).expand({in.size() % 4});
      break;
    case 4: {
      std::vector<int64_t> dims;
      for (int64_t d = t.dim() - 1; d >= 0; --d) dims.push_back(d);
      t = t.permute(dims);
      break;
    }
    default:
      break;
  }
  return t;
}

/** An int64 operand of at most two dims, for index arguments. */
inline Tensor index_operand(Bytes& in) {
  Tensor t = operand(in, 2);
  return t.to(DType::Int64);
}

/** Reads every element (through the copy kernel and a plain loop): a result that points
 *  outside its storage shows up here under ASan. */
inline void touch(const Tensor& t) {
  if (!t.defined()) return;
  for (int64_t s : t.sizes()) {
    if (s < 0) {
      std::fprintf(stderr, "result with a negative size: %s\n", shape_str(t.sizes()).c_str());
      std::abort();
    }
  }
  const Tensor c = t.contiguous();
  const unsigned char* p = static_cast<const unsigned char*>(c.data_ptr());
  volatile unsigned sum = 0;
  for (size_t i = 0; i < c.nbytes(); ++i) sum = sum + p[i];
  (void)sum;
}

/** Reports a finding and aborts. */
[[noreturn]] inline void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "op_fuzz finding: %s: %s\n", what, detail.c_str());
  std::abort();
}

/** Runs one decoded call: an ember::Error with an "[op]" prefix is a fine outcome, anything else
 *  that escapes (another exception, an internal error) is a finding. */
template <typename Fn>
void expect_clean(Fn&& fn) {
  try {
    fn();
  } catch (const ember::Error& e) {
    const std::string msg = e.what();
    if (msg.empty() || msg[0] != '[' || msg.find(']') == std::string::npos) {
      finding("ember::Error without an [op] prefix", msg);
    }
    if (msg.rfind("internal error", 0) == 0) finding("internal error", msg);
  } catch (const std::exception& e) {
    finding("exception other than ember::Error", e.what());
  }
}

}  // namespace ember::fuzz
