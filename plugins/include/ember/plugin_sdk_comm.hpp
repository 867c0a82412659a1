// Helpers for communication backends (ABI 1.5): what the gloo, mpi and nccl plugins and the
// core's process groups share. Header-only, like the rest of the SDK.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "ember/plugin_abi.h"
#include "ember/plugin_sdk_ops.hpp"

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

/** A communication-backend table with its name, the device types whose tensors it moves and its
 *  four required entries; the optional ones (world) stay unset. */
constexpr ember_comm_backend_v1 comm_backend(const char* name, const char* device_types,
                                             decltype(ember_comm_backend_v1::available) available,
                                             decltype(ember_comm_backend_v1::create) create,
                                             decltype(ember_comm_backend_v1::collective) collective,
                                             decltype(ember_comm_backend_v1::destroy) destroy) {
  ember_comm_backend_v1 t{};
  t.struct_size = sizeof(t);
  t.name = name;
  t.device_types = device_types;
  t.available = available;
  t.create = create;
  t.collective = collective;
  t.destroy = destroy;
  return t;
}

/** The init of a plugin that only registers the communication backend `table`, behind the SDK's
 *  boundary (Note [One boundary for every plugin entry point]). */
template <const ember_comm_backend_v1& table>
int32_t init_comm_backend(const ember_host_v1*, const ember_registrar_v1* reg, char* error,
                          size_t cap) noexcept {
  return guard(error, cap, [&] { return register_comm_backend(reg, table, error, cap); });
}

}  // namespace ember::sdk
