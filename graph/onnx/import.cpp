// ONNX import: ModelProto (parsed by protobuf with ONNX's own generated classes) to Graph.
#include "ember/graph/onnx.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <ranges>
#include <set>
#include <system_error>

#include "ember/graph/ops.h"
#include "graph/onnx/dtypes.h"

namespace ember::graph {

namespace fs = std::filesystem;

namespace {

// Note [ONNX ops onto graph ops]
// Each ONNX op Ember reads is one graph op (ember/graph/ops.h) with that ONNX op's semantics;
// attributes keep their ONNX names and kinds, and the graph op's schema refuses any it does not
// know, so an unsupported attribute is an error at load time, never an ignored one. Two change
// form: Cast's `to` and the `dtype` of EyeLike and the random ops (ONNX dtype numbers) become
// Ember dtype names, and
// Constant's value_float, value_ints, ... become one tensor `value`.
// ONNX versions each op: a node means the op's newest version at or below the model's opset.
// The table lists, per op, the versions Ember implements: the one in force at opset 13 and every
// later one up to opset 28 (the versions ONNX 1.23 defines), whose changes the graph op follows
// (new attributes and inputs such as axes as an input, or wider type lists). A node whose
// version is older (Softmax at opset 11, which flattened to 2-d) is refused by name, op and
// opset; one whose version is the same at an older opset (And at opset 7) is read. A few ops
// are also read at the version before, where it differs from the one in force at opset 13 only
// in types Ember reads alike or has not (bfloat16, sequences): Add 7, Identity 1, Constant 11 and
// 12, Slice 11, If 11, Loop 11 and Dropout 12; and Unsqueeze 11, whose axes the graph op takes as
// an attribute as well as an input, and Dropout 10, inference only with its ratio an attribute.
// So opset 11 models with control flow load. A model newer than
// opset 28 is refused, since any op may have changed.
//
// Note [Other domains than ai.onnx]
// A node's domain picks its table, and its version is read against the opset the model imports
// for that domain, as for ai.onnx. Ember reads one other domain: com.microsoft, onnxruntime's
// contrib ops, which PyTorch's and Hugging Face's exports contain once onnxruntime's optimizer has
// fused them (Gelu, FastGelu, SkipLayerNormalization, FusedMatMul, FusedConv, Attention, ...);
// all are at version 1, each a graph op with its semantics (a `gelu` for Gelu, a graph op of its
// own for the fused forms). onnxruntime also defines two ops in the ai.onnx domain at version 1,
// which the same optimizer writes into models of opsets before 17: LayerNormalization (as ONNX's
// version 17) and SimplifiedLayerNormalization (RMSNormalization with its inv_std_var); the ai.onnx
// table lists them at version 1. A node of another domain, or of a domain the model imports no
// opset of, is refused by node, op and domain.

/** The graph op an ONNX op becomes, and the op's versions (the opsets that changed it) that Ember
 *  implements: the one in force at opset 13 and every later one, up to kOnnxMaxOpset. */
struct OnnxOp {
  std::string_view graph_op;
  std::vector<int64_t> versions;
};

const std::map<std::string, OnnxOp, std::less<>>& onnx_ops() {
  static const std::map<std::string, OnnxOp, std::less<>> table{
      {"Abs", {"abs", {13}}},
      {"Acos", {"acos", {7, 22}}},
      {"AffineGrid", {"affine_grid", {20}}},
      {"Acosh", {"acosh", {9, 22}}},
      {"Add", {"add", {7, 13, 14}}},
      {"And", {"and", {7}}},
      {"ArgMax", {"argmax", {13}}},
      {"ArgMin", {"argmin", {13}}},
      {"Asin", {"asin", {7, 22}}},
      {"Asinh", {"asinh", {9, 22}}},
      {"Atan", {"atan", {7, 22}}},
      {"Atanh", {"atanh", {9, 22}}},
      {"AveragePool", {"average_pool", {11, 19, 22}}},
      {"BatchNormalization", {"batch_normalization", {9, 14, 15}}},
      {"Bernoulli", {"bernoulli", {15, 22}}},
      {"BitShift", {"bit_shift", {11}}},
      {"BitwiseAnd", {"bitwise_and", {18}}},
      {"BitwiseNot", {"bitwise_not", {18}}},
      {"BitwiseOr", {"bitwise_or", {18}}},
      {"BitwiseXor", {"bitwise_xor", {18}}},
      {"Cast", {"cast", {13, 19, 21, 23, 24, 25, 28}}},
      {"CastLike", {"cast_like", {15, 19, 21, 23, 24, 25}}},
      {"Ceil", {"ceil", {13}}},
      {"Celu", {"celu", {12, 28}}},
      {"Clip", {"clip", {13}}},
      {"Concat", {"concat", {13}}},
      {"Constant", {"constant", {11, 12, 13, 19, 21, 23, 24, 25}}},
      {"ConstantOfShape", {"constant_of_shape", {9, 20, 21, 23, 24, 25}}},
      {"Conv", {"conv", {11, 22}}},
      {"ConvTranspose", {"conv_transpose", {11, 22}}},
      {"Cos", {"cos", {7, 22}}},
      {"Cosh", {"cosh", {9, 22}}},
      {"CumProd", {"cumprod", {26}}},
      {"CumSum", {"cumsum", {11, 14}}},
      {"DepthToSpace", {"depth_to_space", {13, 28}}},
      {"Div", {"div", {13, 14}}},
      {"Dropout", {"dropout", {10, 12, 13, 22}}},
      {"Einsum", {"einsum", {12, 28}}},
      {"Elu", {"elu", {6, 22}}},
      {"Equal", {"equal", {13, 19}}},
      {"Erf", {"erf", {13}}},
      {"Exp", {"exp", {13}}},
      {"Expand", {"expand", {13}}},
      {"EyeLike", {"eye_like", {9, 22}}},
      {"Flatten", {"flatten", {13, 21, 23, 24, 25}}},
      {"Floor", {"floor", {13}}},
      {"Gather", {"gather", {13}}},
      {"GatherElements", {"gather_elements", {13}}},
      {"GRU", {"gru", {7, 14, 22}}},
      {"GatherND", {"gather_nd", {13}}},
      {"Gelu", {"gelu", {20}}},
      {"Gemm", {"gemm", {13}}},
      {"GlobalAveragePool", {"global_average_pool", {1, 22}}},
      {"GlobalMaxPool", {"global_max_pool", {1, 22}}},
      {"Greater", {"greater", {13}}},
      {"GridSample", {"grid_sample", {16, 20, 22}}},
      {"GreaterOrEqual", {"greater_or_equal", {12, 16}}},
      {"GroupNormalization", {"group_normalization", {18, 21}}},
      {"HardSigmoid", {"hard_sigmoid", {6, 22}}},
      {"HardSwish", {"hard_swish", {14, 22}}},
      {"Hardmax", {"hardmax", {13}}},
      {"Identity", {"identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}}},
      {"If", {"if", {11, 13, 16, 19, 21, 23, 24, 25}}},
      {"InstanceNormalization", {"instance_normalization", {6, 22}}},
      {"IsInf", {"is_inf", {10, 20}}},
      {"IsNaN", {"is_nan", {13, 20}}},
      {"LSTM", {"lstm", {7, 14, 22}}},
      {"LRN", {"lrn", {13}}},
      {"LayerNormalization", {"layer_normalization", {1, 17}}},
      {"LeakyRelu", {"leaky_relu", {6, 16}}},
      {"Less", {"less", {13}}},
      {"LessOrEqual", {"less_or_equal", {12, 16}}},
      {"Log", {"log", {13}}},
      {"LogSoftmax", {"log_softmax", {13}}},
      {"LpNormalization", {"lp_normalization", {1, 22}}},
      {"Loop", {"loop", {11, 13, 16, 19, 21, 23, 24, 25}}},
      {"MatMul", {"matmul", {13}}},
      {"Max", {"max", {13}}},
      {"MaxPool", {"max_pool", {12, 22}}},
      {"Mean", {"mean", {13}}},
      {"MeanVarianceNormalization", {"mean_variance_normalization", {13}}},
      {"Min", {"min", {13}}},
      {"Mish", {"mish", {18, 22}}},
      {"Mod", {"mod", {13, 28}}},
      {"Mul", {"mul", {13, 14}}},
      {"Neg", {"neg", {13}}},
      {"NegativeLogLikelihoodLoss", {"negative_log_likelihood_loss", {13, 22}}},
      {"NonZero", {"non_zero", {13}}},
      {"Not", {"not", {1}}},
      {"OneHot", {"one_hot", {11, 28}}},
      {"Or", {"or", {7}}},
      {"PRelu", {"prelu", {9, 16}}},
      {"Pad", {"pad", {13, 18, 19, 21, 23, 24, 25}}},
      {"Pow", {"pow", {13, 15}}},
      {"RMSNormalization", {"rms_normalization", {23}}},
      {"RNN", {"rnn", {7, 14, 22}}},
      {"RandomNormal", {"random_normal", {1, 22}}},
      {"RandomNormalLike", {"random_normal_like", {1, 22}}},
      {"RandomUniform", {"random_uniform", {1, 22}}},
      {"RandomUniformLike", {"random_uniform_like", {1, 22}}},
      {"Range", {"range", {11, 27}}},
      {"Reciprocal", {"reciprocal", {13}}},
      {"ReduceL1", {"reduce_l1", {13, 18}}},
      {"ReduceL2", {"reduce_l2", {13, 18}}},
      {"ReduceLogSum", {"reduce_log_sum", {13, 18, 28}}},
      {"ReduceLogSumExp", {"reduce_log_sum_exp", {13, 18, 28}}},
      {"ReduceMax", {"reduce_max", {13, 18, 20}}},
      {"ReduceMean", {"reduce_mean", {13, 18}}},
      {"ReduceMin", {"reduce_min", {13, 18, 20}}},
      {"ReduceProd", {"reduce_prod", {13, 18}}},
      {"ReduceSum", {"reduce_sum", {13}}},
      {"ReduceSumSquare", {"reduce_sum_square", {13, 18}}},
      {"Relu", {"relu", {13, 14}}},
      {"Reshape", {"reshape", {13, 14, 19, 21, 23, 24, 25}}},
      {"Resize", {"resize", {13, 18, 19}}},
      {"RotaryEmbedding", {"rotary_embedding", {23}}},
      {"Round", {"round", {11, 22}}},
      {"ScatterElements", {"scatter_elements", {13, 16, 18}}},
      {"ScatterND", {"scatter_nd", {13, 16, 18}}},
      {"Selu", {"selu", {6, 22}}},
      {"Shape", {"shape", {13, 15, 19, 21, 23, 24, 25}}},
      {"Shrink", {"shrink", {9}}},
      {"SimplifiedLayerNormalization", {"simplified_layer_normalization", {1}}},
      {"Sigmoid", {"sigmoid", {13}}},
      {"Sign", {"sign", {13}}},
      {"Sin", {"sin", {7, 22}}},
      {"Sinh", {"sinh", {9, 22}}},
      {"Size", {"size", {13, 19, 21, 23, 24, 25}}},
      {"Slice", {"slice", {11, 13}}},
      {"Softmax", {"softmax", {13}}},
      {"SoftmaxCrossEntropyLoss", {"softmax_cross_entropy_loss", {13}}},
      {"Softplus", {"softplus", {1, 22}}},
      {"Softsign", {"softsign", {1, 22}}},
      {"SpaceToDepth", {"space_to_depth", {13, 28}}},
      {"Split", {"split", {13, 18}}},
      {"Sqrt", {"sqrt", {13}}},
      {"Squeeze", {"squeeze", {13, 21, 23, 24, 25}}},
      {"Sub", {"sub", {13, 14}}},
      {"Sum", {"sum", {13}}},
      {"Swish", {"swish", {24}}},
      {"Tan", {"tan", {7, 22}}},
      {"Tanh", {"tanh", {13}}},
      {"ThresholdedRelu", {"thresholded_relu", {10, 22}}},
      {"Tile", {"tile", {13}}},
      {"TopK", {"topk", {11, 24}}},
      {"Transpose", {"transpose", {13, 21, 23, 24, 25}}},
      {"Trilu", {"trilu", {14}}},
      {"Unsqueeze", {"unsqueeze", {11, 13, 21, 23, 24, 25}}},
      {"Where", {"where", {9, 16}}},
      {"Xor", {"xor", {7}}},
  };
  return table;
}

/** onnxruntime's com.microsoft contrib ops Ember reads (Note [Other domains than ai.onnx]). */
const std::map<std::string, OnnxOp, std::less<>>& microsoft_ops() {
  static const std::map<std::string, OnnxOp, std::less<>> table{
      {"Attention", {"qkv_attention", {1}}},
      {"BiasAdd", {"bias_add", {1}}},
      {"BiasGelu", {"bias_gelu", {1}}},
      {"FastGelu", {"fast_gelu", {1}}},
      {"FusedConv", {"conv_activation", {1}}},
      {"FusedMatMul", {"fused_matmul", {1}}},
      {"Gelu", {"gelu", {1}}},
      {"MultiHeadAttention", {"multi_head_attention", {1}}},
      {"QuickGelu", {"quick_gelu", {1}}},
      {"RotaryEmbedding", {"contrib_rotary_embedding", {1}}},
      {"SkipLayerNormalization", {"skip_layer_normalization", {1}}},
      {"SkipSimplifiedLayerNormalization", {"skip_simplified_layer_normalization", {1}}},
  };
  return table;
}

/** A domain of ops Ember reads: its name, the newest opset of it Ember knows, its ops. */
struct OnnxDomain {
  std::string_view name;
  int64_t max_opset;
  const std::map<std::string, OnnxOp, std::less<>>& (*ops)();
};

constexpr std::string_view kOnnxDomain = "ai.onnx";
constexpr std::string_view kMicrosoftDomain = "com.microsoft";

const std::vector<OnnxDomain>& onnx_domains() {
  static const std::vector<OnnxDomain> domains{{kOnnxDomain, kOnnxMaxOpset, onnx_ops},
                                               {kMicrosoftDomain, 1, microsoft_ops}};
  return domains;
}

/** A domain's name as opset_import and nodes spell it, with "" as ai.onnx. */
std::string_view domain_name(const std::string& d) {
  return d.empty() ? kOnnxDomain : std::string_view(d);
}

/** The opset the model imports, per domain (ai.onnx's under "ai.onnx"). */
using Opsets = std::map<std::string, int64_t, std::less<>>;

/** Ember's dtype for an ONNX TensorProto.DataType, or nullopt. */
std::optional<DType> dtype_of(int32_t t) {
  return onnx_dtypes::to_ember(t);
}

std::string onnx_dtype_name(int32_t t) {
  if (onnx::TensorProto::DataType_IsValid(t)) {
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t));
  }
  return fmt::format("unknown ({})", t);
}

DType require_dtype(int32_t t, std::string_view what) {
  std::optional<DType> d = dtype_of(t);
  EMBER_CHECK_NOT_IMPLEMENTED(d.has_value(),
                              "[onnx] {} has dtype {}, which Ember has no dtype for (Ember reads "
                              "FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, INT32, INT8, UINT8 and "
                              "BOOL)",
                              what, onnx_dtype_name(t));
  return *d;
}

/** Where an external data file named by a model lies: inside `base_dir`, or refused. */
fs::path external_path(const fs::path& base_dir, const std::string& location,
                       const std::string& tensor) {
  EMBER_CHECK_IO(!base_dir.empty(),
                 "[onnx] tensor '{}' keeps its data in an external file ('{}'),"
                 " which a model loaded from bytes cannot reach (load the model from its path)",
                 tensor, location);
  const fs::path loc(location);
  EMBER_CHECK_IO(
      !location.empty() && loc.is_relative() && !loc.has_root_name() && !loc.has_root_directory(),
      "[onnx] tensor '{}' names external data at '{}': an absolute path (external data "
      "must lie in the model's folder)",
      tensor, location);
  for (const fs::path& part : loc) {
    EMBER_CHECK_IO(part != "..",
                   "[onnx] tensor '{}' names external data at '{}': a path that "
                   "leaves the model's folder (external data must lie in it)",
                   tensor, location);
  }
  std::error_code ec;
  const fs::path root = fs::canonical(base_dir, ec);
  EMBER_CHECK_IO(!ec, "[onnx] the model's folder '{}' cannot be resolved: {}", base_dir.string(),
                 ec.message());
  const fs::path real = fs::canonical(root / loc, ec);
  EMBER_CHECK_IO(!ec, "[onnx] tensor '{}': external data file '{}' cannot be opened: {}", tensor,
                 (root / loc).string(), ec.message());
  // A symlink inside the folder may point out of it; the resolved path must stay inside.
  const fs::path rel = real.lexically_relative(root);
  EMBER_CHECK_IO(!rel.empty() && *rel.begin() != "..",
                 "[onnx] tensor '{}' names external data at '{}', which resolves to '{}' outside "
                 "the model's folder '{}' (a symlink out of it?)",
                 tensor, location, real.string(), root.string());
  EMBER_CHECK_IO(fs::is_regular_file(real, ec),
                 "[onnx] tensor '{}': external data '{}' is not a "
                 "regular file",
                 tensor, real.string());
  return real;
}

void read_external(const onnx::TensorProto& t, const fs::path& base_dir, void* dst, size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    auto parse = [&](const std::string& v) {
      errno = 0;
      char* end = nullptr;
      const long long x = std::strtoll(v.c_str(), &end, 10);
      EMBER_CHECK_IO(errno == 0 && end != v.c_str() && *end == '\0' && x >= 0,
                     "[onnx] tensor '{}': external data {} '{}' is not a non-negative integer",
                     t.name(), kv.key(), v);
      return static_cast<int64_t>(x);
    };
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parse(kv.value());
    else if (kv.key() == "length")
      length = parse(kv.value());
  }
  const fs::path file = external_path(base_dir, location, t.name());
  std::error_code ec;
  const auto size = static_cast<int64_t>(fs::file_size(file, ec));
  EMBER_CHECK_IO(!ec, "[onnx] tensor '{}': cannot read the size of '{}': {}", t.name(),
                 file.string(), ec.message());
  EMBER_CHECK_IO(length < 0 || length == static_cast<int64_t>(nbytes),
                 "[onnx] tensor '{}': external data length {} does not match its shape and dtype "
                 "({} bytes)",
                 t.name(), length, nbytes);
  EMBER_CHECK_IO(offset <= size && static_cast<int64_t>(nbytes) <= size - offset,
                 "[onnx] tensor '{}': external data of {} bytes at offset {} runs past the end of "
                 "'{}' ({} bytes)",
                 t.name(), nbytes, offset, file.string(), size);
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(nbytes));
  EMBER_CHECK_IO(in.good() || nbytes == 0, "[onnx] tensor '{}': reading {} bytes of '{}' failed",
                 t.name(), nbytes, file.string());
}

template <typename Src, typename Field>
void copy_field(const Field& field, void* dst, int64_t numel, DType dtype) {
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = static_cast<T*>(dst);
    for (int64_t i = 0; i < numel; ++i) {
      if constexpr (sizeof(T) == 2 && !std::is_integral_v<T>) {
        // float16 and bfloat16 are stored as their bits in int32_data.
        const auto bits = static_cast<uint16_t>(field.Get(static_cast<int>(i)));
        std::memcpy(static_cast<void*>(out + i), &bits, 2);
      } else {
        out[i] = static_cast<T>(static_cast<Src>(field.Get(static_cast<int>(i))));
      }
    }
  });
}

/** The tensor a TensorProto holds (its data inline, raw or in an external file). */
Tensor onnx_tensor(const onnx::TensorProto& t, const fs::path& base_dir, std::string_view what) {
  const std::string desc = fmt::format("{} '{}'", what, t.name());
  EMBER_CHECK_NOT_IMPLEMENTED(!t.has_segment(),
                              "[onnx] {} is segmented, which Ember does not "
                              "read",
                              desc);
  const DType dtype = require_dtype(t.data_type(), desc);
  Shape sizes;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    EMBER_CHECK_IO(d >= 0, "[onnx] {} has a negative dim: {}", desc, fmt::join(t.dims(), ", "));
    EMBER_CHECK_IO(!__builtin_mul_overflow(numel, d, &numel) &&
                       numel <= (int64_t{1} << 48) / static_cast<int64_t>(itemsize(dtype)),
                   "[onnx] {} has dims [{}], too many elements to hold", desc,
                   fmt::join(t.dims(), ", "));
    sizes.push_back(d);
  }
  const size_t nbytes = static_cast<size_t>(numel) * itemsize(dtype);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    Tensor out = empty(sizes, TensorOptions(dtype));
    read_external(t, base_dir, out.data_ptr(), nbytes);
    return out;
  }
  auto count_ok = [&](int n, const char* field) {
    EMBER_CHECK_IO(n == numel, "[onnx] {} has dims [{}] ({} elements) but {} holds {}", desc,
                   fmt::join(t.dims(), ", "), numel, field, n);
  };
  Tensor out = empty(sizes, TensorOptions(dtype));
  if (t.has_raw_data()) {
    EMBER_CHECK_IO(t.raw_data().size() == nbytes,
                   "[onnx] {} has dims [{}] of {} ({} bytes) but "
                   "raw_data holds {} bytes",
                   desc, fmt::join(t.dims(), ", "), dtype, nbytes, t.raw_data().size());
    if (nbytes) std::memcpy(out.data_ptr(), t.raw_data().data(), nbytes);
    return out;
  }
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      count_ok(t.float_data_size(), "float_data");
      copy_field<float>(t.float_data(), out.data_ptr(), numel, dtype);
      break;
    case onnx::TensorProto::DOUBLE:
      count_ok(t.double_data_size(), "double_data");
      copy_field<double>(t.double_data(), out.data_ptr(), numel, dtype);
      break;
    case onnx::TensorProto::INT64:
      count_ok(t.int64_data_size(), "int64_data");
      copy_field<int64_t>(t.int64_data(), out.data_ptr(), numel, dtype);
      break;
    default:
      count_ok(t.int32_data_size(), "int32_data");
      copy_field<int32_t>(t.int32_data(), out.data_ptr(), numel, dtype);
      break;
  }
  return out;
}

ValueInfo value_info(const onnx::ValueInfoProto& v, bool is_input) {
  ValueInfo info;
  info.name = v.name();
  if (!is_input && !(v.has_type() && v.type().has_tensor_type())) return info;
  EMBER_CHECK_NOT_IMPLEMENTED(v.has_type() && v.type().has_tensor_type(),
                              "[onnx] input '{}' is not a tensor (a sequence, map or optional), "
                              "which Ember does not support",
                              v.name());
  const onnx::TypeProto::Tensor& tt = v.type().tensor_type();
  if (is_input) {
    info.dtype = require_dtype(tt.elem_type(), fmt::format("input '{}'", v.name()));
  } else if (std::optional<DType> d = dtype_of(tt.elem_type())) {
    info.dtype = *d;
  }
  if (tt.has_shape()) {
    std::vector<Dim> dims;
    for (const auto& d : tt.shape().dim()) {
      Dim dim;
      if (d.has_dim_value())
        dim.size = d.dim_value();
      else if (d.has_dim_param())
        dim.symbol = d.dim_param();
      dims.push_back(std::move(dim));
    }
    info.shape = std::move(dims);
  }
  return info;
}

Attribute attribute(const onnx::AttributeProto& a, const fs::path& base_dir,
                    const std::string& where) {
  using A = onnx::AttributeProto;
  EMBER_CHECK_NOT_IMPLEMENTED(a.ref_attr_name().empty(),
                              "[onnx] {}: attribute '{}' refers to a "
                              "function's attribute, which Ember does not support",
                              where, a.name());
  switch (a.type()) {
    case A::INT:
      return a.i();
    case A::FLOAT:
      return static_cast<double>(a.f());
    case A::STRING:
      return a.s();
    case A::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::FLOATS:
      return std::vector<double>(a.floats().begin(), a.floats().end());
    case A::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case A::TENSOR:
      return onnx_tensor(a.t(), base_dir, fmt::format("attribute {} of {}", a.name(), where));
    default:
      break;
  }
  const std::string kind = A::AttributeType_IsValid(a.type())
                               ? A::AttributeType_Name(static_cast<A::AttributeType>(a.type()))
                               : std::to_string(a.type());
  throw NotImplementedError(
      fmt::format("[onnx] {}: attribute '{}' is of type {} (a subgraph, "
                  "sparse tensor or type), which Ember does not support",
                  where, a.name(), kind));
}

/** A scalar or 1-d tensor of `dtype` holding `values`. */
template <typename T>
Tensor small_tensor(const std::vector<T>& values, DType dtype, bool scalar) {
  Tensor t = scalar ? empty({}, TensorOptions(dtype))
                    : empty({static_cast<int64_t>(values.size())}, TensorOptions(dtype));
  visit_dtype(dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<U>) {
      U* p = static_cast<U*>(t.data_ptr());
      for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<U>(values[i]);
    }
  });
  return t;
}

/** The names of the enclosing graphs' values a subgraph may read. */
using Scope = std::set<std::string>;

Graph onnx_graph(const onnx::GraphProto& g, const Opsets& opsets, const fs::path& base_dir,
                 const Scope& scope);

/** "node 'name' (Op at opset 17)", or "(Op at com.microsoft opset 1)" in another domain. */
std::string node_where(const onnx::NodeProto& n, const Opsets& opsets) {
  const std::string_view domain = domain_name(n.domain());
  auto opset = opsets.find(domain);
  std::string at = opset == opsets.end()   ? fmt::format("in domain {}", domain)
                   : domain == kOnnxDomain ? fmt::format("at opset {}", opset->second)
                                           : fmt::format("at {} opset {}", domain, opset->second);
  return n.name().empty() ? fmt::format("node ({} {})", n.op_type(), at)
                          : fmt::format("node '{}' ({} {})", n.name(), n.op_type(), at);
}

Node onnx_node(const onnx::NodeProto& n, const Opsets& opsets, const fs::path& base_dir,
               const Scope& scope) {
  const std::string where = node_where(n, opsets);
  const std::string_view domain_id = domain_name(n.domain());
  const auto& domains = onnx_domains();
  auto domain = std::find_if(domains.begin(), domains.end(),
                             [&](const OnnxDomain& d) { return d.name == domain_id; });
  if (domain == domains.end()) {
    std::vector<std::string_view> known;
    for (const OnnxDomain& d : domains) known.push_back(d.name);
    throw NotImplementedError(
        fmt::format("[onnx] {}: op domain '{}' is not supported (Ember reads {})", where, domain_id,
                    fmt::join(known, " and ")));
  }
  auto imported = opsets.find(domain_id);
  EMBER_CHECK_IO(imported != opsets.end(),
                 "[onnx] {}: the model imports no {} opset (its opset_import lists {})", where,
                 domain_id, fmt::join(opsets | std::views::keys, ", "));
  const int64_t opset = imported->second;
  const auto& table = domain->ops();
  auto op = table.find(n.op_type());
  if (op == table.end()) {
    std::vector<std::string_view> known;
    for (const auto& [name, _] : table) known.push_back(name);
    if (domain_id == kOnnxDomain) {
      throw NotImplementedError(fmt::format("[onnx] {}: op {} is not supported (Ember reads: {})",
                                            where, n.op_type(), fmt::join(known, ", ")));
    }
    throw NotImplementedError(
        fmt::format("[onnx] {}: op {} of domain {} is not supported (Ember reads from {}: {})",
                    where, n.op_type(), domain_id, domain_id, fmt::join(known, ", ")));
  }
  const bool onnx_domain = domain_id == kOnnxDomain;
  const std::vector<int64_t>& versions = op->second.versions;
  EMBER_CHECK_NOT_IMPLEMENTED(opset >= versions.front(),
                              "[onnx] {}: this opset's version of {} is older than Ember reads "
                              "(Ember implements {} from opset {}: {}; convert the model with "
                              "onnx.version_converter)",
                              where, n.op_type(), n.op_type(), versions.front(),
                              fmt::join(versions, ", "));
  Node node;
  node.op = op->second.graph_op;
  node.name = n.name();
  node.inputs.assign(n.input().begin(), n.input().end());
  node.outputs.assign(n.output().begin(), n.output().end());
  for (const onnx::AttributeProto& a : n.attribute()) {
    static const std::set<std::string, std::less<>> dtype_ops = {
        "EyeLike",           "RandomUniform",    "RandomNormal",
        "RandomUniformLike", "RandomNormalLike", "Bernoulli"};
    const bool dtype_attr = onnx_domain && ((n.op_type() == "Cast" && a.name() == "to") ||
                                            (dtype_ops.count(n.op_type()) && a.name() == "dtype"));
    if (dtype_attr && a.type() == onnx::AttributeProto::INT) {
      const auto to = static_cast<int32_t>(a.i());
      node.attrs[a.name()] = std::string(
          dtype_name(require_dtype(to, fmt::format("{}: attribute {}", where, a.name()))));
      continue;
    }
    if (onnx_domain && n.op_type() == "Constant" && a.name() != "value") {
      using A = onnx::AttributeProto;
      Tensor value;
      if (a.name() == "value_float" && a.type() == A::FLOAT) {
        value = small_tensor(std::vector<double>{a.f()}, DType::Float32, true);
      } else if (a.name() == "value_floats" && a.type() == A::FLOATS) {
        value = small_tensor(std::vector<double>(a.floats().begin(), a.floats().end()),
                             DType::Float32, false);
      } else if (a.name() == "value_int" && a.type() == A::INT) {
        value = small_tensor(std::vector<int64_t>{a.i()}, DType::Int64, true);
      } else if (a.name() == "value_ints" && a.type() == A::INTS) {
        value = small_tensor(std::vector<int64_t>(a.ints().begin(), a.ints().end()), DType::Int64,
                             false);
      } else {
        throw NotImplementedError(
            fmt::format("[onnx] {}: attribute '{}' is not supported (Ember "
                        "reads value, value_float(s) and value_int(s))",
                        where, a.name()));
      }
      node.attrs["value"] = value;
      continue;
    }
    if (a.type() == onnx::AttributeProto::GRAPH && a.ref_attr_name().empty()) {
      // Note [Subgraphs read the enclosing graph's values] in graph/graph.cpp.
      std::shared_ptr<const Graph> sub;
      try {
        sub = std::make_shared<const Graph>(onnx_graph(a.g(), opsets, base_dir, scope));
      } catch (const Error& e) {
        std::string inner = e.what();
        if (inner.rfind("[onnx] ", 0) == 0) inner = inner.substr(7);
        throw_error(e.kind(), fmt::format("[onnx] {}: in subgraph {}: {}", where, a.name(), inner));
      }
      node.attrs[a.name()] = std::move(sub);
      continue;
    }
    node.attrs[a.name()] = attribute(a, base_dir, where);
  }
  // The outer values the subgraphs read follow the op's own inputs, as the graph ops read them.
  const std::vector<std::string> captures = outer_values(node);
  node.inputs.insert(node.inputs.end(), captures.begin(), captures.end());
  return node;
}

/** A graph's error about a node without its "[graph] node 'n' (op): ", which the importer's own
 *  prefix replaces. */
std::string strip_prefix(const std::string& msg) {
  const std::string_view graph = "[graph] node ";
  if (msg.rfind(graph, 0) != 0) return msg;
  const size_t end = msg.find("): ");
  return end == std::string::npos ? msg : msg.substr(end + 3);
}

/** A GraphProto as a Graph: the model's graph (an empty scope), or a subgraph, whose nodes may
 *  read the values of the enclosing graphs named in `scope`. */
Graph onnx_graph(const onnx::GraphProto& g, const Opsets& opsets, const fs::path& base_dir,
                 const Scope& scope) {
  Graph graph;
  Scope local;  // the values this graph defines
  for (const onnx::TensorProto& t : g.initializer()) {
    graph.add_initializer(t.name(), onnx_tensor(t, base_dir, "initializer"));
    local.insert(t.name());
  }
  EMBER_CHECK_NOT_IMPLEMENTED(g.sparse_initializer_size() == 0,
                              "[onnx] the model has {} sparse initializers, which Ember does not "
                              "read",
                              g.sparse_initializer_size());
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (graph.initializers().count(v.name())) continue;  // a weight listed as an input (IR < 4)
    graph.add_input(value_info(v, /*is_input=*/true));
    local.insert(v.name());
  }
  // A name this graph does not define but an enclosing one does is an outer value.
  auto read = [&](const std::string& name) {
    if (name.empty() || local.count(name) || !scope.count(name)) return;
    graph.add_outer(name);
    local.insert(name);
  };
  for (const onnx::NodeProto& n : g.node()) {
    bool has_subgraph = false;
    for (const onnx::AttributeProto& a : n.attribute()) {
      has_subgraph = has_subgraph || a.type() == onnx::AttributeProto::GRAPH;
    }
    Scope visible;
    if (has_subgraph) {
      visible = scope;
      visible.insert(local.begin(), local.end());
    }
    Node node = onnx_node(n, opsets, base_dir, visible);
    for (const std::string& in : node.inputs) read(in);
    try {
      graph.add_node(node);
    } catch (const Error& e) {
      throw_error(e.kind(),
                  fmt::format("[onnx] {}: {}", node_where(n, opsets), strip_prefix(e.what())));
    }
    for (const std::string& out : node.outputs) local.insert(out);
  }
  for (const onnx::ValueInfoProto& v : g.output()) {
    read(v.name());
    graph.add_output(value_info(v, /*is_input=*/false));
  }
  graph.validate();
  return graph;
}

}  // namespace

Graph load_onnx_bytes(std::string_view bytes, const fs::path& base_dir) {
  EMBER_CHECK_IO(bytes.size() < static_cast<size_t>(INT_MAX),
                 "[onnx] the model is {} bytes, more than protobuf reads (2 GiB): keep its tensors "
                 "in external data files",
                 bytes.size());
  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  const bool parsed = model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  EMBER_CHECK_IO(parsed,
                 "[onnx] not an ONNX model: its {} bytes do not parse as a ModelProto "
                 "(a truncated or corrupt file?)",
                 bytes.size());
  EMBER_CHECK_IO(model.has_graph(), "[onnx] the model has no graph ({} bytes; a truncated file?)",
                 bytes.size());
  Opsets opsets;
  for (const auto& o : model.opset_import()) {
    opsets[std::string(domain_name(o.domain()))] = o.version();
  }
  if (!opsets.count(kOnnxDomain) && model.ir_version() < 3) {
    opsets[std::string(kOnnxDomain)] = 1;  // before opset_import: opset 1
  }
  EMBER_CHECK_IO(opsets.count(kOnnxDomain),
                 "[onnx] the model imports no ai.onnx opset (opset_import lists {} "
                 "domains)",
                 model.opset_import_size());
  const int64_t opset = opsets.at(std::string(kOnnxDomain));
  EMBER_CHECK_NOT_IMPLEMENTED(opset >= 1 && opset <= kOnnxMaxOpset,
                              "[onnx] opset {} is not supported: Ember reads ai.onnx opsets up to "
                              "{} (convert the model with onnx.version_converter)",
                              opset, kOnnxMaxOpset);
  for (const OnnxDomain& d : onnx_domains()) {
    auto it = opsets.find(d.name);
    if (it == opsets.end() || d.name == kOnnxDomain) continue;
    EMBER_CHECK_NOT_IMPLEMENTED(it->second >= 1 && it->second <= d.max_opset,
                                "[onnx] {} opset {} is not supported: Ember reads {} opsets up to "
                                "{}",
                                d.name, it->second, d.name, d.max_opset);
  }
  return onnx_graph(model.graph(), opsets, base_dir, {});
}

Graph load_onnx(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  EMBER_CHECK_IO(!ec && fs::exists(st), "[onnx] cannot open '{}': No such file or directory",
                 path.string());
  EMBER_CHECK_IO(fs::is_regular_file(st), "[onnx] cannot load '{}': not a regular file",
                 path.string());
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK_IO(in.good(), "[onnx] cannot open '{}': {}", path.string(), std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EMBER_CHECK_IO(!in.bad(), "[onnx] reading '{}' failed", path.string());
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  return load_onnx_bytes(bytes, dir);
}

}  // namespace ember::graph
