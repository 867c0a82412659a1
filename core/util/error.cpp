#include "core/util/error.h"

namespace ember::detail {

void assert_fail(const char* cond, const char* file, int line) {
  throw Error(fmt::format("internal error: {} at {}:{} (please report)", cond, file, line));
}

}  // namespace ember::detail
