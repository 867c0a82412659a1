// Ember's ResNets against torchvision's: the same names and shapes, a state_dict saved by
// PyTorch loads strictly (from torch.save and from safetensors) and computes PyTorch's output.
// Fixtures: tests/api/models/fixtures/make_resnet_fixtures.py.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <ember/ember.h>
#include <ember/io.h>
#include <ember/models.h>

#include "tests/testing/cli.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return std::string(EMBER_RESNET_FIXTURES) + "/" + name;
}

/** "name -> shape" of every state_dict entry, as "64,3,7,7" ("" for a 0-d buffer). */
std::map<std::string, std::string> layout(const StateDict& sd) {
  std::map<std::string, std::string> out;
  for (const auto& [name, t] : sd) {
    std::string shape;
    for (int64_t s : t.sizes()) shape += (shape.empty() ? "" : ",") + std::to_string(s);
    out[name] = shape;
  }
  return out;
}

/** torchvision's layout of `arch` from torchvision_names.txt. */
std::map<std::string, std::string> torchvision_layout(const std::string& arch) {
  std::ifstream in(fixture("torchvision_names.txt"));
  std::map<std::string, std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string a, name, shape;
    fields >> a >> name;
    std::getline(fields >> std::ws, shape);
    if (a == arch) out[name] = shape;
  }
  return out;
}

TEST(ResNetTorchvision, NamesAndShapesAreTorchvisions) {
  const auto want18 = torchvision_layout("resnet18");
  const auto want50 = torchvision_layout("resnet50");
  ASSERT_EQ(want18.size(), 122u);  // 62 parameters and 60 buffers in torchvision's resnet18
  ASSERT_GT(want50.size(), want18.size());
  EXPECT_EQ(layout(models::resnet18()->state_dict()), want18);
  EXPECT_EQ(layout(models::resnet50()->state_dict()), want50);
}

/** The largest |a - b| over two float tensors of one shape. */
double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const float* pa = ca.data_ptr<float>();
  const float* pb = cb.data_ptr<float>();
  double worst = 0;
  for (int64_t i = 0; i < ca.numel(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(pa[i]) - static_cast<double>(pb[i])));
  }
  return worst;
}

TEST(ResNetTorchvision, ChildrenAreTorchvisionsTenAndTheFeaturesFlattenBeforeFc) {
  auto model = models::resnet18(10, 1, 4);
  std::vector<std::string> names;
  for (const auto& [name, child] : model->named_children()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1", "bn1", "relu", "maxpool", "layer1", "layer2",
                                             "layer3", "layer4", "avgpool", "fc"}));
  model->eval();
  const Tensor x = randn({2, 1, 28, 28});
  // Every child but fc, run in order, leaves the pooled features [N, C, 1, 1].
  Tensor features = x;
  for (int64_t i = 0; i + 1 < model->size(); ++i) features = (*(*model)[i])(features);
  EXPECT_EQ(features.sizes(), (Shape{2, 32, 1, 1}));
  EXPECT_LT(max_abs_diff((*(*model)[-1])(features.flatten(1)), (*model)(x)), 1e-6);
  // torchvision's ResNet(block, layers): ResNet-34's stages.
  models::ResNet r34(models::ResNet::Block::Basic, {3, 4, 6, 3}, 10, 1, 4);
  EXPECT_EQ(r34.named_children().size(), 10u);
  EXPECT_THROW(models::ResNet(models::ResNet::Block::Basic, {2, 2, 2}), Error);
  EXPECT_THROW(models::ResNet(models::ResNet::Block::Bottleneck, {2, 0, 2, 2}), Error);
}

/** A width-4 ResNet-18 with the weights of the file at `path` (.pt or .safetensors). */
std::shared_ptr<nn::Sequential> fixture_model(const std::string& path) {
  auto model = models::resnet18(/*num_classes=*/10, /*in_channels=*/3, /*width=*/4);
  model->load_state_dict(io::load(path), /*strict=*/true);
  model->eval();
  return model;
}

TEST(ResNetTorchvision, AStateDictSavedByPyTorchComputesPyTorchsOutput) {
  const StateDict io_pair = io::load(fixture("resnet18_w4_io.safetensors"));
  const Tensor& x = io_pair.at("input");
  const Tensor& want = io_pair.at("output");
  // Before loading, the model computes something else: the comparison below can fail.
  auto fresh = models::resnet18(10, 3, 4);
  fresh->eval();
  EXPECT_GT(max_abs_diff((*fresh)(x), want), 1e-2);
  for (const char* file : {"resnet18_w4.pt", "resnet18_w4.safetensors"}) {
    SCOPED_TRACE(file);
    auto model = fixture_model(fixture(file));
    const Tensor y = (*model)(x);
    EXPECT_LT(max_abs_diff(y, want), 1e-5);  // outputs of about 1 after 20 layers in float32
    // The buffers came from the file too, num_batches_tracked included.
    const StateDict sd = model->state_dict();
    EXPECT_EQ(sd.at("layer3.0.downsample.1.num_batches_tracked").item(),
              io::load(fixture("resnet18_w4.safetensors"))
                  .at("layer3.0.downsample.1.num_batches_tracked")
                  .item());
  }
}

TEST(ResNetTorchvision, TheTorchSaveAndSafetensorsFixturesHoldTheSameTensors) {
  const StateDict pt = io::load(fixture("resnet18_w4.pt"));
  const StateDict st = io::load(fixture("resnet18_w4.safetensors"));
  ASSERT_EQ(layout(pt), layout(st));
  for (const auto& [name, t] : st) {
    const Tensor a = pt.at(name).contiguous();
    ASSERT_EQ(a.dtype(), t.dtype()) << name;
    EXPECT_EQ(std::memcmp(a.data_ptr(), t.data_ptr(), t.nbytes()), 0) << name;
  }
}

TEST(ResNetTorchvision, AWrongWidthIsRefusedByAStrictLoad) {
  auto model = models::resnet18(10, 3, 8);
  EXPECT_THROW(model->load_state_dict(io::load(fixture("resnet18_w4.pt")), /*strict=*/true), Error);
  EXPECT_THROW(models::resnet18(10, 3, 0), Error);
}

/** Runs `ember` with `args`; its exit status and output. */
std::pair<int, std::string> ember_cli(const std::vector<std::string>& args) {
  return testing::run_cli(EMBER_CLI, args);
}

TEST(EmberConvert, ATorchSaveFileBecomesTheSafetensorsFilePyTorchWrites) {
  const testing::ScratchDir dir("convert");
  const std::string out = (dir.path / "model.safetensors").string();
  const auto [status, text] = ember_cli({"convert", fixture("resnet18_w4.pt"), out});
  ASSERT_EQ(status, 0) << text;
  EXPECT_NE(text.find("(torch.save)"), std::string::npos) << text;
  EXPECT_NE(text.find("122 tensors"), std::string::npos) << text;
  // The same tensors as safetensors' own conversion, and they load strictly and compute.
  const StateDict got = io::load(out);
  const StateDict want = io::load(fixture("resnet18_w4.safetensors"));
  ASSERT_EQ(layout(got), layout(want));
  for (const auto& [name, t] : want) {
    EXPECT_EQ(std::memcmp(got.at(name).data_ptr(), t.data_ptr(), t.nbytes()), 0) << name;
  }
  const StateDict io_pair = io::load(fixture("resnet18_w4_io.safetensors"));
  EXPECT_LT(max_abs_diff((*fixture_model(out))(io_pair.at("input")), io_pair.at("output")), 1e-5);

  // safetensors to safetensors copies tensors and metadata.
  const std::string copy = (dir.path / "copy.safetensors").string();
  io::save(out, got, {{"epoch", "3"}});
  const auto [s2, t2] = ember_cli({"convert", out, copy});
  ASSERT_EQ(s2, 0) << t2;
  EXPECT_EQ(io::load_metadata(copy), (io::Metadata{{"epoch", "3"}}));
  EXPECT_EQ(layout(io::load(copy)), layout(want));

  // A file the reader refuses: exit status 1, the reader's message, no output file.
  const std::string bad = (dir.path / "bad.pt").string();
  std::ofstream(bad, std::ios::binary) << "PK\x03\x04 broken";
  const std::string never = (dir.path / "never.safetensors").string();
  const auto [s3, t3] = ember_cli({"convert", bad, never});
  EXPECT_EQ(WEXITSTATUS(s3), 1) << t3;
  EXPECT_NE(t3.find("ember: [io.load] " + bad), std::string::npos) << t3;
  EXPECT_FALSE(fs::exists(never));
}

}  // namespace
}  // namespace ember
