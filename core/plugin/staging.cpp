// The staging registrar: the callbacks a plugin's init calls to register device types, kernels,
// op schemas and communication backends, which keep everything aside in a Staging until init
// returns EMBER_OK (then commit.cpp makes it visible).
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "core/plugin/loading.h"
#include "ember/dispatch/device_registry.h"

namespace ember::loading {
namespace {

int32_t stage_device_type(void* ctx, const ember_device_type_v1* type) {
  auto* s = static_cast<Staging*>(ctx);
  if (!type || type->struct_size < offsetof(ember_device_type_v1, free) + sizeof(void*) ||
      !type->name || !type->alloc || !type->free || !type->copy || !type->device_count) {
    s->error = "device type table is incomplete";
    return -1;
  }
  ember_device_type_v1 copy{};
  std::memcpy(&copy, type, std::min<size_t>(type->struct_size, sizeof(copy)));
  s->device_names.emplace_back(type->name);
  s->device_types.push_back(copy);
  return kStagedBase + static_cast<int32_t>(s->device_types.size() - 1);
}

int32_t stage_kernel(void* ctx, const char* op, int32_t device_type, uint32_t dtype_mask,
                     int32_t priority, ember_kernel_fn fn) {
  auto* s = static_cast<Staging*>(ctx);
  if (!op || !fn) return EMBER_ERR_INVALID;
  s->kernels.push_back({op, device_type, dtype_mask, priority, fn});
  return EMBER_OK;
}

static_assert(offsetof(ember_registrar_v1, kernel_with_flags) == 7 * sizeof(void*),
              "ember_registrar_v1::kernel_with_flags must follow the v1.5 fields");

// ABI 1.6: a kernel with flags; unknown flag bits are refused so a plugin from a newer core
// cannot ask for a layout this core would not honour.
int32_t stage_kernel_with_flags(void* ctx, const char* op, int32_t device_type, uint32_t dtype_mask,
                                int32_t priority, ember_kernel_fn fn, uint32_t flags) {
  if (flags & ~static_cast<uint32_t>(EMBER_KERNEL_CHANNELS_LAST)) return EMBER_ERR_UNSUPPORTED;
  const int32_t status = stage_kernel(ctx, op, device_type, dtype_mask, priority, fn);
  if (status == EMBER_OK) static_cast<Staging*>(ctx)->kernels.back().flags = flags;
  return status;
}

int32_t stage_find_device_type(void* ctx, const char* name) {
  auto* s = static_cast<Staging*>(ctx);
  if (!name) return -1;
  for (size_t i = 0; i < s->device_names.size(); ++i) {
    if (s->device_names[i] == name) return kStagedBase + static_cast<int32_t>(i);
  }
  return find_device_type(name);
}

// ABI 1.1, ops defined by plugins: the schema logic lives in core/dispatch/extension_ops.cpp.
// A malformed schema fails init, like an incomplete device table.
int32_t stage_op_schema(void* ctx, const ember_op_schema_v1* schema, char* error, size_t cap) {
  auto* s = static_cast<Staging*>(ctx);
  const int32_t status = detail::stage_op_schema(s->op_schemas, schema);
  if (status != EMBER_OK) {
    if (s->error.empty()) s->error = s->op_schemas.error;
    if (error && cap > 0) std::snprintf(error, cap, "%s", s->op_schemas.error.c_str());
  }
  return status;
}

// ABI 1.5: a communication backend; an incomplete table fails init.
int32_t stage_comm_backend(void* ctx, const ember_comm_backend_v1* t, char* error, size_t cap) {
  auto* s = static_cast<Staging*>(ctx);
  const size_t complete = offsetof(ember_comm_backend_v1, destroy) + sizeof(void*);
  if (!t || t->struct_size < complete || !t->name || !t->name[0] || !t->create || !t->collective ||
      !t->destroy) {
    s->error = "communication backend table is incomplete (name, create, collective, destroy)";
    if (error && cap > 0) std::snprintf(error, cap, "%s", s->error.c_str());
    return EMBER_ERR_INVALID;
  }
  CommBackend b;
  std::memcpy(&b.table, t, std::min<size_t>(t->struct_size, sizeof(b.table)));
  b.table.struct_size = static_cast<uint32_t>(std::min<size_t>(t->struct_size, sizeof(b.table)));
  b.name = t->name;
  for (std::string_view rest = t->device_types ? t->device_types : "cpu"; !rest.empty();) {
    const size_t comma = rest.find(',');
    if (comma != 0) b.device_types.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  s->comm.push_back(std::move(b));
  return EMBER_OK;
}

}  // namespace

ember_registrar_v1 registrar(Staging& s) {
  return {sizeof(ember_registrar_v1), &s,
          stage_device_type,          stage_kernel,
          stage_find_device_type,     stage_op_schema,
          stage_comm_backend,         stage_kernel_with_flags};
}

}  // namespace ember::loading
