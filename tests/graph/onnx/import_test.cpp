// ONNX import: models built here with ONNX's protobuf classes, written to files, loaded and run;
// external data and the paths it may name; unsupported ops, attributes and opsets; and bytes
// that are not a model (truncated, bit-flipped), which must give errors, never crashes.
#include <gtest/gtest.h>

#define ONNX_ML 1
#include <onnx/onnx_pb.h>

#include <ember/graph/onnx.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::graph {
namespace {

namespace fs = std::filesystem;
using ember::testing::expect_error;
using ember::testing::make;
using ember::testing::TempDir;
using ember::testing::values;

void add_value(onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims,
               const char* symbol = nullptr) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = t->mutable_shape();
  if (symbol) shape->add_dim()->set_dim_param(symbol);
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims,
                               const std::vector<float>& data) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * 4));
  return t;
}

/** y = relu(Gemm(x [N, 2], w [3, 2], b [3], transB=1)), at `opset`. */
onnx::ModelProto gemm_relu(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("gemm_relu");
  add_value(g->add_input(), "x", {2}, "N");
  add_value(g->add_output(), "y", {3}, "N");
  *g->add_initializer() = float_tensor("w", {3, 2}, {1, 0.5f, -1, 1, 2, -3});
  auto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);  // typed float_data this time, not raw bytes
  b->add_dims(3);
  for (float v : {0.5f, 0.f, -1.f}) b->add_float_data(v);
  auto* gemm = g->add_node();
  gemm->set_name("fc");
  gemm->set_op_type("Gemm");
  for (const char* in : {"x", "w", "b"}) gemm->add_input(in);
  gemm->add_output("z");
  auto* trans = gemm->add_attribute();
  trans->set_name("transB");
  trans->set_type(onnx::AttributeProto::INT);
  trans->set_i(1);
  auto* relu = g->add_node();
  relu->set_name("act");
  relu->set_op_type("Relu");
  relu->add_input("z");
  relu->add_output("y");
  return m;
}

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<double> expected_gemm_relu(const std::vector<double>& xs) {
  const double w[3][2] = {{1, 0.5}, {-1, 1}, {2, -3}}, b[3] = {0.5, 0, -1};
  std::vector<double> out;
  for (size_t r = 0; r < xs.size() / 2; ++r) {
    for (int c = 0; c < 3; ++c) {
      const double z = xs[2 * r] * w[c][0] + xs[2 * r + 1] * w[c][1] + b[c];
      out.push_back(z > 0 ? z : 0);
    }
  }
  return out;
}

TEST(OnnxImport, LoadsAndRunsAModelFile) {
  TempDir dir("ember-onnx-");
  write(dir.path() / "m.onnx", gemm_relu().SerializeAsString());
  const Graph g = load_onnx(dir.path() / "m.onnx");
  ASSERT_EQ(g.inputs().size(), 1u);
  ASSERT_TRUE(g.inputs()[0].shape.has_value());
  EXPECT_EQ((*g.inputs()[0].shape)[0].symbol, "N");
  EXPECT_EQ((*g.inputs()[0].shape)[1].size, 2);
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].op, "gemm");
  const std::vector<double> xs{1, 2, -3, 0.5, 0.25, -1};
  for (Device d : {Device::cpu(), Device(find_device_type("reference"), 0)}) {
    const Tensor y = g.run({{"x", make(xs, {3, 2}, DType::Float32)}}, d).at("y");
    const std::vector<double> got = values(y.to(Device::cpu())), want = expected_gemm_relu(xs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  }
}

onnx::ModelProto with_external_weight(const std::string& location) {
  onnx::ModelProto m = gemm_relu();
  onnx::TensorProto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  auto* off = w->add_external_data();
  off->set_key("offset");
  off->set_value("8");
  return m;
}

std::string weight_bytes() {
  const std::vector<float> w{1, 0.5f, -1, 1, 2, -3};
  std::string bytes(32, 'x');  // 8 bytes of something else, then the weight
  std::memcpy(bytes.data() + 8, w.data(), 24);
  return bytes;
}

TEST(OnnxImport, ReadsExternalDataInTheModelsFolder) {
  TempDir dir("ember-onnx-");
  fs::create_directory(dir.path() / "weights");
  write(dir.path() / "weights" / "w.bin", weight_bytes());
  write(dir.path() / "m.onnx", with_external_weight("weights/w.bin").SerializeAsString());
  const Graph g = load_onnx(dir.path() / "m.onnx");
  const std::vector<double> xs{1, 2};
  const Tensor y = g.run({{"x", make(xs, {1, 2}, DType::Float32)}}).at("y");
  EXPECT_EQ(values(y), expected_gemm_relu(xs));
  // From bytes, there is no folder to read it from.
  expect_error([&] { load_onnx_bytes(with_external_weight("weights/w.bin").SerializeAsString()); },
               {"[onnx] tensor 'w' keeps its data in an external file", "load the model from"});
}

TEST(OnnxImport, RefusesExternalDataOutsideTheModelsFolder) {
  TempDir dir("ember-onnx-");
  fs::create_directory(dir.path() / "model");
  write(dir.path() / "outside.bin", weight_bytes());
  fs::create_symlink(dir.path() / "outside.bin", dir.path() / "model" / "link.bin");
  const fs::path model = dir.path() / "model" / "m.onnx";
  auto load_with = [&](const std::string& location) {
    write(model, with_external_weight(location).SerializeAsString());
    return load_onnx(model);
  };
  EXPECT_THROW(load_with("../outside.bin"), IoError);
  expect_error([&] { load_with("../outside.bin"); },
               {"[onnx] tensor 'w' names external data at '../outside.bin'", "leaves the model"});
  expect_error([&] { load_with("sub/../../outside.bin"); }, {"leaves the model's folder"});
  expect_error([&] { load_with((dir.path() / "outside.bin").string()); },
               {"an absolute path", "must lie in the model's folder"});
  expect_error([&] { load_with("link.bin"); }, {"outside the model's folder", "symlink"});
  expect_error([&] { load_with("missing.bin"); }, {"external data file", "cannot be opened"});
  expect_error([&] { load_with(""); }, {"names external data at ''"});
  // A file too short for the tensor.
  write(dir.path() / "model" / "short.bin", std::string(10, 'x'));
  expect_error([&] { load_with("short.bin"); }, {"runs past the end", "short.bin"});
}

TEST(OnnxImport, UnsupportedOpsAttributesAndOpsetsAreErrorsAtLoadTime) {
  onnx::ModelProto m = gemm_relu();
  m.mutable_graph()->mutable_node(1)->set_op_type("Scan");
  EXPECT_THROW(load_onnx_bytes(m.SerializeAsString()), NotImplementedError);
  expect_error([&] { load_onnx_bytes(m.SerializeAsString()); },
               {"[onnx] node 'act' (Scan at opset 17): op Scan is not supported", "Relu"});

  m = gemm_relu();
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("gamma");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(2);
  expect_error([&] { load_onnx_bytes(m.SerializeAsString()); },
               {"[onnx] node 'fc' (Gemm at opset 17): attribute 'gamma' is not supported",
                "alpha, beta, transA, transB"});

  // Another domain: refused unless Ember reads it, the model imports its opset, and the op is in
  // its table (Note [Other domains than ai.onnx]).
  m = gemm_relu();
  m.mutable_graph()->mutable_node(0)->set_domain("com.example");
  auto* other = m.add_opset_import();
  other->set_domain("com.example");
  other->set_version(1);
  expect_error([&] { load_onnx_bytes(m.SerializeAsString()); },
               {"node 'fc' (Gemm at com.example opset 1): op domain 'com.example' is not "
                "supported (Ember reads ai.onnx and com.microsoft)"});
  m = gemm_relu();
  m.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  EXPECT_THROW(load_onnx_bytes(m.SerializeAsString()), IoError);
  expect_error([&] { load_onnx_bytes(m.SerializeAsString()); },
               {"node 'fc' (Gemm in domain com.microsoft): the model imports no com.microsoft "
                "opset (its opset_import lists ai.onnx)"});
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  EXPECT_THROW(load_onnx_bytes(m.SerializeAsString()), NotImplementedError);
  expect_error([&] { load_onnx_bytes(m.SerializeAsString()); },
               {"node 'fc' (Gemm at com.microsoft opset 1): op Gemm of domain com.microsoft is "
                "not supported (Ember reads from com.microsoft: ",
                "BiasGelu, FastGelu", "SkipLayerNormalization"});
  ms->set_version(2);
  expect_error([&] { load_onnx_bytes(m.SerializeAsString()); },
               {"[onnx] com.microsoft opset 2 is not supported: Ember reads com.microsoft "
                "opsets up to 1"});

  // Gemm's version at opset 9 is older than the one Ember implements (13).
  expect_error([&] { load_onnx_bytes(gemm_relu(9).SerializeAsString()); },
               {"node 'fc' (Gemm at opset 9)", "Ember implements Gemm from opset 13"});
  expect_error([&] { load_onnx_bytes(gemm_relu(29).SerializeAsString()); },
               {"[onnx] opset 29 is not supported", "up to 28"});

  m = gemm_relu();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::UINT16);
  expect_error([&] { load_onnx_bytes(m.SerializeAsString()); },
               {"[onnx] input 'x' has dtype UINT16, which Ember has no dtype for"});

  m = gemm_relu();
  m.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(20);
  EXPECT_THROW(load_onnx_bytes(m.SerializeAsString()), IoError);
  expect_error([&] { load_onnx_bytes(m.SerializeAsString()); },
               {"initializer 'w' has dims [3, 2] of float32 (24 bytes) but raw_data holds 20"});
}

TEST(OnnxImport, ComMicrosoftOpsRunAtTheirDomainsOpset) {
  // y = FastGelu(x, bias) of onnxruntime's contrib ops: the tanh GELU of x + bias, by hand.
  onnx::ModelProto m;
  m.set_ir_version(8);
  for (auto [domain, version] : {std::pair<const char*, int64_t>{"", 17}, {"com.microsoft", 1}}) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "x", {3});
  add_value(g->add_output(), "y", {3});
  *g->add_initializer() = float_tensor("bias", {3}, {0.5f, -1, 0});
  auto* n = g->add_node();
  n->set_name("gelu");
  n->set_op_type("FastGelu");
  n->set_domain("com.microsoft");
  n->add_input("x");
  n->add_input("bias");
  n->add_output("y");
  const Graph graph = load_onnx_bytes(m.SerializeAsString());
  const std::vector<double> xs{-1, 0.25, 2};
  const std::vector<double> bias{0.5, -1, 0};
  const std::vector<double> y =
      values(graph.run({{"x", make(xs, {3}, DType::Float32)}}, Device::cpu()).at("y"));
  for (size_t i = 0; i < 3; ++i) {
    const double v = xs[i] + bias[i];
    const double want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(y[i], want, 1e-6) << i;
  }
}

TEST(OnnxImport, WhatIsNotAModelIsAnIoError) {
  TempDir dir("ember-onnx-");
  expect_error([&] { load_onnx(dir.path() / "absent.onnx"); },
               {"[onnx] cannot open", "No such file"});
  EXPECT_THROW(load_onnx(dir.path()), IoError);
  write(dir.path() / "text.onnx", "this is not a protobuf message at all \xff\xff\xff");
  EXPECT_THROW(load_onnx(dir.path() / "text.onnx"), IoError);
  expect_error([&] { load_onnx_bytes(""); }, {"[onnx] the model has no graph"});
}

// Note [Hostile model bytes]
// Every prefix of a valid model and many copies with one or a few bits flipped are loaded and,
// when they load, run: each must give a model or an ember::Error, never a crash, a hang or
// another exception (the sanitizer passes make memory errors in this failures). Prefixes cut
// fields (parse errors) or drop whole ones (a graph whose output nobody makes); flips change
// dims, dtypes, lengths, names and opsets.
TEST(OnnxImport, TruncatedAndBitFlippedBytesGiveErrorsNotCrashes) {
  const std::string good = gemm_relu().SerializeAsString();
  const Tensor x = make({1, 2, 3, 4}, {2, 2}, DType::Float32);
  int loaded = 0, refused = 0;
  auto attempt = [&](const std::string& bytes) {
    try {
      const Graph g = load_onnx_bytes(bytes);
      ++loaded;
      try {
        g.run({{"x", x}});
      } catch (const Error&) {
      }
    } catch (const Error&) {
      ++refused;
    }
  };
  for (size_t n = 0; n < good.size(); ++n) attempt(good.substr(0, n));
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string bad = good;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      bad[rng() % bad.size()] ^= static_cast<char>(1u << (rng() % 8));
    }
    attempt(bad);
  }
  EXPECT_GT(refused, 500);
  EXPECT_GT(loaded, 0);  // some flips only rename a value or change a weight
}

}  // namespace
}  // namespace ember::graph
