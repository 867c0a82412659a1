// IDX reading (gzipped and raw, well-formed and broken), finding Fashion-MNIST, and the real data.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ember/ember.h>

#include "ember/data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using ember::testing::TempDir;

using ember::testing::contains;
using ember::testing::expect_error;

/** Sets an environment variable for a scope, restoring the old value. */
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string le32(uint32_t v) {
  return {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
          static_cast<char>(v >> 24)};
}

/** An IDX file: magic, big-endian dims, then the bytes. */
std::string idx(uint32_t magic, std::vector<uint32_t> dims, const std::string& data) {
  std::string s = be32(magic);
  for (uint32_t d : dims) s += be32(d);
  return s + data;
}

uint32_t crc32(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/** A gzip member (RFC 1952) holding `s` in stored deflate blocks: written without zlib. */
std::string gzip(const std::string& s) {
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(s.size() - pos, 65535);
    const bool last = pos + n == s.size();
    out += static_cast<char>(last ? 1 : 0);
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(~n & 0xff);
    out += static_cast<char>((~n >> 8) & 0xff);
    out += s.substr(pos, n);
    pos += n;
  } while (pos < s.size());
  return out + le32(crc32(s)) + le32(static_cast<uint32_t>(s.size()));
}

/** `n` bytes counting up from `start`. */
std::string ramp(size_t n, int start = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((start + i) % 256);
  return s;
}

std::vector<int64_t> values_i64(const Tensor& t) {
  Tensor c = t.to(DType::Int64).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// --- read_idx on files written here. ----------------------------------------------------------

TEST(ReadIdx, ReadsRawAndGzippedFiles) {
  TempDir dir;
  const std::string images = idx(0x803, {3, 4, 5}, ramp(60, 200));
  write_bytes(dir.file("i"), images);
  write_bytes(dir.file("i.gz"), gzip(images));
  for (const char* name : {"i", "i.gz"}) {
    SCOPED_TRACE(name);
    Tensor t = read_idx(dir.file(name));
    EXPECT_EQ(t.dtype(), DType::UInt8);
    EXPECT_EQ(t.sizes(), Shape({3, 4, 5}));
    std::vector<int64_t> v = values_i64(t);
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], static_cast<int64_t>((200 + i) % 256));
  }
  write_bytes(dir.file("l.gz"), gzip(idx(0x801, {4}, std::string("\x09\x00\x03\x07", 4))));
  Tensor l = read_idx(dir.file("l.gz"));
  EXPECT_EQ(l.sizes(), Shape({4}));
  EXPECT_EQ(values_i64(l), (std::vector<int64_t>{9, 0, 3, 7}));
  write_bytes(dir.file("none"), idx(0x803, {0, 28, 28}, ""));
  EXPECT_EQ(read_idx(dir.file("none")).sizes(), Shape({0, 28, 28}));
  // Larger than one stored block and than the reader's first chunk.
  const std::string big = idx(0x803, {3000, 28, 28}, ramp(3000 * 784, 1));
  write_bytes(dir.file("big.gz"), gzip(big));
  Tensor b = read_idx(dir.file("big.gz"));
  EXPECT_EQ(b.sizes(), Shape({3000, 28, 28}));
  EXPECT_EQ(std::string(static_cast<const char*>(b.data_ptr()), b.nbytes()), big.substr(16));
}

TEST(ReadIdx, RejectsTruncatedAndMalformedFiles) {
  TempDir dir;
  const std::string good = idx(0x803, {10, 28, 28}, ramp(7840));
  struct Case {
    const char* name;
    std::string bytes;
    std::vector<std::string> message;
  };
  const std::vector<Case> cases = {
      {"empty", "", {"truncated: 0 bytes, but an IDX file starts with a 4-byte magic"}},
      {"short magic", std::string("\0\0\x08", 3), {"truncated: 3 bytes"}},
      {"bad magic",
       idx(0x0804, {1, 1, 1, 1}, "x"),
       {"bad magic number 0x00000804: expected 0x00000803 (images) or 0x00000801 (labels)"}},
      {"float idx", idx(0x0d03, {1, 1, 1}, "xxxx"), {"bad magic number 0x00000d03"}},
      {"gzip of garbage magic", gzip("PK\x03\x04 not idx"), {"bad magic number 0x504b0304"}},
      {"short dims",
       good.substr(0, 10),
       {"truncated: magic 0x00000803 announces 3 dims (12 bytes) but only 6 bytes follow"}},
      {"truncated images",
       good.substr(0, 16 + 1000),
       {"truncated: header says 10 images of 28x28 but only 1000 bytes follow"}},
      {"truncated gz images",
       gzip(good.substr(0, 16 + 5000)),
       {"truncated: header says 10 images of 28x28 but only 5000 bytes follow"}},
      {"gzip stream cut short",
       gzip(good).substr(0, 4000),
       {"truncated: header says 10 images of 28x28 but only"}},
      {"truncated labels",
       idx(0x801, {60000}, ramp(59999)),
       {"truncated: header says 60000 labels but only 59999 bytes follow"}},
      {"trailing bytes", good + "abc", {"3 unexpected bytes after the 10 images of 28x28"}},
      {"overflowing dims",
       idx(0x803, {0xffffffffu, 0xffffffffu, 0xffffffffu}, "x"),
       {"overflows int64"}},
      {"huge claim, little data",
       idx(0x803, {60000000, 28, 28}, ramp(100)),
       {"truncated: header says 60000000 images of 28x28 but only 100 bytes follow"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.file("bad");
    write_bytes(path, c.bytes);
    try {
      read_idx(path);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_PRED2(contains, e.what(), "[data.idx] " + path + ": ");
      for (const std::string& m : c.message) EXPECT_PRED2(contains, e.what(), m);
    }
  }
  // A corrupted gzip checksum is an error, not silently wrong data.
  std::string corrupt = gzip(good);
  corrupt[corrupt.size() - 6] ^= 0x55;
  write_bytes(dir.file("crc.gz"), corrupt);
  expect_error([&] { read_idx(dir.file("crc.gz")); }, {"[data.idx] " + dir.file("crc.gz")});
  expect_error([&] { read_idx(dir.file("missing.gz")); },
               {"[data.idx] " + dir.file("missing.gz") + ": cannot open"});
}

// --- MNIST over small files written here. ------------------------------------------------------

/** Writes a split of `n` images of 2x3 (pixel i of image k = 10 k + i) and labels k % 10. */
void write_split(const TempDir& dir, const std::string& split, uint32_t n, bool gz) {
  std::string pixels, labels;
  for (uint32_t k = 0; k < n; ++k) {
    for (int i = 0; i < 6; ++i) pixels += static_cast<char>(10 * k + i);
    labels += static_cast<char>(k % 10);
  }
  const std::string suffix = gz ? ".gz" : "";
  std::string im = idx(0x803, {n, 2, 3}, pixels), lb = idx(0x801, {n}, labels);
  write_bytes(dir.file(split + "-images-idx3-ubyte" + suffix), gz ? gzip(im) : im);
  write_bytes(dir.file(split + "-labels-idx1-ubyte" + suffix), gz ? gzip(lb) : lb);
}

TEST(MNIST, ReadsSmallFilesScaledToUnitRange) {
  TempDir dir;
  write_split(dir, "train", 12, /*gz=*/true);
  write_split(dir, "t10k", 5, /*gz=*/false);
  MNIST train(dir.path().string(), /*train=*/true);
  EXPECT_EQ(train.size(), 12);
  EXPECT_EQ(train.images().sizes(), Shape({12, 1, 2, 3}));
  EXPECT_EQ(train.images().dtype(), DType::Float32);
  EXPECT_EQ(train.labels().dtype(), DType::Int64);
  EXPECT_EQ(values_i64(train.labels()), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
  const float* px = train.images().data_ptr<float>();
  for (int k = 0; k < 12; ++k)
    for (int i = 0; i < 6; ++i) EXPECT_EQ(px[k * 6 + i], static_cast<float>(10 * k + i) / 255.0f);
  std::vector<Tensor> e = train.get(11);
  EXPECT_EQ(e[0].sizes(), Shape({1, 2, 3}));
  EXPECT_EQ(e[1].item(), 1.0);
  std::vector<Tensor> b = train.get_batch({3, 1});
  EXPECT_EQ(b[0].sizes(), Shape({2, 1, 2, 3}));
  EXPECT_EQ(values_i64(b[1]), (std::vector<int64_t>{3, 1}));

  MNIST test(dir.path().string(), /*train=*/false);
  EXPECT_EQ(test.size(), 5);
  MNIST limited(dir.path().string(), true, 4);
  EXPECT_EQ(limited.size(), 4);
  EXPECT_EQ(limited.images().sizes(), Shape({4, 1, 2, 3}));
  EXPECT_EQ(limited.images().data_ptr<float>()[23], 35.0f / 255.0f);
  EXPECT_EQ(MNIST(dir.path().string(), true, 0).size(), 0);
  EXPECT_EQ(MNIST(dir.path().string(), true, 1000).size(), 12);
  expect_error([&] { MNIST(dir.path().string(), true, -1); }, {"[data.MNIST] limit must be >= 0"});
}

TEST(MNIST, RejectsInconsistentFiles) {
  TempDir dir;
  expect_error([&] { MNIST(dir.path().string(), true); },
               {"[data.MNIST] " + dir.path().string(),
                "neither train-images-idx3-ubyte.gz nor train-images-idx3-ubyte exists"});
  write_split(dir, "train", 4, false);
  write_bytes(dir.file("train-labels-idx1-ubyte"), idx(0x801, {3}, "\1\2\3"));
  expect_error([&] { MNIST(dir.path().string(), true); }, {"has 4 images but", "has 3 labels"});
  write_bytes(dir.file("train-labels-idx1-ubyte"), idx(0x801, {4}, std::string("\1\2\x0c\3")));
  expect_error([&] { MNIST(dir.path().string(), true); },
               {"label 12 of example 2 is not a class (0..9)"});
  write_bytes(dir.file("train-labels-idx1-ubyte"), idx(0x803, {4, 1, 1}, "\1\2\3\4"));
  expect_error([&] { MNIST(dir.path().string(), true); }, {"expected labels [N], got [4, 1, 1]"});
}

TEST(FindFashionMnist, UsesTheGivenDirectoryOrTheEnvironment) {
  TempDir dir;
  expect_error([&] { find_fashion_mnist(dir.path().string()); },
               {"[data.fashion_mnist] Fashion-MNIST not found in " + dir.path().string(),
                "missing train-images-idx3-ubyte[.gz]", "t10k-labels-idx1-ubyte[.gz]",
                "dataset-fashion-mnist", "EMBER_DATA_DIR"});
  expect_error([&] { find_fashion_mnist(dir.file("nope")); }, {"does not exist"});
  write_split(dir, "train", 2, true);
  write_split(dir, "t10k", 2, false);
  EXPECT_EQ(find_fashion_mnist(dir.path().string()), dir.path().string());
  {
    ScopedEnv env("EMBER_DATA_DIR", dir.path().c_str());
    EXPECT_EQ(find_fashion_mnist(), dir.path().string());
  }
  TempDir parent;
  fs::create_directory(parent.path() / "fashion-mnist");
  for (const auto& f : fs::directory_iterator(dir.path())) {
    fs::copy_file(f.path(), parent.path() / "fashion-mnist" / f.path().filename());
  }
  ScopedEnv env("EMBER_DATA_DIR", parent.path().c_str());
  EXPECT_EQ(find_fashion_mnist(), (parent.path() / "fashion-mnist").string());
}

// --- The real Fashion-MNIST (Debian package dataset-fashion-mnist; these tests fail without it).

TEST(FashionMnistData, IsInstalledAndFound) {
  ScopedEnv env("EMBER_DATA_DIR", nullptr);
  EXPECT_EQ(find_fashion_mnist(), "/usr/share/datasets/fashion-mnist")
      << "install the Debian package dataset-fashion-mnist (tools/setup.sh does)";
}

TEST(FashionMnistData, RawIdxFiles) {
  const std::string root = find_fashion_mnist();
  Tensor images = read_idx(root + "/train-images-idx3-ubyte.gz");
  EXPECT_EQ(images.sizes(), Shape({60000, 28, 28}));
  Tensor labels = read_idx(root + "/t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(labels.sizes(), Shape({10000}));
  // Row 10 of the first training image (an ankle boot), read independently with Python's gzip.
  const std::vector<int64_t> row10 = {0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
                                      0,   0,   0,   193, 228, 218, 213, 198, 180, 212,
                                      210, 211, 213, 223, 220, 243, 202, 0};
  EXPECT_EQ(values_i64(images.select(0, 0).select(0, 10)), row10);
}

/** Checks sizes, label balance and a few facts of one split of the real dataset. */
void check_split(const MNIST& ds, int64_t n, std::vector<int64_t> first_labels, int64_t pixel_sum,
                 int64_t first_image_sum, int centre_pixel, int64_t last_label) {
  EXPECT_EQ(ds.size(), n);
  EXPECT_EQ(ds.images().sizes(), Shape({n, 1, 28, 28}));
  EXPECT_EQ(ds.labels().sizes(), Shape({n}));
  std::vector<int64_t> labels = values_i64(ds.labels());
  std::vector<int64_t> counts(10, 0);
  for (int64_t l : labels) {
    ASSERT_GE(l, 0);
    ASSERT_LE(l, 9);
    counts[static_cast<size_t>(l)]++;
  }
  EXPECT_EQ(counts, std::vector<int64_t>(10, n / 10));
  EXPECT_EQ(std::vector<int64_t>(labels.begin(), labels.begin() + 10), first_labels);
  EXPECT_EQ(labels.back(), last_label);
  const float* px = ds.images().data_ptr<float>();
  int64_t total = 0, first = 0, not_k_over_255 = 0;
  float lo = 1, hi = 0;
  for (int64_t i = 0; i < ds.images().numel(); ++i) {
    const float v = px[i];
    const auto raw = static_cast<int64_t>(std::lround(v * 255.0f));
    not_k_over_255 += v != static_cast<float>(raw) / 255.0f;
    total += raw;
    if (i < 784) first += raw;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(not_k_over_255, 0);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
  EXPECT_EQ(total, pixel_sum);
  EXPECT_EQ(first, first_image_sum);
  EXPECT_EQ(px[14 * 28 + 14], static_cast<float>(centre_pixel) / 255.0f);
}

TEST(FashionMnistData, TrainSplit) {
  MNIST train(find_fashion_mnist(), /*train=*/true);
  check_split(train, 60000, {9, 0, 0, 3, 0, 2, 7, 2, 5, 5}, 3431114169, 76247, 217, 5);
}

TEST(FashionMnistData, TestSplitThroughTheLoader) {
  auto test = std::make_shared<MNIST>(find_fashion_mnist(), /*train=*/false);
  check_split(*test, 10000, {9, 2, 1, 1, 6, 1, 4, 6, 5, 7}, 573469082, 33456, 110, 5);
  DataLoader loader(test, {.batch_size = 256, .shuffle = true, .num_workers = 3, .seed = 1});
  EXPECT_EQ(loader.size(), 40);
  std::vector<int64_t> counts(10, 0);
  int64_t seen = 0;
  for (const std::vector<Tensor>& batch : loader) {
    EXPECT_EQ(batch[0].size(0), batch[1].size(0));
    EXPECT_EQ(batch[0].sizes().size(), 4u);
    for (int64_t l : values_i64(batch[1])) counts[static_cast<size_t>(l)]++;
    seen += batch[0].size(0);
  }
  EXPECT_EQ(seen, 10000);
  EXPECT_EQ(counts, std::vector<int64_t>(10, 1000));
  MNIST first(find_fashion_mnist(), false, 3);
  EXPECT_EQ(values_i64(first.labels()), (std::vector<int64_t>{9, 2, 1}));
}

}  // namespace
}  // namespace ember::data
