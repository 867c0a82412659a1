// Helpers for communication backends (ABI 1.5): what the gloo, mpi and nccl plugins and the
// core's process groups share. Header-only, like the rest of the SDK.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "ember/plugin_abi.h"

namespace ember::sdk {

/** A collective operation's name (EMBER_COLL_*) as the API spells it ("all_reduce"), or nullptr
 *  for an operation this header does not know. */
inline const char* collective_name(int32_t op) {
  constexpr const char* names[] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter",
                                   "all_to_all", "barrier",   "send",       "recv"};
  return op >= 0 && op < static_cast<int32_t>(sizeof(names) / sizeof(names[0])) ? names[op]
                                                                                : nullptr;
}

/** Registers a communication backend from a plugin's init, refusing (with the reason) a core
 *  older than ABI 1.5, whose registrar has no comm_backend entry. */
inline int32_t register_comm_backend(const ember_registrar_v1* reg,
                                     const ember_comm_backend_v1& table, char* error, size_t cap) {
  if (reg->struct_size < offsetof(ember_registrar_v1, comm_backend) + sizeof(void*)) {
    if (error && cap > 0)
      std::snprintf(error, cap, "this core predates communication backends (ABI 1.5)");
    return EMBER_ERR_UNSUPPORTED;
  }
  return reg->comm_backend(reg->ctx, &table, error, cap);
}

}  // namespace ember::sdk
