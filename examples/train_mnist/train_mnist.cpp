// train_mnist: a convolutional network written as a user nn::Module, trained on Fashion-MNIST
// with a DataLoader and Adam, evaluated on the test set after every epoch, and saved as a
// safetensors file. Run with --help for the flags.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include <ember/ember.h>

namespace {

using ember::Device;
using ember::Tensor;
namespace nn = ember::nn;

/** Examples per training step. */
constexpr int64_t kBatchSize = 64;
/** Adam's step size. */
constexpr double kLearningRate = 2e-3;
/** Seeds the weights and the shuffling, so runs are repeatable. */
constexpr uint64_t kSeed = 1;

/** A small CNN for 1x28x28 images, in the style of a PyTorch model: each block is a 3x3
 *  convolution, batch norm, ReLU and 2x2 max pooling; then a hidden linear layer and a
 *  classifier whose weight and bias the module registers itself. */
class FashionNet : public nn::Module {
 public:
  /** A network with `num_classes` outputs. */
  explicit FashionNet(int64_t num_classes = 10)
      : Module("FashionNet"),
        conv1_(register_module("conv1", std::make_shared<nn::Conv2d>(1, 16, 3, kSame))),
        bn1_(register_module("bn1", std::make_shared<nn::BatchNorm2d>(16))),
        conv2_(register_module("conv2", std::make_shared<nn::Conv2d>(16, 32, 3, kSame))),
        bn2_(register_module("bn2", std::make_shared<nn::BatchNorm2d>(32))),
        hidden_(register_module("hidden", std::make_shared<nn::Linear>(32 * 7 * 7, 128))),
        head_weight_(register_parameter("head_weight", ember::empty({num_classes, 128}))),
        head_bias_(register_parameter("head_bias", ember::zeros({num_classes}))) {
    // What nn::Linear does for its own weight: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    nn::init::kaiming_uniform_(head_weight_, std::sqrt(5.0));
  }

  /** Logits [N, num_classes] of images [N, 1, 28, 28]. */
  Tensor forward(const Tensor& x) override {
    Tensor y = ember::max_pool2d(ember::relu((*bn1_)((*conv1_)(x))), {2, 2});  // [N, 16, 14, 14]
    y = ember::max_pool2d(ember::relu((*bn2_)((*conv2_)(y))), {2, 2});         // [N, 32, 7, 7]
    y = ember::relu((*hidden_)(y.flatten(1)));                                 // [N, 128]
    return ember::linear(y, head_weight_, head_bias_);                         // [N, classes]
  }

 private:
  /** 3x3 convolutions padded to keep the image size; batch norm supplies the bias. */
  static inline const nn::Conv2dOptions kSame{.padding = 1, .bias = false};

  std::shared_ptr<nn::Conv2d> conv1_;
  std::shared_ptr<nn::BatchNorm2d> bn1_;
  std::shared_ptr<nn::Conv2d> conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn2_;
  std::shared_ptr<nn::Linear> hidden_;
  Tensor& head_weight_;  // [num_classes, 128], a parameter slot of this module
  Tensor& head_bias_;    // [num_classes]
};

/** The command line. */
struct Options {
  int64_t epochs = 1;
  int64_t limit = 0;       // training examples, 0 = all
  int64_t test_limit = 0;  // test examples, 0 = all
  std::optional<std::string> device;
  double min_accuracy = 0;
  std::string out = "train_mnist.safetensors";
};

constexpr const char* kUsage =
    "usage: train_mnist [--epochs N] [--limit N] [--test-limit N] [--device D]\n"
    "                   [--min-accuracy F] [--out FILE]\n"
    "  --epochs N        passes over the training set (default 1)\n"
    "  --limit N         train on the first N examples (default 0: all 60000)\n"
    "  --test-limit N    evaluate on the first N test examples (default 0: all 10000)\n"
    "  --device D        cpu, cuda, ... (default: ember::best_device())\n"
    "  --min-accuracy F  exit with status 1 if the final test accuracy is below F (0..1)\n"
    "  --out FILE        where to save the weights (default train_mnist.safetensors)\n";

/** Thrown for a bad command line; main prints it and exits with status 2. */
struct UsageError : std::exception {
  std::string message;
  /** A usage error saying `m`. */
  explicit UsageError(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
};

/** The number in `text`, or a UsageError naming `flag`. */
double parse_number(const std::string& flag, const std::string& text, bool integer) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0 ||
      (integer && v != std::floor(v))) {
    throw UsageError("[train_mnist] " + flag + " expects a non-negative " +
                     (integer ? "integer" : "number") + ": got '" + text + "' (see --help)");
  }
  return v;
}

/** Parses argv; throws UsageError for unknown flags, missing values and bad numbers. */
Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc)
      throw UsageError("[train_mnist] " + flag + " needs a value: got none (see --help)");
    const std::string value = argv[++i];
    if (flag == "--epochs") {
      o.epochs = static_cast<int64_t>(parse_number(flag, value, true));
    } else if (flag == "--limit") {
      o.limit = static_cast<int64_t>(parse_number(flag, value, true));
    } else if (flag == "--test-limit") {
      o.test_limit = static_cast<int64_t>(parse_number(flag, value, true));
    } else if (flag == "--device") {
      o.device = value;
    } else if (flag == "--min-accuracy") {
      o.min_accuracy = parse_number(flag, value, false);
    } else if (flag == "--out") {
      o.out = value;
    } else {
      throw UsageError("[train_mnist] unknown flag: " + flag + " (see --help)");
    }
  }
  if (o.epochs < 1)
    throw UsageError("[train_mnist] --epochs must be at least 1: got 0 (see --help)");
  return o;
}

/** How the model did on a data set. */
struct Evaluation {
  double loss = 0, accuracy = 0;
};

/** Mean loss and accuracy of `model` over `loader`, in eval mode and without autograd. */
Evaluation evaluate(nn::Module& model, ember::data::DataLoader& loader, Device device) {
  ember::autograd::NoGradGuard no_grad;
  model.eval();  // batch norm uses its running statistics
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  for (const std::vector<Tensor>& batch : loader) {
    const Tensor x = batch[0].to(device), y = batch[1].to(device);
    const Tensor logits = model(x);
    loss_sum += ember::cross_entropy(logits, y, {}, -100, ember::Reduction::Sum).item();
    correct += ember::sum(ember::eq(ember::argmax(logits, 1), y)).item<int64_t>();
    seen += y.size(0);
  }
  model.train();
  if (seen == 0) return {};
  return {loss_sum / static_cast<double>(seen),
          static_cast<double>(correct) / static_cast<double>(seen)};
}

/** Seconds since `t0`. */
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(const Options& o) {
  ember::init();
  ember::manual_seed(kSeed);
  const Device device = o.device ? Device(*o.device) : ember::best_device();
  ember::check_device(device, "train_mnist");

  // data::find_fashion_mnist looks in $EMBER_DATA_DIR, then where the Debian package
  // dataset-fashion-mnist installs the files.
  const std::string root = ember::data::find_fashion_mnist(std::nullopt);
  auto limit = [](int64_t n) { return n > 0 ? std::optional<int64_t>(n) : std::nullopt; };
  auto train_set = std::make_shared<ember::data::MNIST>(root, /*train=*/true, limit(o.limit));
  auto test_set = std::make_shared<ember::data::MNIST>(root, /*train=*/false, limit(o.test_limit));
  ember::data::DataLoader train_loader(train_set,
                                       {.batch_size = kBatchSize, .shuffle = true, .seed = kSeed});
  ember::data::DataLoader test_loader(test_set, {.batch_size = 1000});

  auto model = std::make_shared<FashionNet>();
  model->to(device);
  ember::optim::Adam optimizer(model->parameters(), {.lr = kLearningRate});
  std::printf("FashionNet (%lld parameters) on %s; Fashion-MNIST from %s: %lld train, %lld test\n",
              static_cast<long long>(model->num_parameters()), device.str().c_str(), root.c_str(),
              static_cast<long long>(train_set->size()), static_cast<long long>(test_set->size()));

  Evaluation last;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t seen = 0;
    for (const std::vector<Tensor>& batch : train_loader) {
      const Tensor x = batch[0].to(device), y = batch[1].to(device);
      const Tensor loss = ember::cross_entropy((*model)(x), y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      loss_sum += loss.item() * static_cast<double>(y.size(0));
      seen += y.size(0);
    }
    const double train_seconds = seconds_since(t0);
    last = evaluate(*model, test_loader, device);
    std::printf(
        "epoch %lld/%lld: train loss %.4f, test loss %.4f, test accuracy %.2f%% (%.1f s, %.0f "
        "examples/s)\n",
        static_cast<long long>(epoch), static_cast<long long>(o.epochs),
        seen ? loss_sum / static_cast<double>(seen) : 0.0, last.loss, 100 * last.accuracy,
        train_seconds, static_cast<double>(seen) / train_seconds);
    std::fflush(stdout);
  }

  char accuracy[32];
  std::snprintf(accuracy, sizeof(accuracy), "%.4f", last.accuracy);
  ember::io::save(
      o.out, model->state_dict(),
      {{"model", "FashionNet"}, {"epochs", std::to_string(o.epochs)}, {"test_accuracy", accuracy}});
  std::printf("saved %zu tensors to %s\n", model->state_dict().size(), o.out.c_str());

  if (last.accuracy < o.min_accuracy) {
    std::fprintf(stderr,
                 "[train_mnist] test accuracy is below --min-accuracy: %.4f < %.4f (train longer: "
                 "more --epochs or a larger --limit)\n",
                 last.accuracy, o.min_accuracy);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[train_mnist] %s\n", e.what());
    return 1;
  }
}
