// End to end: reference models have the right shapes, a model trains on a Fashion-MNIST
// subset, and its checkpoint round-trips bit-exactly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <ember/data.h>
#include <ember/ember.h>
#include <ember/io.h>
#include <ember/models.h>
#include <ember/optim.h>

#include "tests/testing/cli.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

TEST(Models, ShapesAndParameterCountsMatchTheirDefinitions) {
  const Tensor x = randn({2, 1, 28, 28});
  auto lenet = models::lenet5();
  EXPECT_EQ((*lenet)(x).sizes(), (Shape{2, 10}));
  // conv1 6*1*25+6, conv2 16*6*25+16, fc 400*120+120, 120*84+84, 84*10+10 (as in PyTorch).
  EXPECT_EQ(lenet->num_parameters(), 156 + 2416 + 48120 + 10164 + 850);
  auto cnn = models::fashion_cnn();
  EXPECT_EQ((*cnn)(x).sizes(), (Shape{2, 10}));
  auto mlp = models::by_name("mlp");
  EXPECT_EQ((*mlp)(x).sizes(), (Shape{2, 10}));
  EXPECT_EQ(mlp->num_parameters(), 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
  auto resnet = models::resnet18(10);
  EXPECT_EQ((*resnet)(randn({2, 3, 32, 32})).sizes(), (Shape{2, 10}));
  // torchvision's resnet18 has 11,689,512 parameters with 1000 classes: 512*990 fewer here.
  EXPECT_EQ(resnet->num_parameters(), 11689512 - 512 * 990 - 990);
  // torchvision's resnet50 has 25,557,032 parameters with 1000 classes.
  auto resnet50 = models::resnet50();
  EXPECT_EQ(resnet50->num_parameters(), 25557032);
  auto small50 = models::by_name("resnet50");
  EXPECT_EQ((*small50)(randn({2, 1, 28, 28})).sizes(), (Shape{2, 10}));
  EXPECT_EQ(small50->num_parameters(), 25557032 - 2048 * 990 - 990 - 64 * 2 * 49);
  EXPECT_EQ((*models::by_name("vit"))(x).sizes(), (Shape{2, 10}));
  expect_error([] { models::by_name("vgg"); }, {"[models]", "'vgg'"});
}

// Note [A training run in seconds]
// 8000 training images, 2 epochs of LeNet-5 with the recipe of `ember train --model lenet`
// (SGD, lr 0.01, momentum 0.9, batch 64). Cross entropy starts at ln(10) = 2.30 and stays on
// a plateau for about 100 steps (ReLU LeNet with default init); a model that learns averages
// well below 1.2 over its second epoch (steps 126-250), while a broken gradient, update or data
// pipeline stays near 2.3.
TEST(Training, LeNetLearnsAFashionMnistSubset) {
  manual_seed(0);
  const std::string root = data::find_fashion_mnist(std::nullopt);
  auto train = std::make_shared<data::MNIST>(root, /*train=*/true, 8000);
  data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .seed = 1});
  auto model = models::lenet5();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  double first = 0, last_epoch = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    double sum_loss = 0;
    int64_t n = 0;
    for (const std::vector<Tensor>& batch : loader) {
      const Tensor loss = cross_entropy((*model)(batch[0]), batch[1]);
      opt.zero_grad();
      loss.backward();
      opt.step();
      if (first == 0) first = loss.item();
      sum_loss += loss.item();
      ++n;
    }
    last_epoch = sum_loss / static_cast<double>(n);
  }
  EXPECT_NEAR(first, 2.30, 0.15);
  EXPECT_LT(last_epoch, 1.2);
}

TEST(Training, CheckpointRoundTripsBitExactly) {
  auto a = models::fashion_cnn();
  auto b = models::fashion_cnn();
  a->eval();
  b->eval();
  const auto dir = std::filesystem::temp_directory_path() / "ember-training-test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "cnn.safetensors").string();
  io::save(path, a->state_dict());
  b->load_state_dict(io::load(path));
  for (const auto& [name, t] : a->state_dict()) {
    EXPECT_EQ(values(t), values(b->state_dict().at(name))) << name;
  }
  const Tensor x = randn({3, 1, 28, 28});
  EXPECT_EQ(values((*a)(x)), values((*b)(x)));
  // A checkpoint of another model is refused with the names that differ.
  io::save(path, models::lenet5()->state_dict());
  expect_error([&] { b->load_state_dict(io::load(path)); }, {"[nn.Sequential]", "0.weight"});
  std::filesystem::remove_all(dir);
}

using ember::testing::ScratchDir;

// Runs the ember CLI with `args`; returns its exit status and output.
std::pair<int, std::string> run_cli(const std::vector<std::string>& args) {
  return ember::testing::run_cli(EMBER_CLI, args);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A metrics CSV without its last `timing_columns` columns (wall-clock figures).
std::vector<std::string> without_timing(const std::string& csv, int timing_columns) {
  std::vector<std::string> rows;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    for (int i = 0; i < timing_columns; ++i) line = line.substr(0, line.rfind(','));
    rows.push_back(line);
  }
  return rows;
}

// "epoch k/N: train loss A, test loss B, test accuracy C%" without the epoch count N and the
// timing after it, for every epoch line of `output`.
std::vector<std::string> epoch_figures(const std::string& output) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(": train loss ");
    if (line.rfind("epoch ", 0) != 0 || colon == std::string::npos) continue;
    const std::string epoch = line.substr(0, line.find('/'));
    out.push_back(epoch + line.substr(colon, line.find('%') - colon));
  }
  return out;
}

// The train loss and test accuracy (%) of a one-epoch run's output; fails unless it has exactly
// one epoch line of that form.
void one_epoch(const std::string& output, double* loss, double* accuracy) {
  const std::vector<std::string> lines = epoch_figures(output);
  ASSERT_EQ(lines.size(), 1u) << output;
  ASSERT_EQ(
      std::sscanf(lines[0].c_str(), "epoch 1: train loss %lf, test loss %*f, test accuracy %lf",
                  loss, accuracy),
      2)
      << lines[0];
}

// Note [Exact resume] in tools/ember/train.cpp: 2 epochs, stop, resume to 3 gives the losses,
// accuracies, learning rates and weights of 3 uninterrupted epochs, bit for bit (one thread).
TEST(Training, ResumedRunEqualsTheUninterruptedOneBitForBit) {
  const ScratchDir scratch("resume");
  const std::filesystem::path& dir = scratch.path;
  const std::string split = (dir / "split").string(), whole = (dir / "whole").string();
  const std::vector<std::string> common = {
      "train",        "--model", "mlp",           "--limit",       "1024", "--test-limit",   "300",
      "--threads",    "1",       "--no-progress", "--lr-schedule", "step", "--lr-step-size", "2",
      "--batch-size", "100"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const auto [s1, o1] = run_cli(with({"--epochs", "2", "--out", split}));
  ASSERT_EQ(s1, 0) << o1;
  const std::string ckpt = split + "/mlp-train.safetensors";
  ASSERT_TRUE(std::filesystem::exists(ckpt)) << o1;
  const auto [s2, o2] = run_cli(with({"--epochs", "3", "--out", split, "--resume", ckpt}));
  ASSERT_EQ(s2, 0) << o2;
  EXPECT_NE(o2.find("resuming from " + ckpt + " after epoch 2"), std::string::npos) << o2;
  const auto [s3, o3] = run_cli(with({"--epochs", "3", "--out", whole}));
  ASSERT_EQ(s3, 0) << o3;

  std::vector<std::string> resumed = epoch_figures(o1);
  const std::vector<std::string> more = epoch_figures(o2);
  resumed.insert(resumed.end(), more.begin(), more.end());
  ASSERT_EQ(resumed.size(), 3u) << o1 << o2;
  EXPECT_EQ(resumed, epoch_figures(o3));
  // Every step's loss and lr and every epoch's figures, in their exact decimal form.
  EXPECT_EQ(without_timing(read_text(split + "/mlp-steps.csv"), 1),
            without_timing(read_text(whole + "/mlp-steps.csv"), 1));
  const std::vector<std::string> epochs = without_timing(read_text(split + "/mlp-epochs.csv"), 2);
  EXPECT_EQ(epochs.size(), 4u);  // the header and 3 epochs
  EXPECT_EQ(epochs, without_timing(read_text(whole + "/mlp-epochs.csv"), 2));
  // The weights, bit for bit.
  const StateDict a = io::load(split + "/mlp.safetensors"),
                  b = io::load(whole + "/mlp.safetensors");
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_EQ(values(t), values(b.at(name))) << name;
  // A checkpoint of other options is refused, naming the option.
  const auto [s4, o4] = run_cli({"train", "--model", "cnn", "--epochs", "3", "--limit", "100",
                                 "--out", split, "--resume", ckpt, "--no-progress"});
  EXPECT_NE(s4, 0);
  EXPECT_NE(o4.find("the run was made with --model mlp, not cnn"), std::string::npos) << o4;
}

// Note [Mixed precision in ember train]: --amp bf16 trains under autocast to about the float32
// run's figures; an unknown mode is refused.
TEST(Training, MixedPrecisionTrainsAndIsRecordedForResume) {
  const ScratchDir scratch("amp");
  const std::filesystem::path& dir = scratch.path;
  const std::vector<std::string> args = {"train", "--model",      "mlp", "--limit",
                                         "2048",  "--test-limit", "500", "--epochs",
                                         "1",     "--no-progress"};
  auto run = [&](const std::string& amp) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--amp", amp, "--out", (dir / amp).string()});
    return run_cli(a);
  };
  const auto [s32, o32] = run("none");
  const auto [s16, o16] = run("bf16");
  ASSERT_EQ(s32, 0) << o32;
  ASSERT_EQ(s16, 0) << o16;
  double acc32 = 0, acc16 = 0, l32 = 0, l16 = 0;
  ASSERT_NO_FATAL_FAILURE(one_epoch(o32, &l32, &acc32));
  ASSERT_NO_FATAL_FAILURE(one_epoch(o16, &l16, &acc16));
  EXPECT_NEAR(l16, l32, 0.05);
  EXPECT_NEAR(acc16, acc32, 3.0);  // percentage points, on 500 test images
  EXPECT_GT(acc16, 40.0);          // chance is 10%
  // A resume must use the same precision.
  const auto [s2, o2] = run_cli({"train", "--model", "mlp", "--limit", "2048", "--epochs", "2",
                                 "--no-progress", "--out", (dir / "bf16").string(), "--resume",
                                 (dir / "bf16" / "mlp-train.safetensors").string()});
  EXPECT_NE(s2, 0);
  EXPECT_NE(o2.find("the run was made with --amp bf16, not none"), std::string::npos) << o2;
}

// ember train --channels-last runs the model in NHWC (Note [Channels-last tensors]): the same
// training as the row-major run up to rounding (batch norm sums in another order).
TEST(Training, ChannelsLastTrainsLikeTheRowMajorRun) {
  const ScratchDir scratch("channels_last");
  const std::filesystem::path& dir = scratch.path;
  auto run = [&](bool channels_last) {
    std::vector<std::string> a = {"train", "--model",
                                  "cnn",   "--limit",
                                  "1024",  "--test-limit",
                                  "300",   "--epochs",
                                  "1",     "--threads",
                                  "1",     "--no-progress",
                                  "--out", (dir / (channels_last ? "cl" : "rows")).string()};
    if (channels_last) a.push_back("--channels-last");
    return run_cli(a);
  };
  const auto [s1, o1] = run(false);
  const auto [s2, o2] = run(true);
  ASSERT_EQ(s1, 0) << o1;
  ASSERT_EQ(s2, 0) << o2;
  double l1 = 0, l2 = 0, a1 = 0, a2 = 0;
  ASSERT_NO_FATAL_FAILURE(one_epoch(o1, &l1, &a1));
  ASSERT_NO_FATAL_FAILURE(one_epoch(o2, &l2, &a2));
  EXPECT_NEAR(l2, l1, 1e-3);
  EXPECT_NEAR(a2, a1, 1.0);  // percentage points, on 300 test images
  EXPECT_GT(a2, 40.0);       // chance is 10%
}

// ember train --profile: the first N steps, each a train_step range in a Chrome trace, and the
// table of ops.
TEST(Training, ProfileRecordsTheFirstSteps) {
  const ScratchDir scratch("profile");
  const std::filesystem::path& dir = scratch.path;
  const std::string trace = (dir / "trace.json").string();
  const auto [status, out] =
      run_cli({"train", "--model", "mlp", "--limit", "512", "--test-limit", "100", "--epochs", "1",
               "--no-progress", "--out", dir.string(), "--profile", trace, "--profile-steps", "3"});
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("profile of 3 steps written to " + trace), std::string::npos) << out;
  EXPECT_NE(out.find("Self CPU"), std::string::npos) << out;  // the table's header
  const std::string json = read_text(trace);
  EXPECT_EQ(json.rfind("{\"traceEvents\":", 0), 0u) << json.substr(0, 80);
  size_t steps = 0;
  for (size_t at = json.find("\"train_step\""); at != std::string::npos;
       at = json.find("\"train_step\"", at + 1)) {
    ++steps;
  }
  EXPECT_EQ(steps, 3u);
  EXPECT_NE(json.find("\"LinearBackward\""), std::string::npos);  // a backward node
}

}  // namespace
}  // namespace ember
