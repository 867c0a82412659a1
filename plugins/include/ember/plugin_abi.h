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
/** ABI minor version this header describes; tables grow with it.
 *  1.0: devices and kernels. 1.1: ops defined by plugins (ember_registrar_v1::op_schema).
 *  1.2: tensor identities in kernel calls (ember_kernel_call::input_ids / output_ids).
 *  1.3: device types with allocation messages, page-locked host memory, asynchronous copies,
 *  streams and events, stream-aware frees and options (ember_device_type_v1, from alloc_checked).
 *  1.4: EMBER_ERR_INDEX, and ember_kernel_call::stream set to the device's current stream.
 *  1.5: communication backends (ember_registrar_v1::comm_backend, ember_comm_backend_v1) and
 *  EMBER_ERR_TIMEOUT / EMBER_ERR_PEER.
 *  1.6: kernel flags (ember_registrar_v1::kernel_with_flags): channels-last kernels.
 */
#define EMBER_ABI_MINOR 6
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
  EMBER_ERR_INTERNAL = 5,
  EMBER_ERR_INDEX = 6,   /* ABI 1.4: an index value out of range (an older core reports it as an
                           internal error, so kernels may return it to any 1.x core) */
  EMBER_ERR_TIMEOUT = 7, /* ABI 1.5: a collective or the rendezvous store ran out of time */
  EMBER_ERR_PEER = 8     /* ABI 1.5: a peer process closed its connection or failed */
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

/** ABI 1.2: who a tensor's memory belongs to and how often it was written in place.
 *
 *  Note [Tensor identities]
 *  ember_tensor is passed in arrays, so it cannot grow without breaking plugins built against
 *  1.0 (they would index the array with the old element size); the identities travel in
 *  parallel arrays appended to ember_kernel_call instead. `storage_id` names the storage
 *  (the memory block) the tensor views: taken from a process-wide counter when the storage is
 *  made and never reused, even when a caching allocator hands the same address to a new
 *  storage. `version` counts in-place writes made through Ember (in-place ops, copy_, fill_,
 *  optimizer steps; code writing through a raw data pointer must call bump_version()). So
 *  (storage_id, version, data) identifies a tensor's contents: a kernel may keep something
 *  derived from an input (a weight in another layout) and reuse it while all three match. */
typedef struct ember_tensor_identity {
  uint64_t storage_id; /* 0: unknown, never reuse anything derived from this tensor */
  uint64_t version;
} ember_tensor_identity;

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
  /* ABI 1.2 (read only when struct_size covers them, see Note [Tensor identities]): one
   * identity per input and per output, in the order of inputs / outputs, or NULL. */
  const ember_tensor_identity* input_ids;
  const ember_tensor_identity* output_ids;
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

/* Note [Streams and events through the ABI]
 * A stream is a queue of device work; an event marks a point in one. The core knows neither:
 * it passes the backend's opaque handles around (ember::Stream, ember::Event in
 * core/include/ember/dispatch/stream.h), as PyTorch's c10::Stream does with its DeviceGuardImpl.
 * Each thread has a current stream per device (the device's default stream until it sets another),
 * and everything the thread does on that device goes there: kernels, allocations (a caching
 * allocator keeps blocks per stream) and copies. Pool streams are never destroyed, so a handle
 * stays valid for the life of the process and a cached block can never meet a new stream that
 * reuses an old stream's handle; events are owned and destroyed by the core. A memory block that
 * other streams use as well is named with record_stream, so it is not reused while their work
 * may still read it. A device type without streams leaves these NULL: its one implicit stream is
 * always complete, and the core treats it so.
 *
 * Note [Pinned host memory]
 * Copies from pageable host memory are staged by the driver: H2D returns once the bytes are in a
 * staging buffer, D2H waits. Page-locked memory from host_alloc is read and written by the copy
 * engine directly, which is faster and lets copy_async return at once, so a DataLoader can move
 * the next batch while kernels run. The price is a lifetime rule: the host bytes must not change
 * (H2D) or be read (D2H) until the copy is done, and host_free must not hand the block out again
 * before that either: the backend records an event for every asynchronous copy touching a block
 * and reuses the block only once those events completed (PyTorch's CachingHostAllocator). */

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

  /* ---- ABI 1.3 (Note [Streams and events through the ABI]). Every field may be NULL; the
   * core reads one only when struct_size covers it and it is set. ---- */
  /* alloc that says why it failed (for a caching allocator: requested, allocated, reserved and
   * free bytes) in `error` when it returns NULL for bytes > 0. */
  void* (*alloc_checked)(void* ctx, int32_t index, size_t bytes, char* error,
                         size_t error_capacity);
  /* Page-locked host memory that copies with this device type can read and write without
   * staging, and asynchronously (Note [Pinned host memory]); NULL with a reason on failure. */
  void* (*host_alloc)(void* ctx, size_t bytes, char* error, size_t error_capacity);
  /* Returns memory from host_alloc; it is reused only after every asynchronous copy queued on
   * it so far has completed. */
  void (*host_free)(void* ctx, void* ptr, size_t bytes);
  /* copy that may return before the bytes have moved, when the host side comes from host_alloc
   * (otherwise it behaves as copy). Ordered on the current stream of `index`; the host memory
   * must not be read (D2H) or written (H2D) until that stream has been waited for. */
  int32_t (*copy_async)(void* ctx, int32_t index, void* dst, const void* src, size_t bytes,
                        int32_t kind, char* error, size_t error_capacity);
  /* The calling thread's current stream of device `index` (which == EMBER_STREAM_CURRENT) or
   * the device's default stream (EMBER_STREAM_DEFAULT). Handles are opaque and never freed. */
  void* (*stream_get)(void* ctx, int32_t index, int32_t which);
  /* A stream from the device's pool (created on first use, handed out round-robin, never
   * destroyed), of high priority when `high_priority` is nonzero. */
  int32_t (*stream_from_pool)(void* ctx, int32_t index, int32_t high_priority, void** out,
                              char* error, size_t error_capacity);
  /* Makes `stream` (from stream_get or stream_from_pool) the calling thread's current stream of
   * device `index`: kernels, allocations and copies from this thread go there. */
  int32_t (*stream_set_current)(void* ctx, int32_t index, void* stream, char* error,
                                size_t error_capacity);
  /* Waits until all work queued on `stream` has completed. */
  int32_t (*stream_synchronize)(void* ctx, int32_t index, void* stream, char* error,
                                size_t error_capacity);
  /* Writes 1 to `done` if all work queued on `stream` has completed, else 0; never blocks. */
  int32_t (*stream_query)(void* ctx, int32_t index, void* stream, int32_t* done, char* error,
                          size_t error_capacity);
  /* Makes work queued on `stream` from now on wait for `event` (the host does not wait). */
  int32_t (*stream_wait_event)(void* ctx, int32_t index, void* stream, void* event, char* error,
                               size_t error_capacity);
  /* A new event; flags: EMBER_EVENT_TIMING to measure elapsed time with it. */
  int32_t (*event_create)(void* ctx, int32_t index, int32_t flags, void** out, char* error,
                          size_t error_capacity);
  /* Destroys an event from event_create (work it marks may still be pending). */
  void (*event_destroy)(void* ctx, int32_t index, void* event);
  /* Marks the work queued on `stream` so far. */
  int32_t (*event_record)(void* ctx, int32_t index, void* event, void* stream, char* error,
                          size_t error_capacity);
  /* Waits until the work `event` marks has completed (at once if never recorded). */
  int32_t (*event_synchronize)(void* ctx, int32_t index, void* event, char* error,
                               size_t error_capacity);
  /* Writes 1 to `done` if the work `event` marks has completed, else 0; never blocks. */
  int32_t (*event_query)(void* ctx, int32_t index, void* event, int32_t* done, char* error,
                         size_t error_capacity);
  /* Milliseconds between two completed timing events. */
  int32_t (*event_elapsed_ms)(void* ctx, int32_t index, void* start, void* end, double* ms,
                              char* error, size_t error_capacity);
  /* Marks the block at `ptr` (an address alloc returned) as used by `stream` as well: when it is
   * freed, it is reused only after the work queued on `stream` by then has completed. */
  int32_t (*record_stream)(void* ctx, int32_t index, void* ptr, void* stream, char* error,
                           size_t error_capacity);
  /* Sets a backend option (key and value are strings the backend documents); EMBER_ERR_INVALID
   * with a reason for an unknown key or a bad value. */
  int32_t (*set_option)(void* ctx, const char* key, const char* value, char* error,
                        size_t error_capacity);
  /* Writes an option's current value into `value`; EMBER_ERR_INVALID for an unknown key. */
  int32_t (*get_option)(void* ctx, const char* key, char* value, size_t value_capacity);
} ember_device_type_v1;

/** Which stream ember_device_type_v1::stream_get returns. */
enum { EMBER_STREAM_CURRENT = 0, EMBER_STREAM_DEFAULT = 1 };
/** Flags of ember_device_type_v1::event_create. */
enum { EMBER_EVENT_TIMING = 1 };

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

/* ---- ABI 1.1: operators defined by plugins --------------------------------------------- */

/** Most dimensions any tensor has: the core makes no larger one, so a kernel may keep a
 *  descriptor's sizes and strides in arrays of this length, and an inferred output has at most
 *  this many (Note [At most EMBER_MAX_DIMS dims] in core/tensor/tensor_impl.cpp). */
#define EMBER_MAX_DIMS 64

/** One output as an infer callback describes it; the core allocates it accordingly. */
typedef struct ember_output_info {
  int32_t dtype; /* preset to the dtype of input 0 (EMBER_F32 without inputs) */
  int32_t ndim;  /* preset to -1; infer must set it (0 for a scalar) */
  int64_t sizes[EMBER_MAX_DIMS];
} ember_output_info;

/** What an infer callback receives: the inputs' metadata (data is NULL), the attributes, and
 *  one ember_output_info per output to fill. */
typedef struct ember_infer_call {
  uint32_t struct_size;
  const char* op; /* the op being called, for messages */
  int32_t num_inputs;
  const ember_tensor* inputs; /* dtype, ndim, sizes, strides, device; data == NULL */
  int32_t num_outputs;
  ember_output_info* outputs;
  int32_t num_ints;
  const int64_t* ints;
  int32_t num_floats;
  const double* floats;
  char* error; /* message buffer for rejected inputs, error_capacity bytes */
  size_t error_capacity;
} ember_infer_call;

/** Shape and dtype inference: fills call->outputs or writes why the inputs are rejected and
 *  returns EMBER_ERR_INVALID. Runs on every call, before any allocation; may not throw. */
typedef int32_t (*ember_infer_fn)(const ember_infer_call* call);

/** Flags of a kernel registration (ABI 1.6, ember_registrar_v1::kernel_with_flags).
 *
 *  Note [Channels-last kernels]
 *  The image ops' contracts (conv2d and its two gradients, batch_norm and batch_norm_backward,
 *  max_pool2d, avg_pool2d, adaptive_avg_pool2d and their backwards) say "contiguous": every
 *  operand dense in row-major order. A kernel registered with EMBER_KERNEL_CHANNELS_LAST also
 *  takes a call in which every 4-d operand, inputs and outputs alike, is dense in channels-last
 *  order (sizes [N, C, H, W], strides [H*W*C, 1, W*C, C]; size-1 dims may have any stride);
 *  lower-rank operands (a bias, running statistics) stay contiguous. The core makes such a call
 *  when the op runs in channels-last (Note [Channels-last tensors] in the core); for a kernel
 *  without the flag it reorders the operands to row-major and the results back, so an older
 *  plugin stays correct. The flag belongs to the registration (op, device type, dtypes), so a
 *  backend can set it only for the dtypes whose kernels handle both layouts. */
enum {
  /* Takes channels-last operands where its op's contract allows them. */
  EMBER_KERNEL_CHANNELS_LAST = 1u << 0
};

/** Flags of an op schema. */
enum {
  /* The core hands the kernels dense row-major inputs (copying strided ones first). */
  EMBER_OP_CONTIGUOUS_INPUTS = 1u << 0
};

/** Most inputs or outputs of an op defined by a plugin (the masks below are 32 bits, the
 *  kernel call carries at most 16 of each). */
#define EMBER_OP_MAX_ARGS 16

/** A new operator: its name, arity, shape inference and (optionally) its backward.
 *
 *  Note [Backward of an op defined by a plugin]
 *  `backward_op` names another op with a schema (usually registered by the same plugin) whose
 *  inputs are, in order: the gradient of every output, then the inputs selected by
 *  `saved_inputs`, then the outputs selected by `saved_outputs` (each in index order); it gets
 *  the forward call's ints and floats, and has one output per input selected by
 *  `differentiable_inputs` (in index order): that input's gradient, of its shape and dtype.
 *  Gradients of outputs that received none arrive as zeros. The backward op is itself not
 *  differentiable (first order only). */
typedef struct ember_op_schema_v1 {
  uint32_t struct_size;
  const char* name;    /* "namespace::op"; names without a namespace and "ember::" are the core's */
  const char* doc;     /* one line for `ember ops` and error messages, or NULL */
  int32_t num_inputs;  /* exact, 0..EMBER_OP_MAX_ARGS */
  int32_t num_outputs; /* exact, 1..EMBER_OP_MAX_ARGS */
  int32_t num_ints;    /* integer attributes required, or -1 for any number */
  int32_t num_floats;  /* floating attributes required, or -1 for any number */
  uint32_t flags;      /* EMBER_OP_* */
  ember_infer_fn infer;
  /* Kernels are looked up by the dtype of input 0 (of output 0 without inputs) on the device
   * of the inputs; register them with ember_registrar_v1::kernel under `name`. */
  const char* backward_op;        /* NULL: not differentiable */
  uint32_t differentiable_inputs; /* bit i: input i gets a gradient */
  uint32_t saved_inputs;          /* bit i: backward_op receives input i */
  uint32_t saved_outputs;         /* bit i: backward_op receives output i */
} ember_op_schema_v1;

/* ---- ABI 1.5: communication backends ---------------------------------------------------
 *
 * Note [Communication backends are plugins]
 * A communication backend (gloo, nccl, mpi) moves tensors between the processes of a job. Like a
 * device type it is a table a plugin registers; the core keeps it and `ember plugins` reports it,
 * so a deployment picks its transport by what is installed. The core does everything that is the
 * same for every transport: the rendezvous store (env://, file://), one worker thread per
 * process group that runs collectives in the order they were issued, timeouts, naming the ranks
 * that did not answer, the average (a sum divided by the world size), and checks of the
 * arguments (same dtype and device, contiguous, the sizes each collective requires). A backend
 * only moves bytes: `collective` runs one operation to completion (or, for a device with
 * streams, enqueues it on call->stream) within call->timeout_ms. */

/** Operations of ember_collective_call::op; new ones are appended. */
enum {
  EMBER_COLL_ALL_REDUCE = 0,     /* output = reduce(input of every rank); output may be input */
  EMBER_COLL_BROADCAST = 1,      /* output = input of rank `peer` (input == output) */
  EMBER_COLL_ALL_GATHER = 2,     /* output (world * n) = inputs (n each) in rank order */
  EMBER_COLL_REDUCE_SCATTER = 3, /* output (n) = block `rank` of reduce(inputs (world * n)) */
  EMBER_COLL_ALL_TO_ALL = 4,     /* output block r (n) = block `rank` of rank r's input */
  EMBER_COLL_BARRIER = 5,        /* no tensors */
  EMBER_COLL_SEND = 6,           /* input to rank `peer`, matched by `tag` */
  EMBER_COLL_RECV = 7            /* output from rank `peer`, matched by `tag` */
};

/** Reductions of ember_collective_call::reduce (the core turns an average into a sum). */
enum { EMBER_REDUCE_SUM = 0, EMBER_REDUCE_PRODUCT = 1, EMBER_REDUCE_MIN = 2, EMBER_REDUCE_MAX = 3 };

/** Receives a value read from the store. */
typedef void (*ember_store_sink)(void* user, const void* data, size_t size);

/** The rendezvous store of a process group, provided by the core: every rank sees every key. */
typedef struct ember_store_v1 {
  uint32_t struct_size;
  void* ctx;
  /* Sets `key` to `size` bytes (replacing an old value). */
  int32_t (*set)(void* ctx, const char* key, const void* value, size_t size, char* error,
                 size_t error_capacity);
  /* Waits up to timeout_ms for `key` to exist, then hands its value to sink(user, ...) once;
   * EMBER_ERR_TIMEOUT with the key named when it does not appear in time. */
  int32_t (*get)(void* ctx, const char* key, int64_t timeout_ms, ember_store_sink sink, void* user,
                 char* error, size_t error_capacity);
} ember_store_v1;

/** What a communicator is made from. */
typedef struct ember_comm_config {
  uint32_t struct_size;
  int32_t rank;
  int32_t world_size;
  int64_t timeout_ms;          /* for connecting, and the default of every collective */
  const char* local_address;   /* an address of this host the other ranks can reach */
  const ember_store_v1* store; /* keys are private to this process group */
  int32_t device_index;        /* the device this rank uses (device backends), or -1 */
  const struct ember_host_v1* host;
} ember_comm_config;

/** One collective or point-to-point operation on contiguous tensors of one dtype and device. */
typedef struct ember_collective_call {
  uint32_t struct_size;
  int32_t op;     /* EMBER_COLL_* */
  int32_t reduce; /* EMBER_REDUCE_*, for all-reduce and reduce-scatter */
  int32_t peer;   /* the root of a broadcast, the other rank of a send or receive */
  int32_t tag;    /* send/recv matching */
  ember_tensor input;
  ember_tensor output;
  int64_t timeout_ms;
  void* stream; /* the device's current stream, or NULL */
  char* error;  /* why it failed, error_capacity bytes */
  size_t error_capacity;
} ember_collective_call;

/** A communication backend a plugin provides (Note [Communication backends are plugins]). */
typedef struct ember_comm_backend_v1 {
  uint32_t struct_size;
  const char* name;         /* "gloo", "nccl", "mpi", ... */
  const char* device_types; /* comma-separated device types whose tensors it moves: "cpu" */
  int32_t priority;         /* higher wins a name conflict */
  void* ctx;
  /* 1 if it can run in this process, else 0 with the reason (no GPU, no launcher...). */
  int32_t (*available)(void* ctx, char* reason, size_t reason_capacity);
  /* Joins the group described by `config` (blocks until every rank joined or the timeout). */
  int32_t (*create)(void* ctx, const ember_comm_config* config, void** comm, char* error,
                    size_t error_capacity);
  /* Runs one operation (see ember_collective_call); EMBER_ERR_UNSUPPORTED names what it cannot
   * move (a dtype, an operation), EMBER_ERR_TIMEOUT and EMBER_ERR_PEER say which peer failed
   * when it knows. */
  int32_t (*collective)(void* ctx, void* comm, const ember_collective_call* call);
  /* Leaves the group and frees the communicator. */
  void (*destroy)(void* ctx, void* comm);
  /* The rank and world size the backend's own launcher assigned (mpirun), or NULL: the core
   * then takes them from the arguments or RANK / WORLD_SIZE. */
  int32_t (*world)(void* ctx, int32_t* rank, int32_t* world_size, char* error,
                   size_t error_capacity);
} ember_comm_backend_v1;

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
  /* ABI 1.1 (present when struct_size covers it). Declares a new op; the schema and its
   * strings are copied. Returns EMBER_OK, or EMBER_ERR_INVALID with the reason in `error` for
   * a malformed schema (which also fails the plugin's init). A name another plugin already
   * defined is not an error here: the first definition stays, the conflict is recorded. */
  int32_t (*op_schema)(void* ctx, const ember_op_schema_v1* schema, char* error,
                       size_t error_capacity);
  /* ABI 1.5 (present when struct_size covers it). Registers a communication backend; the table
   * is copied (its strings and ctx must outlive the process). EMBER_ERR_INVALID with the reason
   * for an incomplete table (which also fails init). */
  int32_t (*comm_backend)(void* ctx, const ember_comm_backend_v1* backend, char* error,
                          size_t error_capacity);
  /* ABI 1.6 (present when struct_size covers it). `kernel` with flags (EMBER_KERNEL_*) saying
   * what the kernel takes beyond its op's contract. */
  int32_t (*kernel_with_flags)(void* ctx, const char* op, int32_t device_type, uint32_t dtype_mask,
                               int32_t priority, ember_kernel_fn fn, uint32_t flags);
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

#if defined(__cplusplus) && __cplusplus >= 201103L
/* The layout is the ABI: fields only ever get appended. */
static_assert(offsetof(ember_registrar_v1, find_device_type) == 4 * sizeof(void*),
              "ember_registrar_v1 v1.0 layout changed");
static_assert(offsetof(ember_registrar_v1, op_schema) == 5 * sizeof(void*),
              "ember_registrar_v1::op_schema must follow the v1.0 fields");
static_assert(offsetof(ember_registrar_v1, comm_backend) == 6 * sizeof(void*),
              "ember_registrar_v1::comm_backend must follow the v1.1 fields");
static_assert(offsetof(ember_device_type_v1, alloc_checked) ==
                  offsetof(ember_device_type_v1, get_num_threads) + sizeof(void*),
              "ember_device_type_v1::alloc_checked must follow the v1.0 fields");
static_assert(offsetof(ember_kernel_call, input_ids) ==
                  offsetof(ember_kernel_call, error_capacity) + sizeof(size_t),
              "ember_kernel_call::input_ids must follow the v1.0 fields");
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EMBER_PLUGIN_ABI_H */
