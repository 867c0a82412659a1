// DLPack (v0.6) export and import, zero-copy in both directions.
#include "ember/tensor/dlpack.h"

#include <dlpack/dlpack.h>

#include "ember/ops/factory.h"

namespace ember {
namespace {

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
      return {kDLUInt, 8, 1};  // DLPack 0.6 has no bool code
  }
  return {kDLFloat, 32, 1};
}

DType from_dl(DLDataType t) {
  EMBER_CHECK_NOT_IMPLEMENTED(t.lanes == 1,
                              "[from_dlpack] vector types are not supported: {} lanes", t.lanes);
  if (t.code == kDLFloat && t.bits == 32) return DType::Float32;
  if (t.code == kDLFloat && t.bits == 64) return DType::Float64;
  if (t.code == kDLFloat && t.bits == 16) return DType::Float16;
  if (t.code == kDLBfloat && t.bits == 16) return DType::BFloat16;
  if (t.code == kDLInt && t.bits == 64) return DType::Int64;
  if (t.code == kDLInt && t.bits == 32) return DType::Int32;
  if (t.code == kDLInt && t.bits == 8) return DType::Int8;
  if (t.code == kDLUInt && t.bits == 8) return DType::UInt8;
  throw NotImplementedError(
      fmt::format("[from_dlpack] unsupported DLPack dtype: code {} bits {}", t.code, t.bits));
}

struct ExportCtx {
  Tensor tensor;  // keeps the storage alive
  Shape sizes, strides;
  DLManagedTensor managed;
};

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) {
  EMBER_CHECK_TYPE(t.defined(), "[to_dlpack] undefined tensor");
  const std::string_view type = t.device().type_name();
  EMBER_CHECK_NOT_IMPLEMENTED(type == "cpu" || type == "cuda",
                              "[to_dlpack] device {} has no DLPack device type (cpu and cuda do)",
                              t.device().str());
  auto* ctx = new ExportCtx{t, t.sizes(), t.strides(), {}};
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = {type == "cpu" ? kDLCPU : kDLCUDA, t.device().index};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = to_dl(t.dtype());
  dl.shape = ctx->sizes.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportCtx*>(self->manager_ctx);
  };
  return &ctx->managed;
}

Tensor from_dlpack(DLManagedTensor* managed) {
  EMBER_CHECK(managed != nullptr, "[from_dlpack] null DLManagedTensor");
  const DLTensor& dl = managed->dl_tensor;
  Device device = Device::cpu();
  if (dl.device.device_type == kDLCUDA) {
    device = Device(fmt::format("cuda:{}", dl.device.device_id));
  } else {
    EMBER_CHECK_NOT_IMPLEMENTED(
        dl.device.device_type == kDLCPU || dl.device.device_type == kDLCUDAHost,
        "[from_dlpack] unsupported DLPack device type {}", static_cast<int>(dl.device.device_type));
  }
  const DType dtype = from_dl(dl.dtype);
  EMBER_CHECK(dl.ndim >= 0 && (dl.ndim == 0 || dl.shape), "[from_dlpack] invalid shape");
  check_ndim(static_cast<size_t>(dl.ndim), "from_dlpack");
  Shape sizes(IntList(dl.shape, static_cast<size_t>(dl.ndim)));
  Shape strides = dl.strides ? Shape(IntList(dl.strides, static_cast<size_t>(dl.ndim)))
                             : contiguous_strides(sizes);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return from_blob(
      data, sizes, strides, dtype,
      [managed](void*) {
        if (managed->deleter) managed->deleter(managed);
      },
      device);
}

}  // namespace ember
