// `ember predict` end to end: a checkpoint of `ember train` classifies the Fashion-MNIST test
// images with the accuracy training measured, PGM images get the model's own top-k classes, a
// torch.save file of the same weights predicts the same, and bad input is a clear error.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <ember/data.h>
#include <ember/ember.h>
#include <ember/graph/onnx.h>
#include <ember/io.h>
#include <ember/models.h>

#include "tests/api/io/torch_files.h"
#include "tests/testing/cli.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

std::pair<int, std::string> run_cli(const std::vector<std::string>& args) {
  return testing::run_cli(EMBER_CLI, args);
}

// The Fashion-MNIST file `stem` (gzipped or not) of the directory ember train reads.
std::string fashion_file(const std::string& stem) {
  const fs::path root = data::find_fashion_mnist(std::nullopt);
  return fs::exists(root / (stem + ".gz")) ? (root / (stem + ".gz")).string()
                                           : (root / stem).string();
}

// The text after `key` up to `end` on the first line holding it, or "" if none does.
std::string figure(const std::string& out, const std::string& key, char end = '%') {
  const size_t at = out.find(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return out.substr(from, out.find(end, from) - from);
}

// Note [Two models trained once]
// One small run of each kind, shared by the tests: an MLP (no convolution, no batch norm) and
// the default CNN (convolutions and batch norms, which channels-last and folding change), each
// 1 epoch on 1024 images, evaluated on the first 300 test images (about 1 s each on one thread).
class Predict : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("predict");
    for (const std::string model : {"mlp", "cnn"}) {
      const auto [status, out] =
          run_cli({"train", "--model", model, "--limit", "1024", "--test-limit", "300", "--epochs",
                   "1", "--threads", "1", "--no-progress", "--out", (dir_->path / model).string()});
      ASSERT_EQ(status, 0) << out;
      trained_[model] = figure(out, "test accuracy ");
      ASSERT_FALSE(trained_[model].empty()) << out;
    }
  }
  static void TearDownTestSuite() { dir_.reset(); }

  static std::string checkpoint(const std::string& model) {
    return (dir_->path / model / (model + ".safetensors")).string();
  }

  static inline std::unique_ptr<ScratchDir> dir_;
  static inline std::map<std::string, std::string> trained_;  // test accuracy, "81.33"
};

// The same 300 images through the same transform give ember train's test accuracy, whatever the
// batch size, memory format or folding.
TEST_F(Predict, AccuracyEqualsTrainsOnTheSameTestImages) {
  const std::string images = fashion_file("t10k-images-idx3-ubyte");
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"--batch-size", "7"},
      {"--channels-last"},
      {"--channels-last", "--batch-size", "300", "--no-fuse"},
  };
  for (const std::string model : {"mlp", "cnn"}) {
    for (const std::vector<std::string>& extra : variants) {
      std::vector<std::string> args = {"predict", checkpoint(model), images, "--limit",
                                       "300",     "--threads",       "1"};
      args.insert(args.end(), extra.begin(), extra.end());
      const auto [status, out] = run_cli(args);
      ASSERT_EQ(status, 0) << out;
      EXPECT_EQ(figure(out, "; accuracy "), trained_[model]) << model << " " << out;
      EXPECT_NE(out.find("300 images; accuracy"), std::string::npos) << out;
      EXPECT_NE(out.find(" images/s, "), std::string::npos) << out;
      EXPECT_NE(out.find(" ms per batch of "), std::string::npos) << out;
      EXPECT_EQ(out.find("[label "), std::string::npos) << "no line per IDX image: " << out;
    }
  }
  // With no inputs: the test set itself, its labels found beside it; --show lists images.
  const auto [status, out] =
      run_cli({"predict", checkpoint("cnn"), "--limit", "300", "--show", "4", "--top-k", "2"});
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(figure(out, "; accuracy "), trained_["cnn"]) << out;
  EXPECT_NE(out.find("2 batch norms folded"), std::string::npos) << out;
  EXPECT_NE(out.find("t10k-images-idx3-ubyte"), std::string::npos) << out;
  EXPECT_NE(out.find("[0]: "), std::string::npos) << out;
  EXPECT_NE(out.find("[3]: "), std::string::npos) << out;
  EXPECT_EQ(out.find("[4]: "), std::string::npos) << out;
}

// Writes `pixels` (28x28 bytes) as a PGM: binary P5 (with a comment in the header if asked) or
// plain P2.
void write_pgm(const fs::path& path, const uint8_t* pixels, bool plain, bool comment) {
  std::ofstream f(path, std::ios::binary);
  f << (plain ? "P2\n" : "P5\n") << (comment ? "# a test image\n" : "") << "28 28\n255\n";
  for (int i = 0; i < 28 * 28; ++i) {
    if (plain) {
      f << static_cast<int>(pixels[i]) << (i % 28 == 27 ? "\n" : " ");
    } else {
      f << static_cast<char>(pixels[i]);
    }
  }
}

// One "NAME: c class (p), c class (p)" line of ember predict, parsed.
struct Ranked {
  std::vector<int64_t> classes;
  std::vector<std::string> names;
  std::vector<double> probs;
};

Ranked ranked(const std::string& out, const std::string& name) {
  Ranked r;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + ": ", 0) != 0) continue;
    static const std::regex entry(R"((\d+) ([^,(]+) \(([0-9.]+)\))");
    for (std::sregex_iterator it(line.begin() + static_cast<long>(name.size()), line.end(), entry),
         end;
         it != end; ++it) {
      r.classes.push_back(std::stoll((*it)[1]));
      r.names.push_back((*it)[2]);
      r.probs.push_back(std::stod((*it)[3]));
    }
  }
  return r;
}

// The top-k lines of PGM images agree with the checkpoint's model run here through the C++ API:
// the same first class and the same probabilities.
TEST_F(Predict, TopKOfPgmImagesIsTheModelsOwn) {
  const Tensor pixels = data::read_idx(fashion_file("t10k-images-idx3-ubyte")).narrow(0, 0, 4);
  const uint8_t* src = pixels.contiguous().data_ptr<uint8_t>();
  std::vector<std::string> files;
  for (int i = 0; i < 4; ++i) {
    files.push_back((dir_->path / ("image" + std::to_string(i) + ".pgm")).string());
    write_pgm(files.back(), src + i * 28 * 28, /*plain=*/i == 3, /*comment=*/i == 1);
  }
  auto model = models::by_name("cnn");
  model->load_state_dict(io::load(checkpoint("cnn")));
  model->eval();
  Tensor probs;
  {
    autograd::InferenceMode inference;
    probs = softmax((*model)(data::to_float_images(pixels)), 1).contiguous();
  }
  std::vector<std::string> args = {"predict", checkpoint("cnn"), "--top-k", "3", "--threads", "1"};
  args.insert(args.end(), files.begin(), files.end());
  const auto [status, out] = run_cli(args);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("4 images; no labels"), std::string::npos) << out;
  for (int i = 0; i < 4; ++i) {
    const float* p = probs.data_ptr<float>() + i * 10;
    const Ranked r = ranked(out, files[static_cast<size_t>(i)]);
    ASSERT_EQ(r.classes.size(), 3u) << out;
    EXPECT_EQ(r.classes[0], std::max_element(p, p + 10) - p) << out;
    std::vector<float> sorted(p, p + 10);
    std::sort(sorted.rbegin(), sorted.rend());
    for (size_t j = 0; j < 3; ++j) {
      // Folding the batch norms changes the probabilities only by float32 rounding.
      EXPECT_NEAR(r.probs[j], p[r.classes[j]], 2e-4) << out;
      EXPECT_NEAR(r.probs[j], sorted[j], 2e-4) << out;
      EXPECT_EQ(r.names[j], data::kFashionMnistClasses[static_cast<size_t>(r.classes[j])]);
    }
  }
}

// A torch.save checkpoint of the MLP's weights, nested as {"epoch": 1, "model_state_dict":
// {...}}, predicts what the safetensors checkpoint does (Note [Which tensors are the weights]).
TEST_F(Predict, TorchSaveCheckpointPredictsTheSame) {
  torch_files::Pickle p;
  p.op('}').str("epoch").integer(1).op('s').str("model_state_dict").op('}');
  std::map<std::string, std::string> storages;
  for (const auto& [name, t] : io::load(checkpoint("mlp"))) {
    const Tensor c = t.contiguous();
    const std::string key = std::to_string(storages.size());
    storages[key].assign(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes()));
    std::vector<int64_t> sizes(c.sizes().begin(), c.sizes().end());
    std::vector<int64_t> strides(sizes.size(), 1);
    for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
    p.str(name).tensor("FloatStorage", key, c.numel(), 0, sizes, strides).op('s');
  }
  p.op('s');
  const std::string pt = (dir_->path / "mlp.pt").string();
  std::ofstream(pt, std::ios::binary) << torch_files::torch_zip(p.done(), storages);

  const std::string images = fashion_file("t10k-images-idx3-ubyte");
  const auto [status, out] =
      run_cli({"predict", pt, images, "--model", "mlp", "--limit", "300", "--threads", "1"});
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(figure(out, "; accuracy "), trained_["mlp"]) << out;
  // Without --model nothing says which architecture the weights are for.
  const auto [status2, out2] = run_cli({"predict", pt, images});
  EXPECT_NE(status2, 0);
  EXPECT_NE(out2.find("[predict] " + pt + ": the checkpoint does not say which model"),
            std::string::npos)
      << out2;
}

// The trained CNN exported to ONNX (batch axis symbolic) predicts what its checkpoint predicts
// when given as the checkpoint or as --model; `ember bench` times it and `ember inspect`
// describes it and finds every loaded device running all of its nodes.
TEST_F(Predict, AnOnnxExportPredictsTheSameAndBenchAndInspectReadIt) {
  std::shared_ptr<nn::Module> cnn = models::by_name("cnn");
  StateDict weights;
  for (const auto& [name, t] : io::load(checkpoint("cnn"))) weights.emplace(name, t);
  cnn->load_state_dict(weights);
  cnn->eval();
  const std::string onnx = (dir_->path / "cnn.onnx").string();
  graph::ExportOptions options;
  options.input_names = {"images"};
  options.dynamic_axes = {{"images", {{0, "batch"}}}};
  graph::export_onnx(*cnn, {zeros({2, 1, 28, 28})}, onnx, options);

  const std::string images = fashion_file("t10k-images-idx3-ubyte");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"predict", onnx, images},
        std::vector<std::string>{"predict", "--model", onnx, images, "--batch-size", "7"}}) {
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--limit", "300", "--threads", "1"});
    const auto [status, out] = run_cli(all);
    ASSERT_EQ(status, 0) << out;
    EXPECT_EQ(figure(out, "; accuracy "), trained_["cnn"]) << out;
    EXPECT_NE(out.find("ONNX graph of "), std::string::npos) << out;
  }

  const auto [bench_status, bench] =
      run_cli({"bench", onnx, "--runs", "3", "--warmup", "1", "--batch", "4", "--threads", "1"});
  ASSERT_EQ(bench_status, 0) << bench;
  EXPECT_NE(bench.find("input images float32 [4, 1, 28, 28]"), std::string::npos) << bench;
  EXPECT_NE(bench.find("3 runs after 1 warm-up: latency ms min "), std::string::npos) << bench;
  EXPECT_NE(bench.find(" samples/s (batch 4)"), std::string::npos) << bench;
  EXPECT_NE(bench.find("memory: peak RSS "), std::string::npos) << bench;
  // The warm-up run records the plan; the timed runs replay it.
  EXPECT_NE(bench.find("(3 runs planned, 1 not)"), std::string::npos) << bench;

  const auto [inspect_status, inspect] = run_cli({"inspect", onnx});
  ASSERT_EQ(inspect_status, 0) << inspect;
  EXPECT_NE(inspect.find("input  images"), std::string::npos) << inspect;
  EXPECT_NE(inspect.find("[batch, 1, 28, 28]"), std::string::npos) << inspect;
  const std::string nodes = figure(inspect, ": ", ' ');  // "<n>" of "<file>: <n> nodes"
  ASSERT_FALSE(nodes.empty()) << inspect;
  EXPECT_TRUE(
      std::regex_search(inspect, std::regex("cpu +runs " + nodes + " of " + nodes + " nodes\\n")))
      << inspect;
  // The reference backend runs every node too, each within float32 rounding of the CPU.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      inspect, m,
      std::regex(
          "reference +runs " + nodes + " of " + nodes +
          " nodes; (the CPU's values exactly|largest difference from the CPU ([0-9.e+-]+))")))
      << inspect;
  if (m[2].matched) {
    EXPECT_LT(std::stod(m[2].str()), 1e-4) << inspect;
  }

  // Bad input: one clear line, status 1.
  const auto [s1, o1] = run_cli({"bench", onnx, "--dim", "batch"});
  EXPECT_TRUE(WIFEXITED(s1) && WEXITSTATUS(s1) == 1) << s1;
  EXPECT_NE(o1.find("ember: [bench] --dim expects NAME=SIZE"), std::string::npos) << o1;
  const auto [s2, o2] = run_cli({"inspect", checkpoint("cnn")});
  EXPECT_TRUE(WIFEXITED(s2) && WEXITSTATUS(s2) == 1) << s2;
  EXPECT_NE(o2.find("ember: [onnx"), std::string::npos) << o2;
  const auto [s3, o3] = run_cli({"predict", onnx, images, "--amp", "bf16"});
  EXPECT_TRUE(WIFEXITED(s3) && WEXITSTATUS(s3) == 1) << s3;
  EXPECT_NE(o3.find("ember: [predict] --amp is for Ember's own models"), std::string::npos) << o3;
}

// Every bad input is one "ember: [predict] ..." line and exit status 1, never a crash.
TEST_F(Predict, BadInputIsAClearError) {
  const fs::path& d = dir_->path;
  const std::string mlp = checkpoint("mlp"), images = fashion_file("t10k-images-idx3-ubyte");
  const auto file = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(d / name, std::ios::binary) << bytes;
    return (d / name).string();
  };
  const auto idx = [](std::vector<uint8_t> dims, size_t payload) {
    std::string s = {0, 0, 8, static_cast<char>(dims.size())};
    for (uint8_t n : dims) s += std::string{0, 0, 0, static_cast<char>(n)};
    return s + std::string(payload, '\x01');
  };
  const std::string big = file("big.pgm", "P5 32 32 255\n" + std::string(32 * 32, '\0'));
  const std::string cut = file("cut.pgm", "P5\n28 28\n255\n" + std::string(100, '\0'));
  const std::string deep = file("deep.pgm", "P5\n28 28\n65535\n" + std::string(2 * 784, '\0'));
  const std::string colour = file("colour.ppm", "P6\n28 28\n255\n" + std::string(3 * 784, '\0'));
  const std::string png = file("photo.png", "\x89PNG\r\n\x1a\n");
  const std::string text = file("notes.txt", "hello");
  const std::string cut_idx = file("cut-images-idx3-ubyte", idx({10, 28, 28}, 1000));
  const std::string idx32 = file("wide-images-idx3-ubyte", idx({2, 32, 32}, 2 * 32 * 32));
  const std::string labels = file("only-labels-idx1-ubyte", idx({5}, 5));
  const std::string gpt = (d / "gpt.safetensors").string();
  io::save(gpt, {{"lm_head.weight", zeros({4, 4})}}, {{"model", "gpt"}, {"task", "charlm"}});
  const std::string bare = (d / "bare.safetensors").string();
  io::save(bare, io::load(mlp));
  StateDict bent = io::load(mlp);
  bent.at("1.weight") = zeros({512, 700});
  const std::string misshaped = (d / "bent.safetensors").string();
  io::save(misshaped, bent, {{"model", "mlp"}});

  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{(d / "nope.safetensors").string(), images}, {"nope.safetensors: cannot open"}},
      {{mlp, (d / "missing.pgm").string()}, {"missing.pgm: cannot open"}},
      {{mlp, big}, {"the image is 32x32", "28x28 greyscale"}},
      {{mlp, cut}, {"truncated PGM", "(784 bytes) but only 100 bytes follow"}},
      {{mlp, deep}, {"largest value 65535", "8 bits per pixel"}},
      {{mlp, colour}, {"a colour PPM image (P6)"}},
      {{mlp, png}, {"a PNG image", "convert it"}},
      {{mlp, text}, {"not an IDX images file or a PGM image", "68 65 6c 6c 6f"}},
      {{mlp, cut_idx}, {"cannot read the images", "truncated"}},
      {{mlp, idx32}, {"the images are 32x32"}},
      {{mlp, labels}, {"a labels file (5 labels), not images"}},
      {{mlp, images, "--labels", fashion_file("train-labels-idx1-ubyte")},
       {"has 60000 labels but", "has 10000 images"}},
      {{gpt, images}, {"a character-level GPT", "ember generate"}},
      {{mlp, images, "--model", "vgg"}, {"unknown model 'vgg'", "lenet, cnn, mlp"}},
      {{bare, images}, {"does not say which model", "pass --model"}},
      {{mlp, images, "--model", "cnn"},
       {"does not hold the weights of a 'cnn' (from --model)",
        "size mismatch for 1.weight: checkpoint [512, 784] vs module [32]"}},
      {{mlp, images, "--model", "vit"},
       {"missing keys [", "conv_proj.weight", "unexpected keys [1.bias"}},
      {{misshaped, images}, {"size mismatch for 1.weight: checkpoint [512, 700]"}},
      {{mlp, images, "--top-k", "11"}, {"--top-k must be in 1..10"}},
      {{mlp, images, "--batch-size", "0"}, {"--batch-size must be at least 1"}},
      {{mlp, images, "--amp", "fp8"}, {"unknown --amp 'fp8'"}},
  };
  for (const auto& [extra, parts] : cases) {
    std::vector<std::string> args = {"predict"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto [status, out] = run_cli(args);
    ASSERT_TRUE(WIFEXITED(status)) << out;
    EXPECT_EQ(WEXITSTATUS(status), 1) << out;
    EXPECT_EQ(out.rfind("ember: [predict] ", 0), 0u) << out;
    for (const std::string& part : parts) EXPECT_NE(out.find(part), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace ember
