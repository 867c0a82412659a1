// ember::io safetensors: byte-exact output, bit-exact round trips, atomic saves, hostile files.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ember/ember.h>

#include "ember/io.h"
#include "tests/testing/special_files.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using ember::testing::contains;
using ember::testing::read_file;
using ember::testing::TempDir;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

/** A safetensors file as the spec describes it: length, header, data. */
std::string st_file(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

std::string tensor_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

using testing::expect_error;

// --- What we write is what the spec (and the reference implementation) prescribes. -----------

TEST(Safetensors, WritesTheReferenceBytesForTheSpecExample) {
  // huggingface/safetensors bindings/python/tests/test_simple.py, test_serialization: a 2x2
  // int32 zero tensor named "test" serializes to exactly these bytes (header padded to 64).
  TempDir dir;
  io::save(dir.file("a.safetensors"), {{"test", zeros({2, 2}, DType::Int32)}});
  std::string expected = std::string("@\0\0\0\0\0\0\0", 8) +
                         R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" +
                         "    " + std::string(16, '\0');
  EXPECT_EQ(read_file(dir.file("a.safetensors")), expected);
}

TEST(Safetensors, WritesMetadataFirstSortedNamesAndSpacePadding) {
  TempDir dir;
  Tensor b = tensor({1.5, -2.0});
  Tensor a = tensor({{7, 8, 9}}, DType::Int64);
  Tensor s = tensor(3.0, DType::Float64);
  io::save(dir.file("m.safetensors"), {{"b", b}, {"a", a}, {"s", s}},
           {{"z", "last"}, {"format", "pt"}});
  std::string header = R"({"__metadata__":{"format":"pt","z":"last"},)"
                       R"("a":{"dtype":"I64","shape":[1,3],"data_offsets":[0,24]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[24,32]},)"
                       R"("s":{"dtype":"F64","shape":[],"data_offsets":[32,40]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  ASSERT_EQ(header.size() % 8, 0u);
  std::string data = raw<int64_t>({7, 8, 9}) + raw<float>({1.5f, -2.0f}) + raw<double>({3.0});
  EXPECT_EQ(read_file(dir.file("m.safetensors")), st_file(header, data));
}

TEST(Safetensors, EscapesNamesAsJson) {
  TempDir dir;
  std::string name = "layer \"1\"\\weight\n\xc3\xa9";
  io::save(dir.file("e.safetensors"), {{name, ones({1})}}, {{"k\t", "v\""}});
  std::string bytes = read_file(dir.file("e.safetensors"));
  EXPECT_PRED2(contains, bytes, R"("layer \"1\"\\weight\n)");
  EXPECT_PRED2(contains, bytes, R"({"k\t":"v\""})");
  StateDict back = io::load(dir.file("e.safetensors"));
  ASSERT_EQ(back.count(name), 1u);
  EXPECT_EQ(io::load_metadata(dir.file("e.safetensors")).at("k\t"), "v\"");
}

// --- Hand-built files load to the right values. -------------------------------------------------

TEST(Safetensors, LoadsHandBuiltSpecFiles) {
  TempDir dir;
  // test_simple.py's load-with-metadata fixture, with non-zero values.
  std::string header =
      R"({"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}       )";
  ASSERT_EQ(header.size(), 102u);  // 'f' in the fixture's length byte
  write_bytes(dir.file("x.safetensors"), st_file(header, raw<int32_t>({1, -2, 3, 2147483647})));
  StateDict d = io::load(dir.file("x.safetensors"));
  ASSERT_EQ(d.size(), 1u);
  const Tensor& t = d.at("test1");
  EXPECT_EQ(t.dtype(), DType::Int32);
  EXPECT_EQ(t.sizes(), Shape({2, 2}));
  const int32_t* p = t.data_ptr<int32_t>();
  EXPECT_EQ(p[0], 1);
  EXPECT_EQ(p[1], -2);
  EXPECT_EQ(p[2], 3);
  EXPECT_EQ(p[3], 2147483647);
  EXPECT_EQ(io::load_metadata(dir.file("x.safetensors")), io::Metadata({{"framework", "pt"}}));

  // Every dtype, unsorted keys, pretty-printed JSON, data in a different order than the keys.
  std::string h2 = R"({
    "h": {"dtype": "F16", "shape": [2], "data_offsets": [8, 12]},
    "f": {"data_offsets": [0, 8], "shape": [2], "dtype": "F32"},
    "bf": {"dtype": "BF16", "shape": [1], "data_offsets": [12, 14]},
    "flag": {"dtype": "BOOL", "shape": [3], "data_offsets": [14, 17]},
    "i8": {"dtype": "I8", "shape": [1], "data_offsets": [17, 18]},
    "u8": {"dtype": "U8", "shape": [1], "data_offsets": [18, 19]},
    "d": {"dtype": "F64", "shape": [], "data_offsets": [19, 27]},
    "none": {"dtype": "F32", "shape": [0, 4], "data_offsets": [27, 27]}
  })";
  std::string data = raw<float>({0.25f, -8.0f}) + raw<uint16_t>({0x3C00, 0xC000}) +
                     raw<uint16_t>({0x3F80}) + raw<uint8_t>({1, 0, 1}) + raw<int8_t>({-128}) +
                     raw<uint8_t>({255}) + raw<double>({-1e300});
  write_bytes(dir.file("y.safetensors"), st_file(h2, data));
  StateDict e = io::load(dir.file("y.safetensors"));
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(e.at("f").data_ptr<float>()[0], 0.25f);
  EXPECT_EQ(e.at("f").data_ptr<float>()[1], -8.0f);
  EXPECT_EQ(e.at("h").dtype(), DType::Float16);
  EXPECT_EQ(e.at("h").to(DType::Float64).select(0, 0).item(), 1.0);
  EXPECT_EQ(e.at("h").to(DType::Float64).select(0, 1).item(), -2.0);
  EXPECT_EQ(e.at("bf").dtype(), DType::BFloat16);
  EXPECT_EQ(e.at("bf").to(DType::Float64).item(), 1.0);
  EXPECT_EQ(tensor_bytes(e.at("flag")), std::string("\1\0\1", 3));
  EXPECT_EQ(e.at("i8").item(), -128.0);
  EXPECT_EQ(e.at("u8").item(), 255.0);
  EXPECT_EQ(e.at("d").dim(), 0);
  EXPECT_EQ(e.at("d").item(), -1e300);
  EXPECT_EQ(e.at("none").sizes(), Shape({0, 4}));
  EXPECT_TRUE(io::load_metadata(dir.file("y.safetensors")).empty());
}

// --- Round trips. ------------------------------------------------------------------------------

/** A tensor of `dtype` filled with random bit patterns (0/1 for bool). */
Tensor random_bits(DType dtype, IntList sizes, std::mt19937& rng) {
  Tensor t = empty(sizes, TensorOptions(dtype));
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) {
    p[i] = static_cast<unsigned char>(dtype == DType::Bool ? rng() % 2 : rng() % 256);
  }
  return t;
}

TEST(Safetensors, RoundTripsEveryDtypeBitExactly) {
  TempDir dir;
  std::mt19937 rng(7);
  const DType dtypes[] = {DType::Float32,  DType::Float64, DType::Float16,
                          DType::BFloat16, DType::Int64,   DType::Int32,
                          DType::Int8,     DType::UInt8,   DType::Bool};
  StateDict in;
  for (DType d : dtypes) {
    std::string n(dtype_name(d));
    in[n] = random_bits(d, {3, 5, 2}, rng);
    in[n + ".scalar"] = random_bits(d, {}, rng);
    in[n + ".empty"] = empty({0}, TensorOptions(d));
    in[n + ".empty3"] = empty({2, 0, 3}, TensorOptions(d));
  }
  // Float special values, whatever random bits gave: NaN payloads, -0, infinities, denormals.
  in["specials"] = from_vector<float>(
      {-0.0f, INFINITY, -INFINITY, std::nanf("0x12345"), 1e-45f, 3.4028235e38f}, {6}, {});
  const std::string path = dir.file("all.safetensors");
  io::save(path, in);
  StateDict out = io::load(path);
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [name, t] : in) {
    SCOPED_TRACE(name);
    ASSERT_EQ(out.count(name), 1u);
    const Tensor& u = out.at(name);
    EXPECT_EQ(u.dtype(), t.dtype());
    EXPECT_EQ(u.sizes(), t.sizes());
    EXPECT_EQ(u.device(), Device::cpu());
    EXPECT_TRUE(u.is_contiguous());
    EXPECT_EQ(tensor_bytes(u), tensor_bytes(t));
  }
  // Saving what was loaded reproduces the file byte for byte.
  io::save(dir.file("again.safetensors"), out);
  EXPECT_EQ(read_file(dir.file("again.safetensors")), read_file(path));
}

TEST(Safetensors, SavesNonContiguousInputsAsTheirValues) {
  TempDir dir;
  Tensor base = arange(24, TensorOptions(DType::Float32)).reshape({2, 3, 4});
  StateDict in = {
      {"transposed", base.transpose(0, 2)},
      {"strided", base.slice(2, 0, 4, 3)},
      {"selected", base.select(1, 2)},
      {"expanded", tensor({1.0, 2.0}).unsqueeze(0).expand({3, 2})},
      {"grad", ones({2}).requires_grad_()},
  };
  io::save(dir.file("v.safetensors"), in);
  StateDict out = io::load(dir.file("v.safetensors"));
  for (const auto& [name, t] : in) {
    SCOPED_TRACE(name);
    EXPECT_EQ(out.at(name).sizes(), t.sizes());
    EXPECT_EQ(tensor_bytes(out.at(name)), tensor_bytes(t.detach().contiguous()));
    EXPECT_FALSE(out.at(name).requires_grad());
  }
  // The transposed [4, 3, 2] view: out[k][j][i] = base[i][j][k] = 12 i + 4 j + k.
  const float* p = out.at("transposed").data_ptr<float>();
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) EXPECT_EQ(p[(k * 3 + j) * 2 + i], 12 * i + 4 * j + k);
}

TEST(Safetensors, EmptyDictAndMetadataOnly) {
  TempDir dir;
  io::save(dir.file("e.safetensors"), {});
  EXPECT_EQ(read_file(dir.file("e.safetensors")), st_file("{}      "));
  EXPECT_TRUE(io::load(dir.file("e.safetensors")).empty());
  io::save(dir.file("m.safetensors"), {}, {{"epoch", "3"}});
  EXPECT_TRUE(io::load(dir.file("m.safetensors")).empty());
  EXPECT_EQ(io::load_metadata(dir.file("m.safetensors")), io::Metadata({{"epoch", "3"}}));
}

// --- Saving is atomic. -------------------------------------------------------------------------

/** Turns the write-failure hook off again when a test ends, however it ends. */
struct FaultGuard {
  explicit FaultGuard(int64_t bytes) { io::testing::fail_writes_after(bytes); }
  ~FaultGuard() { io::testing::fail_writes_after(std::nullopt); }
};

TEST(Safetensors, FailedWriteLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  io::save(path, {{"w", full({4}, 1.0)}}, {{"version", "1"}});
  const std::string old_bytes = read_file(path);
  StateDict bigger = {{"w", full({1000}, 2.0)}, {"b", zeros({10})}};
  // Fail at the length, inside the header, at its end, and in the middle of the data.
  for (int64_t fail_at : {0, 5, 8, 40, 120, 3000}) {
    SCOPED_TRACE(fail_at);
    FaultGuard guard(fail_at);
    expect_error(
        [&] {
          io::save(path, bigger, {{"version", "2"}});
        },
        {"[io.save] " + path, "No space left on device", fmt::format("after {} bytes", fail_at)});
    EXPECT_EQ(read_file(path), old_bytes);
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.safetensors"});
  }
  EXPECT_EQ(io::load_metadata(path).at("version"), "1");
  io::save(path, bigger, {{"version", "2"}});  // hook off: it works
  EXPECT_EQ(io::load(path).at("w").sizes(), Shape({1000}));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.safetensors"});
}

TEST(Safetensors, SavingOntoADirectoryLeavesItAndNoTemporary) {
  TempDir dir;
  fs::create_directory(dir.file("taken"));
  write_bytes(dir.file("taken") + "/inside", "keep");
  expect_error(
      [&] {
        io::save(dir.file("taken"), {{"w", ones({2})}});
      },
      {"[io.save] " + dir.file("taken") + ": is a directory, not a file (give a file path)"});
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"taken"});
  EXPECT_EQ(read_file(dir.file("taken") + "/inside"), "keep");
}

// Note [Writing files] in core/util/file_writer.cpp: a save writes what its path names, as
// torch.save's open(path, "wb") does, and replaces only regular files.
TEST(Safetensors, SavingThroughASymlinkWritesItsTargetAndKeepsTheLink) {
  TempDir dir;
  const std::string real = dir.file("run1.safetensors");
  io::save(real, {{"w", ones({2})}});
  fs::create_symlink("run1.safetensors", dir.file("latest.safetensors"));
  io::save(dir.file("latest.safetensors"), {{"w", full({3}, 2.0)}});
  EXPECT_TRUE(fs::is_symlink(dir.file("latest.safetensors")));
  EXPECT_EQ(io::load(real).at("w").sizes(), Shape({3}));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"latest.safetensors", "run1.safetensors"}));
}

TEST(Safetensors, SavingToAFifoWritesThroughIt) {
  TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const StateDict sd = {{"w", full({20000}, 1.5)}, {"b", arange(7)}};  // more than a pipe holds
  testing::FifoReader reader(fifo);
  io::save(fifo, sd, {{"epoch", "3"}});
  EXPECT_TRUE(fs::is_fifo(fifo));
  // What came through the FIFO is the file a regular save writes.
  io::save(dir.file("regular"), sd, {{"epoch", "3"}});
  EXPECT_EQ(reader.bytes().size(), read_file(dir.file("regular")).size());
  EXPECT_TRUE(reader.bytes() == read_file(dir.file("regular")));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"pipe", "regular"}));
}

TEST(Safetensors, SavingToANullDeviceKeepsTheDevice) {
  TempDir dir;
  const std::string null = testing::null_device(dir.file("null"));
  if (null.empty()) GTEST_SKIP() << "root without the right to make a device node";
  io::save(null, {{"w", ones({4})}});
  struct stat st {};
  ASSERT_EQ(::stat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
}

TEST(Safetensors, SaveIntoMissingOrReadOnlyDirectoryThrows) {
  TempDir dir;
  const std::string missing = dir.file("no/such/dir/m.safetensors");
  expect_error(
      [&] {
        io::save(missing, {{"w", ones({2})}});
      },
      {"[io.save] " + missing, "cannot create a temporary file", "No such file"});
  if (::geteuid() == 0) return;  // root writes anywhere; the fault hook above covers failures
  fs::create_directory(dir.file("ro"));
  const std::string path = dir.file("ro/m.safetensors");
  io::save(path, {{"w", ones({2})}});
  fs::permissions(dir.file("ro"), fs::perms::owner_read | fs::perms::owner_exec);
  expect_error([&] { io::save(path, {{"w", zeros({3})}}); }, {"[io.save] " + path});
  fs::permissions(dir.file("ro"), fs::perms::owner_all);
  EXPECT_EQ(io::load(path).at("w").sizes(), Shape({2}));
}

TEST(Safetensors, KeepsThePermissionsOfTheFileItReplaces) {
  TempDir dir;
  const std::string path = dir.file("p.safetensors");
  io::save(path, {{"w", ones({2})}});
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  io::save(path, {{"w", ones({3})}});
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST(Safetensors, SaveRejectsBadInputBeforeWriting) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  expect_error(
      [&] {
        io::save(path, {{"w", Tensor()}});
      },
      {"[io.save] " + path, "tensor 'w' is undefined"});
  expect_error(
      [&] {
        io::save(path, {{"__metadata__", ones({1})}});
      },
      {"'__metadata__' is reserved"});
  expect_error([&] { io::save(path, {{std::string("bad\xff"), ones({1})}}); }, {"not valid UTF-8"});
  EXPECT_TRUE(dir.entries().empty());
}

// --- Hostile files: a clear error, never a crash or an out-of-bounds read. -----------------------

struct BadFile {
  const char* what;
  std::string bytes;
  std::string message;
};

std::string f32_header(const std::string& entry) {
  return "{\"a\":" + entry + "}";
}

// "1,1,...,1": n ones, a JSON shape of n size-1 dims.
std::string ones_list(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += i ? ",1" : "1";
  return s;
}

TEST(Safetensors, LoadsATensorOfAsManyDimsAsTheLimit) {
  TempDir dir;
  const std::string path = dir.file("deep.safetensors");
  write_bytes(path, st_file(f32_header(R"({"dtype":"F32","shape":[)" + ones_list(EMBER_MAX_DIMS) +
                                       R"(],"data_offsets":[0,4]})"),
                            std::string(4, '\0')));
  const Tensor t = io::load(path).at("a");
  EXPECT_EQ(t.dim(), EMBER_MAX_DIMS);
  EXPECT_EQ(t.item(), 0.0);
}

TEST(Safetensors, RejectsMalformedFilesWithClearErrors) {
  const std::string ok_entry = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\0');
  const std::vector<BadFile> cases = {
      {"empty", "", "file too short: 0 bytes"},
      {"seven bytes", std::string(7, '\0'), "file too short: 7 bytes"},
      {"4 GiB header", le64(uint64_t{1} << 32) + "{}", "header length 4294967296 is absurd"},
      {"huge header", le64(UINT64_MAX) + "{}", "is absurd"},
      {"header past the end", le64(100) + "{}", "header length 100 is larger than the 2 bytes"},
      {"invalid JSON", st_file(R"({"a":)"), "invalid JSON header"},
      {"trailing garbage", st_file("{} x"), "invalid JSON header"},
      {"not an object", st_file("[1, 2]"), "must be a JSON object"},
      {"leading space", st_file(" {}"), "must be a JSON object"},
      {"entry not an object", st_file(f32_header("3")), "tensor 'a': entry is a JSON number"},
      {"missing dtype", st_file(f32_header(R"({"shape":[2],"data_offsets":[0,8]})"), eight),
       "tensor 'a': missing dtype"},
      {"unknown dtype",
       st_file(f32_header(R"({"dtype":"F7","shape":[2],"data_offsets":[0,8]})"), eight),
       "unsupported dtype 'F7'"},
      {"unsupported dtype",
       st_file(f32_header(R"({"dtype":"U16","shape":[4],"data_offsets":[0,8]})"), eight),
       "unsupported dtype 'U16'"},
      {"dtype not a string",
       st_file(f32_header(R"({"dtype":32,"shape":[2],"data_offsets":[0,8]})"), eight),
       "dtype is a JSON number"},
      {"missing shape", st_file(f32_header(R"({"dtype":"F32","data_offsets":[0,8]})"), eight),
       "missing shape"},
      {"shape not an array",
       st_file(f32_header(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"), eight),
       "shape is a JSON number"},
      {"negative dim",
       st_file(f32_header(R"({"dtype":"F32","shape":[-1,-2],"data_offsets":[0,8]})"), eight),
       "shape [-1,-2] has a negative dim"},
      {"fractional dim",
       st_file(f32_header(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"), eight),
       "non-integer dim"},
      {"overflowing shape",
       st_file(
           f32_header(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})")),
       "overflows int64"},
      {"overflowing bytes",
       st_file(f32_header(R"({"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]})")),
       "overflows int64"},
      {"zero-size but huge dims",
       st_file(
           f32_header(R"({"dtype":"F32","shape":[0,4611686018427387904,4],"data_offsets":[0,0]})")),
       "shape [0,4611686018427387904,4] of F32 overflows int64 strides"},
      {"dim above int64",
       st_file(f32_header(R"({"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,8]})")),
       "too large"},
      {"missing offsets", st_file(f32_header(R"({"dtype":"F32","shape":[2]})"), eight),
       "missing data_offsets"},
      {"offsets not a pair",
       st_file(f32_header(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), eight),
       "data_offsets must be [begin, end]"},
      {"negative offset",
       st_file(f32_header(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"), eight),
       "data_offsets must be [begin, end]"},
      {"offsets backwards",
       st_file(f32_header(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})"), eight),
       "end before they begin"},
      {"size mismatch",
       st_file(f32_header(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})"), eight),
       "data_offsets [0, 4] cover 4 bytes but F32 [2] needs 8"},
      {"past the end", st_file(f32_header(ok_entry), std::string(7, '\0')),
       "run past the end of the file: the data section has 7 bytes"},
      {"overlap",
       st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"I32","shape":[2],"data_offsets":[4,12]}})",
               std::string(12, '\0')),
       "tensors 'a' [0, 8] and 'b' [4, 12] overlap"},
      {"overlap inside an enclosing tensor",
       st_file(R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},)"
               R"("b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]},)"
               R"("c":{"dtype":"U8","shape":[4],"data_offsets":[12,16]}})",
               std::string(16, '\0')),
       "tensors 'a' [0, 16] and 'b' [8, 12] overlap"},
      {"header length exactly 4 GiB - 1", le64(0xffffffffu) + "{}", "is absurd"},
      {"header length just over the limit", le64(100'000'001) + "{}",
       "header length 100000001 is absurd (the limit is 100000000 bytes)"},
      {"duplicate name",
       st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
               std::string(16, '\0')),
       "duplicate key 'a'"},
      {"duplicate field",
       st_file(f32_header(R"({"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]})"),
               eight),
       "duplicate key 'dtype'"},
      {"unknown field",
       st_file(f32_header(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1})"), eight),
       "unknown field 'x'"},
      {"metadata not an object", st_file(R"({"__metadata__":[]})"), "__metadata__ is a JSON array"},
      {"metadata value not a string", st_file(R"({"__metadata__":{"epoch":3}})"),
       "__metadata__ value of 'epoch' is a JSON number"},
      {"nested too deep", st_file(R"({"a":{"shape":[[[1]]]}})"), "nested deeper than 3"},
      // Note [A strict reader] in safetensors.cpp: the header's text...
      {"JSON after a NUL", st_file(std::string("{}\0{\"a\":1}  ", 12)),
       "the header has a NUL byte at offset 2"},
      {"NUL padding", st_file(std::string("{}\0\0\0\0\0\0", 8)),
       "NUL byte at offset 2 (a header is UTF-8 JSON, padded only with JSON whitespace)"},
      {"invalid UTF-8 in a name", st_file("{\"a\xff\":1}   "),
       "the header is not valid UTF-8: byte 0xff at offset 3"},
      {"overlong UTF-8", st_file("{\"\xc0\xaf\":1}  "), "not valid UTF-8: byte 0xc0 at offset 2"},
      {"UTF-16 surrogate", st_file("{\"\xed\xa0\x80\":1}"), "not valid UTF-8: byte 0xed"},
      {"truncated UTF-8", st_file("{\"a\":1}\xe2\x82"), "not valid UTF-8: byte 0xe2 at offset 7"},
      // Whitespace other than JSON's four, which the reference reader refuses too.
      {"form feed padding", st_file("{}  \f"), "invalid JSON header"},
      {"vertical tab padding", st_file("{}\v"), "invalid JSON header"},
      // (The parser's message quotes the byte it stopped at, half a character: escaped.)
      {"no-break space padding", st_file("{}\xc2\xa0"),
       "invalid JSON header: [json.exception.parse_error.101] parse error at line 1, column 3: "
       "syntax error while parsing value - invalid literal; last read: '{}\\xc2'"},
      {"form feed inside", st_file("{\f}"), "invalid JSON header"},
      {"padding then text", st_file("{}\n x"), "invalid JSON header"},
      {"leading newline", st_file("\n{}"), "must be a JSON object starting with '{'"},
      {"leading tab", st_file("\t{}"), "must be a JSON object starting with '{'"},
      // ...and the data section, which the tensors must cover exactly.
      {"data without tensors", st_file("{}      ", "abcd"),
       "the header lists no tensors but the data section has 4 bytes (the tensors must cover "
       "the data section exactly)"},
      {"data with only metadata", st_file(R"({"__metadata__":{"k":"v"}})", eight),
       "no tensors but the data section has 8 bytes"},
      {"trailing bytes", st_file(f32_header(ok_entry), std::string(12, '\0')),
       "4 bytes after the last tensor 'a', which ends at 8, belong to no tensor: the data "
       "section has 12 bytes"},
      {"bytes before the first tensor",
       st_file(f32_header(R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})"),
               std::string(12, '\0')),
       "bytes [0, 4) of the data section, before the first tensor 'a' [4, 12], belong to no "
       "tensor"},
      {"hole between tensors",
       st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"I32","shape":[2],"data_offsets":[16,24]}})",
               std::string(24, '\0')),
       "bytes [8, 16) of the data section, between tensors 'a' [0, 8] and 'b' [16, 24], belong "
       "to no tensor"},
      {"empty tensor inside another",
       st_file(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
               R"("e":{"dtype":"U8","shape":[0],"data_offsets":[4,4]}})",
               eight),
       "tensors 'a' [0, 8] and 'e' [4, 4] overlap"},
      {"empty tensor past the data",
       st_file(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
               R"("e":{"dtype":"U8","shape":[0],"data_offsets":[10,10]}})",
               std::string(10, '\0')),
       "bytes [8, 10) of the data section, between tensors 'a' [0, 8] and 'e' [10, 10]"},
      {"more dims than the limit",
       st_file(f32_header(R"({"dtype":"F32","shape":[)" + ones_list(EMBER_MAX_DIMS + 1) +
                          R"(],"data_offsets":[0,4]})"),
               std::string(4, '\0')),
       "has 65 dims, at most 64 are supported"},
      {"bool byte 2",
       st_file(R"({"a":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
               std::string("\1\2\0", 3)),
       "BOOL element 1 has byte value 2"},
  };
  TempDir dir;
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string path = dir.file("bad.safetensors");
    write_bytes(path, c.bytes);
    expect_error([&] { io::load(path); }, {"[io.load] " + path + ": ", c.message});
    if (c.message.find("BOOL") == std::string::npos) {
      expect_error([&] { io::load_metadata(path); }, {"[io.load] " + path + ": ", c.message});
    }
  }
}

TEST(Safetensors, AcceptsJsonWhitespaceAsTheReferenceReaderDoes) {
  // The reference reader parses the header with serde_json, which takes space, tab, newline and
  // carriage return inside the JSON and after it (Note [A strict reader]).
  const std::string data = raw<float>({1.5f, -2.0f});
  const std::string entry = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::vector<std::pair<const char*, std::string>> headers = {
      {"newline padding", "{\"a\":" + entry + "}\n     "},
      {"tab padding", "{\"a\":" + entry + "}\t\t"},
      {"CRLF padding", "{\"a\":" + entry + "}\r\n"},
      {"mixed padding", "{\"a\":" + entry + "} \t\r\n \n"},
      {"whitespace inside",
       "{\n\t\"a\" :\r\n {\"dtype\": \"F32\",\t\"shape\": [ 2 ],\n"
       "  \"data_offsets\": [0,\r8]\n}\n}\n"},
      {"metadata with whitespace", "{\"__metadata__\":\n {\"k\": \"v\"},\n\"a\":" + entry + "}\t"},
  };
  TempDir dir;
  for (const auto& [what, header] : headers) {
    SCOPED_TRACE(what);
    const std::string path = dir.file("ws.safetensors");
    write_bytes(path, st_file(header, data));
    const StateDict d = io::load(path);
    ASSERT_EQ(d.count("a"), 1u);
    EXPECT_EQ(tensor_bytes(d.at("a")), data);
    EXPECT_NO_THROW(io::load_metadata(path));
  }
}

TEST(Safetensors, LoadsEmptyTensorsWhereverTheyTouchTheData) {
  // Empty ranges at the start, between and at the end of the data all cover it exactly.
  TempDir dir;
  const std::string path = dir.file("e.safetensors");
  write_bytes(path, st_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                            R"("b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                            R"("c":{"dtype":"U8","shape":[0,3],"data_offsets":[2,2]},)"
                            R"("d":{"dtype":"U8","shape":[1],"data_offsets":[2,3]},)"
                            R"("z":{"dtype":"F32","shape":[0],"data_offsets":[3,3]}}    )",
                            "xyz"));
  StateDict d = io::load(path);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(tensor_bytes(d.at("b")), "xy");
  EXPECT_EQ(tensor_bytes(d.at("d")), "z");
  EXPECT_EQ(d.at("c").sizes(), Shape({0, 3}));
}

TEST(Safetensors, RejectsWhatIsNotARegularFileWithoutBlocking) {
  TempDir dir;
  expect_error([&] { io::load(dir.file("nope")); },
               {"[io.load] " + dir.file("nope") + ": cannot open: No such file"});
  fs::create_directory(dir.file("d"));
  expect_error([&] { io::load(dir.file("d")); }, {"not a regular file: it is a directory"});
  // A FIFO with no writer would block an open for reading forever; /dev/zero never ends.
  const std::string fifo = dir.file("pipe.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error([&] { io::load(fifo); },
               {"[io.load] " + fifo + ": not a regular file: it is a FIFO (named pipe)"});
  expect_error([&] { io::load_metadata(fifo); }, {"it is a FIFO"});
  expect_error([&] { io::load("/dev/zero"); }, {"not a regular file: it is a character device"});
  expect_error([&] { data::read_idx(fifo); },
               {"[data.idx] " + fifo + ": not a regular file: it is a FIFO"});
}

TEST(Safetensors, CorpusFixturesAreRefusedOrLoadedByName) {
  // Every rule the reader enforces has a file in the fuzz corpus: bad_* are refused, valid_* load.
  int bad = 0, valid = 0;
  for (const auto& entry : fs::directory_iterator(EMBER_SAFETENSORS_CORPUS)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    if (name.rfind("bad_", 0) == 0) {
      EXPECT_THROW(io::load(entry.path().string()), IoError);
      ++bad;
    } else if (name.rfind("valid_", 0) == 0) {
      EXPECT_NO_THROW(io::load(entry.path().string()));
      ++valid;
    }
  }
  EXPECT_GE(bad, 15);
  EXPECT_GE(valid, 4);
}

// Note [Temporary files of killed saves] in core/util/file_writer.cpp: a save killed before its
// rename leaves its temporary; the next save of the same file removes it.
TEST(Safetensors, ASaveRemovesTheTemporaryOfAKilledSave) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  io::save(path, {{"w", ones({2})}});
  const Tensor big = empty({int64_t{64} << 20}, TensorOptions(DType::UInt8));  // 64 MiB
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      for (;;) io::save(path, {{"w", big}});  // until killed
    } catch (...) {
    }
    ::_exit(1);
  }
  // Kill it while a temporary exists (each save takes a while to write 64 MiB).
  bool seen = false;
  for (int i = 0; i < 10'000 && !seen; ++i) {
    for (const std::string& e : dir.entries())
      seen = seen || e.rfind(".ckpt.safetensors.tmp.", 0) == 0;
    if (!seen) ::usleep(1000);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(seen) << "the child never started a save";
  std::vector<std::string> left = dir.entries();
  ASSERT_EQ(left.size(), 2u) << "the killed save left no temporary";
  const std::string stale = left[0];  // ".ckpt..." sorts before "ckpt..."
  ASSERT_EQ(stale.rfind(".ckpt.safetensors.tmp.", 0), 0u) << stale;
  // Temporaries that are not stale stay: another file's, another host's, a live process's.
  const std::string host = stale.substr(std::string(".ckpt.safetensors.tmp.").size(), 8);
  const std::vector<std::string> keep = {
      ".other.safetensors.tmp." + host + ".999999.0",
      ".ckpt.safetensors.tmp.0badc0de.999999.0",
      ".ckpt.safetensors.tmp." + host + "." + std::to_string(::getppid()) + ".0",
      ".ckpt.safetensors.tmp." + host + ".notapid.0",
  };
  for (const std::string& k : keep) write_bytes(dir.file(k), "x");
  io::save(path, {{"w", ones({3})}});
  left = dir.entries();
  EXPECT_EQ(std::count(left.begin(), left.end(), stale), 0) << "the stale temporary is still there";
  for (const std::string& k : keep) EXPECT_EQ(std::count(left.begin(), left.end(), k), 1) << k;
  EXPECT_EQ(io::load(path).at("w").numel(), 3);
}

TEST(Safetensors, EveryTruncationAndByteFlipFailsCleanly) {
  TempDir dir;
  const std::string good_path = dir.file("good.safetensors");
  io::save(good_path,
           {{"a", arange(6, TensorOptions(DType::Float32)).reshape({2, 3})},
            {"b", tensor({true, false}, DType::Bool)},
            {"c", tensor({{1, 2}}, DType::Int64)}},
           {{"k", "v"}});
  const std::string good = read_file(good_path);
  const std::string path = dir.file("t.safetensors");
  for (size_t n = 0; n < good.size(); ++n) {
    write_bytes(path, good.substr(0, n));
    EXPECT_THROW(io::load(path), Error) << "truncated to " << n << " bytes";
  }
  // Flipping header bytes must either still load or throw ember::Error; nothing else.
  std::mt19937 rng(3);
  const size_t header_end = 8 + static_cast<unsigned char>(good[0]) +
                            256 * static_cast<size_t>(static_cast<unsigned char>(good[1]));
  ASSERT_LT(header_end, good.size());
  for (int trial = 0; trial < 400; ++trial) {
    std::string bytes = good;
    size_t pos = rng() % header_end;
    bytes[pos] = static_cast<char>(rng() % 256);
    write_bytes(path, bytes);
    try {
      io::load(path);
    } catch (const Error& e) {
      EXPECT_PRED2(contains, e.what(), "[io.load]");
    }
  }
}

}  // namespace
}  // namespace ember
