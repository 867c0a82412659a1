// The core's ops as the SDK sees them, all made from one list (ember/ops.def): op ids and their
// arity, dtypes and flags; attribute structs that kernels read by name; the boundary every
// plugin entry point goes through; and kernel registration for backends. C++17, header-only.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "ember/plugin_abi.h"
#include "ember/plugin_sdk.hpp"

// Note [One op list]
// Everything about a core op that is not its semantics is written once, in ember/ops.def: its
// name, how many inputs and outputs its kernels take, its named and typed attributes, the dtypes
// its kernels cover and whether it is differentiable or optional for a backend. The list is an
// X-macro rather than generated code: it needs no generator in the build, every user expands it
// in its own terms with the preprocessor it already has (the core its op handles and schemas,
// this header the op ids and attribute structs, each backend its kernel declarations and
// registration), a reader greps one file, and a static_assert ties each table made from it to
// the same count. The semantics stay in core/ops/<family>.cpp, where the kernel contract at the
// top of the file says what each input, output and attribute means.

/** Dtype sets of ops.def: every dtype, every one but bool, the floating ones, float32/64, the
 *  integers and bool. */
#define EMBER_DT_ALL (::ember::sdk::kAllMask)
#define EMBER_DT_NUMERIC (::ember::sdk::kNumericMask)
#define EMBER_DT_FLOATING (::ember::sdk::kFloatingMask)
/** float32 and float64 only (the factorizations, as LAPACK's). */
#define EMBER_DT_F32F64 (::ember::sdk::dtype_bit(EMBER_F32) | ::ember::sdk::dtype_bit(EMBER_F64))
/** Integer dtypes and bool (the bitwise ops). */
#define EMBER_DT_INTEGRAL (::ember::sdk::kIntegerMask | ::ember::sdk::dtype_bit(EMBER_BOOL))
/** Flags of ops.def: differentiable; optional for a backend (the core has a composite). */
#define EMBER_OPF_GRAD 1u
#define EMBER_OPF_OPTIONAL 2u

namespace ember::ops {

/** The id of a core op: its row in ops.def. Ids are not part of the ABI (kernels are registered
 *  by name), so rows may be added anywhere. */
enum Id : int32_t {
#define EMBER_OP(name, ...) name,
#include "ember/ops.def"
#undef EMBER_OP
  kCount
};

namespace detail {
// The attribute counts, one pass each (an expansion can count only one kind).
inline constexpr int32_t kNumInts[] = {
#define EMBER_INT(n) +1
#define EMBER_FLOAT(n)
#define EMBER_OP(name, min_in, max_in, min_out, max_out, dtypes, flags, ...) 0 __VA_ARGS__,
#include "ember/ops.def"
#undef EMBER_OP
#undef EMBER_INT
#undef EMBER_FLOAT
};
inline constexpr int32_t kNumFloats[] = {
#define EMBER_INT(n)
#define EMBER_FLOAT(n) +1
#define EMBER_OP(name, min_in, max_in, min_out, max_out, dtypes, flags, ...) 0 __VA_ARGS__,
#include "ember/ops.def"
#undef EMBER_OP
#undef EMBER_INT
#undef EMBER_FLOAT
};
}  // namespace detail

/** What ops.def says about one op. */
struct Info {
  const char* name;
  int32_t min_inputs, max_inputs, min_outputs, max_outputs;
  uint32_t dtypes;  // ember_dtype bits its kernels cover
  uint32_t flags;   // EMBER_OPF_*
  int32_t num_ints, num_floats;
};

/** Every core op, indexed by Id. */
inline constexpr Info kInfo[] = {
#define EMBER_OP(name, min_in, max_in, min_out, max_out, dtypes, flags, ...) \
  {#name,                                                                    \
   min_in,                                                                   \
   max_in,                                                                   \
   min_out,                                                                  \
   max_out,                                                                  \
   dtypes,                                                                   \
   flags,                                                                    \
   detail::kNumInts[name],                                                   \
   detail::kNumFloats[name]},
#include "ember/ops.def"
#undef EMBER_OP
};
static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == kCount, "ops.def: one Info per op");

/** True if a backend may leave `op` out. */
constexpr bool is_optional(Id op) {
  return (kInfo[op].flags & EMBER_OPF_OPTIONAL) != 0;
}

/** The id of the core op named `name`, or -1. */
inline int32_t find(const char* name) {
  for (int32_t i = 0; i < kCount; ++i) {
    if (std::strcmp(kInfo[i].name, name) == 0) return i;
  }
  return -1;
}

}  // namespace ember::ops

namespace ember::attrs {

// One struct per core op with its attributes as named fields, in ops.def's order:
// attrs::conv2d{...}.stride_h. read() takes them from a kernel call, write() lays them out for
// one, so the core and every kernel agree on the positions without writing them down.
#define EMBER_INT(n) int64_t n = 0;
#define EMBER_FLOAT(n) double n = 0;
#define EMBER_OP(name, min_in, max_in, min_out, max_out, dtypes, flags, ...) \
  struct name {                                                              \
    __VA_ARGS__                                                              \
    static constexpr ::ember::ops::Id kOp = ::ember::ops::name;              \
    static name read(const ember_kernel_call* call);                         \
    void write(int64_t* ints, double* floats) const;                         \
  };
#include "ember/ops.def"
#undef EMBER_OP
#undef EMBER_INT
#undef EMBER_FLOAT

#define EMBER_INT(n) a.n = call->ints[i++];
#define EMBER_FLOAT(n) a.n = call->floats[f++];
#define EMBER_OP(name, min_in, max_in, min_out, max_out, dtypes, flags, ...) \
  inline name name::read(const ember_kernel_call* call) {                    \
    name a;                                                                  \
    [[maybe_unused]] int i = 0, f = 0;                                       \
    (void)call;                                                              \
    __VA_ARGS__                                                              \
    return a;                                                                \
  }
#include "ember/ops.def"
#undef EMBER_OP
#undef EMBER_INT
#undef EMBER_FLOAT

#define EMBER_INT(n) ints[i++] = n;
#define EMBER_FLOAT(n) floats[f++] = n;
#define EMBER_OP(name, min_in, max_in, min_out, max_out, dtypes, flags, ...) \
  inline void name::write(int64_t* ints, double* floats) const {             \
    [[maybe_unused]] int i = 0, f = 0;                                       \
    (void)ints;                                                              \
    (void)floats;                                                            \
    __VA_ARGS__                                                              \
  }
#include "ember/ops.def"
#undef EMBER_OP
#undef EMBER_INT
#undef EMBER_FLOAT

}  // namespace ember::attrs

namespace ember::sdk {

/** The attributes of the op a kernel implements: `auto a = sdk::attrs<attrs::conv2d>(call);`. */
template <typename A>
A attrs(const ember_kernel_call* call) {
  return A::read(call);
}

// Note [One boundary for every plugin entry point]
// A plugin is called through C function pointers, so an exception leaving one (a std::bad_alloc
// from a std::vector, an exception from a vendor's C++ API, one thrown on an OpenMP worker) is
// undefined behaviour and in practice std::terminate: the whole process dies. Every entry point
// therefore runs its body through guard(), which turns an exception into a status and a
// message: std::bad_alloc becomes EMBER_ERR_OUT_OF_MEMORY, anything else EMBER_ERR_INTERNAL
// with its what(). Kernels get it from register_kernel (guarded<>), which also checks that the
// call carries the attributes ops.def declares before the kernel reads them by name; init,
// device-table slots and infer callbacks call guard() or guard_value() themselves. Code run on
// other threads (an OpenMP loop) cannot be reached by a guard on the calling thread: it must not
// throw, so it allocates before the parallel region. EMBER_TESTING_KERNEL_FAULT=<op>:<throw|oom>
// makes the guard of that op's kernels throw (read once per plugin), so tests see every
// backend's boundary work without breaking a kernel on purpose. A guarded body that returns both
// EMBER_OK and an int32_t status spells its return type (-> int32_t): EMBER_OK is an enum.

/** Writes a printf-style message into `error` (if any) and returns `status`. */
inline int32_t fail_into(char* error, size_t capacity, int32_t status, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
inline int32_t fail_into(char* error, size_t capacity, int32_t status, const char* fmt, ...) {
  if (error && capacity > 0) {
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(error, capacity, fmt, args);
    va_end(args);
  }
  return status;
}

/** Runs `body` (returning a status) and turns any exception into a status with a message in
 *  `error` (Note [One boundary for every plugin entry point]). */
template <typename Body>
int32_t guard(char* error, size_t capacity, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail_into(error, capacity, EMBER_ERR_OUT_OF_MEMORY,
                     "out of host memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return fail_into(error, capacity, EMBER_ERR_INTERNAL, "unexpected exception: %s", e.what());
  } catch (...) {
    return fail_into(error, capacity, EMBER_ERR_INTERNAL, "unexpected exception of unknown type");
  }
}

/** guard() for a function with no status: runs it, and on an exception returns `fallback`
 *  (a NULL pointer, 0 devices) after writing the message into `error` (if any). */
template <typename Body>
auto guard_value(char* error, size_t capacity, std::invoke_result_t<Body&> fallback,
                 Body&& body) noexcept {
  std::invoke_result_t<Body&> out = fallback;
  guard(error, capacity, [&] {
    out = body();
    return EMBER_OK;
  });
  return out;
}

namespace detail {

/** The fault EMBER_TESTING_KERNEL_FAULT asks for on `op`: 0 none, 1 throw, 2 out of memory. */
inline int injected_fault(ops::Id op) {
  static const char* const spec = std::getenv("EMBER_TESTING_KERNEL_FAULT");
  if (spec == nullptr) return 0;
  const char* colon = std::strchr(spec, ':');
  const size_t len = colon ? static_cast<size_t>(colon - spec) : std::strlen(spec);
  if (std::strlen(ops::kInfo[op].name) != len ||
      std::strncmp(spec, ops::kInfo[op].name, len) != 0) {
    return 0;
  }
  return colon && std::strcmp(colon + 1, "oom") == 0 ? 2 : 1;
}

}  // namespace detail

/** Kernel `fn` of an op a plugin defines, behind the boundary: reg->kernel(..., &guarded<&fn>). */
template <ember_kernel_fn fn>
int32_t guarded(const ember_kernel_call* call) noexcept {
  return guard(call->error, call->error_capacity, [&] { return fn(call); });
}

/** Shape inference `fn` of an op a plugin defines, behind the boundary. */
template <ember_infer_fn fn>
int32_t guarded_infer(const ember_infer_call* call) noexcept {
  return guard(call->error, call->error_capacity, [&] { return fn(call); });
}

/** Kernel `fn` of core op `op` behind the boundary: the function a backend registers. It also
 *  refuses a call that carries fewer attributes than ops.def declares, so `fn` may read them. */
template <ops::Id op, ember_kernel_fn fn>
int32_t guarded(const ember_kernel_call* call) noexcept {
  constexpr ops::Info info = ops::kInfo[op];
  if (call->num_ints < info.num_ints || call->num_floats < info.num_floats) {
    return fail(call, EMBER_ERR_INVALID,
                "%s: expected %d int and %d float attributes, got %d and %d", info.name,
                info.num_ints, info.num_floats, call->num_ints, call->num_floats);
  }
  return guard(call->error, call->error_capacity, [&]() -> int32_t {
    if (const int fault = detail::injected_fault(op); fault != 0) {
      if (fault == 2) throw std::bad_alloc();
      throw std::runtime_error("fault injected by EMBER_TESTING_KERNEL_FAULT");
    }
    return fn(call);
  });
}

/** Registers `fn` as the kernel of core op `op` on `device_type`, for the op's dtypes unless
 *  told otherwise, behind the boundary. */
template <ops::Id op, ember_kernel_fn fn>
[[nodiscard]] int32_t register_kernel(const ember_registrar_v1* reg, int32_t device_type,
                                      int32_t priority, uint32_t dtypes = ops::kInfo[op].dtypes) {
  return reg->kernel(reg->ctx, ops::kInfo[op].name, device_type, dtypes, priority,
                     &guarded<op, fn>);
}

/** True if this core's registrar has kernel_with_flags (ABI >= 1.6). */
inline bool has_kernel_flags(const ember_registrar_v1* reg) {
  return reg->struct_size >=
             offsetof(ember_registrar_v1, kernel_with_flags) + sizeof(reg->kernel_with_flags) &&
         reg->kernel_with_flags != nullptr;
}

/** register_kernel with EMBER_KERNEL_* flags. A core older than ABI 1.6 gets the kernel without
 *  them: it never makes the calls the flags allow, so the kernel stays correct there. */
template <ops::Id op, ember_kernel_fn fn>
[[nodiscard]] int32_t register_kernel_with_flags(const ember_registrar_v1* reg, int32_t device_type,
                                                 int32_t priority, uint32_t dtypes,
                                                 uint32_t flags) {
  if (!has_kernel_flags(reg)) return register_kernel<op, fn>(reg, device_type, priority, dtypes);
  return reg->kernel_with_flags(reg->ctx, ops::kInfo[op].name, device_type, dtypes, priority,
                                &guarded<op, fn>, flags);
}

/** What a backend's init does once it has its device table: checks that the host speaks this
 *  plugin's ABI major, registers the device type, then its kernels (register_kernels(reg, id)
 *  returns a status), all behind the boundary, each failure with a message naming the type. */
inline int32_t init_backend(const ember_host_v1* host, const ember_registrar_v1* reg,
                            const ember_device_type_v1& table,
                            int32_t (*register_kernels)(const ember_registrar_v1*, int32_t),
                            char* error, size_t capacity) noexcept {
  return guard(error, capacity, [&]() -> int32_t {
    if (!host || host->abi_major != EMBER_ABI_MAJOR) {
      return fail_into(error, capacity, EMBER_ERR_INVALID,
                       "%s: the host speaks ABI %d, this plugin %d (rebuild it)", table.name,
                       host ? host->abi_major : -1, EMBER_ABI_MAJOR);
    }
    const int32_t id = reg->device_type(reg->ctx, &table);
    if (id < 0) {
      return fail_into(error, capacity, EMBER_ERR_INTERNAL, "could not register device type %s",
                       table.name);
    }
    if (const int32_t status = register_kernels(reg, id); status != EMBER_OK) {
      return fail_into(error, capacity, status, "could not register the %s kernels (status %d)",
                       table.name, status);
    }
    return EMBER_OK;
  });
}

}  // namespace ember::sdk

// Note [Kernels of a backend]
// A backend declares one function per core op in its namespace with
//   #define EMBER_OP(name, ...) EMBER_KERNEL(name);
//   #include "ember/ops.def"
//   #undef EMBER_OP
// defines those it implements, and registers them in a function returning int32_t with
//   #define EMBER_OP(name, ...) EMBER_REGISTER_MANDATORY_KERNEL(reg, device_type, priority, name)
//   #include "ember/ops.def"
//   #undef EMBER_OP
//   EMBER_REGISTER_KERNEL(reg, device_type, priority, relu_backward)  // each optional one it has
// A mandatory kernel it lacks is a link error, not a gap found at run time; a registration the
// core refuses returns its status from that function. `name` is looked up unqualified, in the
// backend's namespace: a local variable of the registering function named like an op (copy,
// fill, sort, where, ...) would be taken instead, so that function keeps to a few locals. The
// declarations also hide library functions of the same names (abs, exp, floor, round, ...) from
// unqualified calls in the backend's namespace: call std::abs, not abs.
/** Declares the kernel function of core op `name`. */
#define EMBER_KERNEL(name) int32_t name(const ember_kernel_call* call)
/** Registers kernel `name` of core op `name` for `dtypes` (a subset of the op's); returns a
 *  refused registration's status from the enclosing function. */
#define EMBER_REGISTER_KERNEL_DTYPES(reg, device_type, priority, name, dtypes)                \
  if (const int32_t ember_status_ = ::ember::sdk::register_kernel<::ember::ops::name, &name>( \
          reg, device_type, priority, dtypes);                                                \
      ember_status_ != EMBER_OK) {                                                            \
    return ember_status_;                                                                     \
  }
/** Registers kernel `name` of core op `name` for `dtypes` with EMBER_KERNEL_* `flags`, replacing
 *  the plugin's own earlier registration of those slots; returns a refused registration's status
 *  from the enclosing function. */
#define EMBER_REGISTER_KERNEL_FLAGS(reg, device_type, priority, name, dtypes, flags) \
  if (const int32_t ember_status_ =                                                  \
          ::ember::sdk::register_kernel_with_flags<::ember::ops::name, &name>(       \
              reg, device_type, priority, dtypes, flags);                            \
      ember_status_ != EMBER_OK) {                                                   \
    return ember_status_;                                                            \
  }
/** Registers kernel `name` of core op `name` for the op's dtypes; returns a refused
 *  registration's status from the enclosing function. */
#define EMBER_REGISTER_KERNEL(reg, device_type, priority, name)  \
  EMBER_REGISTER_KERNEL_DTYPES(reg, device_type, priority, name, \
                               ::ember::ops::kInfo[::ember::ops::name].dtypes)
/** EMBER_REGISTER_KERNEL unless the op is optional: for the expansion of ops.def. */
#define EMBER_REGISTER_MANDATORY_KERNEL(reg, device_type, priority, name) \
  if constexpr (!::ember::ops::is_optional(::ember::ops::name)) {         \
    EMBER_REGISTER_KERNEL(reg, device_type, priority, name)               \
  }
