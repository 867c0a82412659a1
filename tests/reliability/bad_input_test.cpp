// The bad-input catalogue: one row per malformed call across ops, views, autograd, nn, optim,
// data, io and the plugin API. Each row names the call, performs it and states what must come
// back: an ember::Error (never another exception, never a crash) whose message starts with
// "[op]" and shows the observed values, or, for load_plugin, a status with its reason.
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
// ember::Error carries no error code: its kind is its C++ type, and the op it came from is the
// "[op]" prefix of its message. A row therefore asserts (1) that exactly ember::Error escapes
// (std::bad_alloc, std::out_of_range, a crash or no error at all are failures), (2) that the
// message starts with the row's "[op]" and (3) that it contains every expected substring, which
// are chosen to be the observed values (sizes, dims, dtypes) a user needs to fix the call. Rows
// for ember::load_plugin assert its returned status instead: it reports, it does not throw.

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

#define ROW(NAME, OP, BODY, ...)              \
  Row {                                       \
    NAME, [] { BODY; }, Expect::kError, OP, { \
      __VA_ARGS__                             \
    }                                         \
  }

std::vector<Row> rows() {
  return {
      // --- factories, sizes and int64 overflow ----------------------------------------------
      ROW("empty_negative_size", "[empty]", empty({2, -3}), "non-negative", "[2, -3]"),
      ROW("zeros_negative_size", "[empty]", zeros({-1}), "non-negative", "[-1]"),
      ROW("empty_overflow_2p40_squared", "[empty]", empty({kTera, kTera}), "overflows int64",
          "[1099511627776, 1099511627776]"),
      ROW("zeros_int64max_x2", "[empty]", zeros({kMax, 2}), "overflows int64",
          "[9223372036854775807, 2]"),
      ROW("ones_three_factor_overflow", "[empty]", ones({1 << 22, 1 << 22, 1 << 22}),
          "overflows int64"),
      ROW("empty_bytes_overflow", "[empty]", empty({int64_t{1} << 62}, DType::Float64),
          "4611686018427387904 elements of float64", "exceed the addressable size"),
      ROW("empty_2p45_floats_oom", "[allocate]", empty({int64_t{1} << 45}, DType::Float32),
          "out of memory", "140737488355328 bytes"),
      ROW("full_huge_oom", "[allocate]", full({int64_t{1} << 44, 4}, 1.0), "out of memory",
          "281474976710656 bytes"),
      ROW("rand_overflow", "[empty]", rand({kTera, kTera}), "overflows int64"),
      ROW("arange_zero_step", "[arange]", arange(0, 10, 0), "step must be non-zero", "step 0"),
      ROW("arange_wrong_sign", "[arange]", arange(0, 10, -1), "inconsistent signs", "end 10"),
      ROW("arange_huge_count", "[arange]", arange(0.0, 1e30, 1e-30), "1e+60"),
      ROW("linspace_negative_steps", "[linspace]", linspace(0, 1, -2), "-2"),
      ROW("eye_negative", "[eye]", eye(-3), "-3"),
      ROW("randint_empty_range", "[randint]", randint(5, 5, {3}), "low 5 high 5"),
      ROW("from_blob_size_stride_count", "[from_blob]",
          from_blob(nullptr, {2, 2}, {1}, DType::Float32, nullptr), "2 sizes but 1 strides"),

      // --- views ----------------------------------------------------------------------------
      ROW("view_wrong_numel", "[view]", f32({2, 3}).view({4, 2}), "[4, 2]", "6"),
      ROW("view_two_minus_one", "[view]", f32({2, 3}).view({-1, -1}), "-1"),
      ROW("view_non_contiguous", "[view]", f32({2, 3}).t().view({6}), "[3, 2]", "reshape"),
      ROW("view_negative_size", "[view]", f32({2, 3}).view({-2, -3}), "-2"),
      ROW("reshape_wrong_numel", "[reshape]", f32({2, 3}).reshape({7}), "[7]", "6"),
      ROW("reshape_minus_one_ambiguous", "[reshape]", f32({0, 3}).reshape({-1, 0}), "-1"),
      ROW("reshape_to_overflow", "[reshape]", f32({0}).reshape({kTera, kTera, 0, kTera}),
          "overflows"),
      ROW("reshape_overflow_nonempty", "[reshape]", f32({4}).reshape({kTera, kTera}),
          "overflows int64"),
      ROW("transpose_bad_dim", "[transpose]", f32({2, 3}).transpose(0, 2), "dim 2", "2-d"),
      ROW("permute_wrong_count", "[permute]", f32({2, 3, 4}).permute({0, 1}), "[0, 1]", "3"),
      ROW("permute_repeated", "[permute]", f32({2, 3, 4}).permute({0, 1, 1}), "[0, 1, 1]"),
      ROW("permute_out_of_range", "[permute]", f32({2, 3}).permute({0, 5}), "dim 5"),
      ROW("narrow_past_end", "[narrow]", f32({4, 5}).narrow(1, 3, 4), "start 3", "length 4", "5"),
      ROW("narrow_negative_length", "[narrow]", f32({4, 5}).narrow(0, 0, -1), "length -1"),
      ROW("narrow_bad_dim", "[narrow]", f32({4, 5}).narrow(2, 0, 1), "dim 2"),
      ROW("select_out_of_range", "[select]", f32({4, 5}).select(1, 5), "index 5", "5"),
      ROW("select_negative_out_of_range", "[select]", f32({4, 5}).select(0, -5), "index -5"),
      ROW("select_scalar", "[select]", f32({}).select(0, 0), "0-d"),
      ROW("slice_zero_step", "[slice]", f32({4}).slice(0, 0, 4, 0), "step 0"),
      ROW("slice_bad_dim", "[slice]", f32({4}).slice(3, 0, 1), "dim 3"),
      ROW("expand_non_singleton", "[expand]", f32({2, 3}).expand({4, 3}), "[2, 3]", "[4, 3]"),
      ROW("expand_fewer_dims", "[expand]", f32({2, 3}).expand({3}), "[2, 3]", "[3]"),
      ROW("expand_negative_new_dim", "[expand]", f32({3}).expand({-1, 3}), "-1"),
      ROW("expand_to_overflow", "[expand]", f32({1, 1}).expand({kTera, kTera}), "overflows int64"),
      ROW("squeeze_bad_dim", "[squeeze]", f32({2, 1}).squeeze(2), "dim 2"),
      ROW("unsqueeze_bad_dim", "[unsqueeze]", f32({2, 1}).unsqueeze(4), "dim 4"),
      ROW("flatten_start_after_end", "[flatten]", f32({2, 3, 4}).flatten(2, 1), "2", "1"),
      ROW("as_strided_negative_stride", "[as_strided]", f32({4}).as_strided({2}, {-1}), "-1"),
      ROW("as_strided_out_of_storage", "[as_strided]", f32({4}).as_strided({3}, {2}), "storage"),
      ROW("as_strided_size_stride_count", "[as_strided]", f32({4}).as_strided({2, 2}, {1}),
          "[2, 2]", "[1]"),
      ROW("item_many_elements", "[item]", f32({2, 2}).item(), "4 elements"),
      ROW("data_ptr_wrong_dtype", "[data_ptr]", f32({2}).data_ptr<int64_t>(), "int64", "float32"),
      ROW("size_bad_dim", "[size]", f32({2}).size(3), "dim 3"),
      ROW("copy_no_broadcast", "[copy_]", { Tensor t = f32({2, 3}); t.copy_(f32({4})); },
          "[4]", "[2, 3]"),
      ROW("to_undefined", "[to]", Tensor().to(DType::Float64), "undefined"),

      // Found by the op fuzzer (tests/fuzz/corpus/op_fuzz/crash-*).
      ROW("chunk_empty_dim_huge_count", "[chunk]", chunk(f32({0}), kMax), "9223372036854775807",
          "exceed"),
      ROW("split_empty_tensor_huge_dim", "[split]", split(f32({kTera, 0}), 1), "[1099511627776, 0]"),
      ROW("interpolate_huge_size", "[interpolate]", interpolate(f32({1, 1, 2, 2}), {kMax, kMax}, "bilinear"),
          "overflows int64"),
      ROW("as_strided_stride_wraps", "[as_strided]", f32({4}).as_strided({3}, {kMax}), "reach past int64"),

      // --- elementwise ----------------------------------------------------------------------
      ROW("add_broadcast_mismatch", "[add]", add(f32({2, 3}), f32({4})), "[2, 3]", "[4]",
          "size 3 vs 4"),
      ROW("mul_broadcast_mismatch", "[mul]", mul(f32({5, 2}), f32({3, 1, 3})), "[5, 2]",
          "[3, 1, 3]"),
      ROW("add_undefined", "[add]", add(Tensor(), f32({2})), "undefined"),
      ROW("add_inplace_broadcast_grows_out", "[add_]",
          { Tensor a = f32({3}); add_(a, f32({2, 3})); }, "[3]", "[2, 3]"),
      ROW("add_inplace_float_into_int", "[add_]", { Tensor a = i64({3}); add_(a, f32({3})); },
          "float32", "int64"),
      ROW("where_cond_not_bool", "[where]", where(f32({3}), f32({3}), f32({3})), "float32",
          "bool"),
      ROW("where_shape_mismatch", "[where]",
          where(zeros({3}, DType::Bool), f32({2}), f32({3})), "[2]", "[3]"),
      ROW("logical_not_undefined", "[logical_not]", logical_not(Tensor()), "undefined"),
      ROW("gelu_bad_approximate", "[gelu]", gelu(f32({2}), "fast"), "fast"),
      ROW("masked_fill_mask_dtype", "[masked_fill]", masked_fill(f32({3}), f32({3}), 1.0),
          "float32", "bool"),
      ROW("masked_fill_mask_shape", "[masked_fill]",
          masked_fill(f32({3}), zeros({4}, DType::Bool), 1.0), "[4]", "[3]"),

      // --- reductions -----------------------------------------------------------------------
      ROW("sum_bad_dim", "[sum]", sum(f32({2, 3}), {2}), "dim 2", "2-d"),
      ROW("sum_repeated_dim", "[sum]", sum(f32({2, 3}), {1, -1}), "dim 1"),
      ROW("mean_int", "[mean]", mean(i64({3})), "int64"),
      ROW("max_dim_empty", "[max]", max(f32({0, 3}), 0), "0"),
      ROW("max_all_empty", "[max]", max(f32({0})), "zero-size", "[0]"),
      ROW("argmax_bad_dim", "[argmax]", argmax(f32({2, 3}), 5), "dim 5"),
      ROW("var_bad_dim", "[var]", var(f32({2, 3}), {-3}), "dim -3"),
      ROW("cumsum_bad_dim", "[cumsum]", cumsum(f32({2, 3}), 2), "dim 2"),
      ROW("logsumexp_bad_dim", "[logsumexp]", logsumexp(f32({2}), {1}), "dim 1"),
      ROW("softmax_bad_dim", "[softmax]", softmax(f32({2, 3}), 2), "dim 2"),
      ROW("softmax_bool", "[softmax]", softmax(zeros({2, 3}, DType::Bool), 1), "bool"),
      ROW("log_softmax_bad_dim", "[log_softmax]", log_softmax(f32({2, 3}), -3), "dim -3"),

      // --- linear algebra -------------------------------------------------------------------
      ROW("matmul_inner_mismatch", "[matmul]", matmul(f32({2, 3}), f32({4, 5})), "[2, 3]",
          "[4, 5]"),
      ROW("matmul_scalar", "[matmul]", matmul(f32({}), f32({3})), "0-d"),
      ROW("matmul_batch_mismatch", "[matmul]", matmul(f32({2, 2, 3}), f32({3, 3, 4})), "[2, 2, 3]",
          "[3, 3, 4]"),
      ROW("mm_not_2d", "[mm]", mm(f32({2, 3, 4}), f32({4, 5})), "[2, 3, 4]"),
      ROW("mm_mismatch", "[mm]", mm(f32({2, 3}), f32({2, 3})), "[2, 3]"),
      ROW("bmm_batch_mismatch", "[bmm]", bmm(f32({2, 3, 4}), f32({3, 4, 5})), "[2, 3, 4]",
          "[3, 4, 5]"),
      ROW("bmm_not_3d", "[bmm]", bmm(f32({3, 4}), f32({4, 5})), "[3, 4]"),
      ROW("matmul_bool", "[matmul]", matmul(f32({2, 3}), zeros({3, 2}, DType::Bool)), "float32",
          "bool"),
      ROW("linear_in_features", "[linear]", linear(f32({2, 3}), f32({4, 5})), "[2, 3]", "[4, 5]"),
      ROW("linear_bias_shape", "[linear]", linear(f32({2, 3}), f32({4, 3}), f32({5})), "[5]"),

      // --- indexing -------------------------------------------------------------------------
      ROW("index_select_out_of_range", "[index_select]",
          index_select(f32({3, 2}), 0, from_vector<int64_t>({0, 3}, {2}, DType::Int64)),
          "index 3", "3"),
      ROW("index_select_negative_index", "[index_select]",
          index_select(f32({3, 2}), 0, from_vector<int64_t>({-4}, {1}, DType::Int64)), "-4"),
      ROW("index_select_float_index", "[index_select]", index_select(f32({3, 2}), 0, f32({1})),
          "float32"),
      ROW("gather_out_of_range", "[gather]",
          gather(f32({2, 2}), 1, from_vector<int64_t>({0, 2, 1, 0}, {2, 2}, DType::Int64)),
          "index 2"),
      ROW("gather_rank_mismatch", "[gather]", gather(f32({2, 2}), 1, i64({2})), "number of dims 2",
          "got 1 (sizes [2])"),
      ROW("scatter_out_of_range", "[scatter]",
          scatter(f32({3}), 0, from_vector<int64_t>({7}, {1}, DType::Int64), f32({1})), "index 7"),
      ROW("scatter_add_src_small", "[scatter_add]", scatter_add(f32({3}), 0, i64({4}), f32({2})),
          "[4]", "[2]"),
      ROW("cat_empty_list", "[cat]", cat({}), "empty"),
      ROW("cat_shape_mismatch", "[cat]", cat({f32({2, 3}), f32({2, 4})}, 0), "[2, 3]", "[2, 4]"),
      ROW("cat_rank_mismatch", "[cat]", cat({f32({2, 3}), f32({3})}, 0), "[2, 3]", "[3]"),
      ROW("cat_bad_dim", "[cat]", cat({f32({2}), f32({2})}, 1), "dim 1"),
      ROW("stack_shape_mismatch", "[stack]", stack({f32({2}), f32({3})}), "[2]", "[3]"),
      ROW("split_zero_size", "[split]", split(f32({4}), 0), "0"),
      ROW("split_sizes_sum", "[split]", split(f32({4}), {1, 2}, 0), "[1, 2]", "4"),
      ROW("chunk_zero", "[chunk]", chunk(f32({4}), 0), "0"),
      ROW("topk_k_too_large", "[topk]", topk(f32({3}), 4), "k (4)", "size 3"),
      ROW("topk_negative_k", "[topk]", topk(f32({3}), -1), "k (-1)"),
      ROW("sort_bad_dim", "[sort]", sort(f32({3}), 1), "dim 1"),
      ROW("embedding_out_of_range", "[embedding]",
          embedding(f32({4, 2}), from_vector<int64_t>({1, 4}, {2}, DType::Int64)), "index 4",
          "4"),
      ROW("embedding_float_indices", "[embedding]", embedding(f32({4, 2}), f32({2})), "float32"),

      // --- convolution, pooling, normalisation, nn functions --------------------------------
      ROW("conv2d_channel_mismatch", "[conv2d]", conv2d(f32({1, 3, 5, 5}), f32({4, 2, 3, 3})),
          "3", "2"),
      ROW("conv2d_rank", "[conv2d]", conv2d(f32({5, 5}), f32({4, 1, 3, 3})), "[5, 5]"),
      ROW("conv2d_zero_stride", "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({1, 1, 3, 3}), {}, {0, 1}), "stride", "(0, 1)"),
      ROW("conv2d_negative_padding", "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({1, 1, 3, 3}), {}, {1, 1}, {-1, 0}), "padding", "(-1, 0)"),
      ROW("conv2d_kernel_larger_than_input", "[conv2d]",
          conv2d(f32({1, 1, 2, 2}), f32({1, 1, 3, 3})), "3"),
      ROW("conv2d_zero_dilation", "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({1, 1, 3, 3}), {}, {1, 1}, {0, 0}, {0, 0}), "dilation"),
      ROW("conv2d_bad_groups", "[conv2d]",
          conv2d(f32({1, 4, 5, 5}), f32({3, 2, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}, 2), "groups"),
      ROW("conv2d_zero_groups", "[conv2d]",
          conv2d(f32({1, 4, 5, 5}), f32({3, 4, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}, 0), "groups", "got 0"),
      ROW("conv2d_bias_shape", "[conv2d]",
          conv2d(f32({1, 1, 5, 5}), f32({2, 1, 3, 3}), f32({3})), "[3]"),
      ROW("conv_transpose2d_channels", "[conv_transpose2d]",
          conv_transpose2d(f32({1, 3, 4, 4}), f32({2, 1, 3, 3})), "3", "2"),
      ROW("max_pool2d_zero_kernel", "[max_pool2d]", max_pool2d(f32({1, 1, 4, 4}), {0, 2}),
          "kernel_size", "(0, 2)"),
      ROW("max_pool2d_padding_too_big", "[max_pool2d]",
          max_pool2d(f32({1, 1, 4, 4}), {2, 2}, {2, 2}, {2, 2}), "padding"),
      ROW("max_pool2d_rank", "[max_pool2d]", max_pool2d(f32({4, 4}), {2, 2}), "[4, 4]"),
      ROW("avg_pool2d_kernel_too_big", "[avg_pool2d]", avg_pool2d(f32({1, 1, 2, 2}), {3, 3}),
          "3"),
      ROW("avg_pool2d_negative_stride", "[avg_pool2d]",
          avg_pool2d(f32({1, 1, 4, 4}), {2, 2}, {-1, 2}), "stride"),
      ROW("adaptive_avg_pool2d_zero_output", "[adaptive_avg_pool2d]",
          adaptive_avg_pool2d(f32({1, 1, 4, 4}), {0, 2}), "output_size", "(0, 2)"),
      ROW("batch_norm_channels", "[batch_norm]",
          batch_norm(f32({2, 3, 4}), f32({4}), f32({4}), {}, {}, true), "3", "[4]"),
      ROW("layer_norm_shape", "[layer_norm]", layer_norm(f32({2, 3}), {4}), "[4]", "[2, 3]"),
      ROW("group_norm_groups", "[group_norm]", group_norm(f32({2, 6, 4}), 4), "4", "6"),
      ROW("dropout_p_out_of_range", "[dropout]", dropout(f32({3}), 1.5), "1.5"),
      ROW("pad_too_many", "[pad]", pad(f32({3}), {1, 1, 1, 1}), "4 values", "shape [3]"),
      ROW("pad_bad_mode", "[pad]", pad(f32({1, 3}), {1, 1}, "mirror"), "mirror"),
      ROW("pad_reflect_too_wide", "[pad]", pad(f32({1, 1, 3}), {3, 3}, "reflect"), "3"),
      ROW("interpolate_bad_mode", "[interpolate]", interpolate(f32({1, 1, 2, 2}), {4, 4}, "cubic"),
          "cubic"),
      ROW("interpolate_zero_size", "[interpolate]", interpolate(f32({1, 1, 2, 2}), {0, 4}),
          "[0, 4]"),

      // --- losses ---------------------------------------------------------------------------
      ROW("nll_loss_target_out_of_range", "[nll_loss]",
          nll_loss(f32({2, 3}), from_vector<int64_t>({0, 3}, {2}, DType::Int64)), "3"),
      ROW("nll_loss_target_float", "[nll_loss]", nll_loss(f32({2, 3}), f32({2})), "float32"),
      ROW("nll_loss_batch_mismatch", "[nll_loss]", nll_loss(f32({2, 3}), i64({3})), "[3]",
          "[2, 3]"),
      ROW("cross_entropy_batch_mismatch", "[cross_entropy]", cross_entropy(f32({2, 3}), i64({4})),
          "[4]", "[2, 3]"),
      ROW("cross_entropy_bad_smoothing", "[cross_entropy]",
          cross_entropy(f32({2, 3}), i64({2}), {}, -100, Reduction::Mean, 1.5), "1.5"),
      ROW("mse_loss_shape", "[mse_loss]", mse_loss(f32({2, 3}), f32({3, 2})), "[2, 3]", "[3, 2]"),
      ROW("l1_loss_shape", "[l1_loss]", l1_loss(f32({2}), f32({3})), "[2]", "[3]"),
      ROW("bce_shape", "[binary_cross_entropy]", binary_cross_entropy(f32({2}), f32({3})), "[2]",
          "[3]"),

      // --- autograd -------------------------------------------------------------------------
      ROW("backward_non_scalar", "[backward]", { (leaf({2, 3}) * 2.0).backward(); }, "[2, 3]"),
      ROW("backward_no_grad", "[backward]", { f32({}).backward(); }, "does not require grad"),
      ROW("backward_grad_shape", "[backward]", { (leaf({2}) * 2.0).backward(f32({3})); }, "[3]",
          "[2]"),
      ROW("backward_twice", "[autograd]",
          {
            Tensor y = sum(leaf({2}) * leaf({2}));
            y.backward();
            y.backward();
          },
          "second time", "retain_graph"),
      ROW("grad_of_unused_input", "[grad]",
          { autograd::grad({sum(leaf({2}) * 2.0)}, {leaf({2})}); }, "allow_unused"),
      ROW("grad_of_non_requires_grad", "[grad]",
          { autograd::grad({sum(leaf({2}) * 2.0)}, {f32({2})}); }, "does not require grad"),
      ROW("requires_grad_on_int", "[requires_grad_]", { i64({2}).requires_grad_(); }, "int64"),
      ROW("requires_grad_on_non_leaf", "[requires_grad_]",
          { (leaf({2}) * 2.0).requires_grad_(false); }, "leaf"),
      ROW("inplace_on_leaf_requiring_grad", "[mul_]", { Tensor x = leaf({2}); mul_(x, 2.0); },
          "leaf"),
      ROW("modified_saved_tensor", "[autograd]",
          {
            Tensor x = leaf({2});
            Tensor y = x * 1.0;
            Tensor z = sum(y * y);
            mul_(y, 2.0);
            z.backward();
          },
          "modified by an inplace operation", "version 1", "expected version 0"),

      // --- nn modules -----------------------------------------------------------------------
      ROW("Linear_in_features", "[linear]", nn::Linear(4, 2)(f32({3, 5})), "[3, 5]", "[2, 4]"),
      ROW("Linear_zero_features", "[nn.Linear]", nn::Linear(0, 2), "in_features", "0"),
      ROW("Conv2d_channels", "[conv2d]", nn::Conv2d(3, 4, 3)(f32({1, 2, 8, 8})), "[1, 2, 8, 8]"),
      ROW("Conv2d_rank", "[conv2d]", nn::Conv2d(3, 4, 3)(f32({8, 8})), "[8, 8]"),
      ROW("Conv2d_groups", "[nn.Conv2d]", nn::Conv2d(3, 4, 3, {.groups = 2}), "groups", "3"),
      ROW("Conv2d_zero_kernel", "[nn.Conv2d]", nn::Conv2d(3, 4, 0), "kernel_size"),
      ROW("BatchNorm2d_rank", "[nn.BatchNorm2d]", nn::BatchNorm2d(3)(f32({2, 3})), "[2, 3]"),
      ROW("BatchNorm2d_channels", "[batch_norm]", nn::BatchNorm2d(3)(f32({2, 4, 2, 2})), "4",
          "3"),
      ROW("Dropout_p", "[nn.Dropout]", nn::Dropout(-0.1), "-0.1"),
      ROW("Embedding_padding_idx", "[nn.Embedding]", nn::Embedding(4, 2, 9), "9"),
      ROW("load_state_dict_missing_key", "[nn.Linear]",
          {
            nn::Linear m(2, 3);
            StateDict s = m.state_dict();
            s.erase("bias");
            m.load_state_dict(s);
          },
          "missing", "bias"),
      ROW("load_state_dict_unexpected_key", "[nn.Linear]",
          {
            nn::Linear m(2, 3);
            StateDict s = m.state_dict();
            s["extra"] = f32({1});
            m.load_state_dict(s);
          },
          "unexpected", "extra"),
      ROW("load_state_dict_wrong_shape", "[nn.Linear]",
          {
            nn::Linear m(2, 3);
            StateDict s = m.state_dict();
            s["weight"] = f32({2, 3});
            m.load_state_dict(s);
          },
          "size mismatch", "weight", "[2, 3]", "[3, 2]"),
      ROW("Sequential_index", "[nn.Sequential]",
          {
            nn::Sequential s;
            s.push_back(std::make_shared<nn::ReLU>());
            s[3];
          },
          "index 3", "1 modules"),

      // --- optimizers -----------------------------------------------------------------------
      ROW("SGD_negative_lr", "[optim.SGD]", optim::SGD({leaf({2})}, {.lr = -0.1}), "-0.1"),
      ROW("SGD_nesterov_without_momentum", "[optim.SGD]",
          optim::SGD({leaf({2})}, {.lr = 0.1, .nesterov = true}), "nesterov"),
      ROW("SGD_empty_params", "[optim.SGD]", optim::SGD(std::vector<Tensor>{}), "empty"),
      ROW("SGD_int_param", "[optim.SGD]", optim::SGD({i64({2})}), "int64"),
      ROW("SGD_non_leaf_param", "[optim.SGD]", optim::SGD({leaf({2}) * 2.0}), "leaf"),
      ROW("SGD_duplicate_param", "[optim.SGD]",
          {
            Tensor p = leaf({2});
            optim::SGD({p, p});
          },
          "twice"),
      ROW("Adam_bad_beta1", "[optim.Adam]", optim::Adam({leaf({2})}, {.beta1 = 1.0}), "beta1",
          "1"),
      ROW("Adam_bad_beta2", "[optim.Adam]", optim::Adam({leaf({2})}, {.beta2 = -0.5}), "beta2",
          "-0.5"),
      ROW("Adam_negative_eps", "[optim.Adam]", optim::Adam({leaf({2})}, {.eps = -1}), "eps", "-1"),
      ROW("AdamW_negative_weight_decay", "[optim.AdamW]",
          optim::AdamW({leaf({2})}, {.weight_decay = -1}), "weight_decay", "-1"),
      ROW("Adam_nan_lr", "[optim.Adam]", optim::Adam({leaf({2})}, {.lr = std::nan("")}), "nan"),
      ROW("StepLR_zero_step", "[optim.StepLR]",
          {
            optim::SGD opt({leaf({2})});
            optim::StepLR(opt, 0);
          },
          "step_size", "0"),

      // --- data -----------------------------------------------------------------------------
      ROW("DataLoader_batch_size_0", "[data.DataLoader]",
          data::DataLoader(small_dataset(), {.batch_size = 0}), "batch_size", "0"),
      ROW("DataLoader_negative_workers", "[data.DataLoader]",
          data::DataLoader(small_dataset(), {.num_workers = -2}), "num_workers", "-2"),
      ROW("DataLoader_prefetch_0", "[data.DataLoader]",
          data::DataLoader(small_dataset(), {.num_workers = 2, .prefetch_factor = 0}),
          "prefetch_factor", "0"),
      ROW("DataLoader_null_dataset", "[data.DataLoader]", data::DataLoader(nullptr), "null"),
      ROW("TensorDataset_size_mismatch", "[data.TensorDataset]",
          data::TensorDataset({f32({3}), f32({4})}), "3", "4"),
      ROW("MNIST_missing_dir", "[data.", data::MNIST("/nonexistent/ember/mnist", true),
          "/nonexistent/ember/mnist"),
      ROW("read_idx_corrupt", "[data.idx]",
          data::read_idx(write_file("corrupt-idx", std::string("\0\0\x08\x03garbage", 11))),
          "corrupt-idx", "truncated"),
      ROW("read_idx_missing", "[data.idx]", data::read_idx("/nonexistent/ember/x-idx3-ubyte"),
          "cannot open"),

      // --- checkpoints ----------------------------------------------------------------------
      ROW("io_load_nonexistent", "[io.", io::load("/nonexistent/ember/model.safetensors"),
          "/nonexistent/ember/model.safetensors"),
      ROW("io_load_garbage", "[io.", io::load(write_file("garbage.safetensors", "not a model")),
          "garbage.safetensors"),
      ROW("io_load_truncated", "[io.",
          {
            const std::string path = (scratch() / "full.safetensors").string();
            io::save(path, {{"w", f32({4, 4})}});
            std::string bytes(static_cast<size_t>(fs::file_size(path)), '\0');
            std::ifstream(path, std::ios::binary).read(bytes.data(), bytes.size());
            io::load(write_file("cut.safetensors", bytes.substr(0, bytes.size() - 7)));
          },
          "cut.safetensors"),
      ROW("io_load_empty", "[io.", io::load(write_file("empty.safetensors", "")),
          "empty.safetensors"),
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

}  // namespace
}  // namespace ember
