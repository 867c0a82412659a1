// `ember train --task charlm` and `ember generate` end to end: a GPT learns a small text, its
// validation bits per character fall epoch by epoch, and the checkpoint samples text.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <ember/io.h>

#include "tests/testing/cli.h"

namespace ember {
namespace {

using testing::ScratchDir;

std::pair<int, std::string> run_cli(const std::vector<std::string>& args) {
  return testing::run_cli(EMBER_CLI, args);
}

// A text a small model learns in seconds: a few sentences repeated with a counter.
std::string small_text() {
  std::string s;
  for (int i = 0; i < 60; ++i) {
    s += "In the beginning the cat sat on the mat, and the dog lay by the door. ";
    s += "Then the bird sang " + std::to_string(i % 7) + " songs to the quiet house.\n";
  }
  return s;
}

// "before training: validation X bits/char" and every "epoch k/N: ... validation Y bits/char".
std::vector<double> validation_bits(const std::string& out) {
  std::vector<double> v;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    double b = 0;
    const size_t at = line.find("validation ");
    if ((line.rfind("before training:", 0) == 0 || line.rfind("epoch ", 0) == 0) &&
        at != std::string::npos && std::sscanf(line.c_str() + at, "validation %lf", &b) == 1) {
      v.push_back(b);
    }
  }
  return v;
}

TEST(CharLM, BitsPerCharacterFallAndTheCheckpointWritesText) {
  const ScratchDir dir("charlm");
  const std::string text_path = (dir.path / "text.txt").string();
  const std::string text = small_text();
  std::ofstream(text_path, std::ios::binary) << text;
  const std::string out = (dir.path / "run").string();
  const auto [status, log] =
      run_cli({"train",     "--task",      "charlm",        "--text", text_path,
               "--epochs",  "3",           "--block-size",  "32",     "--batch-size",
               "16",        "--optimizer", "adam",          "--lr",   "0.003",
               "--threads", "2",           "--no-progress", "--out",  out});
  ASSERT_EQ(status, 0) << log;
  const std::vector<double> bits = validation_bits(log);
  ASSERT_EQ(bits.size(), 4u) << log;
  for (size_t i = 1; i < bits.size(); ++i) EXPECT_LT(bits[i], bits[i - 1]) << log;
  EXPECT_LT(bits.back(), 0.5 * bits.front()) << log;
  EXPECT_TRUE(std::filesystem::exists(out + "/gpt-curve.svg"));
  std::ifstream epochs(out + "/gpt-epochs.csv");
  std::string line;
  int rows = 0;
  while (std::getline(epochs, line)) ++rows;
  EXPECT_EQ(rows, 4) << "a header and one row per epoch";
  const std::string ckpt = out + "/gpt.safetensors";
  EXPECT_EQ(io::load_metadata(ckpt).at("task"), "charlm");

  const std::vector<std::string> sample = {"generate", ckpt, "--prompt",  "the ", "--length", "80",
                                           "--seed",   "1",  "--threads", "1"};
  const auto [s1, t1] = run_cli(sample);
  ASSERT_EQ(s1, 0) << t1;
  ASSERT_EQ(t1.size(), 4u + 80u + 1u) << t1;
  EXPECT_EQ(t1.substr(0, 4), "the ");
  for (char c : t1.substr(0, 84)) {
    EXPECT_NE(text.find(c), std::string::npos) << "a character the text does not have: " << c;
  }
  EXPECT_EQ(run_cli(sample).second, t1) << "the same seed gives the same text";
  // The likeliest character each time: the seed makes no difference.
  std::vector<std::string> greedy = sample;
  greedy.insert(greedy.end(), {"--top-k", "1"});
  const std::string g1 = run_cli(greedy).second;
  greedy[7] = "2";
  EXPECT_EQ(run_cli(greedy).second, g1);

  const auto [bad, why] = run_cli({"generate", ckpt, "--prompt", "Zebra"});
  EXPECT_NE(bad, 0);
  EXPECT_NE(why.find("never saw"), std::string::npos) << why;
  EXPECT_NE(why.find("'Z'"), std::string::npos) << why;
}

TEST(CharLM, BadInputIsAClearError) {
  const ScratchDir dir("charlm-bad");
  const std::string tiny = (dir.path / "tiny.txt").string();
  std::ofstream(tiny) << "too short";
  const auto expect_refusal = [](const std::vector<std::string>& args, const std::string& part) {
    const auto [status, log] = run_cli(args);
    EXPECT_NE(status, 0) << log;
    EXPECT_NE(log.find(part), std::string::npos) << "missing '" << part << "' in: " << log;
  };
  expect_refusal({"train", "--task", "charlm"}, "needs --text FILE");
  expect_refusal({"train", "--task", "charlm", "--text", (dir.path / "none.txt").string()},
                 "cannot read --text");
  expect_refusal({"train", "--task", "charlm", "--text", tiny}, "too few for --block-size 128");
  expect_refusal({"train", "--task", "charlm", "--text", tiny, "--model", "vit"}, "gpt");
  expect_refusal({"train", "--task", "poetry"}, "unknown --task 'poetry'");
  // A checkpoint of another kind.
  const std::string other = (dir.path / "other.safetensors").string();
  io::save(other, {{"w", zeros({2})}}, {{"model", "cnn"}});
  expect_refusal({"generate", other}, "not a character-level model");
}

}  // namespace
}  // namespace ember
