#include "ember/dispatch/device_registry.h"

#include <array>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/dispatch/profiled.h"
#include "ember/dispatch/runtime.h"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/tensor/storage.h"
#include "ember/util/error.h"

namespace ember {
namespace {

// Note [The built-in CPU device]
// The core registers device type 0, "cpu", with plain 64-byte-aligned malloc before any plugin
// loads, so that tensors can be made, filled from host data and printed even with no backend.
// The CPU backend plugin registers "cpu" too; being a plugin it replaces the built-in table
// (caching allocator, thread control) and keeps id 0. Kernels come only from plugins.
void* builtin_alloc(void*, int32_t, size_t bytes) {
  return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + (bytes == 0 ? 64 : 0));
}
void builtin_free(void*, int32_t, void* ptr, size_t) {
  std::free(ptr);
}
int32_t builtin_count(void*, char*, size_t) {
  return 1;
}
int32_t builtin_copy(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t, char*,
                     size_t) {
  if (bytes) std::memmove(dst, src, bytes);
  return EMBER_OK;
}
int32_t builtin_sync(void*, int32_t, char*, size_t) {
  return EMBER_OK;
}

ember_device_type_v1 builtin_cpu_table() {
  return sdk::device_type("cpu", -1000, /*host_accessible=*/true, builtin_count, builtin_alloc,
                          builtin_free, builtin_copy, builtin_sync);
}

// Note [Device entries are immutable]
// A Storage's deleter points at the entry whose allocator made its memory. Replacing a device
// type (a plugin taking over "cpu", a rollback) therefore installs a new entry and keeps the old
// one, so memory is always returned to the allocator that gave it out. Entries are few and
// small; plugins are never unloaded either (ARCHITECTURE.md, "Discovery and loading").
struct Registry {
  std::mutex mu;
  std::array<std::atomic<const DeviceTypeEntry*>, kMaxDeviceTypes> entries{};
  int16_t size = 0;
  std::vector<const DeviceTypeEntry*> replaced;  // kept, never freed (see above)
  /** Installs `e` as type `i`, keeping the entry it replaces. */
  void set(int16_t i, const DeviceTypeEntry* e) {
    if (const DeviceTypeEntry* old = entries[i].exchange(e)) replaced.push_back(old);
  }
  Registry() {
    entries[0] = new DeviceTypeEntry{"cpu", "core", builtin_cpu_table(), 1, ""};
    size = 1;
  }
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: storages may be freed at exit
  return *r;
}

}  // namespace

const DeviceTypeEntry& detail::device_type_unchecked(int16_t id) {
  return *registry().entries[id];
}

const DeviceTypeEntry& device_type(int16_t id) {
  Registry& r = registry();
  EMBER_CHECK_DEVICE(id >= 0 && id < r.size, "[device] unknown device type id {} ({} registered)",
                     id, r.size);
  return *r.entries[id];
}

int16_t find_device_type(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (int16_t i = 0; i < r.size; ++i) {
    if (r.entries[i].load()->name == name) return i;
  }
  return -1;
}

std::vector<DeviceTypeEntry> device_types() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<DeviceTypeEntry> out;
  for (int16_t i = 0; i < r.size; ++i) out.push_back(*r.entries[i]);
  return out;
}

void check_device(Device device, const char* op) {
  const DeviceTypeEntry& e = device_type(device.type);
  EMBER_CHECK_DEVICE(device.index >= 0 && device.index < e.count,
                     "[{}] device {} is not available: {} has {} device(s){}", op, device.str(),
                     e.name, e.count,
                     e.unusable_reason.empty() ? "" : " (" + e.unusable_reason + ")");
}

void device_copy(Device device, void* dst, const void* src, size_t bytes, int32_t kind) {
  const ember_device_type_v1& t = device_type(device.type).table;
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.copy(t.ctx, device.index, dst, src, bytes, kind, e, cap);
      },
      "[copy] {} copy of {} bytes failed", device.str(), bytes);
}

void device_copy_async(Device device, void* dst, const void* src, size_t bytes, int32_t kind) {
  const DeviceTypeEntry& e = device_type(device.type);
  if (!e.table.copy_async) {
    device_copy(device, dst, src, bytes, kind);
    return;
  }
  detail::call_checked(
      [&](char* err, size_t cap) {
        return e.table.copy_async(e.table.ctx, device.index, dst, src, bytes, kind, err, cap);
      },
      "[copy] {} asynchronous copy of {} bytes failed", device.str(), bytes);
}

void synchronize(Device device) {
  ensure_plugins_loaded();
  const DeviceTypeEntry& e = device_type(device.type);
  if (!e.table.synchronize) return;
  detail::call_checked(
      [&](char* err, size_t cap) {
        return e.table.synchronize(e.table.ctx, device.index, err, cap);
      },
      "[synchronize] {} failed", device.str());
}

int16_t detail::register_device_type(const ember_device_type_v1& table, const std::string& plugin,
                                     std::string* conflict) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  ember_device_type_v1 t{};
  std::memcpy(&t, &table, std::min<size_t>(table.struct_size, sizeof(t)));
  t.struct_size = sizeof(t);
  DeviceTypeEntry entry{t.name ? t.name : "", plugin, t, 0, ""};
  char reason[256] = {0};
  entry.count = t.device_count ? t.device_count(t.ctx, reason, sizeof(reason)) : 0;
  if (entry.count <= 0) {
    entry.count = 0;
    entry.unusable_reason = reason[0] ? reason : "no devices";
  }
  for (int16_t i = 0; i < r.size; ++i) {
    const DeviceTypeEntry& old = *r.entries[i];
    if (old.name != entry.name) continue;
    if (old.plugin == "core" || t.priority > old.table.priority) {
      if (old.plugin != "core" && conflict) {
        *conflict =
            fmt::format("device type '{}' of plugin {} replaced by plugin {} (priority {} > {})",
                        entry.name, old.plugin, plugin, t.priority, old.table.priority);
      }
      r.set(i, new DeviceTypeEntry(std::move(entry)));
    } else if (conflict) {
      *conflict =
          fmt::format("device type '{}' of plugin {} kept over plugin {} (priority {} >= {})",
                      entry.name, old.plugin, plugin, old.table.priority, t.priority);
    }
    return i;
  }
  if (r.size >= kMaxDeviceTypes) return -1;
  r.set(r.size, new DeviceTypeEntry(std::move(entry)));
  return r.size++;
}

Device best_device() {
  ensure_plugins_loaded();
  if (const char* env = std::getenv("EMBER_DEVICE"); env && *env) {
    const int16_t id =
        find_device_type(std::string_view(env).substr(0, std::string_view(env).find(':')));
    EMBER_CHECK_DEVICE(id >= 0,
                       "[device] EMBER_DEVICE={}: no device type of that name is registered", env);
    const Device d(env);
    check_device(d, "EMBER_DEVICE");
    return d;
  }
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  int16_t best = kCpuType;
  for (int16_t i = 0; i < r.size; ++i) {
    const DeviceTypeEntry& e = *r.entries[i];
    if (e.count > 0 && e.table.priority > r.entries[best].load()->table.priority) best = i;
  }
  return Device(best, 0);
}

void set_default_device(Device device) {
  ensure_plugins_loaded();
  check_device(device, "set_default_device");
  detail::g_default_device.store(device, std::memory_order_relaxed);
}

void reset_default_device() {
  detail::g_default_device.store(Device::cpu(), std::memory_order_relaxed);
}

// Device (ember/tensor/device.h): its names and current index come from this registry.

namespace {

// Note [The current device]
// Each thread has a current index per device type (0 until set_current_device), and a device
// named without an index ("cuda") means it, as torch.device("cuda") means the current CUDA
// device. Tensors always carry a full Device, so the current device only matters where a name
// is parsed; kernels make their tensors' device current in their backend themselves.
thread_local int16_t t_current_index[kMaxDeviceTypes] = {};

}  // namespace

int16_t current_device_index(int16_t type) {
  return type >= 0 && type < kMaxDeviceTypes ? t_current_index[type] : 0;
}

void set_current_device(Device device) {
  check_device(device, "set_current_device");
  t_current_index[device.type] = device.index;
}

DeviceGuard::DeviceGuard(Device device)
    : previous_(device.type, current_device_index(device.type)) {
  set_current_device(device);
}

DeviceGuard::~DeviceGuard() {
  t_current_index[previous_.type] = previous_.index;
}

Device::Device(std::string_view spec) {
  ensure_plugins_loaded();
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  int index = -1;
  if (colon != std::string_view::npos) {
    const std::string_view num = spec.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    EMBER_CHECK(ec == std::errc() && ptr == num.data() + num.size() && index >= 0,
                "[device] invalid device index in '{}' (expected e.g. 'cuda:0')", spec);
  }
  const int16_t id = find_device_type(name);
  if (id < 0) {
    std::string known;
    for (const DeviceTypeEntry& e : device_types()) known += (known.empty() ? "" : ", ") + e.name;
    throw DeviceError(
        fmt::format("[device] unknown device type '{}': registered types are {} (is its "
                    "plugin loaded? see `ember plugins`)",
                    name, known));
  }
  type = id;
  // An index the user wrote must exist now (cpu has only cpu:0), or the mistake would surface
  // far from here, at the first allocation; a bare name means the current device.
  if (index >= 0) {
    const DeviceTypeEntry& e = device_type(id);
    EMBER_CHECK_DEVICE(index < e.count,
                       "[device] device '{}' does not exist: {} has {} device(s){}", spec, e.name,
                       e.count, e.unusable_reason.empty() ? "" : " (" + e.unusable_reason + ")");
  }
  this->index = index < 0 ? current_device_index(id) : static_cast<int16_t>(index);
}

std::string Device::str() const {
  const std::string_view name = type_name();
  if (type == kCpuType && index == 0) return std::string(name);
  return fmt::format("{}:{}", name, index);
}

std::string_view Device::type_name() const {
  if (type < 0 || type >= kMaxDeviceTypes) return "invalid";
  return detail::device_type_unchecked(type).name;
}

namespace {

// The deleter of allocate_storage's storages: back to the allocator of the entry that made it.
void free_block(void* ctx, void* data, size_t n, Device d) {
  const auto* entry = static_cast<const DeviceTypeEntry*>(ctx);
  entry->table.free(entry->table.ctx, d.index, data, n);
}

// free_block while a profiler runs: the bytes are counted first.
[[gnu::noinline, gnu::cold]] void free_counted(void* ctx, void* data, size_t n, Device d) {
  profiler::detail::count_freed(n);
  free_block(ctx, data, n, d);
}

}  // namespace

Storage allocate_storage(size_t bytes, Device device) {
  ensure_plugins_loaded();
  if (device.type != kCpuType) check_device(device, "allocate");
  const DeviceTypeEntry& e = detail::device_type_unchecked(device.type);
  void* p = e.table.alloc(e.table.ctx, device.index, bytes);
  if (__builtin_expect(p == nullptr && bytes > 0, 0)) {
    // Ask again through alloc_checked, which says why (a caching allocator: requested,
    // allocated, reserved and free bytes); the failure path only, so the hot path stays one call.
    char why[512] = {0};
    if (e.table.alloc_checked) {
      p = e.table.alloc_checked(e.table.ctx, device.index, bytes, why, sizeof(why));
    }
    EMBER_CHECK_OOM(p != nullptr, "[allocate] out of memory on {}: could not allocate {} bytes{}{}",
                    device.str(), bytes, why[0] ? ": " : "", why);
  }
  // Note [One branch when the profiler is off] in ember/dispatch/profiling.h. Both ways
  // out of the deleter are tail calls.
  auto deleter = [](void* ctx, void* data, size_t n, Device d) {
    if (__builtin_expect(profiler::is_enabled(), 0)) return free_counted(ctx, data, n, d);
    free_block(ctx, data, n, d);
  };
  if (__builtin_expect(profiler::is_enabled(), 0)) profiler::detail::count_allocated(bytes);
  return make_intrusive<StorageImpl>(p, bytes, device, +deleter, const_cast<DeviceTypeEntry*>(&e));
}

int16_t pinned_memory_device_type() {
  ensure_plugins_loaded();
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  int16_t best = -1;
  for (int16_t i = 0; i < r.size; ++i) {
    const DeviceTypeEntry& e = *r.entries[i];
    if (e.count > 0 && e.table.host_alloc && e.table.host_free &&
        (best < 0 || e.table.priority > r.entries[best].load()->table.priority)) {
      best = i;
    }
  }
  return best;
}

Storage allocate_pinned_storage(size_t bytes, int16_t type) {
  ensure_plugins_loaded();
  if (type < 0) type = pinned_memory_device_type();
  if (type < 0) {
    std::string why;
    for (const DeviceTypeEntry& e : device_types()) {
      if (!e.table.host_alloc) continue;
      why += fmt::format("; {} offers it but has no devices ({})", e.name, e.unusable_reason);
    }
    throw DeviceError(fmt::format(
        "[pin_memory] no loaded backend with a device offers pinned host memory{} (pinned memory "
        "is page-locked for an accelerator's copy engine; without one, use ordinary tensors)",
        why.empty() ? ": no backend has host_alloc" : why));
  }
  const DeviceTypeEntry& e = device_type(type);
  EMBER_CHECK_NOT_IMPLEMENTED(e.table.host_alloc && e.table.host_free,
                              "[pin_memory] device type '{}' offers no pinned host memory", e.name);
  char why[512] = {0};
  void* p = bytes ? e.table.host_alloc(e.table.ctx, bytes, why, sizeof(why)) : nullptr;
  EMBER_CHECK_OOM(p != nullptr || bytes == 0,
                  "[pin_memory] could not allocate {} bytes of pinned host memory from {}: {}",
                  bytes, e.name, why[0] ? why : "no reason given");
  auto deleter = [](void* ctx, void* data, size_t n, Device) {
    const auto* entry = static_cast<const DeviceTypeEntry*>(ctx);
    if (data) entry->table.host_free(entry->table.ctx, data, n);
  };
  return make_intrusive<StorageImpl>(p, bytes, Device::cpu(), +deleter,
                                     const_cast<DeviceTypeEntry*>(&e), /*pinned=*/true);
}

namespace {

// The entry of device type `type`, whose backend must have the option slot `has`.
const DeviceTypeEntry& backend_with_options(std::string_view type,
                                            bool (*has)(const DeviceTypeEntry&), const char* op) {
  ensure_plugins_loaded();
  const int16_t id = find_device_type(type);
  EMBER_CHECK_DEVICE(id >= 0, "[{}] no device type '{}' is registered", op, type);
  const DeviceTypeEntry& e = device_type(id);
  EMBER_CHECK_NOT_IMPLEMENTED(has(e), "[{}] the {} backend ({}) has no options", op, e.name,
                              e.plugin);
  return e;
}

}  // namespace

void set_backend_option(std::string_view type, std::string_view key, std::string_view value) {
  const DeviceTypeEntry& e = backend_with_options(
      type, [](const DeviceTypeEntry& d) { return d.table.set_option != nullptr; },
      "set_backend_option");
  const std::string k(key), v(value);
  detail::call_checked(
      [&](char* err, size_t cap) {
        return e.table.set_option(e.table.ctx, k.c_str(), v.c_str(), err, cap);
      },
      "[set_backend_option] {} {}={}", e.name, k, v);
}

std::string backend_option(std::string_view type, std::string_view key) {
  const DeviceTypeEntry& e = backend_with_options(
      type, [](const DeviceTypeEntry& d) { return d.table.get_option != nullptr; },
      "backend_option");
  const std::string k(key);
  char value[256] = {0};
  EMBER_CHECK(e.table.get_option(e.table.ctx, k.c_str(), value, sizeof(value)) == EMBER_OK,
              "[backend_option] the {} backend has no option '{}'", e.name, k);
  return value;
}

}  // namespace ember
