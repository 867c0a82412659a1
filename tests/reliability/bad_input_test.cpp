// The bad-input catalogue: one row per malformed call across ops, views, autograd, nn, optim,
// data, io and the plugin API. Each row names the call, performs it and states what must come
// back: an ember::Error of the expected kind (never another exception, never a crash) whose
// message starts with "[op]" and shows the observed values, or, for load_plugin, a status with
// its reason.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

namespace fs = std::filesystem;

// Note [What a catalogue row asserts]
// An ember::Error says what went wrong twice over: its kind (Note [Error kinds] in
// core/include/ember/util/error.h), both as Error::kind() and as its C++ type (ember::IndexError,
// ...), and the op it came from, as the "[op]" prefix of its message. A row therefore asserts (1)
// that an ember::Error escapes (std::bad_alloc, std::out_of_range, a crash or no error at all are
// failures), (2) that its kind() is the row's ErrorKind and that it is an instance of that
// kind's subclass, so catching by type works, (3) that the message starts with the row's "[op]"
// and (4) that it contains every expected substring, which are chosen to be the observed values
// (sizes, dims, dtypes) a user needs to fix the call. Rows for ember::load_plugin assert its
// returned status instead: it reports, it does not throw.

/** What a row expects to come back. */
enum class Expect {
  kError,         ///< an ember::Error is thrown
  kPluginStatus,  ///< load_plugin returns a record with `outcome` and a reason
};

/** One malformed call. */
struct Row {
  std::string name;
  std::function<void()> call;  // performs the malformed call (kError)
  Expect expect = Expect::kError;
  std::string op;                                // "[op]" the message must start with
  std::vector<std::string> message;              // substrings the message must contain
  std::function<PluginRecord()> load = nullptr;  // kPluginStatus only
  PluginOutcome outcome = PluginOutcome::NotAPlugin;
  ErrorKind kind = ErrorKind::Value;  // kError: the kind the error must have
};

/** A directory for the file rows, made once and removed at exit. */
const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "ember_rel_XXXXXX").string();
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(scratch(), ec);
    });
    return fs::path(tmpl);
  }();
  return dir;
}

/** Writes `bytes` to scratch()/name and returns the path. */
std::string write_file(const std::string& name, const std::string& bytes) {
  const fs::path p = scratch() / name;
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p.string();
}

/** Makes a FIFO (named pipe) scratch()/name with no writer and returns its path. */
std::string make_fifo(const std::string& name) {
  const std::string p = (scratch() / name).string();
  ::unlink(p.c_str());
  EMBER_ASSERT(::mkfifo(p.c_str(), 0600) == 0);
  return p;
}

Tensor f32(IntList sizes) {
  return ones(sizes, DType::Float32);
}
Tensor i64(IntList sizes) {
  return zeros(sizes, DType::Int64);
}
Tensor leaf(IntList sizes) {
  return ones(sizes, DType::Float32).requires_grad_();
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kTera = int64_t{1} << 40;

/** A tiny in-memory dataset for the DataLoader rows. */
std::shared_ptr<data::Dataset> small_dataset() {
  return std::make_shared<data::TensorDataset>(std::vector<Tensor>{arange(10).to(DType::Float32)});
}

// A kError row: NAME, the expected ErrorKind (Value, Type, Index, ...), "[op]", the call, then
// the substrings the message must contain.
#define ROW(NAME, KIND, OP, BODY, ...)                                                         \
  Row {                                                                                        \
    NAME, [] { BODY; }, Expect::kError, OP, {__VA_ARGS__}, nullptr, PluginOutcome::NotAPlugin, \
        ErrorKind::KIND                                                                        \
  }

/** True if `e` is an instance of the subclass of ember::Error that stands for `kind`. */
bool is_subclass_of_kind(const Error& e, ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Value:
      return dynamic_cast<const ValueError*>(&e) != nullptr;
    case ErrorKind::Type:
      return dynamic_cast<const TypeError*>(&e) != nullptr;
    case ErrorKind::Index:
      return dynamic_cast<const IndexError*>(&e) != nullptr;
    case ErrorKind::NotImplemented:
      return dynamic_cast<const NotImplementedError*>(&e) != nullptr;
    case ErrorKind::OutOfMemory:
      return dynamic_cast<const OutOfMemoryError*>(&e) != nullptr;
    case ErrorKind::Device:
      return dynamic_cast<const DeviceError*>(&e) != nullptr;
    case ErrorKind::Io:
      return dynamic_cast<const IoError*>(&e) != nullptr;
    case ErrorKind::Plugin:
      return dynamic_cast<const PluginError*>(&e) != nullptr;
    case ErrorKind::Internal:
      return dynamic_cast<const InternalError*>(&e) != nullptr;
    case ErrorKind::Distributed:
      return dynamic_cast<const DistributedError*>(&e) != nullptr;
    case ErrorKind::Key:
      return dynamic_cast<const KeyError*>(&e) != nullptr;
  }
  return false;
}

std::vector<Row> rows() {
  return {
      // --- factories, sizes and int64 overflow ----------------------------------------------
      ROW("empty_negative_size", Value, "[empty]", empty({2, -3}), "non-negative", "[2, -3]"),
      ROW("zeros_negative_size", Value, "[empty]", zeros({-1}), "non-negative", "[-1]"),
      ROW("empty_overflow_2p40_squared", Value, "[empty]", empty({kTera, kTera}), "overflows int64",
          "[1099511627776, 1099511627776]"),
      ROW("narrow_length_int64max", Index, "[narrow]", f32({4}).narrow(0, 3, kMax),
          "start 3 + length 9223372036854775807 exceeds size 4"),
      ROW("pad_overflowing_padding", Value, "[pad]",
          pad(f32({2, 3}), {std::numeric_limits<int64_t>::min(), -4}), "overflows int64"),
      ROW("empty_zero_dim_huge_strides", Value, "[empty]", empty({0, kMax, 3}),
          "strides overflow int64", "[0, 9223372036854775807, 3]"),
      ROW("zeros_int64max_x2", Value, "[empty]", zeros({kMax, 2}), "overflows int64",
          "[9223372036854775807, 2]"),
      ROW("ones_three_factor_overflow", Value, "[empty]", ones({1 << 22, 1 << 22, 1 << 22}),
          "overflows int64"),
      ROW("empty_bytes_overflow", Value, "[empty]", empty({int64_t{1} << 62}, DType::Float64),
          "4611686018427387904 elements of float64", "exceed the addressable size"),
      ROW("empty_2p45_floats_oom", OutOfMemory, "[allocate]", empty({int64_t{1} << 45}, DType::Float32),
          "out of memory", "140737488355328 bytes"),
      ROW("full_huge_oom", OutOfMemory, "[allocate]", full({int64_t{1} << 44, 4}, 1.0), "out of memory",
          "281474976710656 bytes"),
      ROW("rand_overflow", Value, "[rand]", rand({kTera, kTera}), "overflows int64"),
      ROW("arange_zero_step", Value, "[arange]", arange(0, 10, 0), "step must be non-zero", "step 0"),
      ROW("arange_wrong_sign", Value, "[arange]", arange(0, 10, -1), "inconsistent signs", "end 10"),
      ROW("arange_huge_count", Value, "[arange]", arange(0.0, 1e30, 1e-30), "1e+60"),
      ROW("linspace_negative_steps", Value, "[linspace]", linspace(0, 1, -2), "-2"),
      ROW("eye_negative", Value, "[eye]", eye(-3), "-3"),
      ROW("randint_empty_range", Value, "[randint]", randint(5, 5, {3}), "low 5 high 5"),
      // Pinned memory, streams, events and backend options (core/include/ember/dispatch/stream.h).
      ROW("pin_memory_requires_grad", Type, "[pin_memory]",
          (void)ones({2}).requires_grad_(true).pin_memory(), "requires grad", ".detach()"),
      ROW("pinned_empty_off_the_cpu", Type, "[empty]",
          (void)empty({2}, TensorOptions(DType::Float32, Device("reference")).pinned_memory()),
          "pinned memory is CPU memory", "reference:0"),
      ROW("event_on_the_cpu", NotImplemented, "[Event]", Event e(Device::cpu()),
          "device type 'cpu' has no events"),
      ROW("stream_pool_on_the_cpu", NotImplemented, "[stream_from_pool]",
          (void)stream_from_pool(Device::cpu()), "'cpu' has no streams"),
      ROW("stream_guard_with_a_foreign_handle", Type, "[set_current_stream]",
          StreamGuard g(Stream(Device::cpu(), reinterpret_cast<void*>(0x10))), "has no streams",
          "0x10"),
      ROW("record_stream_of_another_device", Type, "[record_stream]",
          ones({2}).record_stream(current_stream(Device("reference"))), "cpu", "reference:0"),
      ROW("set_current_device_unavailable", Device, "[set_current_device]",
          set_current_device(Device(Device("reference").type, 5)), "reference:5",
          "1 device(s)"),
      ROW("device_index_that_does_not_exist", Device, "[device]", (void)Device("reference:5"),
          "'reference:5' does not exist", "1 device(s)"),
      ROW("cpu_device_index_other_than_0", Device, "[device]", (void)Device("cpu:1"),
          "'cpu:1' does not exist", "cpu has 1 device(s)"),
      ROW("backend_option_unknown_device_type", Device, "[set_backend_option]",
          set_backend_option("tpu", "x", "1"), "'tpu'"),
      ROW("backend_option_of_a_backend_without_options", NotImplemented, "[backend_option]",
          (void)backend_option("cpu", "x"), "has no options"),
      ROW("from_blob_size_stride_count", Value, "[from_blob]",
          from_blob(nullptr, {2, 2}, {1}, DType::Float32, nullptr), "2 sizes but 1 strides"),

      // --- views ----------------------------------------------------------------------------
      ROW("view_wrong_numel", Value, "[view]", f32({2, 3}).view({4, 2}), "[4, 2]", "6"),
      ROW("view_two_minus_one", Value, "[view]", f32({2, 3}).view({-1, -1}), "-1"),
      ROW("view_non_contiguous", Value, "[view]", f32({2, 3}).t().view({6}), "[3, 2]", "reshape"),
      ROW("view_negative_size", Value, "[view]", f32({2, 3}).view({-2, -3}), "-2"),
      ROW("view_empty_with_huge_dims", Value, "[view]", f32({0}).view({5, 0, kMax}),
          "strides overflow int64"),
      ROW("embedding_empty_indices_huge_dim", Value, "[embedding]",
          embedding(f32({1, 1}).expand({1, kMax}), zeros({5, 0}, DType::Int64)),
          "strides overflow int64"),
      ROW("reshape_wrong_numel", Value, "[reshape]", f32({2, 3}).reshape({7}), "[7]", "6"),
      ROW("reshape_minus_one_ambiguous", Value, "[reshape]", f32({0, 3}).reshape({-1, 0}), "-1"),
      ROW("reshape_to_overflow", Value, "[reshape]", f32({0}).reshape({kTera, kTera, 0, kTera}),
          "overflows"),
      ROW("reshape_overflow_nonempty", Value, "[reshape]", f32({4}).reshape({kTera, kTera}),
          "overflows int64"),
      ROW("transpose_bad_dim", Index, "[transpose]", f32({2, 3}).transpose(0, 2), "dim 2", "2-d"),
      ROW("permute_wrong_count", Value, "[permute]", f32({2, 3, 4}).permute({0, 1}), "[0, 1]", "3"),
      ROW("permute_repeated", Value, "[permute]", f32({2, 3, 4}).permute({0, 1, 1}), "[0, 1, 1]"),
      ROW("permute_out_of_range", Index, "[permute]", f32({2, 3}).permute({0, 5}), "dim 5"),
      ROW("narrow_past_end", Index, "[narrow]", f32({4, 5}).narrow(1, 3, 4), "start 3", "length 4", "5"),
      ROW("narrow_negative_length", Index, "[narrow]", f32({4, 5}).narrow(0, 0, -1), "length -1"),
      ROW("narrow_bad_dim", Index, "[narrow]", f32({4, 5}).narrow(2, 0, 1), "dim 2"),
      ROW("select_out_of_range", Index, "[select]", f32({4, 5}).select(1, 5), "index 5", "5"),
      ROW("select_negative_out_of_range", Index, "[select]", f32({4, 5}).select(0, -5), "index -5"),
      ROW("select_scalar", Index, "[select]", f32({}).select(0, 0), "0-d"),
      ROW("size_of_scalar", Index, "[size]", f32({}).size(0), "0-d", "no dims"),
      ROW("cumsum_scalar_bad_dim", Index, "[cumsum]", cumsum(f32({}), 1), "dim 1"),
      ROW("too_many_dims", Value, "[empty]", empty(Shape(EMBER_MAX_DIMS + 1, 1)), "65", "64"),
      ROW("unsqueeze_past_limit", Value, "[unsqueeze]", f32(Shape(EMBER_MAX_DIMS, 1)).unsqueeze(0),
          "too many dims"),
      ROW("write_overlapping_itself", NotImplemented, "[add_]",
          [] {
            Tensor e = f32({1}).expand({4});
            add_(e, 1.0);
          }(),
          "written-to tensor", "strides [0]"),
      ROW("write_over_part_of_input", NotImplemented, "[add_]",
          [] {
            Tensor x = f32({6});
            Tensor tail = x.narrow(0, 1, 5);
            add_(tail, x.narrow(0, 0, 5));
          }(),
          "input tensor and the written-to tensor", "clone()"),
      ROW("slice_zero_step", Value, "[slice]", f32({4}).slice(0, 0, 4, 0), "step 0"),
      ROW("slice_bad_dim", Index, "[slice]", f32({4}).slice(3, 0, 1), "dim 3"),
      ROW("expand_non_singleton", Value, "[expand]", f32({2, 3}).expand({4, 3}), "[2, 3]", "[4, 3]"),
      ROW("expand_fewer_dims", Value, "[expand]", f32({2, 3}).expand({3}), "[2, 3]", "[3]"),
      ROW("expand_negative_new_dim", Value, "[expand]", f32({3}).expand({-1, 3}), "-1"),
      ROW("expand_to_overflow", Value, "[expand]", f32({1, 1}).expand({kTera, kTera}), "overflows int64"),
      ROW("squeeze_bad_dim", Index, "[squeeze]", f32({2, 1}).squeeze(2), "dim 2"),
      ROW("unsqueeze_bad_dim", Index, "[unsqueeze]", f32({2, 1}).unsqueeze(4), "dim 4"),
      ROW("flatten_start_after_end", Value, "[flatten]", f32({2, 3, 4}).flatten(2, 1), "2", "1"),
      ROW("as_strided_negative_stride", Value, "[as_strided]", f32({4}).as_strided({2}, {-1}), "-1"),
      ROW("as_strided_out_of_storage", Value, "[as_strided]", f32({4}).as_strided({3}, {2}), "storage"),
      ROW("as_strided_empty_offset_past_storage", Value, "[as_strided]",
          f32({4}).as_strided({0}, {1}, kMax), "past the end", "9223372036854775807"),
      ROW("as_strided_size_stride_count", Value, "[as_strided]", f32({4}).as_strided({2, 2}, {1}),
          "[2, 2]", "[1]"),
      ROW("item_many_elements", Value, "[item]", f32({2, 2}).item(), "4 elements"),
      ROW("data_ptr_wrong_dtype", Type, "[data_ptr]", f32({2}).data_ptr<int64_t>(), "int64", "float32"),
      ROW("size_bad_dim", Index, "[size]", f32({2}).size(3), "dim 3"),
      ROW("copy_no_broadcast", Value, "[copy_]", { Tensor t = f32({2, 3}); t.copy_(f32({4})); },
          "[4]", "[2, 3]"),
      ROW("to_undefined", Type, "[to]", Tensor().to(DType::Float64), "undefined"),

      // Found by the op fuzzer (tests/fuzz/corpus/op_fuzz/crash-*).
      ROW("chunk_empty_dim_huge_count", Value, "[chunk]", chunk(f32({0}), kMax), "9223372036854775807",
          "exceed"),
      ROW("split_empty_tensor_huge_dim", Value, "[split]", split(f32({kTera, 0}), 1), "[1099511627776, 0]"),
      ROW("interpolate_huge_size", Value, "[interpolate]", interpolate(f32({1, 1, 2, 2}), {kMax, kMax}, "bilinear"),
          "overflows int64"),
      ROW("as_strided_stride_wraps", Value, "[as_strided]", f32({4}).as_strided({3}, {kMax}), "reach past int64"),

      // --- elementwise ----------------------------------------------------------------------
      ROW("add_broadcast_mismatch", Value, "[add]", add(f32({2, 3}), f32({4})), "[2, 3]", "[4]",
          "size 3 vs 4"),
      ROW("mul_broadcast_mismatch", Value, "[mul]", mul(f32({5, 2}), f32({3, 1, 3})), "[5, 2]",
          "[3, 1, 3]"),
      ROW("add_undefined", Type, "[add]", add(Tensor(), f32({2})), "undefined"),
      ROW("add_inplace_broadcast_grows_out", Value, "[add_]",
          { Tensor a = f32({3}); add_(a, f32({2, 3})); }, "[3]", "[2, 3]"),
      ROW("add_inplace_float_into_int", Type, "[add_]", { Tensor a = i64({3}); add_(a, f32({3})); },
          "float32", "int64"),
      ROW("where_cond_not_bool", Type, "[where]", where(f32({3}), f32({3}), f32({3})), "float32",
          "bool"),
      ROW("where_shape_mismatch", Value, "[where]",
          where(zeros({3}, DType::Bool), f32({2}), f32({3})), "[2]", "[3]"),
      ROW("logical_not_undefined", Type, "[logical_not]", logical_not(Tensor()), "undefined"),
      ROW("gelu_bad_approximate", Value, "[gelu]", gelu(f32({2}), "fast"), "fast"),
      ROW("masked_fill_mask_dtype", Type, "[masked_fill]", masked_fill(f32({3}), f32({3}), 1.0),
          "float32", "bool"),
      ROW("masked_fill_mask_shape", Value, "[masked_fill]",
          masked_fill(f32({3}), zeros({4}, DType::Bool), 1.0), "[4]", "[3]"),

      // --- reductions -----------------------------------------------------------------------
      ROW("sum_bad_dim", Index, "[sum]", sum(f32({2, 3}), {2}), "dim 2", "2-d"),
      ROW("sum_repeated_dim", Value, "[sum]", sum(f32({2, 3}), {1, -1}), "dim 1"),
      ROW("mean_int", Type, "[mean]", mean(i64({3})), "int64"),
      ROW("max_dim_empty", Index, "[max]", max(f32({0, 3}), 0), "reduction dim 0"),
      ROW("max_all_empty", Value, "[max]", max(f32({0})), "zero-size", "[0]"),
      ROW("argmax_bad_dim", Index, "[argmax]", argmax(f32({2, 3}), 5), "dim 5"),
      ROW("var_bad_dim", Index, "[var]", var(f32({2, 3}), {-3}), "dim -3"),
      ROW("cumsum_bad_dim", Index, "[cumsum]", cumsum(f32({2, 3}), 2), "dim 2"),
      ROW("cumprod_bad_dim", Index, "[cumprod]", cumprod(f32({2, 3}), -3), "dim -3"),
      ROW("remainder_int_zero", Value, "[remainder]", remainder(i64({3}), i64({3})),
          "division by zero"),
      ROW("fmod_bool", Type, "[fmod]", fmod(zeros({2}, DType::Bool), zeros({2}, DType::Bool)),
          "bool"),
      ROW("floor_divide_int_zero", Value, "[floor_divide]", floor_divide(i64({3}), i64({3})),
          "division by zero"),
      ROW("div_trunc_int_zero", Value, "[div]", div(i64({3}), 0, "trunc"), "division by zero"),
      ROW("div_rounding_mode", Value, "[div]", div(f32({3}), f32({3}), "round"), "'round'"),
      ROW("pow_int_negative_exponent", Value, "[pow]", pow(i64({3}), -2), "negative integer",
          "-2"),
      ROW("add_float_alpha_int", Type, "[add]", add(i64({3}), i64({3}), 0.5), "alpha", "int64"),
      ROW("full_uint8_overflow", Value, "[full]", full({2}, 300, DType::UInt8), "300", "uint8"),
      ROW("fill_int_nan", Value, "[fill_]", i64({2}).fill_(NAN), "nan", "int64"),
      ROW("add_inplace_int8_overflow", Value, "[add_]",
          [] { Tensor t = zeros({2}, DType::Int8); add_(t, 200); }(), "200", "int8"),
      ROW("hardtanh_bounds", Value, "[hardtanh]", hardtanh(f32({2}), 1.0, -1.0), "1 > -1"),
      ROW("tril_1d", Value, "[tril]", tril(f32({3})), "[3]"),
      ROW("l1_loss_batchmean", Value, "[l1_loss]",
          l1_loss(f32({2}), f32({2}), Reduction::BatchMean), "BatchMean"),
      ROW("huber_negative_delta", Value, "[huber_loss]", huber_loss(f32({2}), f32({2}),
          Reduction::Mean, -1.0), "delta", "-1"),
      ROW("einsum_bad_char", Value, "[einsum]", einsum("i1->i", {f32({3})}), "'1'"),
      ROW("einsum_rank", Value, "[einsum]", einsum("ij->i", {f32({3})}), "\"ij\"", "[3]"),
      ROW("einsum_sizes", Value, "[einsum]", einsum("ij,jk->ik", {f32({2, 3}), f32({4, 2})}),
          "3", "4"),
      ROW("isclose_dtypes", Type, "[isclose]", isclose(f32({2}), i64({2})), "float32", "int64"),
      ROW("isclose_negative_rtol", Value, "[isclose]", isclose(f32({2}), f32({2}), -1.0), "-1"),
      ROW("lerp_int", Type, "[lerp]", lerp(i64({2}), i64({2}), 0.5), "int64"),
      ROW("lerp_weight_dtype", Type, "[lerp]", lerp(f32({2}), f32({2}), zeros({2}, DType::Float64)),
          "float64"),
      ROW("addcdiv_int", Type, "[addcdiv]", addcdiv(i64({2}), i64({2}), i64({2})), "int64"),
      ROW("addcmul_int_float_value", Type, "[addcmul]", addcmul(i64({2}), i64({2}), i64({2}), 0.5),
          "0.5"),
      ROW("nanmean_int", Type, "[nanmean]", nanmean(i64({2})), "int64"),
      ROW("clamp_no_tensor_bound", Value, "[clamp]", clamp(f32({2}), Tensor(), Tensor()),
          "min and max"),
      ROW("diag_3d", Value, "[diag]", diag(f32({2, 2, 2})), "3-d", "[2, 2, 2]"),
      ROW("diag_embed_same_dims", Value, "[diag_embed]", diag_embed(f32({3}), 0, 1, -1), "1"),
      ROW("meshgrid_2d", Value, "[meshgrid]", meshgrid({f32({2}), f32({2, 2})}), "tensor 1",
          "2 dims"),
      ROW("meshgrid_indexing", Value, "[meshgrid]", meshgrid({f32({2})}, "yx"), "'yx'"),
      ROW("meshgrid_dtypes", Type, "[meshgrid]", meshgrid({f32({2}), i64({2})}), "float32",
          "int64"),
      ROW("tril_indices_negative", Value, "[tril_indices]", tril_indices(-1, 3), "-1"),
      ROW("repeat_interleave_negative", Value, "[repeat_interleave]",
          repeat_interleave(f32({2}), -1), "negative", "-1"),
      ROW("repeat_interleave_negative_tensor", Value, "[repeat_interleave]",
          repeat_interleave(f32({2}), tensor({1, -2})), "-2", "index 1"),
      ROW("repeat_interleave_count", Value, "[repeat_interleave]",
          repeat_interleave(f32({3}), tensor({1, 2})), "2 repeats", "size 3"),
      ROW("repeat_interleave_output_size", Value, "[repeat_interleave]",
          repeat_interleave(f32({3}), 2, 0, 5), "5", "6"),
      ROW("repeat_interleave_float_repeats", Type, "[repeat_interleave]",
          repeat_interleave(f32({2}), f32({2})), "float32"),
      ROW("cdist_1d", Value, "[cdist]", cdist(f32({3}), f32({2, 3})), "[3]"),
      ROW("cdist_columns", Value, "[cdist]", cdist(f32({2, 3}), f32({2, 4})), "3", "4"),
      ROW("cdist_negative_p", Value, "[cdist]", cdist(f32({2, 3}), f32({2, 3}), -1.0), "-1"),
      ROW("searchsorted_dims", Value, "[searchsorted]", searchsorted(f32({2, 4}), f32({3, 2})),
          "[2, 4]", "[3, 2]"),
      ROW("searchsorted_0d", Value, "[searchsorted]", searchsorted(f32({}), f32({2})), "0-d"),
      ROW("searchsorted_side", Value, "[searchsorted]",
          searchsorted(f32({4}), f32({2}), false, false, "middle"), "'middle'"),
      ROW("searchsorted_side_right_opposite", Value, "[searchsorted]",
          searchsorted(f32({4}), f32({2}), false, true, "left"), "opposites"),
      ROW("searchsorted_sorter_shape", Value, "[searchsorted]",
          searchsorted(f32({4}), f32({2}), false, false, std::nullopt, i64({3})), "[4]", "[3]"),
      ROW("bucketize_2d", Value, "[bucketize]", bucketize(f32({2}), f32({2, 2})), "[2, 2]"),
      ROW("histc_bins", Value, "[histc]", histc(f32({3}), 0), "bins", "0"),
      ROW("histc_min_max", Value, "[histc]", histc(f32({3}), 10, 2.0, 1.0), "min 2", "max 1"),
      ROW("histc_int", Type, "[histc]", histc(i64({3})), "int64"),
      ROW("histc_not_finite", Value, "[histc]", histc(full({2}, NAN)), "not finite", "nan"),
      ROW("index_add_out_of_range", Index, "[index_add]",
          index_add(f32({3, 2}), 0, tensor({0, 5}), f32({2, 2})), "index 5", "size 3"),
      ROW("index_add_negative", Index, "[index_add]",
          index_add(f32({3}), 0, tensor({-1}), f32({1})), "index -1"),
      ROW("index_add_source_shape", Value, "[index_add]",
          index_add(f32({3, 2}), 0, tensor({0}), f32({1, 3})), "[1, 3]", "[1, 2]"),
      ROW("index_add_dtype", Type, "[index_add]",
          index_add(f32({3}), 0, tensor({0}), zeros({1}, DType::Float64)), "float64"),
      ROW("index_add_float_index", Type, "[index_add]",
          index_add(f32({3}), 0, f32({1}), f32({1})), "float32"),
      ROW("index_copy_out_of_range", Index, "[index_copy]",
          index_copy(f32({3}), 0, tensor({3}), f32({1})), "index 3"),
      ROW("index_fill_value_1d", Value, "[index_fill]",
          index_fill(f32({3}), 0, tensor({0}), f32({2})), "0-d", "[2]"),
      ROW("index_fill_bad_dim", Index, "[index_fill]", index_fill(f32({3}), 1, tensor({0}), 1.0),
          "1"),
      ROW("scatter_reduce_reduce", Value, "[scatter_reduce]",
          scatter_reduce(f32({3}), 0, tensor({0}), f32({1}), "max"), "'max'"),
      ROW("scatter_reduce_out_of_range", Index, "[scatter_reduce]",
          scatter_reduce(f32({3}), 0, tensor({4}), f32({1}), "amax"), "index 4"),
      ROW("masked_scatter_short_source", Value, "[masked_scatter]",
          masked_scatter(f32({3}), ones({3}, DType::Bool), f32({2})), "2 elements", "3"),
      ROW("masked_scatter_mask_dtype", Type, "[masked_scatter]",
          masked_scatter(f32({3}), f32({3}), f32({3})), "float32"),
      ROW("unsqueeze_requires_grad", NotImplemented, "[unsqueeze_]",
          [] { Tensor t = leaf({2}); t.unsqueeze_(0); }(), "requires grad", "unsqueeze"),
      ROW("transpose_requires_grad", NotImplemented, "[transpose_]",
          [] { Tensor t = leaf({2, 2}); t.transpose_(0, 1); }(), "requires grad"),
      ROW("logsumexp_bad_dim", Index, "[logsumexp]", logsumexp(f32({2}), {1}), "dim 1"),
      ROW("softmax_bad_dim", Index, "[softmax]", softmax(f32({2, 3}), 2), "dim 2"),
      ROW("softmax_bool", Type, "[softmax]", softmax(zeros({2, 3}, DType::Bool), 1), "bool"),
      ROW("log_softmax_bad_dim", Index, "[log_softmax]", log_softmax(f32({2, 3}), -3), "dim -3"),

      // --- linear algebra -------------------------------------------------------------------
      ROW("matmul_inner_mismatch", Value, "[matmul]", matmul(f32({2, 3}), f32({4, 5})), "[2, 3]",
          "[4, 5]"),
      ROW("matmul_scalar", Value, "[matmul]", matmul(f32({}), f32({3})), "0-d"),
      ROW("matmul_batch_mismatch", Value, "[matmul]", matmul(f32({2, 2, 3}), f32({3, 3, 4})), "[2, 2, 3]",
          "[3, 3, 4]"),
      ROW("mm_not_2d", Value, "[mm]", mm(f32({2, 3, 4}), f32({4, 5})), "[2, 3, 4]"),
      ROW("mm_mismatch", Value, "[mm]", mm(f32({2, 3}), f32({2, 3})), "[2, 3]"),
      ROW("bmm_batch_mismatch", Value, "[bmm]", bmm(f32({2, 3, 4}), f32({3, 4, 5})), "[2, 3, 4]",
          "[3, 4, 5]"),
      ROW("bmm_not_3d", Value, "[bmm]", bmm(f32({3, 4}), f32({4, 5})), "[3, 4]"),
      ROW("matmul_bool", Type, "[matmul]", matmul(f32({2, 3}), zeros({3, 2}, DType::Bool)), "float32",
          "bool"),
      ROW("linear_in_features", Value, "[linear]", linear(f32({2, 3}), f32({4, 5})), "[2, 3]", "[4, 5]"),
      ROW("linear_bias_shape", Value, "[linear]", linear(f32({2, 3}), f32({4, 3}), f32({5})), "[5]"),
      // No promotion where PyTorch requires one dtype (Note [Ops that take one dtype]).
      ROW("linear_mixed_dtypes", Type, "[linear]", linear(f32({2, 3}).to(DType::Float64),
          f32({4, 3})), "float64", "float32"),
      ROW("matmul_mixed_dtypes", Type, "[matmul]", matmul(f32({2, 3}),
          f32({3, 2}).to(DType::Float64)), "float32", "float64"),
      ROW("bmm_mixed_dtypes", Type, "[bmm]", bmm(f32({1, 2, 3}), i64({1, 3, 2})), "int64"),
      ROW("layer_norm_weight_dtype", Type, "[layer_norm]",
          layer_norm(f32({2, 3}).to(DType::Float64), {3}, f32({3})), "weight", "float32"),
      // torch.linalg: a matrix that cannot be factored is a LinAlgError (a Value error) naming
      // the batch element (Note [LinAlgError names the batch element]).
      ROW("linalg_inv_not_square", Value, "[linalg.inv]", linalg::inv(f32({2, 3})), "[2, 3]",
          "2 by 3"),
      ROW("linalg_inv_vector", Value, "[linalg.inv]", linalg::inv(f32({3})), "[3]"),
      ROW("linalg_inv_int", Type, "[linalg.inv]", linalg::inv(i64({2, 2})), "int64"),
      ROW("linalg_inv_half", Type, "[linalg.inv]", linalg::inv(f32({2, 2}).to(DType::Float16)),
          "float16"),
      ROW("linalg_inv_singular", Value, "[linalg.inv]",
          linalg::inv(stack({eye(2, 2, DType::Float32), f32({2, 2})})), "(batch element 1)",
          "singular", "U[1, 1]"),
      ROW("inverse_singular", Value, "[linalg.inv]", inverse(zeros({3, 3})), "singular",
          "U[0, 0]"),
      ROW("linalg_solve_singular", Value, "[linalg.solve]", linalg::solve(f32({2, 2}), f32({2})),
          "singular"),
      ROW("linalg_solve_shapes", Value, "[linalg.solve]", linalg::solve(f32({3, 3}), f32({2, 4})),
          "[3, 3]", "[2, 4]"),
      ROW("linalg_solve_batch_mismatch", Value, "[linalg.solve]",
          linalg::solve(f32({2, 3, 3}), f32({4, 3, 1})), "[2, 3, 3]", "[4, 3, 1]", "2 vs 4"),
      ROW("linalg_solve_mixed_dtypes", Type, "[linalg.solve]",
          linalg::solve(f32({2, 2}), f32({2}).to(DType::Float64)), "float32", "float64"),
      ROW("linalg_det_not_square", Value, "[linalg.det]", linalg::det(f32({4, 2, 3})), "[4, 2, 3]"),
      ROW("linalg_slogdet_int", Type, "[linalg.slogdet]", linalg::slogdet(i64({2, 2})), "int64"),
      ROW("linalg_cholesky_not_pd", Value, "[linalg.cholesky]",
          linalg::cholesky(mul(eye(3, 3, DType::Float32), -1.0)), "positive-definite",
          "order 1"),
      ROW("linalg_cholesky_nan", Value, "[linalg.cholesky]",
          linalg::cholesky(full({2, 2, 2}, NAN, DType::Float64)), "(batch element 0)",
          "positive-definite"),
      ROW("linalg_eigh_nan", Value, "[linalg.eigh]",
          linalg::eigh(full({2, 2}, NAN, DType::Float32)), "non-finite"),
      ROW("linalg_eigh_uplo", Value, "[linalg.eigh]", linalg::eigh(f32({2, 2}), "X"), "'X'"),
      ROW("linalg_svd_inf", Value, "[linalg.svd]",
          linalg::svd(stack({f32({2, 3}), full({2, 3}, INFINITY, DType::Float32)})),
          "(batch element 1)", "non-finite"),
      ROW("linalg_svd_vector", Value, "[linalg.svd]", linalg::svd(f32({3})), "[3]"),
      ROW("linalg_solve_triangular_zero_diagonal", Value, "[linalg.solve_triangular]",
          linalg::solve_triangular(zeros({2, 2}), f32({2, 1}), true), "singular"),
      ROW("linalg_solve_triangular_vector_b", Value, "[linalg.solve_triangular]",
          linalg::solve_triangular(eye(2, 2, DType::Float32), f32({2}), false), "[2]"),
      ROW("linalg_lu_factor_singular", Value, "[linalg.lu_factor]",
          linalg::lu_factor(zeros({3, 3})), "singular"),
      ROW("lu_unpack_bad_pivot", Index, "[lu_unpack]",
          lu_unpack(f32({2, 2}), zeros({2}, DType::Int32)), "pivots[0] = 0 is out of range"),
      ROW("linalg_tensorinv_products", Value, "[linalg.tensorinv]",
          linalg::tensorinv(f32({2, 3, 4}), 1), "2 and 12"),
      ROW("index_put_too_many", Index, "[index_put]",
          index_put(f32({3}), {i64({1}), i64({1})}, f32({1}), true), "too many indices"),
      ROW("put_out_of_range", Index, "[put]", put(f32({2, 2}), full({1}, 4, DType::Int64), f32({1})),
          "index 4 is out of range"),
      ROW("histogram_int", Type, "[histogram]", histogram(i64({4}), 3), "int64"),
      ROW("histogram_inf", Value, "[histogram]", histogram(full({2}, INFINITY, DType::Float32), 3),
          "not finite"),
      ROW("frexp_int", Type, "[frexp]", frexp(i64({2})), "int64"),
      ROW("gradient_edge_order", Value, "[gradient]",
          gradient(f32({2}), std::vector<double>{1.0}, {}, 2), "edge_order+1"),
      ROW("multilabel_margin_loss_class", Index, "[multilabel_margin_loss]",
          multilabel_margin_loss(f32({1, 3}), full({1, 3}, 3, DType::Int64)), "outside [-1, 3)"),
      ROW("imag_of_real", NotImplemented, "[imag]", imag(f32({2})), "non-complex"),
      ROW("linalg_qr_mode", Value, "[linalg.qr]", linalg::qr(f32({3, 2}), "full"), "'full'"),
      ROW("linalg_lstsq_driver", Value, "[linalg.lstsq]",
          linalg::lstsq(f32({3, 2}), f32({3, 1}), {}, "lapack"), "'lapack'"),
      ROW("linalg_lstsq_b_dims", Value, "[linalg.lstsq]",
          linalg::lstsq(f32({3, 2}), f32({1, 1, 3, 1})), "one fewer", "[1, 1, 3, 1]"),
      ROW("linalg_lstsq_rows", Value, "[linalg.lstsq]", linalg::lstsq(f32({3, 2}), f32({4, 1})),
          "[3, 2]", "[4, 1]"),
      ROW("linalg_matrix_norm_ord", Value, "[linalg.matrix_norm]",
          linalg::matrix_norm(f32({3, 3}), 3.0), "order 3"),
      ROW("linalg_matrix_norm_str_ord", Value, "[linalg.matrix_norm]",
          linalg::matrix_norm(f32({3, 3}), "spectral"), "'spectral'"),
      ROW("linalg_matrix_norm_same_dims", Value, "[linalg.matrix_norm]",
          linalg::matrix_norm(f32({3, 3}), "fro", {1, -1}), "(1, -1)"),
      ROW("linalg_vector_norm_int", Type, "[linalg.vector_norm]", linalg::vector_norm(i64({3})),
          "int64"),
      ROW("linalg_norm_3d_with_ord", Value, "[linalg.norm]", linalg::norm(f32({2, 2, 2}), 2.0),
          "[2, 2, 2]"),
      ROW("linalg_pinv_negative_rtol", Value, "[linalg.pinv]",
          linalg::pinv(f32({2, 2}), {}, -1.0), "-1"),

      // --- indexing -------------------------------------------------------------------------
      ROW("one_hot_class_too_large", Index, "[one_hot]", one_hot(full({2}, 3, DType::Int64), 3),
          "smaller than num_classes"),
      ROW("one_hot_negative_class", Index, "[one_hot]", one_hot(full({2}, -1, DType::Int64)),
          "non-negative"),
      // Index values are bounds-checked by the kernel, which answers EMBER_ERR_INDEX (ABI 1.4):
      // IndexError, as for the indices the core checks (Note [Error kinds]).
      ROW("index_select_out_of_range", Index, "[index_select]",
          index_select(f32({3, 2}), 0, from_vector<int64_t>({0, 3}, {2}, DType::Int64)),
          "index 3", "3"),
      ROW("index_select_negative_index", Index, "[index_select]",
          index_select(f32({3, 2}), 0, from_vector<int64_t>({-4}, {1}, DType::Int64)), "-4"),
      ROW("index_select_float_index", Type, "[index_select]", index_select(f32({3, 2}), 0, f32({1})),
          "float32"),
      ROW("gather_out_of_range", Index, "[gather]",
          gather(f32({2, 2}), 1, from_vector<int64_t>({0, 2, 1, 0}, {2, 2}, DType::Int64)),
          "index 2"),
      ROW("gather_rank_mismatch", Value, "[gather]", gather(f32({2, 2}), 1, i64({2})), "number of dims 2",
          "got 1 (sizes [2])"),
      ROW("scatter_out_of_range", Index, "[scatter]",
          scatter(f32({3}), 0, from_vector<int64_t>({7}, {1}, DType::Int64), f32({1})), "index 7"),
      ROW("scatter_add_src_small", Value, "[scatter_add]", scatter_add(f32({3}), 0, i64({4}), f32({2})),
          "[4]", "[2]"),
      ROW("cat_empty_list", Value, "[cat]", cat({}), "empty"),
      ROW("cat_shape_mismatch", Value, "[cat]", cat({f32({2, 3}), f32({2, 4})}, 0), "[2, 3]", "[2, 4]"),
      ROW("cat_rank_mismatch", Value, "[cat]", cat({f32({2, 3}), f32({3})}, 0), "[2, 3]", "[3]"),
      ROW("cat_bad_dim", Index, "[cat]", cat({f32({2}), f32({2})}, 1), "dim 1"),
      ROW("stack_shape_mismatch", Value, "[stack]", stack({f32({2}), f32({3})}), "[2]", "[3]"),
      ROW("split_zero_size", Value, "[split]", split(f32({4}), 0), "0"),
      ROW("split_sizes_sum", Value, "[split]", split(f32({4}), {1, 2}, 0), "[1, 2]", "4"),
      ROW("chunk_zero", Value, "[chunk]", chunk(f32({4}), 0), "0"),
      ROW("topk_k_too_large", Value, "[topk]", topk(f32({3}), 4), "k (4)", "size 3"),
      ROW("topk_negative_k", Value, "[topk]", topk(f32({3}), -1), "k (-1)"),
      ROW("sort_bad_dim", Index, "[sort]", sort(f32({3}), 1), "dim 1"),
      ROW("embedding_out_of_range", Index, "[embedding]",
          embedding(f32({4, 2}), from_vector<int64_t>({1, 4}, {2}, DType::Int64)), "index 4",
          "4"),
      ROW("embedding_float_indices", Type, "[embedding]", embedding(f32({4, 2}), f32({2})), "float32"),

      // --- convolution, pooling, normalisation, nn functions --------------------------------
      ROW("conv2d_channel_mismatch", Value, "[conv2d]", conv2d(f32({1, 3, 5, 5}), f32({4, 2, 3, 3})),
          "3", "2"),
      ROW("conv2d_rank", Value, "[conv2d]", conv2d(f32({5, 5}), f32({4, 1, 3, 3})), "[5, 5]"),
      ROW("unfold_no_block_fits", Value, "[unfold]", unfold(f32({1, 1, 3, 3}), {4}),
          "no sliding block fits", "(3, 3)"),
      ROW("fold_block_count", Value, "[fold]", fold(f32({1, 4, 8}), {3, 3}, {2}),
          "number of sliding blocks", "[1, 4, 8]"),
      ROW("conv2d_zero_stride", Value, "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({1, 1, 3, 3}), {}, {0, 1}), "stride", "(0, 1)"),
      ROW("conv2d_negative_padding", Value, "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({1, 1, 3, 3}), {}, {1, 1}, {-1, 0}), "padding", "(-1, 0)"),
      ROW("conv2d_kernel_larger_than_input", Value, "[conv2d]",
          conv2d(f32({1, 1, 2, 2}), f32({1, 1, 3, 3})), "3"),
      ROW("conv2d_zero_dilation", Value, "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({1, 1, 3, 3}), {}, {1, 1}, {0, 0}, {0, 0}), "dilation"),
      ROW("conv2d_bad_groups", Value, "[conv2d]",
          conv2d(f32({1, 4, 5, 5}), f32({3, 2, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}, 2), "groups"),
      ROW("conv2d_zero_groups", Value, "[conv2d]",
          conv2d(f32({1, 4, 5, 5}), f32({3, 4, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}, 0), "groups", "got 0"),
      ROW("conv2d_bias_shape", Value, "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({2, 1, 3, 3}), f32({3})), "[3]"),
      ROW("conv2d_padding_overflows", Value, "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({1, 1, 3, 3}), {}, {1, 1}, {kMax, 0}),
          "padded height overflows int64"),
      ROW("conv2d_dilation_overflows", Value, "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({1, 1, 3, 3}), {}, {1, 1}, {0, 0}, {kMax, 1}), "too small",
          "dilated to 18446744073709551615x3"),
      ROW("conv_transpose2d_groups_overflow", Value, "[conv_transpose2d]",
          conv_transpose2d(f32({1, 0, 4, 4}), f32({0, 2, 3, 3}), {}, {1, 1}, {0, 0}, {0, 0}, kMax),
          "out channels", "overflows int64"),
      ROW("conv_transpose2d_channels", Value, "[conv_transpose2d]",
          conv_transpose2d(f32({1, 3, 4, 4}), f32({2, 1, 3, 3})), "3", "2"),
      ROW("max_pool2d_zero_kernel", Value, "[max_pool2d]", max_pool2d(f32({1, 1, 4, 4}), {0, 2}),
          "kernel_size", "(0, 2)"),
      ROW("max_pool2d_padding_too_big", Value, "[max_pool2d]",
          max_pool2d(f32({1, 1, 4, 4}), {2, 2}, {2, 2}, {2, 2}), "padding"),
      ROW("max_pool2d_dilation_overflows", Value, "[max_pool2d]",
          max_pool2d(f32({1, 1, 4, 4}), {2, 2}, {1, 1}, {0, 0}, {kMax, 1}),
          "dilated window height overflows int64", "9223372036854775808"),
      ROW("max_pool2d_rank", Value, "[max_pool2d]", max_pool2d(f32({4, 4}), {2, 2}), "[4, 4]"),
      ROW("avg_pool2d_kernel_too_big", Value, "[avg_pool2d]", avg_pool2d(f32({1, 1, 2, 2}), {3, 3}),
          "3"),
      ROW("avg_pool2d_negative_stride", Value, "[avg_pool2d]",
          avg_pool2d(f32({1, 1, 4, 4}), {2, 2}, {-1, 2}), "stride"),
      ROW("avg_pool2d_zero_divisor", Value, "[avg_pool2d]",
          avg_pool2d(f32({1, 1, 4, 4}), {2, 2}, {}, {0, 0}, false, true, 0), "divisor_override",
          "0"),
      ROW("conv1d_rank", Value, "[conv1d]", conv1d(f32({1, 2, 3, 4}), f32({1, 2, 3})),
          "[1, 2, 3, 4]"),
      ROW("conv1d_too_short", Value, "[conv1d]", conv1d(f32({1, 2, 3}), f32({1, 2, 5})),
          "length 3", "kernel 5"),
      ROW("adaptive_avg_pool2d_zero_output", Value, "[adaptive_avg_pool2d]",
          adaptive_avg_pool2d(f32({1, 1, 4, 4}), {0, 2}), "output_size", "(0, 2)"),
      ROW("batch_norm_channels", Value, "[batch_norm]",
          batch_norm(f32({2, 3, 4}), f32({4}), f32({4}), {}, {}, true), "3", "[4]"),
      ROW("layer_norm_shape", Value, "[layer_norm]", layer_norm(f32({2, 3}), {4}), "[4]", "[2, 3]"),
      ROW("group_norm_groups", Value, "[group_norm]", group_norm(f32({2, 6, 4}), 4), "4", "6"),
      ROW("dropout_p_out_of_range", Value, "[dropout]", dropout(f32({3}), 1.5), "1.5"),
      ROW("normal_negative_std", Value, "[normal]", normal(0, -1, {2}), "std >= 0.0", "-1"),
      ROW("bernoulli_p_out_of_range", Value, "[bernoulli]", bernoulli(f32({2}), 2.0), "[0, 1]",
          "p=2"),
      ROW("bernoulli_nan_probability", Value, "[bernoulli]", bernoulli(full({2}, NAN)), "[0, 1]"),
      ROW("sdpa_embedding_mismatch", Value, "[scaled_dot_product_attention]",
          scaled_dot_product_attention(f32({2, 3, 4}), f32({2, 5, 3}), f32({2, 5, 6})), "E=4",
          "E=3"),
      ROW("sdpa_length_mismatch", Value, "[scaled_dot_product_attention]",
          scaled_dot_product_attention(f32({2, 3, 4}), f32({2, 5, 4}), f32({2, 4, 6})), "S=5",
          "S=4"),
      ROW("sdpa_dtype_mismatch", Type, "[scaled_dot_product_attention]",
          scaled_dot_product_attention(f32({3, 4}), f32({5, 4}).to(DType::Float64), f32({5, 2})),
          "float32", "float64"),
      ROW("sdpa_mask_shape", Value, "[scaled_dot_product_attention]",
          scaled_dot_product_attention(f32({3, 4}), f32({5, 4}), f32({5, 2}), f32({3, 4})),
          "[3, 4]", "[3, 5]"),
      ROW("sdpa_mask_and_causal", Value, "[scaled_dot_product_attention]",
          scaled_dot_product_attention(f32({3, 4}), f32({5, 4}), f32({5, 2}), f32({3, 5}), 0.0,
                                       true),
          "is_causal"),
      ROW("lstm_weight_not_4h", Value, "[lstm_layer]",
          lstm_layer(f32({2, 1, 8}), f32({6, 2}), f32({1, 2}), f32({1, 2})), "[6, 2]"),
      ROW("lstm_gates_width", Value, "[lstm_layer]",
          lstm_layer(f32({2, 1, 6}), f32({8, 2}), f32({1, 2}), f32({1, 2})), "[2, 1, 6]", "8"),
      ROW("lstm_state_shape", Value, "[lstm_layer]",
          lstm_layer(f32({2, 3, 8}), f32({8, 2}), f32({1, 2}), f32({3, 2})), "[3, 2]", "[1, 2]"),
      ROW("lstm_dtype_mismatch", Type, "[lstm_layer]",
          lstm_layer(f32({2, 1, 8}), f32({8, 2}).to(DType::Float64), f32({1, 2}), f32({1, 2})),
          "float32", "float64"),
      ROW("lstm_integer_gates", Type, "[lstm_layer]",
          lstm_layer(f32({2, 1, 8}).to(DType::Int64), f32({8, 2}), f32({1, 2}), f32({1, 2})),
          "int64"),
      ROW("gru_weight_not_3h", Value, "[gru_layer]",
          gru_layer(f32({2, 1, 6}), f32({8, 2}), {}, f32({1, 2})), "[8, 2]"),
      ROW("gru_gates_width", Value, "[gru_layer]",
          gru_layer(f32({2, 1, 8}), f32({6, 2}), {}, f32({1, 2})), "[2, 1, 8]", "6"),
      ROW("gru_bias_shape", Value, "[gru_layer]",
          gru_layer(f32({2, 1, 6}), f32({6, 2}), f32({8}), f32({1, 2})), "[6]", "[8]"),
      ROW("gru_state_shape", Value, "[gru_layer]",
          gru_layer(f32({2, 3, 6}), f32({6, 2}), {}, f32({1, 2})), "[3, 2]", "[1, 2]"),
      ROW("gru_dtype_mismatch", Type, "[gru_layer]",
          gru_layer(f32({2, 1, 6}), f32({6, 2}).to(DType::Float64), {}, f32({1, 2})), "float32",
          "float64"),
      ROW("rnn_gru_weight_not_3h", Value, "[rnn_layer]",
          rnn_layer(RnnMode::GRU, f32({2, 1, 3}), f32({8, 3}), f32({8, 2}), {}, {}, f32({1, 2})),
          "[3 * hidden, hidden] for a GRU", "[8, 2]"),
      ROW("rnn_lstm_without_c0", Type, "[rnn_layer]",
          rnn_layer(RnnMode::LSTM, f32({2, 1, 3}), f32({8, 3}), f32({8, 2}), {}, {}, f32({1, 2})),
          "no c0 for an LSTM"),
      ROW("rnn_one_bias", Type, "[rnn_layer]",
          rnn_layer(RnnMode::LSTM, f32({2, 1, 3}), f32({8, 3}), f32({8, 2}), f32({8}), {},
                    f32({1, 2}), f32({1, 2})),
          "only b_ih"),
      ROW("rnn_input_width", Value, "[rnn_layer]",
          rnn_layer(RnnMode::LSTM, f32({2, 1, 3}), f32({8, 4}), f32({8, 2}), {}, {}, f32({1, 2}),
                    f32({1, 2})),
          "[8, 3]", "[8, 4]"),
      ROW("rnn_state_shape", Value, "[rnn_layer]",
          rnn_layer(RnnMode::GRU, f32({2, 3, 3}), f32({6, 3}), f32({6, 2}), {}, {}, f32({1, 2})),
          "[3, 2]", "[1, 2]"),
      ROW("rnn_dtype_mismatch", Type, "[rnn_layer]",
          rnn_layer(RnnMode::GRU, f32({2, 1, 3}), f32({6, 3}).to(DType::Float64), f32({6, 2}), {},
                    {}, f32({1, 2})),
          "float32", "float64"),
      ROW("rnn_bad_mode", Value, "[rnn_layer]",
          rnn_layer(static_cast<RnnMode>(7), f32({2, 1, 3}), f32({6, 3}), f32({6, 2}), {}, {},
                    f32({1, 2})),
          "got 7"),
      ROW("unbind_scalar", Index, "[unbind]", unbind(f32({})), "0-d"),
      ROW("unbind_empty_tensor_huge_dim", Value, "[unbind]", unbind(f32({kTera, 0})),
          "[1099511627776, 0]", "exceed"),
      ROW("pad_too_many", Value, "[pad]", pad(f32({3}), {1, 1, 1, 1}), "4 values", "shape [3]"),
      ROW("pad_bad_mode", Value, "[pad]", pad(f32({1, 3}), {1, 1}, "mirror"), "mirror"),
      ROW("pad_reflect_too_wide", Value, "[pad]", pad(f32({1, 1, 3}), {3, 3}, "reflect"), "3"),
      ROW("interpolate_bad_mode", Value, "[interpolate]", interpolate(f32({1, 1, 2, 2}), {4, 4}, "cubic"),
          "cubic"),
      ROW("interpolate_zero_size", Value, "[interpolate]", interpolate(f32({1, 1, 2, 2}), {0, 4}),
          "[0, 4]"),

      ROW("affine_grid_huge_size", Value, "[affine_grid]",
          affine_grid(f32({1, 2, 3}), {1, 1, kMax, kMax}), "overflows int64"),
      ROW("affine_grid_theta_shape", Value, "[affine_grid]", affine_grid(f32({1, 3, 3}), {1, 1, 2, 2}),
          "[N, 2, 3]", "[1, 3, 3]"),
      ROW("grid_sample_grid_last_dim", Value, "[grid_sample]",
          grid_sample(f32({1, 1, 2, 2}), f32({1, 2, 2, 3})), "[1, 2, 2, 3]"),
      ROW("grid_sample_bad_padding", Value, "[grid_sample]",
          grid_sample(f32({1, 1, 2, 2}), f32({1, 2, 2, 2}), "bilinear", "mirror"), "mirror"),

      // --- losses ---------------------------------------------------------------------------
      ROW("nll_loss_target_out_of_range", Index, "[nll_loss]",
          nll_loss(f32({2, 3}), from_vector<int64_t>({0, 3}, {2}, DType::Int64)), "3"),
      ROW("nll_loss_target_float", Type, "[nll_loss]", nll_loss(f32({2, 3}), f32({2})), "float32"),
      ROW("ctc_loss_input_length_past_t", Value, "[ctc_loss]",
          ctc_loss(f32({4, 1, 3}), i64({1, 2}), {5}, {2}), "T = 4", "got 5"),
      ROW("ctc_loss_label_out_of_range", Index, "[ctc_loss]",
          ctc_loss(f32({4, 1, 3}), from_vector<int64_t>({1, 3}, {1, 2}, DType::Int64), {4}, {2}),
          "target label 3"),
      // A target length past the padded targets' width.
      ROW("ctc_loss_targets_too_short", Value, "[ctc_loss]",
          ctc_loss(f32({4, 1, 3}), i64({1, 2}), {4}, {kMax}), "longest target length"),
      ROW("nll_loss_batch_mismatch", Value, "[nll_loss]", nll_loss(f32({2, 3}), i64({3})), "[3]",
          "[2, 3]"),
      ROW("cross_entropy_batch_mismatch", Value, "[cross_entropy]", cross_entropy(f32({2, 3}), i64({4})),
          "[4]", "[2, 3]"),
      ROW("cross_entropy_bad_smoothing", Value, "[cross_entropy]",
          cross_entropy(f32({2, 3}), i64({2}), {}, -100, Reduction::Mean, 1.5), "1.5"),
      ROW("mse_loss_shape", Value, "[mse_loss]", mse_loss(f32({2, 3}), f32({3, 2})), "[2, 3]", "[3, 2]"),
      ROW("l1_loss_shape", Value, "[l1_loss]", l1_loss(f32({2}), f32({3})), "[2]", "[3]"),
      ROW("bce_input_out_of_range", Value, "[binary_cross_entropy]",
          binary_cross_entropy(full({2}, 1.5), f32({2})), "between 0 and 1", "1.5"),
      ROW("bce_shape", Value, "[binary_cross_entropy]", binary_cross_entropy(f32({2}), f32({3})), "[2]",
          "[3]"),

      // --- autograd -------------------------------------------------------------------------
      ROW("backward_non_scalar", Value, "[backward]", { (leaf({2, 3}) * 2.0).backward(); }, "[2, 3]"),
      ROW("backward_no_grad", Value, "[backward]", { f32({}).backward(); }, "does not require grad"),
      ROW("backward_grad_shape", Value, "[backward]", { (leaf({2}) * 2.0).backward(f32({3})); }, "[3]",
          "[2]"),
      ROW("backward_twice", Value, "[autograd]",
          {
            Tensor y = sum(leaf({2}) * leaf({2}));
            y.backward();
            y.backward();
          },
          "second time", "retain_graph"),
      ROW("grad_of_unused_input", Value, "[grad]",
          { autograd::grad({sum(leaf({2}) * 2.0)}, {leaf({2})}); }, "allow_unused"),
      ROW("grad_of_non_requires_grad", Value, "[grad]",
          { autograd::grad({sum(leaf({2}) * 2.0)}, {f32({2})}); }, "does not require grad"),
      ROW("requires_grad_on_int", Type, "[requires_grad_]", { i64({2}).requires_grad_(); }, "int64"),
      ROW("requires_grad_on_non_leaf", Value, "[requires_grad_]",
          { (leaf({2}) * 2.0).requires_grad_(false); }, "leaf"),
      ROW("inplace_on_leaf_requiring_grad", Value, "[mul_]", { Tensor x = leaf({2}); mul_(x, 2.0); },
          "leaf"),
      ROW("modified_saved_tensor", Value, "[autograd]",
          {
            Tensor x = leaf({2});
            Tensor y = x * 1.0;
            Tensor z = sum(y * y);
            mul_(y, 2.0);
            z.backward();
          },
          "modified by an inplace operation", "version 1", "expected version 0"),

      // --- nn modules -----------------------------------------------------------------------
      ROW("Linear_in_features", Value, "[linear]", nn::Linear(4, 2)(f32({3, 5})), "[3, 5]", "[2, 4]"),
      ROW("Linear_zero_features", Value, "[nn.Linear]", nn::Linear(0, 2), "in_features", "0"),
      ROW("Conv2d_channels", Value, "[conv2d]", nn::Conv2d(3, 4, 3)(f32({1, 2, 8, 8})), "[1, 2, 8, 8]"),
      ROW("Conv2d_rank", Value, "[conv2d]", nn::Conv2d(3, 4, 3)(f32({8, 8})), "[8, 8]"),
      ROW("Conv2d_groups", Value, "[nn.Conv2d]", nn::Conv2d(3, 4, 3, {.groups = 2}), "groups", "3"),
      ROW("Conv2d_zero_kernel", Value, "[nn.Conv2d]", nn::Conv2d(3, 4, 0), "kernel_size"),
      ROW("BatchNorm2d_rank", Value, "[nn.BatchNorm2d]", nn::BatchNorm2d(3)(f32({2, 3})), "[2, 3]"),
      ROW("BatchNorm2d_channels", Value, "[batch_norm]", nn::BatchNorm2d(3)(f32({2, 4, 2, 2})), "4",
          "3"),
      ROW("Dropout_p", Value, "[nn.Dropout]", nn::Dropout(-0.1), "-0.1"),
      ROW("Embedding_padding_idx", Index, "[nn.Embedding]", nn::Embedding(4, 2, 9), "9"),
      ROW("load_state_dict_missing_key", Value, "[nn.Linear]",
          {
            nn::Linear m(2, 3);
            StateDict s = m.state_dict();
            s.erase("bias");
            m.load_state_dict(s);
          },
          "missing", "bias"),
      ROW("load_state_dict_unexpected_key", Value, "[nn.Linear]",
          {
            nn::Linear m(2, 3);
            StateDict s = m.state_dict();
            s["extra"] = f32({1});
            m.load_state_dict(s);
          },
          "unexpected", "extra"),
      ROW("load_state_dict_wrong_shape", Value, "[nn.Linear]",
          {
            nn::Linear m(2, 3);
            StateDict s = m.state_dict();
            s["weight"] = f32({2, 3});
            m.load_state_dict(s);
          },
          "size mismatch", "weight", "[2, 3]", "[3, 2]"),
      ROW("Sequential_index", Index, "[nn.Sequential]",
          {
            nn::Sequential s;
            s.push_back(std::make_shared<nn::ReLU>());
            s[3];
          },
          "index 3", "1 modules"),
      ROW("register_buffer_over_a_parameter", Key, "[nn.Linear]",
          nn::Linear(2, 2).register_buffer("weight", f32({2, 2})), "attribute 'weight' already",
          "parameter"),
      ROW("register_parameter_over_a_buffer", Key, "[nn.BatchNorm1d]",
          nn::BatchNorm1d(2).register_parameter("running_mean", f32({2})),
          "attribute 'running_mean' already", "buffer"),
      ROW("register_module_over_a_parameter", Key, "[nn.Linear]",
          nn::Linear(2, 2).register_module("bias", std::make_shared<nn::ReLU>()),
          "attribute 'bias' already", "parameter"),
      ROW("register_buffer_empty_name", Key, "[nn.Linear]",
          nn::Linear(2, 2).register_buffer("", f32({2})), "can't be empty"),
      ROW("register_parameter_dotted_name", Key, "[nn.Linear]",
          nn::Linear(2, 2).register_parameter("a.b", f32({2})), "can't contain '.'", "'a.b'"),

      // --- optimizers -----------------------------------------------------------------------
      ROW("SGD_negative_lr", Value, "[optim.SGD]", optim::SGD({leaf({2})}, {.lr = -0.1}), "-0.1"),
      ROW("SGD_nesterov_without_momentum", Value, "[optim.SGD]",
          optim::SGD({leaf({2})}, {.lr = 0.1, .nesterov = true}), "nesterov"),
      ROW("SGD_empty_params", Value, "[optim.SGD]", optim::SGD(std::vector<Tensor>{}), "empty"),
      ROW("SGD_int_param", Type, "[optim.SGD]", optim::SGD({i64({2})}), "int64"),
      ROW("SGD_non_leaf_param", Value, "[optim.SGD]", optim::SGD({leaf({2}) * 2.0}), "leaf"),
      ROW("SGD_duplicate_param", Value, "[optim.SGD]",
          {
            Tensor p = leaf({2});
            optim::SGD({p, p});
          },
          "twice"),
      ROW("Adam_bad_beta1", Value, "[optim.Adam]", optim::Adam({leaf({2})}, {.beta1 = 1.0}), "beta1",
          "1"),
      ROW("Adam_bad_beta2", Value, "[optim.Adam]", optim::Adam({leaf({2})}, {.beta2 = -0.5}), "beta2",
          "-0.5"),
      ROW("Adam_negative_eps", Value, "[optim.Adam]", optim::Adam({leaf({2})}, {.eps = -1}), "eps", "-1"),
      ROW("AdamW_negative_weight_decay", Value, "[optim.AdamW]",
          optim::AdamW({leaf({2})}, {.weight_decay = -1}), "weight_decay", "-1"),
      ROW("Adam_nan_lr", Value, "[optim.Adam]", optim::Adam({leaf({2})}, {.lr = std::nan("")}), "nan"),
      ROW("StepLR_zero_step", Value, "[optim.StepLR]",
          {
            optim::SGD opt({leaf({2})});
            optim::StepLR(opt, 0);
          },
          "step_size", "0"),

      // --- data -----------------------------------------------------------------------------
      ROW("DataLoader_batch_size_0", Value, "[data.DataLoader]",
          data::DataLoader(small_dataset(), {.batch_size = 0}), "batch_size", "0"),
      ROW("DataLoader_negative_workers", Value, "[data.DataLoader]",
          data::DataLoader(small_dataset(), {.num_workers = -2}), "num_workers", "-2"),
      ROW("DataLoader_prefetch_0", Value, "[data.DataLoader]",
          data::DataLoader(small_dataset(), {.num_workers = 2, .prefetch_factor = 0}),
          "prefetch_factor", "0"),
      ROW("DataLoader_null_dataset", Value, "[data.DataLoader]", data::DataLoader(nullptr), "null"),
      ROW("TensorDataset_size_mismatch", Value, "[data.TensorDataset]",
          data::TensorDataset({f32({3}), f32({4})}), "3", "4"),
      ROW("MNIST_missing_dir", Io, "[data.", data::MNIST("/nonexistent/ember/mnist", true),
          "/nonexistent/ember/mnist"),
      ROW("read_idx_corrupt", Io, "[data.idx]",
          data::read_idx(write_file("corrupt-idx", std::string("\0\0\x08\x03garbage", 11))),
          "corrupt-idx", "truncated"),
      ROW("read_idx_missing", Io, "[data.idx]", data::read_idx("/nonexistent/ember/x-idx3-ubyte"),
          "cannot open"),

      // --- checkpoints ----------------------------------------------------------------------
      ROW("io_load_nonexistent", Io, "[io.", io::load("/nonexistent/ember/model.safetensors"),
          "/nonexistent/ember/model.safetensors"),
      ROW("io_load_garbage", Io, "[io.", io::load(write_file("garbage.safetensors", "not a model")),
          "garbage.safetensors"),
      ROW("io_load_truncated", Io, "[io.",
          {
            const std::string path = (scratch() / "full.safetensors").string();
            io::save(path, {{"w", f32({4, 4})}});
            std::string bytes(static_cast<size_t>(fs::file_size(path)), '\0');
            std::ifstream(path, std::ios::binary).read(bytes.data(), bytes.size());
            io::load(write_file("cut.safetensors", bytes.substr(0, bytes.size() - 7)));
          },
          "cut.safetensors"),
      ROW("io_load_empty", Io, "[io.", io::load(write_file("empty.safetensors", "")),
          "empty.safetensors"),
      ROW("io_load_fifo", Io, "[io.load]", io::load(make_fifo("pipe.safetensors")),
          "pipe.safetensors", "not a regular file: it is a FIFO"),
      ROW("io_load_directory", Io, "[io.load]", io::load(scratch().string()),
          "it is a directory"),
      ROW("io_load_json_after_nul", Io, "[io.load]",
          io::load(write_file("nul.safetensors", std::string("\6\0\0\0\0\0\0\0{}\0{}}", 14))),
          "NUL byte at offset 2"),
      ROW("io_load_trailing_bytes", Io, "[io.load]",
          io::load(write_file("trailing.safetensors", std::string("\2\0\0\0\0\0\0\0{}xyz", 13))),
          "no tensors but the data section has 3 bytes"),
      ROW("read_idx_fifo", Io, "[data.idx]", data::read_idx(make_fifo("pipe-idx")), "pipe-idx",
          "it is a FIFO"),
  };
}

#undef ROW

/** The plugin rows: load_plugin returns a status rather than throwing. */
std::vector<Row> plugin_rows() {
  auto row = [](std::string name, std::function<PluginRecord()> load, PluginOutcome outcome,
                std::vector<std::string> message) {
    Row r;
    r.name = std::move(name);
    r.expect = Expect::kPluginStatus;
    r.op = "";
    r.load = std::move(load);
    r.outcome = outcome;
    r.message = std::move(message);
    return r;
  };
  return {
      row("load_plugin_missing_path",
          [] { return load_plugin("/nonexistent/ember/libember-nothing.so"); },
          PluginOutcome::NotAPlugin, {"cannot stat", "No such file"}),
      row("load_plugin_text_file",
          [] { return load_plugin(write_file("libember-text.so", "this is not an ELF file\n")); },
          PluginOutcome::NotAPlugin, {"not an ELF file"}),
      row("load_plugin_empty_file", [] { return load_plugin(write_file("libember-empty.so", "")); },
          PluginOutcome::NotAPlugin, {"empty file"}),
      row("load_plugin_directory",
          [] {
            fs::create_directories(scratch() / "libember-dir.so");
            return load_plugin((scratch() / "libember-dir.so").string());
          },
          PluginOutcome::NotAPlugin, {"a directory"}),
  };
}

std::vector<Row> all_rows() {
  std::vector<Row> r = rows();
  for (Row& p : plugin_rows()) r.push_back(std::move(p));
  return r;
}

class BadInput : public ::testing::TestWithParam<Row> {};

TEST_P(BadInput, FailsWithAClearError) {
  const Row& row = GetParam();
  if (row.expect == Expect::kPluginStatus) {
    PluginRecord rec;
    ASSERT_NO_THROW(rec = row.load()) << "load_plugin must report, not throw";
    EXPECT_EQ(outcome_name(rec.outcome), std::string(outcome_name(row.outcome)))
        << "reason: " << rec.reason;
    EXPECT_FALSE(rec.reason.empty());
    for (const std::string& m : row.message)
      EXPECT_NE(rec.reason.find(m), std::string::npos)
          << "reason '" << rec.reason << "' lacks '" << m << "'";
    return;
  }
  try {
    row.call();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(row.op, 0), 0u) << "message does not start with " << row.op << ": " << msg;
    EXPECT_EQ(msg.find("internal error"), std::string::npos) << msg;
    EXPECT_STREQ(kind_name(e.kind()), kind_name(row.kind)) << msg;
    EXPECT_TRUE(is_subclass_of_kind(e, row.kind))
        << typeid(e).name() << " is not the subclass for kind " << kind_name(row.kind) << ": "
        << msg;
    for (const std::string& m : row.message) {
      EXPECT_NE(msg.find(m), std::string::npos) << "message lacks '" << m << "': " << msg;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw " << typeid(e).name() << " instead of ember::Error: " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInput, ::testing::ValuesIn(all_rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

TEST(BadInputCatalogue, HasAtLeast110Rows) {
  EXPECT_GE(all_rows().size(), 110u);
}

TEST(ErrorKinds, CatchIndexErrorByType) {
  try {
    ones({4, 5}).select(1, 5);
    ADD_FAILURE() << "no error thrown";
  } catch (const IndexError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Index);
    EXPECT_NE(std::string(e.what()).find("[select] index 5 out of range"), std::string::npos)
        << e.what();
  }
}

TEST(ErrorKinds, SubclassesAreCaughtAsErrorAndRuntimeError) {
  EXPECT_THROW(sum(ones({2}), {3}), IndexError);
  EXPECT_THROW(sum(ones({2}), {3}), Error);
  EXPECT_THROW(sum(ones({2}), {3}), std::runtime_error);
  EXPECT_THROW(mean(zeros({3}, DType::Int64)), TypeError);
  EXPECT_THROW(empty({-1}), ValueError);
  EXPECT_THROW(empty({int64_t{1} << 45}, DType::Float32), OutOfMemoryError);
  EXPECT_THROW(io::load("/nonexistent/ember/model.safetensors"), IoError);
  EXPECT_THROW(parse_dtype("float128"), ValueError);
}

TEST(ErrorKinds, AnotherKindIsNotCaughtByTheWrongSubclass) {
  bool caught_as_error = false;
  try {
    try {
      empty({-1});
    } catch (const IndexError&) {
      ADD_FAILURE() << "a Value error was caught as IndexError";
    }
  } catch (const Error& e) {
    caught_as_error = true;
    EXPECT_EQ(e.kind(), ErrorKind::Value);
  }
  EXPECT_TRUE(caught_as_error);
}

TEST(ErrorKinds, KindNamePrintsEveryKind) {
  EXPECT_STREQ(kind_name(ErrorKind::Value), "Value");
  EXPECT_STREQ(kind_name(ErrorKind::Type), "Type");
  EXPECT_STREQ(kind_name(ErrorKind::Index), "Index");
  EXPECT_STREQ(kind_name(ErrorKind::NotImplemented), "NotImplemented");
  EXPECT_STREQ(kind_name(ErrorKind::OutOfMemory), "OutOfMemory");
  EXPECT_STREQ(kind_name(ErrorKind::Device), "Device");
  EXPECT_STREQ(kind_name(ErrorKind::Io), "Io");
  EXPECT_STREQ(kind_name(ErrorKind::Plugin), "Plugin");
  EXPECT_STREQ(kind_name(ErrorKind::Internal), "Internal");
  EXPECT_STREQ(kind_name(ErrorKind::Distributed), "Distributed");
  EXPECT_STREQ(kind_name(ErrorKind::Key), "Key");
}

TEST(ErrorKinds, ThrowErrorThrowsTheSubclassOfTheKind) {
  for (ErrorKind k :
       {ErrorKind::Value, ErrorKind::Type, ErrorKind::Index, ErrorKind::NotImplemented,
        ErrorKind::OutOfMemory, ErrorKind::Device, ErrorKind::Io, ErrorKind::Plugin,
        ErrorKind::Internal, ErrorKind::Distributed, ErrorKind::Key}) {
    try {
      throw_error(k, "[test] message");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), k);
      EXPECT_TRUE(is_subclass_of_kind(e, k)) << kind_name(k);
      EXPECT_STREQ(e.what(), "[test] message");
    }
  }
}

TEST(ErrorKinds, PluginStatusesMapToKinds) {
  EXPECT_EQ(status_error_kind(EMBER_ERR_INVALID), ErrorKind::Value);
  EXPECT_EQ(status_error_kind(EMBER_ERR_UNSUPPORTED), ErrorKind::NotImplemented);
  EXPECT_EQ(status_error_kind(EMBER_ERR_OUT_OF_MEMORY), ErrorKind::OutOfMemory);
  EXPECT_EQ(status_error_kind(EMBER_ERR_DEVICE), ErrorKind::Device);
  EXPECT_EQ(status_error_kind(EMBER_ERR_INTERNAL), ErrorKind::Internal);
  EXPECT_EQ(status_error_kind(EMBER_ERR_TIMEOUT), ErrorKind::Distributed);
  EXPECT_EQ(status_error_kind(EMBER_ERR_PEER), ErrorKind::Distributed);
  EXPECT_EQ(status_error_kind(1000), ErrorKind::Internal);  // a code from a newer ABI
}

TEST(ErrorKinds, AssertThrowsInternalError) {
  EXPECT_THROW(EMBER_ASSERT(1 + 1 == 3), InternalError);
}

TEST(ErrorKinds, CheckMacrosPickTheKind) {
  EXPECT_THROW(EMBER_CHECK(false, "[t] {}", 1), ValueError);
  EXPECT_THROW(EMBER_CHECK_TYPE(false, "[t] {}", 1), TypeError);
  EXPECT_THROW(EMBER_CHECK_INDEX(false, "[t] {}", 1), IndexError);
  EXPECT_THROW(EMBER_CHECK_NOT_IMPLEMENTED(false, "[t] {}", 1), NotImplementedError);
  EXPECT_THROW(EMBER_CHECK_OOM(false, "[t] {}", 1), OutOfMemoryError);
  EXPECT_THROW(EMBER_CHECK_DEVICE(false, "[t] {}", 1), DeviceError);
  EXPECT_THROW(EMBER_CHECK_IO(false, "[t] {}", 1), IoError);
  EXPECT_THROW(EMBER_CHECK_PLUGIN(false, "[t] {}", 1), PluginError);
  EXPECT_NO_THROW(EMBER_CHECK_INDEX(true, "[t] {}", 1));
}

}  // namespace
}  // namespace ember
