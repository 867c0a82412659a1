// Errors: EMBER_CHECK for bad user input (throws ember::Error), EMBER_ASSERT for our bugs.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "ember/util/export.h"
#include "ember/util/text_formatter.h"

namespace ember {

// Note [Error kinds]
// Every ember::Error carries a kind, so a caller can branch on what went wrong without parsing
// the message, and each kind has a subclass (ember::IndexError, ...) so it can also be caught by
// type, as c10::IndexError and friends can in libtorch. The message format does not depend on
// the kind: `[op] what is wrong: observed values (hint)`. Which check throws which kind:
//   Value           shapes, sizes, counts and argument values out of their domain (negative
//                   size, non-broadcastable shapes, step 0, a tensor that is not a leaf, ...);
//                   the default, what plain EMBER_CHECK throws.
//   Type            a dtype or a device that does not fit: mixing dtypes or devices, an integer
//                   tensor where a floating one is needed, an undefined tensor handle.
//   Index           a dim, an index or a position out of range (wrap_dim, select, gather
//                   indices, a parameter-group or module index).
//   NotImplemented  no kernel for (op, dtype, device), or a combination the op does not support
//                   yet; also a plugin kernel answering EMBER_ERR_UNSUPPORTED.
//   OutOfMemory     an allocator returned null, or a kernel answered EMBER_ERR_OUT_OF_MEMORY.
//   Device          the device or its vendor library failed (EMBER_ERR_DEVICE, a failed copy or
//                   synchronization), or a device that is not available.
//   Io              reading or writing files: missing or unreadable files, truncated or
//                   malformed file formats (safetensors, IDX, gzip).
//   Plugin          plugin loading and plugin API misuse (strict-mode failures, bad schemas, a
//                   plugin op called with the wrong arguments).
//   Internal        Ember's own bugs: EMBER_ASSERT and EMBER_ERR_INTERNAL from a kernel.
//   Key             a name that a by-name registry refuses: a module's parameter, buffer or
//                   submodule name that is empty, dotted or already taken by another entry.
// A kernel's ABI status maps to a kind in status_error_kind(): an index value a kernel finds out
// of range (index_select, gather, scatter) answers EMBER_ERR_INDEX (ABI 1.4) and is Index, as
// the indices checked in the core (select, embedding, nll_loss targets) are. One kind has a
// finer class: an integer division by zero is a ZeroDivisionError, a ValueError (its kind is
// Value) that Python also raises as its builtin ZeroDivisionError (Note [Errors in Python]), and
// a matrix a linalg op cannot factor (singular, not positive-definite) a LinAlgError, a
// ValueError too, as NumPy's numpy.linalg.LinAlgError is (ember.linalg.LinAlgError in Python).

/** What went wrong, coarsely; see Note [Error kinds]. */
enum class ErrorKind : uint8_t {
  Value,
  Type,
  Index,
  NotImplemented,
  OutOfMemory,
  Device,
  Io,
  Plugin,
  Internal,
  Distributed,  // a peer process failed or did not answer in time, the rendezvous failed
  Key,          // a name a by-name registry refuses (taken, empty, dotted)
};

/** The kind's name as spelled in the enum ("Value", "OutOfMemory", ...). */
EMBER_API const char* kind_name(ErrorKind kind);

/** The exception type Ember throws for bad input and failed operations; its kind says which. */
class EMBER_API Error : public std::runtime_error {
 public:
  /** Wraps a message formatted as `[op] what is wrong: observed values (hint)`. */
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::Value)
      : std::runtime_error(message), kind_(kind) {}
  ~Error() override;
  /** What went wrong, coarsely (Note [Error kinds]). */
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

/** Shape, size or argument values out of their domain (ErrorKind::Value). */
class EMBER_API ValueError : public Error {
 public:
  /** Wraps the message. */
  explicit ValueError(const std::string& message) : Error(message, ErrorKind::Value) {}
  ~ValueError() override;
};

/** An integer division (//, %, fmod, div with a rounding mode) by zero: a ValueError. */
class EMBER_API ZeroDivisionError : public ValueError {
 public:
  /** Wraps the message. */
  explicit ZeroDivisionError(const std::string& message) : ValueError(message) {}
  ~ZeroDivisionError() override;
};

/** A matrix a linalg op cannot factor as it needs: singular, not positive-definite, non-finite
 *  (a ValueError, PyTorch's torch.linalg.LinAlgError). */
class EMBER_API LinAlgError : public ValueError {
 public:
  /** Wraps the message. */
  explicit LinAlgError(const std::string& message) : ValueError(message) {}
  ~LinAlgError() override;
};

/** A dtype or device that does not fit (ErrorKind::Type). */
class EMBER_API TypeError : public Error {
 public:
  /** Wraps the message. */
  explicit TypeError(const std::string& message) : Error(message, ErrorKind::Type) {}
  ~TypeError() override;
};

/** A dim, index or position out of range (ErrorKind::Index). */
class EMBER_API IndexError : public Error {
 public:
  /** Wraps the message. */
  explicit IndexError(const std::string& message) : Error(message, ErrorKind::Index) {}
  ~IndexError() override;
};

/** No kernel or no support for this combination (ErrorKind::NotImplemented). */
class EMBER_API NotImplementedError : public Error {
 public:
  /** Wraps the message. */
  explicit NotImplementedError(const std::string& message)
      : Error(message, ErrorKind::NotImplemented) {}
  ~NotImplementedError() override;
};

/** An allocation failed (ErrorKind::OutOfMemory). */
class EMBER_API OutOfMemoryError : public Error {
 public:
  /** Wraps the message. */
  explicit OutOfMemoryError(const std::string& message) : Error(message, ErrorKind::OutOfMemory) {}
  ~OutOfMemoryError() override;
};

/** The device or its vendor library failed (ErrorKind::Device). */
class EMBER_API DeviceError : public Error {
 public:
  /** Wraps the message. */
  explicit DeviceError(const std::string& message) : Error(message, ErrorKind::Device) {}
  ~DeviceError() override;
};

/** A file could not be read or written, or its format is malformed (ErrorKind::Io). */
class EMBER_API IoError : public Error {
 public:
  /** Wraps the message. */
  explicit IoError(const std::string& message) : Error(message, ErrorKind::Io) {}
  ~IoError() override;
};

/** Plugin loading failed or the plugin API was misused (ErrorKind::Plugin). */
class EMBER_API PluginError : public Error {
 public:
  /** Wraps the message. */
  explicit PluginError(const std::string& message) : Error(message, ErrorKind::Plugin) {}
  ~PluginError() override;
};

/** A collective or the rendezvous failed: a peer died or did not answer in time
 *  (ErrorKind::Distributed). */
class EMBER_API DistributedError : public Error {
 public:
  /** Wraps the message. */
  explicit DistributedError(const std::string& message) : Error(message, ErrorKind::Distributed) {}
  ~DistributedError() override;
};

/** A name that a by-name registry refuses (ErrorKind::Key). */
class EMBER_API KeyError : public Error {
 public:
  /** Wraps the message. */
  explicit KeyError(const std::string& message) : Error(message, ErrorKind::Key) {}
  ~KeyError() override;
};

/** An Ember bug (ErrorKind::Internal). */
class EMBER_API InternalError : public Error {
 public:
  /** Wraps the message. */
  explicit InternalError(const std::string& message) : Error(message, ErrorKind::Internal) {}
  ~InternalError() override;
};

/** Throws the subclass of ember::Error that matches `kind`. */
[[noreturn]] EMBER_API void throw_error(ErrorKind kind, const std::string& message);

/** The kind for a plugin's non-OK ABI status (EMBER_ERR_*); see Note [Error kinds]. */
EMBER_API ErrorKind status_error_kind(int32_t status);

namespace detail {
/** Throws the internal-error form of ember::Error. */
[[noreturn]] EMBER_API void assert_fail(const char* cond, const char* file, int line);
}  // namespace detail

}  // namespace ember

/** Throws `ErrorClass` (a subclass of ember::Error) with a fmt-formatted message unless `cond`
 *  holds. */
#define EMBER_CHECK_AS(ErrorClass, cond, ...)       \
  do {                                              \
    if (__builtin_expect(!(cond), 0)) {             \
      throw ErrorClass(::fmt::format(__VA_ARGS__)); \
    }                                               \
  } while (0)

/** Throws ember::ValueError (bad shapes, sizes, argument values) unless `cond` holds. */
#define EMBER_CHECK(cond, ...) EMBER_CHECK_AS(::ember::ValueError, cond, __VA_ARGS__)
/** Throws ember::TypeError (a dtype or device that does not fit) unless `cond` holds. */
#define EMBER_CHECK_TYPE(cond, ...) EMBER_CHECK_AS(::ember::TypeError, cond, __VA_ARGS__)
/** Throws ember::IndexError (a dim or index out of range) unless `cond` holds. */
#define EMBER_CHECK_INDEX(cond, ...) EMBER_CHECK_AS(::ember::IndexError, cond, __VA_ARGS__)
/** Throws ember::NotImplementedError (no kernel, unsupported combination) unless `cond` holds. */
#define EMBER_CHECK_NOT_IMPLEMENTED(cond, ...) \
  EMBER_CHECK_AS(::ember::NotImplementedError, cond, __VA_ARGS__)
/** Throws ember::OutOfMemoryError (an allocation failed) unless `cond` holds. */
#define EMBER_CHECK_OOM(cond, ...) EMBER_CHECK_AS(::ember::OutOfMemoryError, cond, __VA_ARGS__)
/** Throws ember::DeviceError (the device or its library failed) unless `cond` holds. */
#define EMBER_CHECK_DEVICE(cond, ...) EMBER_CHECK_AS(::ember::DeviceError, cond, __VA_ARGS__)
/** Throws ember::IoError (file access or file format) unless `cond` holds. */
#define EMBER_CHECK_IO(cond, ...) EMBER_CHECK_AS(::ember::IoError, cond, __VA_ARGS__)
/** Throws ember::PluginError (plugin loading, plugin API misuse) unless `cond` holds. */
#define EMBER_CHECK_PLUGIN(cond, ...) EMBER_CHECK_AS(::ember::PluginError, cond, __VA_ARGS__)
/** Throws ember::KeyError (a name a registry refuses) unless `cond` holds. */
#define EMBER_CHECK_KEY(cond, ...) EMBER_CHECK_AS(::ember::KeyError, cond, __VA_ARGS__)

/** Reports an Ember bug (not a user error; ember::InternalError) unless `cond` holds. */
#define EMBER_ASSERT(cond)                                     \
  do {                                                         \
    if (__builtin_expect(!(cond), 0)) {                        \
      ::ember::detail::assert_fail(#cond, __FILE__, __LINE__); \
    }                                                          \
  } while (0)
