/* Ember plugin ABI, version 1: the only header a backend or extension plugin must include.
 *
 * Note [The plugin ABI is C and append-only]
 * A plugin never links the core. The core hands the plugin versioned tables of function
 * pointers (ember_host_v1, ember_registrar_v1) and the plugin hands back its own
 * (ember_plugin_v1, ember_device_type_v1). Every table starts with struct_size; fields are
 * only ever appended, so a plugin built against minor N runs on a core of minor M >= N and
 * the core never reads a field past the struct_size the plugin declared. Changing or
 * removing a field is an ABI major bump. Nothing throws across this boundary: every call
 * returns a status and writes a message into a caller-provided buffer.
 */
#ifndef EMBER_PLUGIN_ABI_H
#define EMBER_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** ABI major version: plugins with another major are rejected. */
#define EMBER_ABI_MAJOR 1
/** ABI minor version this header describes; tables grow with it. */
#define EMBER_ABI_MINOR 0
/** Name of the one symbol a plugin exports: `const ember_plugin_v1* ember_plugin_entry_v1(void)`.
 */
#define EMBER_PLUGIN_ENTRY "ember_plugin_entry_v1"

/** Exports a symbol from a plugin built with hidden visibility. */
#if defined(__GNUC__)
#define EMBER_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define EMBER_PLUGIN_EXPORT
#endif

/** Element types; values are stable across the ABI. */
typedef enum ember_dtype {
  EMBER_F32 = 0,
  EMBER_F64 = 1,
  EMBER_F16 = 2,
  EMBER_BF16 = 3,
  EMBER_I64 = 4,
  EMBER_I32 = 5,
  EMBER_I8 = 6,
  EMBER_U8 = 7,
  EMBER_BOOL = 8,
  EMBER_NUM_DTYPES = 9
} ember_dtype;

/** Status codes returned by every call across the boundary. */
typedef enum ember_status {
  EMBER_OK = 0,
  EMBER_ERR_INVALID = 1,     /* bad arguments the core did not catch */
  EMBER_ERR_UNSUPPORTED = 2, /* this kernel cannot handle these inputs */
  EMBER_ERR_OUT_OF_MEMORY = 3,
  EMBER_ERR_DEVICE = 4, /* the device or a vendor library failed */
  EMBER_ERR_INTERNAL = 5
} ember_status;

/** A strided view of device memory handed to a kernel. Strides are in elements. */
typedef struct ember_tensor {
  void* data; /* address of element [0, ..., 0], storage offset already applied */
  int32_t dtype;
  int32_t ndim;
  const int64_t* sizes;
  const int64_t* strides;
  int32_t device_type;
  int32_t device_index;
} ember_tensor;

struct ember_host_v1;

/** Everything a kernel call receives; outputs are allocated by the core beforehand. */
typedef struct ember_kernel_call {
  uint32_t struct_size;
  int32_t num_inputs;
  const ember_tensor* inputs;
  int32_t num_outputs;
  const ember_tensor* outputs;
  int32_t num_ints; /* integer attributes, meaning fixed by the op's declaration */
  const int64_t* ints;
  int32_t num_floats; /* floating attributes, meaning fixed by the op's declaration */
  const double* floats;
  void* stream; /* the device's current stream, or NULL */
  const struct ember_host_v1* host;
  char* error; /* message buffer for a failing kernel, error_capacity bytes */
  size_t error_capacity;
} ember_kernel_call;

/** A kernel: reads call->inputs, writes call->outputs, returns a status. */
typedef int32_t (*ember_kernel_fn)(const ember_kernel_call* call);

/** Memory statistics of one device, in bytes unless named otherwise. */
typedef struct ember_memory_stats {
  uint64_t allocated;      /* held by live tensors */
  uint64_t reserved;       /* allocated plus cached */
  uint64_t peak_allocated; /* high-water mark of allocated */
  uint64_t num_allocs;     /* calls to the allocator */
  uint64_t num_os_allocs;  /* of those, how many went to the operating system or driver */
} ember_memory_stats;

/** Properties of one device. */
typedef struct ember_device_props {
  char name[128];
  uint64_t total_memory;
  int32_t compute_major; /* or 0 */
  int32_t compute_minor;
  int32_t num_cores; /* threads or multiprocessors */
} ember_device_props;

/** A device type a plugin provides: memory, copies, synchronisation. */
typedef struct ember_device_type_v1 {
  uint32_t struct_size;
  const char* name;        /* "cpu", "cuda", "reference", ... */
  int32_t priority;        /* higher wins a name conflict and default device selection */
  int32_t host_accessible; /* nonzero if the core may read its memory directly */
  void* ctx;
  int32_t (*device_count)(void* ctx, char* reason, size_t reason_capacity);
  int32_t (*device_props)(void* ctx, int32_t index, ember_device_props* out);
  void* (*alloc)(void* ctx, int32_t index, size_t bytes);
  void (*free)(void* ctx, int32_t index, void* ptr, size_t bytes);
  /* copies of contiguous bytes; kind 0: host->device, 1: device->host, 2: device->device */
  int32_t (*copy)(void* ctx, int32_t index, void* dst, const void* src, size_t bytes, int32_t kind,
                  char* error, size_t error_capacity);
  int32_t (*synchronize)(void* ctx, int32_t index, char* error, size_t error_capacity);
  int32_t (*memory_stats)(void* ctx, int32_t index, ember_memory_stats* out);
  void (*empty_cache)(void* ctx, int32_t index);
  void (*set_num_threads)(void* ctx, int32_t n); /* may be NULL */
  int32_t (*get_num_threads)(void* ctx);         /* may be NULL */
} ember_device_type_v1;

/** Copy kinds for ember_device_type_v1::copy. */
enum { EMBER_COPY_H2D = 0, EMBER_COPY_D2H = 1, EMBER_COPY_D2D = 2 };

/** Services the core offers plugins (logging, scratch memory). */
typedef struct ember_host_v1 {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* core_version;
  void (*log)(int32_t level, const char* message); /* 0 debug, 1 info, 2 warning, 3 error */
  void* (*scratch_alloc)(size_t bytes);            /* 64-byte aligned host memory */
  void (*scratch_free)(void* ptr, size_t bytes);
} ember_host_v1;

/** What a plugin registers during init, staged and committed only if init succeeds. */
typedef struct ember_registrar_v1 {
  uint32_t struct_size;
  void* ctx;
  /* Registers a device type; returns its id (>= 0) for kernel registration, or < 0. */
  int32_t (*device_type)(void* ctx, const ember_device_type_v1* type);
  /* Registers a kernel for op `op` on `device_type` for dtypes in `dtype_mask`
   * (bit i = ember_dtype i); the highest priority wins a conflict. */
  int32_t (*kernel)(void* ctx, const char* op, int32_t device_type, uint32_t dtype_mask,
                    int32_t priority, ember_kernel_fn fn);
  /* Looks up a device type id by name (registered by this or another plugin), or -1. */
  int32_t (*find_device_type)(void* ctx, const char* name);
} ember_registrar_v1;

/** The static descriptor a plugin's entry symbol returns. */
typedef struct ember_plugin_v1 {
  uint32_t struct_size;
  uint16_t abi_major;     /* must equal EMBER_ABI_MAJOR of the core */
  uint16_t abi_minor_min; /* oldest core minor this plugin runs on */
  const char* name;
  const char* version;
  const char* build_info;
  /* Registers everything; returns EMBER_OK or writes a reason. May not throw. */
  int32_t (*init)(const ember_host_v1* host, const ember_registrar_v1* reg, char* error,
                  size_t error_capacity);
  void (*shutdown)(void); /* may be NULL */
} ember_plugin_v1;

/** Type of the entry symbol. */
typedef const ember_plugin_v1* (*ember_plugin_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EMBER_PLUGIN_ABI_H */
