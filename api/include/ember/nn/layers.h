// Layers: linear, convolution, normalisation, dropout, embedding, pooling and activations.
#pragma once

#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"
#include "ember/ops/conv.h"
#include "ember/ops/factory.h"
#include "ember/ops/nn.h"

namespace ember::nn {

/** A size given once for both spatial dims (3) or per dim ({3, 5}). */
struct Pair {
  int64_t h, w;
  /** The same value for height and width. */
  Pair(int64_t v) : h(v), w(v) {}  // NOLINT(google-explicit-constructor)
  /** Height and width. */
  Pair(int64_t h_, int64_t w_) : h(h_), w(w_) {}
};

/** A size given once for the three spatial dims (3) or per dim ({3, 5, 5}). */
struct Triple {
  int64_t d, h, w;
  /** The same value for depth, height and width. */
  Triple(int64_t v) : d(v), h(v), w(v) {}  // NOLINT(google-explicit-constructor)
  /** Depth, height and width. */
  Triple(int64_t d_, int64_t h_, int64_t w_) : d(d_), h(h_), w(w_) {}
  /** Equal in every dim. */
  bool operator==(const Triple&) const = default;
};

/** Passed in place of a layer's input size to read it from the first input instead (PyTorch's
 *  Lazy* modules; Note [Lazy layers] in api/nn/layers.cpp): `Linear(kLazy, 10)`. */
struct LazyInput {};
/** The LazyInput value. */
inline constexpr LazyInput kLazy{};

/** An adaptive pooling's output size over N spatial dims: one size for every dim or one per dim,
 *  where an empty entry keeps the input's size in that dim (PyTorch's None). */
template <size_t N>
struct AdaptiveSize {
  std::array<std::optional<int64_t>, N> dims;
  /** The same size in every dim. */
  AdaptiveSize(int64_t v) { dims.fill(v); }  // NOLINT(google-explicit-constructor)
  /** One entry per dim ({5, std::nullopt}: 5, and the input's size in the second dim). */
  AdaptiveSize(std::initializer_list<std::optional<int64_t>> v);
  /** The sizes for input `x`, whose last N dims fill the empty entries (`layer` names the layer
   *  in errors). */
  std::vector<int64_t> resolve(const Tensor& x, const char* layer) const;
  /** As PyTorch prints it: "5" when every dim is 5, else "(5, None)". */
  std::string str() const;
  /** Equal in every entry. */
  bool operator==(const AdaptiveSize&) const = default;
};

/** y = x W^T + b; weight [out, in] and bias [out] from U(-1/sqrt(in), 1/sqrt(in)). */
class Linear : public Module {
 public:
  /** A layer from `in_features` to `out_features`, with a bias unless `bias` is false. */
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  /** A lazy layer (PyTorch's LazyLinear): in_features comes from the first input's last dim. */
  Linear(LazyInput, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  /** Gives a lazy layer its in_features from `input` (Note [Lazy layers]); nothing once it has
   *  them. */
  void initialize_parameters(const Tensor& input);
  std::string extra_repr() const override;
  /** Resets weight and bias to PyTorch's default initialisation. */
  void reset_parameters();
  /** The activation nn::fuse_for_inference merged into it (None: none): forward() then returns
   *  fused_linear (Note [Fused linear layers] in core/ops/nn.cpp). */
  Activation fused_activation() const { return fused_activation_; }
  /** Makes forward() apply `activation` to its output; used by nn::fuse_for_inference. */
  void set_fused_activation(Activation activation) { fused_activation_ = activation; }

  int64_t in_features;  ///< 0 while lazy (Note [Lazy layers])
  const int64_t out_features;
  Tensor& weight;  ///< [out_features, in_features]
  Tensor& bias;    ///< [out_features], undefined without bias

 private:
  Activation fused_activation_ = Activation::None;
};

/** The mark nn::fuse_for_inference leaves on a module it merged into the layer before it (a
 *  BatchNorm, ReLU or GELU): forward() then returns its input, which that layer already
 *  transformed. */
class Foldable {
 public:
  /** True once merged into the layer before it. */
  bool folded() const { return folded_; }
  /** Marks it folded (or not); used by nn::fuse_for_inference. */
  void set_folded(bool folded) { folded_ = folded; }

 private:
  bool folded_ = false;
};

/** How a padding module fills: with zeros, a constant, a reflection, a replication of the
 *  edge, or circularly. */
enum class PadKind { Zero, Constant, Reflection, Replication, Circular };

/** Options of Conv2d and ConvTranspose2d beyond channel counts and kernel size. */
struct Conv2dOptions {
  Pair stride = 1;          ///< step between windows
  Pair padding = 0;         ///< added on each side (by padding_mode)
  Pair dilation = 1;        ///< spacing between kernel taps
  int64_t groups = 1;       ///< channel groups (in and out channels divisible by it)
  bool bias = true;         ///< whether to add a learned bias
  Pair output_padding = 0;  ///< ConvTranspose2d only: extra rows/columns on one side
  /** Conv2d only: 'same' or 'valid' in place of `padding` (PyTorch's string padding). */
  std::optional<ConvPadding> named_padding;
  /** Conv2d only: what the padding holds (Zero, Reflection, Replication or Circular). */
  PadKind padding_mode = PadKind::Zero;
};

/** 2-d convolution over [N, C, H, W]; weight [out, in/groups, kH, kW], PyTorch's init. */
class Conv2d : public Module {
 public:
  /** A convolution from `in_channels` to `out_channels` with a `kernel_size` window. */
  Conv2d(int64_t in_channels, int64_t out_channels, Pair kernel_size, Conv2dOptions options = {});
  /** A lazy convolution (PyTorch's LazyConv2d): in_channels comes from the first input. */
  Conv2d(LazyInput, int64_t out_channels, Pair kernel_size, Conv2dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** Gives a lazy layer its in_channels from `input` (Note [Lazy layers]). */
  void initialize_parameters(const Tensor& input);
  std::string extra_repr() const override;
  /** Resets weight and bias to PyTorch's default initialisation. */
  void reset_parameters();
  /** True once nn::fuse_for_inference merged the ReLU after it: forward() then returns
   *  conv2d_relu (Note [Fused convolution and ReLU] in core/ops/conv.cpp). */
  bool fused_relu() const { return fused_relu_; }
  /** Makes forward() rectify its output (or not); used by nn::fuse_for_inference. */
  void set_fused_relu(bool fused) { fused_relu_ = fused; }
  /** relu(this convolution of x + residual) as one conv2d_add_relu (Note [Convolution, residual
   *  add and ReLU] in core/ops/conv.cpp): how a residual block fused for inference ends. */
  Tensor forward_add_relu(const Tensor& x, const Tensor& residual);

  int64_t in_channels;  ///< 0 while lazy (Note [Lazy layers])
  const int64_t out_channels;
  const Pair kernel_size;
  const Conv2dOptions options;
  Tensor& weight;  ///< [out, in/groups, kH, kW]
  Tensor& bias;    ///< [out], undefined without bias

 private:
  bool fused_relu_ = false;
};

/** Options of Conv1d beyond channel counts and kernel size. */
struct Conv1dOptions {
  int64_t stride = 1;          ///< step between windows
  int64_t padding = 0;         ///< added on each side (by padding_mode)
  int64_t dilation = 1;        ///< spacing between kernel taps
  int64_t groups = 1;          ///< channel groups (in and out channels divisible by it)
  bool bias = true;            ///< whether to add a learned bias
  int64_t output_padding = 0;  ///< ConvTranspose1d only: added to one side of the output
  /** 'same' or 'valid' in place of `padding` (PyTorch's string padding). */
  std::optional<ConvPadding> named_padding;
  /** What the padding holds (Zero, Reflection, Replication or Circular). */
  PadKind padding_mode = PadKind::Zero;
};

/** 1-d convolution over [N, C, L]; weight [out, in/groups, K], PyTorch's init. */
class Conv1d : public Module {
 public:
  /** A convolution from `in_channels` to `out_channels` with a `kernel_size` window. */
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
         Conv1dOptions options = {});
  /** A lazy convolution (PyTorch's LazyConv1d): in_channels comes from the first input. */
  Conv1d(LazyInput, int64_t out_channels, int64_t kernel_size, Conv1dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** Gives a lazy layer its in_channels from `input` (Note [Lazy layers]). */
  void initialize_parameters(const Tensor& input);
  std::string extra_repr() const override;
  /** Resets weight and bias to PyTorch's default initialisation. */
  void reset_parameters();

  int64_t in_channels;  ///< 0 while lazy (Note [Lazy layers])
  const int64_t out_channels, kernel_size;
  const Conv1dOptions options;
  Tensor& weight;  ///< [out, in/groups, K]
  Tensor& bias;    ///< [out], undefined without bias
};

/** Options of Conv3d beyond channel counts and kernel size. */
struct Conv3dOptions {
  Triple stride = 1;          ///< step between windows
  Triple padding = 0;         ///< added on each side (by padding_mode)
  Triple dilation = 1;        ///< spacing between kernel taps
  int64_t groups = 1;         ///< channel groups (in and out channels divisible by it)
  bool bias = true;           ///< whether to add a learned bias
  Triple output_padding = 0;  ///< ConvTranspose3d only: added to one side of each output dim
  /** 'same' or 'valid' in place of `padding` (PyTorch's string padding). */
  std::optional<ConvPadding> named_padding;
  /** What the padding holds (Zero, Reflection, Replication or Circular). */
  PadKind padding_mode = PadKind::Zero;
};

/** 3-d convolution over [N, C, D, H, W]; weight [out, in/groups, kD, kH, kW], PyTorch's init. */
class Conv3d : public Module {
 public:
  /** A convolution from `in_channels` to `out_channels` with a `kernel_size` window. */
  Conv3d(int64_t in_channels, int64_t out_channels, Triple kernel_size, Conv3dOptions options = {});
  /** A lazy convolution (PyTorch's LazyConv3d): in_channels comes from the first input. */
  Conv3d(LazyInput, int64_t out_channels, Triple kernel_size, Conv3dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** Gives a lazy layer its in_channels from `input` (Note [Lazy layers]). */
  void initialize_parameters(const Tensor& input);
  std::string extra_repr() const override;
  /** Resets weight and bias to PyTorch's default initialisation. */
  void reset_parameters();

  int64_t in_channels;  ///< 0 while lazy (Note [Lazy layers])
  const int64_t out_channels;
  const Triple kernel_size;
  const Conv3dOptions options;
  Tensor& weight;  ///< [out, in/groups, kD, kH, kW]
  Tensor& bias;    ///< [out], undefined without bias
};

/** Transposed 2-d convolution; weight [in, out/groups, kH, kW], PyTorch's init. */
class ConvTranspose2d : public Module {
 public:
  /** A transposed convolution from `in_channels` to `out_channels`. */
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, Pair kernel_size,
                  Conv2dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** The output sized `output_size` ([H, W], or with x's leading dims): the output padding
   *  that gives it in place of the options' (PyTorch's forward(input, output_size)). */
  Tensor forward(const Tensor& x, IntList output_size);
  std::string extra_repr() const override;
  /** Resets weight and bias to PyTorch's default initialisation. */
  void reset_parameters();

  const int64_t in_channels, out_channels;
  const Pair kernel_size;
  const Conv2dOptions options;
  Tensor& weight;  ///< [in, out/groups, kH, kW]
  Tensor& bias;    ///< [out], undefined without bias
};

/** Transposed 1-d convolution over [N, C, L]; weight [in, out/groups, K]. */
class ConvTranspose1d : public Module {
 public:
  /** A transposed convolution from `in_channels` to `out_channels`. */
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                  Conv1dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** The output of length `output_size` ([L], or with x's leading dims). */
  Tensor forward(const Tensor& x, IntList output_size);
  std::string extra_repr() const override;
  /** Resets weight and bias to PyTorch's default initialisation. */
  void reset_parameters();

  const int64_t in_channels, out_channels, kernel_size;
  const Conv1dOptions options;
  Tensor& weight;  ///< [in, out/groups, K]
  Tensor& bias;    ///< [out], undefined without bias
};

/** Transposed 3-d convolution over [N, C, D, H, W]; weight [in, out/groups, kD, kH, kW]. */
class ConvTranspose3d : public Module {
 public:
  /** A transposed convolution from `in_channels` to `out_channels`. */
  ConvTranspose3d(int64_t in_channels, int64_t out_channels, Triple kernel_size,
                  Conv3dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** The output sized `output_size` ([D, H, W], or with x's leading dims). */
  Tensor forward(const Tensor& x, IntList output_size);
  std::string extra_repr() const override;
  /** Resets weight and bias to PyTorch's default initialisation. */
  void reset_parameters();

  const int64_t in_channels, out_channels;
  const Triple kernel_size;
  const Conv3dOptions options;
  Tensor& weight;  ///< [in, out/groups, kD, kH, kW]
  Tensor& bias;    ///< [out], undefined without bias
};

/** Options of the batch and instance norm layers (the batch norms' defaults). */
struct BatchNormOptions {
  double eps = 1e-5;  ///< added to the variance
  /** Running-statistics update rate; none: the cumulative average (1 / batches seen). */
  std::optional<double> momentum = 0.1;
  bool affine = true;               ///< learn weight and bias
  bool track_running_stats = true;  ///< keep running mean/var (used in eval)
  bool bias = true;                 ///< with affine: learn the bias too
};

/** What the batch and instance norms share (PyTorch's _NormBase): per-channel affine parameters
 *  and running statistics, made and printed alike. */
class NormBase : public Module {
 public:
  /** `num_features` channels with the parameters and statistics `options` asks for. */
  NormBase(std::string type_name, int64_t num_features, BatchNormOptions options);
  std::string extra_repr() const override;

  const int64_t num_features;
  const BatchNormOptions options;
  Tensor& weight;               ///< [C] (ones), undefined unless affine
  Tensor& bias;                 ///< [C] (zeros), undefined unless affine and bias
  Tensor& running_mean;         ///< [C], undefined unless tracking
  Tensor& running_var;          ///< [C], undefined unless tracking
  Tensor& num_batches_tracked;  ///< int64 scalar, undefined unless tracking

 protected:
  /** This step's running-statistics momentum, counting the step in num_batches_tracked when
   *  training with running statistics (momentum none: 1 / batches seen). */
  double step_momentum();
};

/** Batch normalisation over channel dim 1, shared by BatchNorm1d, 2d and 3d. */
class BatchNorm : public NormBase, public Foldable {
 public:
  /** Normalises `num_features` channels of inputs of rank `ranks` (e.g. {2, 3} or {4}). */
  BatchNorm(std::string type_name, std::vector<int64_t> ranks, int64_t num_features,
            BatchNormOptions options);
  Tensor forward(const Tensor& x) override;
  // folded() (Foldable): it then also refuses to run in training mode.

 private:
  std::vector<int64_t> ranks_;
};

/** Batch normalisation of [N, C] or [N, C, L]. */
class BatchNorm1d : public BatchNorm {
 public:
  /** Normalises `num_features` channels. */
  explicit BatchNorm1d(int64_t num_features, BatchNormOptions options = {})
      : BatchNorm("BatchNorm1d", {2, 3}, num_features, options) {}
};

/** Batch normalisation of [N, C, H, W]. */
class BatchNorm2d : public BatchNorm {
 public:
  /** Normalises `num_features` channels. */
  explicit BatchNorm2d(int64_t num_features, BatchNormOptions options = {})
      : BatchNorm("BatchNorm2d", {4}, num_features, options) {}
};

/** Batch normalisation of [N, C, D, H, W]. */
class BatchNorm3d : public BatchNorm {
 public:
  /** Normalises `num_features` channels. */
  explicit BatchNorm3d(int64_t num_features, BatchNormOptions options = {})
      : BatchNorm("BatchNorm3d", {5}, num_features, options) {}
};

/** The instance norms' defaults, PyTorch's: no affine parameters, no running statistics. */
inline constexpr BatchNormOptions kInstanceNormDefaults{.affine = false,
                                                        .track_running_stats = false};

/** Instance normalisation: each sample's channels over their spatial dims (Note [Instance norm
 *  as batch norm over N C channels] in core/ops/norm.cpp); InstanceNorm1d, 2d and 3d are this
 *  with 1, 2 or 3 spatial dims, batched or not. */
class InstanceNorm : public NormBase {
 public:
  /** Normalises `num_features` channels of inputs with `spatial_dims` spatial dims. */
  InstanceNorm(std::string type_name, int64_t spatial_dims, int64_t num_features,
               BatchNormOptions options);
  Tensor forward(const Tensor& x) override;

 private:
  int64_t spatial_dims_;
};

/** Instance normalisation of [N, C, L] or [C, L]. */
class InstanceNorm1d : public InstanceNorm {
 public:
  /** Normalises `num_features` channels. */
  explicit InstanceNorm1d(int64_t num_features, BatchNormOptions options = kInstanceNormDefaults)
      : InstanceNorm("InstanceNorm1d", 1, num_features, options) {}
};

/** Instance normalisation of [N, C, H, W] or [C, H, W]. */
class InstanceNorm2d : public InstanceNorm {
 public:
  /** Normalises `num_features` channels. */
  explicit InstanceNorm2d(int64_t num_features, BatchNormOptions options = kInstanceNormDefaults)
      : InstanceNorm("InstanceNorm2d", 2, num_features, options) {}
};

/** Instance normalisation of [N, C, D, H, W] or [C, D, H, W]. */
class InstanceNorm3d : public InstanceNorm {
 public:
  /** Normalises `num_features` channels. */
  explicit InstanceNorm3d(int64_t num_features, BatchNormOptions options = kInstanceNormDefaults)
      : InstanceNorm("InstanceNorm3d", 3, num_features, options) {}
};

/** Root-mean-square normalisation over the trailing `normalized_shape` (rms_norm). */
class RMSNorm : public Module {
 public:
  /** Normalises over the trailing dims `normalized_shape`; no eps: the input dtype's epsilon. */
  explicit RMSNorm(std::vector<int64_t> normalized_shape, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const std::vector<int64_t> normalized_shape;
  const std::optional<double> eps;
  Tensor& weight;  ///< normalized_shape (ones), undefined without affine
};

/** Layer normalisation over the trailing `normalized_shape`. */
class LayerNorm : public Module {
 public:
  /** Normalises over the trailing dims `normalized_shape`, with elementwise affine (its bias
   *  unless `bias` is false). */
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const std::vector<int64_t> normalized_shape;
  const double eps;
  Tensor& weight;  ///< normalized_shape (ones), undefined without affine
  Tensor& bias;    ///< normalized_shape (zeros), undefined without affine
};

/** Group normalisation of [N, C, ...] in `num_groups` groups. */
class GroupNorm : public Module {
 public:
  /** Normalises `num_channels` channels in `num_groups` groups; affine learns a per-channel
   *  weight and (unless `bias` is false) bias. */
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true,
            bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t num_groups, num_channels;
  const double eps;
  Tensor& weight;  ///< [C] (ones), undefined without affine
  Tensor& bias;    ///< [C] (zeros), undefined without affine
};

/** local_response_norm across channels with fixed size, alpha, beta and k. */
class LocalResponseNorm : public Module {
 public:
  /** Normalises over `size` neighbouring channels. */
  explicit LocalResponseNorm(int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t size;
  const double alpha, beta, k;
};

/** x1^T A x2 + b for each output feature (bilinear). */
class Bilinear : public Module {
 public:
  /** A layer from `in1_features` and `in2_features` to `out_features`, with a bias unless
   *  `bias` is false; weights uniform in +-1/sqrt(in1_features), as PyTorch's. */
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  /** The layer's output for inputs x1 [..., in1] and x2 [..., in2]. */
  Tensor forward(const Tensor& x1, const Tensor& x2);
  std::string extra_repr() const override;
  /** Redraws weight and bias as the constructor did. */
  void reset_parameters();

  const int64_t in1_features, in2_features, out_features;
  Tensor& weight;  ///< [out, in1, in2]
  Tensor& bias;    ///< [out], undefined without bias
};

/** Zeroes elements with probability p in training (scaling the rest); identity in eval. */
class Dropout : public Module {
 public:
  /** Dropout with probability `p`. */
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double p;
};

/** Zeroes whole channels with probability p in training (scaling the rest); identity in eval.
 *  Dropout1d, Dropout2d and Dropout3d are this with 1, 2 or 3 spatial dims. */
class FeatureDropout : public Module {
 public:
  /** Channel dropout with probability `p` over inputs of `spatial_dims` spatial dims. */
  FeatureDropout(int64_t spatial_dims, double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double p;
  const int64_t spatial_dims;
};

/** Channel dropout of [N, C, L] or [C, L] inputs (torch.nn.Dropout1d). */
class Dropout1d : public FeatureDropout {
 public:
  /** Channel dropout with probability `p`. */
  explicit Dropout1d(double p = 0.5) : FeatureDropout(1, p) {}
};

/** Channel dropout of [N, C, H, W] or [C, H, W] inputs (torch.nn.Dropout2d). */
class Dropout2d : public FeatureDropout {
 public:
  /** Channel dropout with probability `p`. */
  explicit Dropout2d(double p = 0.5) : FeatureDropout(2, p) {}
};

/** Channel dropout of [N, C, D, H, W] or [C, D, H, W] inputs (torch.nn.Dropout3d). */
class Dropout3d : public FeatureDropout {
 public:
  /** Channel dropout with probability `p`. */
  explicit Dropout3d(double p = 0.5) : FeatureDropout(3, p) {}
};

/** A lookup table of `num_embeddings` vectors of size `embedding_dim`, from N(0, 1). */
class Embedding : public Module {
 public:
  /** A table; the row at `padding_idx` (if any) starts at zero and gets no gradient; rows
   *  looked up with a norm above `max_norm` (p-norm `norm_type`) are rescaled in place to it. */
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = {},
            std::optional<double> max_norm = {}, double norm_type = 2.0,
            bool scale_grad_by_freq = false);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;

  const int64_t num_embeddings, embedding_dim;
  const std::optional<int64_t> padding_idx;
  const std::optional<double> max_norm;
  const double norm_type;
  const bool scale_grad_by_freq;  ///< gradients divided by each row's count in the batch
  Tensor& weight;                 ///< [num_embeddings, embedding_dim]
};

/** Bags of rows of a lookup table reduced by sum, mean or max (PyTorch's nn.EmbeddingBag); the
 *  table is N(0, 1), its padding_idx row zero. */
class EmbeddingBag : public Module {
 public:
  /** A table of `num_embeddings` vectors of size `embedding_dim`; `mode` is "sum", "mean" or
   *  "max"; rows at `padding_idx` are left out of every bag. */
  EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, std::optional<double> max_norm = {},
               double norm_type = 2.0, std::string mode = "mean", bool include_last_offset = false,
               std::optional<int64_t> padding_idx = {});
  /** The bags of 2-d indices [bags, n], one per row. */
  Tensor forward(const Tensor& indices) override;
  /** The bags of 1-d indices starting at `offsets` (or of 2-d indices without), rows scaled by
   *  `per_sample_weights` (mode "sum"). */
  Tensor forward(const Tensor& indices, const Tensor& offsets,
                 const Tensor& per_sample_weights = {});
  /** forward(indices, offsets, per_sample_weights). */
  Tensor operator()(const Tensor& indices, const Tensor& offsets,
                    const Tensor& per_sample_weights = {}) {
    return forward(indices, offsets, per_sample_weights);
  }
  using Module::operator();
  std::string extra_repr() const override;

  const int64_t num_embeddings, embedding_dim;
  const std::optional<double> max_norm;
  const double norm_type;
  const std::string mode;
  const bool include_last_offset;
  const std::optional<int64_t> padding_idx;
  Tensor& weight;  ///< [num_embeddings, embedding_dim]
};

/** Options of the pooling layers, one value per spatial dim in `Size` (Pair or Triple). */
template <class Size>
struct PoolOptions {
  std::optional<Size> stride;               ///< defaults to the kernel size
  Size padding = 0;                         ///< implicit padding on each side
  Size dilation = 1;                        ///< max pooling only
  bool ceil_mode = false;                   ///< round the output size up
  bool count_include_pad = true;            ///< average pooling only: divide by the padded window
  std::optional<int64_t> divisor_override;  ///< average pooling only: every window's divisor
};
/** Options of the 2-d pooling layers. */
using Pool2dOptions = PoolOptions<Pair>;
/** Options of the 3-d pooling layers (Note [3-d pooling as two passes]). */
using Pool3dOptions = PoolOptions<Triple>;

/** Max pooling over [N, C, H, W]. */
class MaxPool2d : public Module {
 public:
  /** Pools `kernel_size` windows. */
  explicit MaxPool2d(Pair kernel_size, Pool2dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** The pooled values and where each came from (PyTorch's return_indices: flat positions in
   *  each input plane). */
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;

  const Pair kernel_size;
  const Pool2dOptions options;
};

/** Average pooling over [N, C, H, W]. */
class AvgPool2d : public Module {
 public:
  /** Pools `kernel_size` windows. */
  explicit AvgPool2d(Pair kernel_size, Pool2dOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const Pair kernel_size;
  const Pool2dOptions options;
};

/** Average pooling to a fixed output size. */
class AdaptiveAvgPool2d : public Module {
 public:
  /** Pools to `output_size`. */
  explicit AdaptiveAvgPool2d(AdaptiveSize<2> output_size);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const AdaptiveSize<2> output_size;
};

/** Max pooling to a fixed output size (window i of in spans [floor(i in / out), ceil((i+1) in /
 *  out))). */
class AdaptiveMaxPool2d : public Module {
 public:
  /** Pools to `output_size`. */
  explicit AdaptiveMaxPool2d(AdaptiveSize<2> output_size);
  Tensor forward(const Tensor& x) override;
  /** The pooled values and where each came from (PyTorch's return_indices: flat positions in
   *  each input plane or volume, the first maximum of each window). */
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;

  const AdaptiveSize<2> output_size;
};

/** The options of the 1-d poolings (Note [1-d pooling is 2-d pooling of height 1]). */
struct Pool1dOptions {
  std::optional<int64_t> stride;  ///< defaults to the kernel size
  int64_t padding = 0;            ///< implicit padding on each side
  int64_t dilation = 1;           ///< MaxPool1d only
  bool ceil_mode = false;         ///< round the output size up
  bool count_include_pad = true;  ///< AvgPool1d only: divide by the padded window size
};

/** Max pooling over [N, C, L]. */
class MaxPool1d : public Module {
 public:
  /** Pools `kernel_size` windows. */
  explicit MaxPool1d(int64_t kernel_size, Pool1dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** The pooled values and where each came from (PyTorch's return_indices: flat positions in
   *  each input plane). */
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;

  const int64_t kernel_size;
  const Pool1dOptions options;
};

/** Average pooling over [N, C, L]. */
class AvgPool1d : public Module {
 public:
  /** Pools `kernel_size` windows. */
  explicit AvgPool1d(int64_t kernel_size, Pool1dOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t kernel_size;
  const Pool1dOptions options;
};

/** Average pooling over [N, C, L] to a fixed length. */
class AdaptiveAvgPool1d : public Module {
 public:
  /** Pools to `output_size`. */
  explicit AdaptiveAvgPool1d(int64_t output_size);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t output_size;
};

/** Max pooling over [N, C, L] to a fixed length. */
class AdaptiveMaxPool1d : public Module {
 public:
  /** Pools to `output_size`. */
  explicit AdaptiveMaxPool1d(int64_t output_size);
  Tensor forward(const Tensor& x) override;
  /** The pooled values and where each came from (PyTorch's return_indices: flat positions in
   *  each input plane or volume, the first maximum of each window). */
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;

  const int64_t output_size;
};

/** Max pooling over [N, C, D, H, W]. */
class MaxPool3d : public Module {
 public:
  /** Pools `kernel_size` windows. */
  explicit MaxPool3d(Triple kernel_size, Pool3dOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** The pooled values and where each came from (PyTorch's return_indices: flat positions in
   *  each input plane). */
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;

  const Triple kernel_size;
  const Pool3dOptions options;
};

/** Average pooling over [N, C, D, H, W]. */
class AvgPool3d : public Module {
 public:
  /** Pools `kernel_size` windows. */
  explicit AvgPool3d(Triple kernel_size, Pool3dOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const Triple kernel_size;
  const Pool3dOptions options;
};

/** Average pooling over [N, C, D, H, W] to a fixed output size. */
class AdaptiveAvgPool3d : public Module {
 public:
  /** Pools to `output_size`. */
  explicit AdaptiveAvgPool3d(AdaptiveSize<3> output_size);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const AdaptiveSize<3> output_size;
};

/** Max pooling over [N, C, D, H, W] to a fixed output size. */
class AdaptiveMaxPool3d : public Module {
 public:
  /** Pools to `output_size`. */
  explicit AdaptiveMaxPool3d(AdaptiveSize<3> output_size);
  Tensor forward(const Tensor& x) override;
  /** The pooled values and where each came from (PyTorch's return_indices: flat positions in
   *  each input plane or volume, the first maximum of each window). */
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;

  const AdaptiveSize<3> output_size;
};

/** Max unpooling over 1, 2 or 3 spatial dims (max_unpool1d/2d/3d): the values of a max pooling
 *  back at the positions its indices name, zeros elsewhere; MaxUnpool1d, 2d and 3d are this. */
class MaxUnpool : public Module {
 public:
  /** Undoes a max pooling with these window sizes (one value, or one per spatial dim; an empty
   *  stride means kernel_size). */
  MaxUnpool(std::string type_name, int64_t spatial_dims, std::vector<int64_t> kernel_size,
            std::vector<int64_t> stride, std::vector<int64_t> padding);
  /** x [N, C, *] at `indices` (as the max pooling returned them), sized `output_size` (spatial
   *  sizes, or with x's leading dims; empty: the pooling's input size). */
  Tensor forward(const Tensor& x, const Tensor& indices, IntList output_size = {});
  std::string extra_repr() const override;

  const std::vector<int64_t> kernel_size, stride, padding;

 private:
  int64_t spatial_dims_;
};

/** Max unpooling over [N, C, L]. */
class MaxUnpool1d : public MaxUnpool {
 public:
  /** The general form: type name, spatial dims and the sizes per dim. */
  using MaxUnpool::MaxUnpool;
  /** Undoes max_pool1d(kernel_size, stride (default kernel_size), padding). */
  explicit MaxUnpool1d(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                       int64_t padding = 0)
      : MaxUnpool("MaxUnpool1d", 1, {kernel_size}, {stride.value_or(kernel_size)}, {padding}) {}
};

/** Max unpooling over [N, C, H, W]. */
class MaxUnpool2d : public MaxUnpool {
 public:
  /** The general form: type name, spatial dims and the sizes per dim. */
  using MaxUnpool::MaxUnpool;
  /** Undoes max_pool2d(kernel_size, stride (default kernel_size), padding). */
  explicit MaxUnpool2d(Pair kernel_size, std::optional<Pair> stride = std::nullopt,
                       Pair padding = 0)
      : MaxUnpool("MaxUnpool2d", 2, {kernel_size.h, kernel_size.w},
                  {stride.value_or(kernel_size).h, stride.value_or(kernel_size).w},
                  {padding.h, padding.w}) {}
};

/** Max unpooling over [N, C, D, H, W]. */
class MaxUnpool3d : public MaxUnpool {
 public:
  /** The general form: type name, spatial dims and the sizes per dim. */
  using MaxUnpool::MaxUnpool;
  /** Undoes max_pool3d(kernel_size, stride (default kernel_size), padding). */
  explicit MaxUnpool3d(Triple kernel_size, std::optional<Triple> stride = std::nullopt,
                       Triple padding = 0)
      : MaxUnpool("MaxUnpool3d", 3, {kernel_size.d, kernel_size.h, kernel_size.w},
                  {stride.value_or(kernel_size).d, stride.value_or(kernel_size).h,
                   stride.value_or(kernel_size).w},
                  {padding.d, padding.h, padding.w}) {}
};

/** Power-average pooling over 1, 2 or 3 spatial dims (lp_pool1d/2d/3d); LPPool1d, 2d and 3d are
 *  this. */
class LPPool : public Module {
 public:
  /** Pools windows of `kernel_size` (one value or one per dim; an empty stride means
   *  kernel_size) as (sum of x^norm_type)^(1/norm_type). */
  LPPool(std::string type_name, int64_t spatial_dims, double norm_type,
         std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
         bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double norm_type;
  const std::vector<int64_t> kernel_size, stride;
  const bool ceil_mode;

 private:
  int64_t spatial_dims_;
};

/** Power-average pooling over [N, C, L]. */
class LPPool1d : public LPPool {
 public:
  /** The general form: type name, spatial dims, norm_type and the sizes per dim. */
  using LPPool::LPPool;
  /** Pools `kernel_size` windows with power norm_type. */
  LPPool1d(double norm_type, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
           bool ceil_mode = false)
      : LPPool("LPPool1d", 1, norm_type, {kernel_size},
               stride ? std::vector<int64_t>{*stride} : std::vector<int64_t>{}, ceil_mode) {}
};

/** Power-average pooling over [N, C, H, W]. */
class LPPool2d : public LPPool {
 public:
  /** The general form: type name, spatial dims, norm_type and the sizes per dim. */
  using LPPool::LPPool;
  /** Pools `kernel_size` windows with power norm_type. */
  LPPool2d(double norm_type, std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
           bool ceil_mode = false)
      : LPPool("LPPool2d", 2, norm_type, std::move(kernel_size), std::move(stride), ceil_mode) {}
};

/** Power-average pooling over [N, C, D, H, W]. */
class LPPool3d : public LPPool {
 public:
  /** The general form: type name, spatial dims, norm_type and the sizes per dim. */
  using LPPool::LPPool;
  /** Pools `kernel_size` windows with power norm_type. */
  LPPool3d(double norm_type, std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
           bool ceil_mode = false)
      : LPPool("LPPool3d", 3, norm_type, std::move(kernel_size), std::move(stride), ceil_mode) {}
};

/** ShuffleNet's channel shuffle (channel_shuffle). */
class ChannelShuffle : public Module {
 public:
  /** Shuffles the channels across `groups` groups. */
  explicit ChannelShuffle(int64_t groups);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t groups;
};

/** softmax over the channels of [N, C, H, W] or [C, H, W] (dim -3). */
class Softmax2d : public Module {
 public:
  Softmax2d() : Module("Softmax2d") {}
  Tensor forward(const Tensor& x) override;
};

/** Flattens dims start_dim..end_dim into one. */
class Flatten : public Module {
 public:
  /** Flattens dims `start_dim`..`end_dim` (by default all but the batch dim). */
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t start_dim, end_dim;
};

/** pixel_shuffle with a fixed upscale factor. */
class PixelShuffle : public Module {
 public:
  /** [*, C r^2, H, W] into [*, C, H r, W r] with r = upscale_factor. */
  explicit PixelShuffle(int64_t upscale_factor);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t upscale_factor;
};

/** interpolate with fixed options (torch.nn.Upsample): size or scale_factor, mode,
 *  align_corners, recompute_scale_factor. */
class Upsample : public Module {
 public:
  /** The resize `options` describe (their antialias stays off, as in PyTorch's Upsample). */
  explicit Upsample(InterpolateOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const InterpolateOptions options;
};

/** pixel_unshuffle with a fixed downscale factor. */
class PixelUnshuffle : public Module {
 public:
  /** [*, C, H r, W r] into [*, C r^2, H, W] with r = downscale_factor. */
  explicit PixelUnshuffle(int64_t downscale_factor);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t downscale_factor;
};

/** unfold (im2col) with fixed sizes: [N, C, H, W] into columns [N, C kH kW, L]. */
class Unfold : public Module {
 public:
  /** The blocks of `kernel_size` windows with the given dilation, padding and stride. */
  explicit Unfold(Pair kernel_size, Pair dilation = 1, Pair padding = 0, Pair stride = 1);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const Pair kernel_size, dilation, padding, stride;
};

/** fold (col2im) with fixed sizes: columns [N, C kH kW, L] summed into [N, C, output_size]. */
class Fold : public Module {
 public:
  /** Images of `output_size` from blocks of `kernel_size` windows. */
  Fold(Pair output_size, Pair kernel_size, Pair dilation = 1, Pair padding = 0, Pair stride = 1);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const Pair output_size, kernel_size, dilation, padding, stride;
};

/** cosine_similarity(x1, x2, dim, eps) of two inputs (its repr shows no arguments, as PyTorch's).
 */
class CosineSimilarity : public Module {
 public:
  /** The cosine along `dim`, norms clamped at `eps`. */
  explicit CosineSimilarity(int64_t dim = 1, double eps = 1e-8);
  /** The cosine of x1 and x2 (broadcast) along dim. */
  Tensor forward(const Tensor& x1, const Tensor& x2);
  /** forward(x1, x2). */
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  using Module::forward;

  const int64_t dim;
  const double eps;
};

/** pairwise_distance(x1, x2, p, eps, keepdim) of two inputs (a repr without arguments). */
class PairwiseDistance : public Module {
 public:
  /** The p-norm distance over the last dim, with eps added to the difference. */
  explicit PairwiseDistance(double p = 2.0, double eps = 1e-6, bool keepdim = false);
  /** The distance between x1 and x2 (broadcast) over the last dim. */
  Tensor forward(const Tensor& x1, const Tensor& x2);
  /** forward(x1, x2). */
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  using Module::forward;

  const double norm;
  const double eps;
  const bool keepdim;
};

/** pad() as a layer, the base of ZeroPad2d, ConstantPad1d, ReflectionPad2d and the rest. */
class Pad : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const PadKind kind;
  const Shape padding;  ///< (left, right[, top, bottom[, front, back]])
  const double value;   ///< what Zero and Constant fill with

 protected:
  /** Padding of `dims` dims; one value pads every side of each by it, as PyTorch's int. */
  Pad(PadKind kind, int64_t dims, Shape padding, double value);
};

/** PyTorch's padding module of kind K over D dims (ReflectionPad2d is PadNd<Reflection, 2>). */
template <PadKind K, int D>
class PadNd : public Pad {
 public:
  /** Pads by `padding` (one value for every side), filling with `value` where K is Constant. */
  explicit PadNd(Shape padding, double value = 0.0) : Pad(K, D, std::move(padding), value) {}
};

/** Returns its input. */
class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};

/** An elementwise activation that may write its result into its input (torch.nn's
 *  `inplace=True`: the input tensor itself becomes the output, through the core's
 *  apply_inplace, with its dtype and autograd rules). */
class PointwiseActivation : public Module {
 public:
  /** Whether forward() writes into its input. */
  const bool inplace;

 protected:
  /** An activation named `type_name`, in place or not. */
  PointwiseActivation(std::string type_name, bool inplace)
      : Module(std::move(type_name)), inplace(inplace) {}
  /** fn(x), written into x when inplace (the op is named `op` in errors). */
  Tensor apply(const Tensor& x, const char* op,
               Tensor (*fn)(const Tensor&, const PointwiseActivation&)) const;
  /** `rest` with ", inplace=True" appended when inplace (PyTorch's repr). */
  std::string with_inplace(std::string rest) const;
};

/** max(x, 0); passes its input through once folded() into a Conv2d or Linear. */
class ReLU : public PointwiseActivation, public Foldable {
 public:
  /** ReLU, writing into its input if `inplace`. */
  explicit ReLU(bool inplace = false) : PointwiseActivation("ReLU", inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
};

/** x * Phi(x), or its tanh approximation with approximate = "tanh"; passes its input through
 *  once folded() into a Linear. */
class GELU : public Module, public Foldable {
 public:
  /** GELU, exact ("none") or "tanh". */
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const std::string approximate;
};

/** relu6(x + 3) / 6. */
class Hardsigmoid : public PointwiseActivation {
 public:
  /** Hardsigmoid, writing into its input if `inplace`. */
  explicit Hardsigmoid(bool inplace = false) : PointwiseActivation("Hardsigmoid", inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
};

/** x * relu6(x + 3) / 6. */
class Hardswish : public PointwiseActivation {
 public:
  /** Hardswish, writing into its input if `inplace`. */
  explicit Hardswish(bool inplace = false) : PointwiseActivation("Hardswish", inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
};

/** x * sigmoid(x). */
class SiLU : public PointwiseActivation {
 public:
  /** SiLU, writing into its input if `inplace`. */
  explicit SiLU(bool inplace = false) : PointwiseActivation("SiLU", inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
};

/** x where x > 0, else negative_slope * x. */
class LeakyReLU : public PointwiseActivation {
 public:
  /** LeakyReLU with the given slope for negative inputs. */
  explicit LeakyReLU(double negative_slope = 0.01, bool inplace = false)
      : PointwiseActivation("LeakyReLU", inplace), negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double negative_slope;
};

/** x where x > 0, else alpha * (exp(x) - 1). */
class ELU : public PointwiseActivation {
 public:
  /** ELU with the given alpha. */
  explicit ELU(double alpha = 1.0, bool inplace = false)
      : PointwiseActivation("ELU", inplace), alpha(alpha) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double alpha;
};

/** The self-normalising ELU. */
class SELU : public PointwiseActivation {
 public:
  /** SELU, writing into its input if `inplace`. */
  explicit SELU(bool inplace = false) : PointwiseActivation("SELU", inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
};

/** max(0, x) + min(0, alpha * (exp(x / alpha) - 1)). */
class CELU : public PointwiseActivation {
 public:
  /** CELU with the given alpha. */
  explicit CELU(double alpha = 1.0, bool inplace = false)
      : PointwiseActivation("CELU", inplace), alpha(alpha) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double alpha;
};

/** x clamped to [min_val, max_val]. */
class Hardtanh : public PointwiseActivation {
 public:
  /** Hardtanh with the given bounds. */
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0, bool inplace = false)
      : PointwiseActivation("Hardtanh", inplace), min_val(min_val), max_val(max_val) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double min_val, max_val;
};

/** min(max(x, 0), 6). */
class ReLU6 : public PointwiseActivation {
 public:
  /** ReLU6, writing into its input if `inplace`. */
  explicit ReLU6(bool inplace = false) : PointwiseActivation("ReLU6", inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
};

/** log(sigmoid(x)). */
class LogSigmoid : public Module {
 public:
  LogSigmoid() : Module("LogSigmoid") {}
  Tensor forward(const Tensor& x) override;
};

/** x * tanh(softplus(x)). */
class Mish : public PointwiseActivation {
 public:
  /** Mish, writing into its input if `inplace`. */
  explicit Mish(bool inplace = false) : PointwiseActivation("Mish", inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
};

/** log(1 + exp(beta x)) / beta, linear above threshold. */
class Softplus : public Module {
 public:
  /** Softplus with the given beta and threshold. */
  explicit Softplus(double beta = 1.0, double threshold = 20.0)
      : Module("Softplus"), beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double beta, threshold;
};

/** tanh(x). */
class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override;
};

/** 1 / (1 + exp(-x)). */
class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};

/** softmax along `dim`. */
class Softmax : public Module {
 public:
  /** Softmax along `dim`. */
  explicit Softmax(int64_t dim) : Module("Softmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t dim;
};

/** log_softmax along `dim`. */
class LogSoftmax : public Module {
 public:
  /** Log-softmax along `dim`. */
  explicit LogSoftmax(int64_t dim) : Module("LogSoftmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t dim;
};

/** softmin along `dim`. */
class Softmin : public Module {
 public:
  /** Softmin along `dim`. */
  explicit Softmin(int64_t dim) : Module("Softmin"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t dim;
};

/** x where x > threshold, else value. */
class Threshold : public PointwiseActivation {
 public:
  /** Threshold with its cut and replacement, writing into its input if `inplace`. */
  Threshold(double threshold, double value, bool inplace = false)
      : PointwiseActivation("Threshold", inplace), threshold(threshold), value(value) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double threshold, value;
};

/** hardshrink(x, lambd). */
class Hardshrink : public Module {
 public:
  /** Zeroes |x| <= lambd. */
  explicit Hardshrink(double lambd = 0.5) : Module("Hardshrink"), lambd(lambd) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double lambd;
};

/** softshrink(x, lambd). */
class Softshrink : public Module {
 public:
  /** Shrinks x towards 0 by lambd. */
  explicit Softshrink(double lambd = 0.5) : Module("Softshrink"), lambd(lambd) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const double lambd;
};

/** x - tanh(x). */
class Tanhshrink : public Module {
 public:
  Tanhshrink() : Module("Tanhshrink") {}
  Tensor forward(const Tensor& x) override;
};

/** x / (1 + |x|). */
class Softsign : public Module {
 public:
  Softsign() : Module("Softsign") {}
  Tensor forward(const Tensor& x) override;
};

/** The gated linear unit along `dim`. */
class GLU : public Module {
 public:
  /** Halves x along `dim`. */
  explicit GLU(int64_t dim = -1) : Module("GLU"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t dim;
};

/** prelu with a learnt slope: one for all channels or one per channel. */
class PReLU : public Module {
 public:
  /** `num_parameters` slopes (1 or the channels), each starting at `init`. */
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t num_parameters;
  Tensor& weight;  ///< [num_parameters]
};

}  // namespace ember::nn
