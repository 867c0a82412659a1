#include "ember/util/error.h"

#include <fmt/format.h>

#include "ember/plugin_abi.h"
#include "ember/util/enum_name.h"

namespace ember {

fmt::format_context::iterator TextFormatter::format_text(std::string_view text,
                                                         fmt::format_context& ctx) const {
  return fmt::formatter<fmt::string_view>::format(fmt::string_view(text.data(), text.size()), ctx);
}

// The destructors are the key functions: each class's typeinfo lives in the core library, so
// catching by type and dynamic_cast work from any library that includes this header.
Error::~Error() = default;
ValueError::~ValueError() = default;
ZeroDivisionError::~ZeroDivisionError() = default;
LinAlgError::~LinAlgError() = default;
TypeError::~TypeError() = default;
IndexError::~IndexError() = default;
NotImplementedError::~NotImplementedError() = default;
OutOfMemoryError::~OutOfMemoryError() = default;
DeviceError::~DeviceError() = default;
IoError::~IoError() = default;
PluginError::~PluginError() = default;
InternalError::~InternalError() = default;
DistributedError::~DistributedError() = default;
KeyError::~KeyError() = default;

const char* kind_name(ErrorKind kind) {
  static constexpr const char* kNames[] = {"Value",       "Type",        "Index", "NotImplemented",
                                           "OutOfMemory", "Device",      "Io",    "Plugin",
                                           "Internal",    "Distributed", "Key"};
  return enum_name<ErrorKind::Key>(kind, kNames, "Unknown");
}

void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::Value:
      throw ValueError(message);
    case ErrorKind::Type:
      throw TypeError(message);
    case ErrorKind::Index:
      throw IndexError(message);
    case ErrorKind::NotImplemented:
      throw NotImplementedError(message);
    case ErrorKind::OutOfMemory:
      throw OutOfMemoryError(message);
    case ErrorKind::Device:
      throw DeviceError(message);
    case ErrorKind::Io:
      throw IoError(message);
    case ErrorKind::Plugin:
      throw PluginError(message);
    case ErrorKind::Internal:
      throw InternalError(message);
    case ErrorKind::Distributed:
      throw DistributedError(message);
    case ErrorKind::Key:
      throw KeyError(message);
  }
  throw Error(message, kind);
}

ErrorKind status_error_kind(int32_t status) {
  switch (status) {
    case EMBER_ERR_INVALID:
      return ErrorKind::Value;
    case EMBER_ERR_UNSUPPORTED:
      return ErrorKind::NotImplemented;
    case EMBER_ERR_OUT_OF_MEMORY:
      return ErrorKind::OutOfMemory;
    case EMBER_ERR_DEVICE:
      return ErrorKind::Device;
    case EMBER_ERR_INDEX:
      return ErrorKind::Index;
    case EMBER_ERR_TIMEOUT:
    case EMBER_ERR_PEER:
      return ErrorKind::Distributed;
    default:  // EMBER_ERR_INTERNAL, and codes from a newer ABI this core does not know
      return ErrorKind::Internal;
  }
}

namespace detail {

void assert_fail(const char* cond, const char* file, int line) {
  throw InternalError(fmt::format("internal error: {} at {}:{} (please report)", cond, file, line));
}

}  // namespace detail

}  // namespace ember
