// DLPack export and import, zero-copy in both directions, in DLPack 0.x's and 1.0's layouts.
#include "ember/tensor/dlpack.h"

#include <dlpack/dlpack.h>

#include <functional>
#include <type_traits>

#include "core/tensor/dlpack_versioned.h"
#include "ember/ops/factory.h"

// Note [One DLPack]
// Ember speaks DLPack once, here, for C++ users and for Python's __dlpack__/from_dlpack alike.
// DLPack 1.0 (the array API standard's protocol) adds DLManagedTensorVersioned: a version,
// read-only and copied flags around the same DLTensor; and kDLBool. Debian 12 ships DLPack 0.6's
// header, which has neither, so where the header lacks them they are laid out here as DLPack
// 1.0 defines them (core/tensor/dlpack_versioned.h; a newer header provides its own). Bool travels
// as kDLBool both ways, as PyTorch and NumPy send it; kDLUInt 8 stays uint8. Every check runs
// before an import takes ownership, so a refused tensor stays its producer's to free.

namespace ember {
namespace {

constexpr uint64_t kReadOnly = 1ull << 0;  // DLPACK_FLAG_BITMASK_READ_ONLY

DLDataType to_dl(DType d) {
  switch (d) {
    case DType::Float32:
      return {kDLFloat, 32, 1};
    case DType::Float64:
      return {kDLFloat, 64, 1};
    case DType::Float16:
      return {kDLFloat, 16, 1};
    case DType::BFloat16:
      return {kDLBfloat, 16, 1};
    case DType::Int64:
      return {kDLInt, 64, 1};
    case DType::Int32:
      return {kDLInt, 32, 1};
    case DType::Int8:
      return {kDLInt, 8, 1};
    case DType::UInt8:
      return {kDLUInt, 8, 1};
    case DType::Bool:
      return {static_cast<uint8_t>(kDLBool), 8, 1};
  }
  return {kDLFloat, 32, 1};
}

DType from_dl(DLDataType t) {
  EMBER_CHECK_NOT_IMPLEMENTED(t.lanes == 1,
                              "[from_dlpack] vector types are not supported: {} lanes", t.lanes);
  const int code = t.code;
  if (code == kDLFloat && t.bits == 32) return DType::Float32;
  if (code == kDLFloat && t.bits == 64) return DType::Float64;
  if (code == kDLFloat && t.bits == 16) return DType::Float16;
  if (code == kDLBfloat && t.bits == 16) return DType::BFloat16;
  if (code == kDLInt && t.bits == 64) return DType::Int64;
  if (code == kDLInt && t.bits == 32) return DType::Int32;
  if (code == kDLInt && t.bits == 8) return DType::Int8;
  if (code == kDLUInt && t.bits == 8) return DType::UInt8;
  if (code == kDLBool && t.bits == 8) return DType::Bool;
  throw TypeError(fmt::format(
      "[from_dlpack] unsupported DLPack dtype (code {}, {} bits): Ember has float16/32/64, "
      "bfloat16, int8/32/64, uint8 and bool",
      code, static_cast<int>(t.bits)));
}

Device device_of(const DLDevice& d) {
  switch (d.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
      return Device::cpu();
    case kDLCUDA:
      return Device(fmt::format("cuda:{}", d.device_id));
    default:
      throw NotImplementedError(fmt::format(
          "[from_dlpack] unsupported DLPack device type {} (Ember reads CPU, CUDA and CUDA host "
          "memory)",
          static_cast<int>(d.device_type)));
  }
}

/** What an export owns: the tensor (keeping its memory alive) and its geometry. */
template <typename Managed>
struct Export {
  Tensor tensor;
  Shape sizes, strides;
  Managed managed{};
};

template <typename Managed>
Managed* make_export(const Tensor& t, const char* op) {
  EMBER_CHECK_TYPE(t.defined(), "[{}] undefined tensor", op);
  const std::string_view type = t.device().type_name();
  EMBER_CHECK_NOT_IMPLEMENTED(type == "cpu" || type == "cuda",
                              "[{}] device {} has no DLPack device type (cpu and cuda do)", op,
                              t.device().str());
  auto* ctx = new Export<Managed>{t, t.sizes(), t.strides()};
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = t.numel() ? t.data_ptr() : nullptr;
  dl.device = {type == "cpu" ? (t.is_pinned() ? kDLCUDAHost : kDLCPU) : kDLCUDA,
               type == "cpu" ? 0 : t.device().index};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = to_dl(t.dtype());
  dl.shape = ctx->sizes.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](Managed* self) {
    delete static_cast<Export<Managed>*>(self->manager_ctx);
  };
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    ctx->managed.version = {1, 0};
    ctx->managed.flags = 0;
  }
  return &ctx->managed;
}

/** Wraps a DLTensor after checking it; `release` runs when the last view goes. */
Tensor wrap(const DLTensor& dl, std::function<void()> release) {
  const DType dtype = from_dl(dl.dtype);
  const Device device = device_of(dl.device);
  EMBER_CHECK(dl.ndim >= 0 && (dl.ndim == 0 || dl.shape),
              "[from_dlpack] malformed DLTensor: ndim {} with{} shape", dl.ndim,
              dl.shape ? "" : "out");
  check_ndim(static_cast<size_t>(dl.ndim), "from_dlpack");
  Shape sizes(IntList(dl.shape, static_cast<size_t>(dl.ndim)));
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "[from_dlpack] negative size in shape {}", shape_str(sizes));
  }
  Shape strides = dl.strides ? Shape(IntList(dl.strides, static_cast<size_t>(dl.ndim)))
                             : contiguous_strides(sizes);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return from_blob(
      data, sizes, strides, dtype, [release = std::move(release)](void*) { release(); }, device);
}

}  // namespace

DLPackType dlpack_type(DType d) {
  const DLDataType t = to_dl(d);
  return {t.code, t.bits};
}

DLManagedTensor* to_dlpack(const Tensor& t) {
  return make_export<DLManagedTensor>(t, "to_dlpack");
}

DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t) {
  return make_export<DLManagedTensorVersioned>(t, "to_dlpack");
}

Tensor from_dlpack(DLManagedTensor* managed) {
  EMBER_CHECK(managed != nullptr, "[from_dlpack] null DLManagedTensor");
  return wrap(managed->dl_tensor, [managed] { dlpack_delete(managed); });
}

Tensor from_dlpack(DLManagedTensorVersioned* managed) {
  EMBER_CHECK(managed != nullptr, "[from_dlpack] null DLManagedTensorVersioned");
  EMBER_CHECK(managed->version.major == 1,
              "[from_dlpack] DLPack {}.{} is not supported (Ember reads 0.x and 1.x)",
              managed->version.major, managed->version.minor);
  const bool read_only = (managed->flags & kReadOnly) != 0;
  const Tensor t = wrap(managed->dl_tensor, [managed] { dlpack_delete(managed); });
  return read_only ? t.clone() : t;
}

void dlpack_delete(DLManagedTensor* managed) {
  if (managed && managed->deleter) managed->deleter(managed);
}

void dlpack_delete(DLManagedTensorVersioned* managed) {
  if (managed && managed->deleter) managed->deleter(managed);
}

}  // namespace ember
