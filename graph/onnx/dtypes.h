// The dtypes Ember and ONNX share, one table for the importer and the exporter.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>

#include "ember/tensor/dtype.h"

namespace ember::graph::onnx_dtypes {

/** An ONNX TensorProto.DataType and the Ember dtype that holds it. */
struct Match {
  int32_t onnx;
  DType ember;
};

/** Every dtype that moves between the two. */
inline constexpr Match kMatches[] = {
    {onnx::TensorProto::FLOAT, DType::Float32},   {onnx::TensorProto::DOUBLE, DType::Float64},
    {onnx::TensorProto::FLOAT16, DType::Float16}, {onnx::TensorProto::BFLOAT16, DType::BFloat16},
    {onnx::TensorProto::INT64, DType::Int64},     {onnx::TensorProto::INT32, DType::Int32},
    {onnx::TensorProto::INT8, DType::Int8},       {onnx::TensorProto::UINT8, DType::UInt8},
    {onnx::TensorProto::BOOL, DType::Bool}};

/** Ember's dtype for an ONNX TensorProto.DataType, or nullopt. */
inline std::optional<DType> to_ember(int32_t t) {
  for (const Match& m : kMatches)
    if (m.onnx == t) return m.ember;
  return std::nullopt;
}

/** ONNX's TensorProto.DataType for an Ember dtype (UNDEFINED for none). */
inline int32_t to_onnx(DType d) {
  for (const Match& m : kMatches)
    if (m.ember == d) return m.onnx;
  return onnx::TensorProto::UNDEFINED;
}

}  // namespace ember::graph::onnx_dtypes
