// DLPack 1.0's versioned tensor and bool code where the installed dlpack.h (Debian 12's is 0.6)
// lacks them, laid out as DLPack 1.0 defines them (Note [One DLPack] in core/ops/dlpack.cpp).
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>

#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1
/** DLPack's version, major and minor. */
struct DLPackVersion {
  uint32_t major;  ///< 1 for DLPack 1.x
  uint32_t minor;  ///< the minor release
};
/** DLPack 1.0's managed tensor: a version and flags around 0.x's DLTensor. */
struct DLManagedTensorVersioned {
  DLPackVersion version;                            ///< the producer's DLPack version
  void* manager_ctx;                                ///< the producer's context
  void (*deleter)(DLManagedTensorVersioned* self);  ///< frees the tensor (may be null)
  uint64_t flags;                                   ///< read-only (bit 0), copied (bit 1)
  DLTensor dl_tensor;                               ///< the tensor itself
};
/** DLPack 1.0's type code of bool. */
constexpr uint8_t kDLBool = 6;
#endif
