// ember::io torch.save reader: files written by PyTorch load with their names, dtypes, views and
// values; every rule of the restricted unpickler refuses a file built to break it.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ember/ember.h>

#include "ember/io.h"
#include "tests/api/io/torch_files.h"
#include "tests/testing/temp_dir.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using torch_files::make_zip;
using torch_files::Pickle;
using torch_files::torch_zip;
using torch_files::wrap_pickle;
using torch_files::ZipEntry;

/** A file holding `bytes` in a fresh directory, removed at the end of the test. */
class TempFile {
 public:
  explicit TempFile(const std::string& bytes) {
    std::string tmpl = (fs::temp_directory_path() / "ember_torch_XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    path_ = tmpl;
  }
  ~TempFile() { fs::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/** The message of the IoError that loading `bytes` throws (a failure if it loads). */
std::string refusal(const std::string& bytes) {
  TempFile f(bytes);
  try {
    io::load_torch(f.path());
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[io.load] " + f.path() + ": ", 0), 0u) << what;
    return what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an IoError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "loaded";
  return "";
}

#define EXPECT_REFUSED(bytes, part)                                                                \
  do {                                                                                             \
    const std::string what_ = refusal(bytes);                                                      \
    EXPECT_NE(what_.find(part), std::string::npos) << "expected '" << (part) << "' in: " << what_; \
  } while (0)

/** Bytes of `t` (contiguous). */
std::string bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

/** A 16-float storage, each float its index. */
std::string floats16() {
  std::string s(64, '\0');
  for (int i = 0; i < 16; ++i) {
    const float f = static_cast<float>(i);
    std::memcpy(s.data() + 4 * i, &f, 4);
  }
  return s;
}

/** {"x": <tensor over storage "0" of 16 floats>} with the given view. */
std::string one_view(int64_t offset, const std::vector<int64_t>& sizes,
                     const std::vector<int64_t>& strides, int64_t numel = 16) {
  Pickle p;
  p.op('}').str("x").tensor("FloatStorage", "0", numel, offset, sizes, strides).op('s');
  return torch_zip(p.done(), {{"0", floats16()}});
}

// ---------------------------------------------------------------------------------------------
// Files written by PyTorch (tests/api/io/fixtures/make_torch_fixtures.py).

/** Checks that `got` holds exactly the tensors and values of the safetensors twin `expected`. */
void expect_same_as_twin(const io::TorchFile& got, const std::string& twin) {
  const StateDict want = io::load(twin);
  ASSERT_EQ(got.tensors.size(), want.size());
  for (const auto& [name, t] : want) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(got.tensors.contains(name));
    const Tensor& g = got.tensors.at(name);
    EXPECT_EQ(g.dtype(), t.dtype());
    EXPECT_EQ(g.sizes(), t.sizes());
    EXPECT_TRUE(g.is_contiguous());
    EXPECT_EQ(bytes_of(g), bytes_of(t));
  }
  EXPECT_EQ(got.values, io::load_metadata(twin));
}

TEST(TorchLoad, FilesWrittenByPyTorchMatchTheirSafetensorsTwins) {
  int n = 0;
  for (const char* name : {"valid_state_dict", "valid_checkpoint", "valid_parameters",
                           "valid_empty", "valid_big_endian"}) {
    SCOPED_TRACE(name);
    const io::TorchFile f = io::load_torch(std::string(EMBER_TORCH_CORPUS) + "/" + name + ".pt");
    expect_same_as_twin(f, std::string(EMBER_IO_FIXTURES) + "/" + name + ".safetensors");
    ++n;
  }
  EXPECT_EQ(n, 5);
}

TEST(TorchLoad, ACheckpointFlattensToDottedNames) {
  const io::TorchFile f = io::load_torch(std::string(EMBER_TORCH_CORPUS) + "/valid_checkpoint.pt");
  EXPECT_TRUE(f.tensors.contains("model.0.weight"));
  EXPECT_TRUE(f.tensors.contains("model.1.num_batches_tracked"));
  EXPECT_EQ(f.tensors.at("model.1.num_batches_tracked").dtype(), DType::Int64);
  EXPECT_TRUE(f.tensors.contains("optimizer.state.0.momentum_buffer"));
  EXPECT_EQ(f.values.at("epoch"), "3");
  EXPECT_EQ(f.values.at("best_acc"), "0.875");
  EXPECT_EQ(f.values.at("arch"), "mlp");
  EXPECT_EQ(f.values.at("amp"), "False");
  EXPECT_EQ(f.values.at("note"), "None");
  EXPECT_EQ(f.values.at("lrs.1"), "0.01");
  EXPECT_EQ(f.values.at("optimizer.param_groups.0.lr"), "0.1");
}

TEST(TorchLoad, TheObjectKeepsItsNesting) {
  const io::TorchValue v =
      io::load_torch_object(std::string(EMBER_TORCH_CORPUS) + "/valid_checkpoint.pt");
  using K = io::TorchValue::Kind;
  ASSERT_EQ(v.kind, K::Dict);
  const auto at = [](const io::TorchValue& d, const std::string& key) -> const io::TorchValue& {
    for (size_t k = 0; k + 1 < d.items.size(); k += 2) {
      if (d.items[k].kind == K::Str && d.items[k].s == key) return d.items[k + 1];
    }
    ADD_FAILURE() << "no key " << key;
    static const io::TorchValue none;
    return none;
  };
  EXPECT_EQ(at(v, "epoch").kind, K::Int);
  EXPECT_EQ(at(v, "epoch").i, 3);
  EXPECT_EQ(at(v, "best_acc").f, 0.875);
  EXPECT_EQ(at(v, "arch").s, "mlp");
  EXPECT_EQ(at(v, "amp").kind, K::Bool);
  EXPECT_EQ(at(v, "note").kind, K::None);
  const io::TorchValue& lrs = at(v, "lrs");
  ASSERT_EQ(lrs.items.size(), 2u);
  EXPECT_EQ(lrs.items[1].f, 0.01);
  const io::TorchValue& model = at(v, "model");
  EXPECT_EQ(at(model, "0.weight").kind, K::Tensor);
  const io::TorchFile flat =
      io::load_torch(std::string(EMBER_TORCH_CORPUS) + "/valid_checkpoint.pt");
  EXPECT_EQ(bytes_of(at(model, "0.weight").tensor), bytes_of(flat.tensors.at("model.0.weight")));
  // The optimizer state's keys are ints, as PyTorch saves them.
  const io::TorchValue& state = at(at(v, "optimizer"), "state");
  ASSERT_FALSE(state.items.empty());
  EXPECT_EQ(state.items[0].kind, K::Int);
}

TEST(TorchLoad, TheObjectIsBoundedLikeTheFlatRead) {
  const std::string put0("q\0", 2), get0("h\0", 2);
  Pickle dag;  // a list holding itself twice per level: 2^60 paths
  dag.op(']').raw(put0).op('0');
  for (int i = 0; i < 60; ++i) dag.op(']').raw(get0).op('a').raw(get0).op('a').raw(put0).op('0');
  dag.raw(get0).op('\x85');
  TempFile f(wrap_pickle(dag.done()));
  try {
    io::load_torch_object(f.path());
    ADD_FAILURE() << "loaded";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("or one that holds itself"), std::string::npos)
        << e.what();
  }
}

TEST(TorchLoad, IoLoadReadsTorchFilesByTheirFirstBytes) {
  const std::string path = std::string(EMBER_TORCH_CORPUS) + "/valid_state_dict.pt";
  const StateDict a = io::load(path);
  const StateDict b = io::load_torch(path).tensors;
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_EQ(bytes_of(t), bytes_of(b.at(name))) << name;
  EXPECT_TRUE(io::is_torch_file("PK\x03\x04", 4));
  EXPECT_FALSE(io::is_torch_file("\x10\0\0\0\0\0\0\0{}", 10));
}

TEST(TorchLoad, ContiguousViewsShareTheirStorageAsInPyTorch) {
  // tied_a and tied_b are one tensor in the file; offset_view is a strided view, copied.
  const io::TorchFile f = io::load_torch(std::string(EMBER_TORCH_CORPUS) + "/valid_state_dict.pt");
  EXPECT_EQ(f.tensors.at("tied_a").data_ptr(), f.tensors.at("tied_b").data_ptr());
  EXPECT_EQ(f.tensors.at("offset_view").sizes(), (Shape{2, 3}));
  EXPECT_EQ(f.tensors.at("scalar").dim(), 0);
  EXPECT_EQ(f.tensors.at("empty").numel(), 0);
}

TEST(TorchLoad, ViewsAtAnOffsetAndWithStrides) {
  // Storage "0" holds 0..15; a 2x3 view at offset 5 with strides (4, 2) reads 5 7 9 / 9 11 13.
  TempFile f(one_view(5, {2, 3}, {4, 2}));
  const Tensor x = io::load_torch(f.path()).tensors.at("x");
  ASSERT_EQ(x.sizes(), (Shape{2, 3}));
  const auto* p = static_cast<const float*>(x.data_ptr());
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{5, 7, 9, 9, 11, 13}));
  // A zero-size view may sit anywhere, even past the end.
  TempFile g(one_view(100, {0, 3}, {3, 1}));
  EXPECT_EQ(io::load_torch(g.path()).tensors.at("x").numel(), 0);
}

TEST(TorchLoad, BigEndianFilesAreByteswapped) {
  std::string be = floats16();
  for (size_t i = 0; i < be.size(); i += 4)
    std::swap(be[i], be[i + 3]), std::swap(be[i + 1], be[i + 2]);
  Pickle p;
  p.op('}').str("x").tensor("FloatStorage", "0", 16, 0, {16}, {1}).op('s');
  TempFile f(torch_zip(p.done(), {{"0", be}}, "big"));
  EXPECT_EQ(bytes_of(io::load_torch(f.path()).tensors.at("x")), floats16());
}

TEST(TorchLoad, TheArchiveMayHaveAnyRootName) {
  Pickle p;
  p.op('}').str("x").tensor("FloatStorage", "0", 16, 0, {16}, {1}).op('s');
  TempFile f(torch_zip(p.done(), {{"0", floats16()}}, "little", "resnet18-f37072fd/"));
  EXPECT_EQ(io::load_torch(f.path()).tensors.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Refusals: one file per rule (Note [A restricted unpickler] in api/io/torch.cpp).

TEST(TorchLoad, CorpusFixturesAreRefusedOrLoadedByName) {
  int bad = 0, valid = 0;
  for (const auto& entry : fs::directory_iterator(EMBER_TORCH_CORPUS)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    std::string bytes = read_file(entry.path().string());
    if (!torch_files::is_whole_file(bytes)) bytes = wrap_pickle(bytes);
    TempFile f(bytes);
    if (name.rfind("bad_", 0) == 0) {
      EXPECT_THROW(io::load_torch(f.path()), IoError);
      ++bad;
    } else if (name.rfind("valid_", 0) == 0) {
      EXPECT_NO_THROW(io::load_torch(f.path()));
      ++valid;
    }
  }
  EXPECT_GE(bad, 12);
  EXPECT_GE(valid, 7);
}

TEST(TorchLoad, RefusesWhatIsNotATorchSaveArchive) {
  EXPECT_REFUSED(read_file(std::string(EMBER_TORCH_CORPUS) + "/bad_legacy.pt"),
                 "legacy torch.save format of PyTorch before 1.6");
  EXPECT_REFUSED(std::string("PK\x03\x04 not really a zip"), "not a readable zip archive");
  EXPECT_REFUSED(make_zip({{"archive/other.txt", "hi"}}), "without <name>/data.pkl");
  EXPECT_REFUSED(
      make_zip({{"a/data.pkl", Pickle().op('}').done()}, {"b/data.pkl", Pickle().op('}').done()}}),
      "2 records hold a data.pkl");
  EXPECT_REFUSED(make_zip({{"archive/data.pkl", Pickle().op('}').done()},
                           {"archive/data/0", floats16()},
                           {"archive/data/0", floats16()}}),
                 "not a readable zip archive: File already exists");
  EXPECT_REFUSED(torch_zip(Pickle().op('}').done(), {}, "middle"),
                 "'archive/byteorder' is 'middle'");
}

TEST(TorchLoad, RefusesCompressedOversizedAndCorruptEntries) {
  Pickle p;
  p.op('}').str("x").tensor("FloatStorage", "0", 16, 0, {16}, {1}).op('s');
  // Deflated: torch.save never compresses, and a stored entry cannot expand past the file.
  EXPECT_REFUSED(make_zip({{"archive/data.pkl", p.done()},
                           {"archive/data/0", std::string(1 << 20, '\0'), /*deflate=*/true}}),
                 "is compressed (method 8)");
  ZipEntry locked{"archive/data/0", floats16()};
  locked.encrypted = true;
  EXPECT_REFUSED(make_zip({{"archive/data.pkl", p.done()}, locked}),
                 "entry 'archive/data/0' is encrypted");
  // An entry whose header claims more bytes than the whole file: refused before allocating.
  EXPECT_REFUSED(make_zip({{"archive/data.pkl", p.done()},
                           {"archive/data/0", floats16(), false, 0x7fffff00u}}),
                 "entry 'archive/data/0' claims 2147483392 bytes, more than the whole file");
  // Stored with a size unlike its bytes: refused (by libzip, or by the read that ends early).
  Pickle bytes66;
  bytes66.op('}').str("x").tensor("ByteStorage", "0", 66, 0, {66}, {1}).op('s');
  EXPECT_REFUSED(
      make_zip({{"archive/data.pkl", bytes66.done()}, {"archive/data/0", floats16(), false, 66u}}),
      "entry 'archive/data/0': Zip archive inconsistent");
  // A changed byte fails the CRC check.
  std::string corrupt = torch_zip(p.done(), {{"0", floats16()}});
  corrupt[corrupt.find(floats16()) + 9] ^= 0x40;
  EXPECT_REFUSED(corrupt, "archive/data/0");
  EXPECT_REFUSED(read_file(std::string(EMBER_TORCH_CORPUS) + "/bad_crc.pt"), "CRC");
  const std::string whole = torch_zip(p.done(), {{"0", floats16()}});
  EXPECT_REFUSED(whole.substr(0, whole.size() - 30), "not a readable zip archive");
}

TEST(TorchLoad, RefusesGlobalsOtherThanTensorsAndContainers) {
  EXPECT_REFUSED(wrap_pickle(read_file(std::string(EMBER_TORCH_CORPUS) + "/bad_os_system.pkl")),
                 "global 'posix.system' is not allowed");
  EXPECT_REFUSED(read_file(std::string(EMBER_TORCH_CORPUS) + "/bad_numpy_array.pt"),
                 "is not allowed");
  // STACK_GLOBAL (protocol 4) is checked the same way.
  EXPECT_REFUSED(wrap_pickle(Pickle().str("builtins").str("eval").op('\x93').done()),
                 "global 'builtins.eval' is not allowed");
  EXPECT_REFUSED(wrap_pickle(Pickle().integer(1).str("eval").op('\x93').done()),
                 "STACK_GLOBAL's module must be a str");
  // Calling a storage type, or something that is not a global at all.
  EXPECT_REFUSED(wrap_pickle(Pickle().global("torch", "FloatStorage").op(')').op('R').done()),
                 "REDUCE calls a global 'torch.FloatStorage'");
  EXPECT_REFUSED(wrap_pickle(Pickle().op('}').op(')').op('R').done()), "REDUCE calls a dict");
  EXPECT_REFUSED(
      wrap_pickle(Pickle().global("collections", "OrderedDict").integer(1).op('R').done()),
      "REDUCE's arguments must be a tuple");
  EXPECT_REFUSED(wrap_pickle(std::string("\x80\x02") + "c" + std::string(5000, 'a') + "\nb\n."),
                 "overlong GLOBAL line");
}

TEST(TorchLoad, RefusesOpcodesAndStacksThatAreNotAStateDict) {
  const auto wrapped = [](const Pickle& p) { return wrap_pickle(p.done()); };
  EXPECT_REFUSED(wrap_pickle("\x80\x06}."), "pickle protocol 6");
  EXPECT_REFUSED(wrapped(Pickle().op('}').raw("\x81")), "pickle opcode 0x81 is not read");
  EXPECT_REFUSED(wrapped(Pickle().raw("I1\n")), "pickle opcode 0x49 'I' is not read");
  EXPECT_REFUSED(wrap_pickle(Pickle().op('}').bytes()), "without STOP");
  EXPECT_REFUSED(wrapped(Pickle().raw(std::string("X\xff\xff"
                                                  "\0\0"
                                                  "ab",
                                                  7))),
                 "truncated");
  EXPECT_REFUSED(wrap_pickle(read_file(std::string(EMBER_TORCH_CORPUS) + "/bad_truncated.pkl")),
                 "truncated");
  EXPECT_REFUSED(wrapped(Pickle().op('}').op('}')), "STOP with 2 values");
  EXPECT_REFUSED(wrapped(Pickle().op('}').op('(')), "1 open marks");
  EXPECT_REFUSED(wrapped(Pickle().op('0')), "stack underflow");
  EXPECT_REFUSED(wrapped(Pickle().op('}').op('(').op('0')), "stack underflow");
  EXPECT_REFUSED(wrapped(Pickle().op('}').op('t')), "no MARK to pop to");
  EXPECT_REFUSED(wrapped(Pickle().raw("h\x07")), "memo entry 7 was never stored");
  EXPECT_REFUSED(wrapped(Pickle().raw(std::string("\x8a\x09") + std::string(9, '\x01'))),
                 "an integer of 9 bytes");
  EXPECT_REFUSED(wrapped(Pickle().op(']').op('}').str("k").op('s').op('a')),
                 "SETITEM's target must be a dict");
  EXPECT_REFUSED(wrapped(Pickle().op('}').integer(1).op('a')), "APPEND's target must be a list");
  EXPECT_REFUSED(wrapped(Pickle().op('}').op('(').str("k").op('u')), "SETITEMS with an odd number");
  EXPECT_REFUSED(wrapped(Pickle().op('}').op(']').op('(').op('e').op('0').op(')').op('(').op('e')),
                 "APPENDS's target must be a list");
  EXPECT_REFUSED(wrapped(Pickle().op(']').op('}').op('b')), "BUILD sets the state of a list");
  EXPECT_REFUSED(
      wrapped(
          Pickle().global("collections", "OrderedDict").integer(1).integer(2).op('\x86').op('R')),
      "OrderedDict() takes at most one argument");
  EXPECT_REFUSED(wrapped(Pickle()
                             .global("collections", "OrderedDict")
                             .op(']')
                             .integer(3)
                             .op('a')
                             .op('\x85')
                             .op('R')),
                 "a list of (key, value) pairs");
}

TEST(TorchLoad, RefusesStoragesThatDoNotMatchTheirEntries) {
  const auto with_storage = [](const std::string& type, const std::string& key, int64_t numel) {
    Pickle p;
    p.op('}').str("x").tensor(type, key, numel, 0, {numel}, {1}).op('s');
    return p.done();
  };
  EXPECT_REFUSED(wrap_pickle(read_file(std::string(EMBER_TORCH_CORPUS) + "/bad_storage_size.pkl")),
                 "needs 80 bytes but its entry holds 64");
  EXPECT_REFUSED(wrap_pickle(with_storage("FloatStorage", "9", 16)),
                 "has no entry 'archive/data/9'");
  EXPECT_REFUSED(wrap_pickle(with_storage("ComplexFloatStorage", "0", 8)),
                 "global 'torch.ComplexFloatStorage' is not allowed");
  EXPECT_REFUSED(wrap_pickle(with_storage("FloatStorage", "0", -1)), "negative numel -1");
  EXPECT_REFUSED(wrap_pickle(with_storage("LongStorage", "0", int64_t{1} << 61)), "overflow int64");
  // One key viewed as two dtypes.
  Pickle two;
  two.op('}').str("a").tensor("FloatStorage", "0", 16, 0, {16}, {1}).op('s');
  two.str("b").tensor("IntStorage", "0", 16, 0, {16}, {1}).op('s');
  EXPECT_REFUSED(wrap_pickle(two.done()), "is used as 16 float32 and as 16 int32");
  // A bool storage holding a byte other than 0 and 1.
  Pickle b;
  b.op('}').str("x").tensor("BoolStorage", "0", 4, 0, {4}, {1}).op('s');
  EXPECT_REFUSED(torch_zip(b.done(), {{"0", std::string("\x01\x00\x02\x01", 4)}}),
                 "bool element 2 has byte value 2");
  // Malformed persistent ids.
  EXPECT_REFUSED(wrap_pickle(Pickle().str("storage").op('Q').done()),
                 "a persistent id must be ('storage', type, key, location, numel)");
  EXPECT_REFUSED(wrap_pickle(Pickle()
                                 .op('(')
                                 .str("storage")
                                 .global("collections", "OrderedDict")
                                 .str("0")
                                 .str("cpu")
                                 .integer(16)
                                 .op('t')
                                 .op('Q')
                                 .done()),
                 "not a torch.<T>Storage");
}

TEST(TorchLoad, RefusesViewsOutsideTheirStorage) {
  EXPECT_REFUSED(
      wrap_pickle(read_file(std::string(EMBER_TORCH_CORPUS) + "/bad_view_out_of_range.pkl")),
      "reach element 25 of a storage of 16");
  EXPECT_REFUSED(one_view(0, {4, 4}, {5, 1}), "reach element 18 of a storage of 16");
  EXPECT_REFUSED(one_view(-1, {2}, {1}), "negative storage offset -1");
  EXPECT_REFUSED(one_view(0, {-2}, {1}), "must be non-negative");
  EXPECT_REFUSED(one_view(0, {2}, {-1}), "must be non-negative");
  EXPECT_REFUSED(one_view(0, {2, 2}, {1}), "2 sizes and 1 strides");
  EXPECT_REFUSED(one_view(0, {2, 2}, {int64_t{1} << 62, int64_t{1} << 62}), "past int64");
  EXPECT_REFUSED(one_view(0, {int64_t{1} << 40, int64_t{1} << 40}, {0, 0}),
                 "more elements than its storage's 16");
  EXPECT_REFUSED(read_file(std::string(EMBER_TORCH_CORPUS) + "/bad_expanded_view.pt"),
                 "more elements than its storage's 1");
  // Strided views of one storage copy at most the file's size between them: 40 transposed views
  // of a 16 KiB storage would copy 640 KiB out of a 24 KiB file.
  Pickle p;
  p.op('}');
  for (int i = 0; i < 40; ++i) {
    p.str("t" + std::to_string(i)).tensor("FloatStorage", "0", 4096, 0, {64, 64}, {1, 64}).op('s');
  }
  EXPECT_REFUSED(torch_zip(p.done(), {{"0", std::string(16384, '\0')}}), "the strided views copy");
  // Wrong kinds of arguments.
  Pickle args;
  args.global("torch._utils", "_rebuild_tensor_v2").integer(1).op('\x85').op('R');
  EXPECT_REFUSED(wrap_pickle(args.done()), "_rebuild_tensor_v2 takes 6 or 7 arguments, got 1");
  Pickle notstorage;
  notstorage.global("torch._utils", "_rebuild_tensor_v2").op('(').integer(0).integer(0);
  notstorage.int_tuple({1}).int_tuple({1}).op('\x89').op('}').op('t').op('R');
  EXPECT_REFUSED(wrap_pickle(notstorage.done()), "_rebuild_tensor_v2's storage must be a storage");
  Pickle param;
  param.global("torch._utils", "_rebuild_parameter")
      .integer(1)
      .op('\x89')
      .op('}')
      .op('\x87')
      .op('R');
  EXPECT_REFUSED(wrap_pickle(param.done()), "a parameter's data must be a tensor, got a int");
  Pickle param2;
  param2.global("torch._utils", "_rebuild_parameter").integer(1).op('\x85').op('R');
  EXPECT_REFUSED(wrap_pickle(param2.done()), "takes 3 arguments, got 1");
}

TEST(TorchLoad, RefusesPersistentIdsAndTensorArgumentsOfTheWrongKind) {
  // Pickle fragments (without the PROTO header of Pickle()).
  const auto frag = [](const std::function<void(Pickle&)>& build) {
    Pickle p;
    build(p);
    return p.bytes().substr(2);
  };
  const auto pid = [&](const std::string& key, const std::string& location,
                       const std::string& numel) {
    return frag([&](Pickle& p) {
      p.op('(').str("storage").global("torch", "FloatStorage").raw(key).raw(location).raw(numel);
      p.op('t');
    });
  };
  const std::string key = frag([](Pickle& p) { p.str("0"); });
  const std::string cpu = frag([](Pickle& p) { p.str("cpu"); });
  const std::string sixteen = frag([](Pickle& p) { p.integer(16); });
  const std::string zero = frag([](Pickle& p) { p.integer(0); });
  const std::string text = frag([](Pickle& p) { p.str("x"); });
  const std::string sizes = frag([](Pickle& p) { p.int_tuple({16}); });
  const std::string strides = frag([](Pickle& p) { p.int_tuple({1}); });
  const std::string no = frag([](Pickle& p) { p.op('\x89'); });
  const std::string hooks = frag([](Pickle& p) { p.ordered_dict(); });
  const auto file = [&](const std::string& id, const std::string& offset, const std::string& size,
                        const std::string& stride, const std::string& grad,
                        const std::string& hook) {
    Pickle p;
    p.op('}').str("x").global("torch._utils", "_rebuild_tensor_v2").op('(').raw(id).op('Q');
    p.raw(offset).raw(size).raw(stride).raw(grad).raw(hook).op('t').op('R').op('s');
    return wrap_pickle(p.done());
  };
  const std::string good = pid(key, cpu, sixteen);
  TempFile ok(file(good, zero, sizes, strides, no, hooks));
  EXPECT_EQ(io::load_torch(ok.path()).tensors.at("x").numel(), 16);
  EXPECT_REFUSED(file(pid(zero, cpu, sixteen), zero, sizes, strides, no, hooks),
                 "a storage key must be a str, got a int");
  EXPECT_REFUSED(file(pid(key, zero, sixteen), zero, sizes, strides, no, hooks),
                 "a storage location must be a str, got a int");
  EXPECT_REFUSED(file(pid(key, cpu, text), zero, sizes, strides, no, hooks),
                 "a storage's numel must be a int, got a str");
  EXPECT_REFUSED(file(good, text, sizes, strides, no, hooks),
                 "a storage offset must be a int, got a str");
  EXPECT_REFUSED(file(good, zero, frag([](Pickle& p) { p.op(']'); }), strides, no, hooks),
                 "a tensor's sizes must be a tuple, got a list");
  EXPECT_REFUSED(file(good, zero, sizes, text, no, hooks),
                 "a tensor's strides must be a tuple, got a str");
  EXPECT_REFUSED(
      file(good, zero, frag([](Pickle& p) { p.op('(').str("16").op('t'); }), strides, no, hooks),
      "a size must be a int, got a str");
  EXPECT_REFUSED(
      file(good, zero, sizes, frag([](Pickle& p) { p.op('(').op('N').op('t'); }), no, hooks),
      "a stride must be a int, got a None");
  EXPECT_REFUSED(file(good, zero, sizes, strides, zero, hooks),
                 "requires_grad must be a bool, got a int");
  EXPECT_REFUSED(file(good, zero, sizes, strides, no, frag([](Pickle& p) { p.op('N'); })),
                 "backward hooks must be a dict, got a None");
}

TEST(TorchLoad, RefusesWhatDoesNotFlattenToNames) {
  const auto corpus = [](const char* name) {
    return wrap_pickle(read_file(std::string(EMBER_TORCH_CORPUS) + "/" + name));
  };
  EXPECT_REFUSED(corpus("bad_self_reference.pkl"), "nested deeper than 64 levels");
  EXPECT_REFUSED(corpus("bad_deep_nesting.pkl"), "nested deeper than 64 levels");
  // A list holding itself twice per level: finite depth, 2^60 paths. Refused by the work it
  // would take, before any time is spent.
  const std::string put0("q\0", 2), get0("h\0", 2);
  Pickle dag;
  dag.op(']').raw(put0).op('0');
  for (int i = 0; i < 60; ++i) dag.op(']').raw(get0).op('a').raw(get0).op('a').raw(put0).op('0');
  dag.raw(get0).op('\x85');
  EXPECT_REFUSED(wrap_pickle(dag.done()), "or one that holds itself");
  EXPECT_REFUSED(
      wrap_pickle(
          Pickle().op('}').raw(std::string("G\x3f\xf0\0\0\0\0\0\0", 9)).integer(1).op('s').done()),
      "a dict key that is a float");
  EXPECT_REFUSED(wrap_pickle(Pickle().op('}').str("\xff").integer(1).op('s').done()),
                 "not valid UTF-8 (byte 0xff at offset 0)");
  // An empty key would name an entry '' (found by torch_fuzz), or "a." one level down.
  EXPECT_REFUSED(wrap_pickle(Pickle().op('}').str("").integer(1).op('s').done()),
                 "'' has an empty key");
  EXPECT_REFUSED(
      wrap_pickle(Pickle().op('}').str("a").op('}').str("").integer(1).op('s').op('s').done()),
      "'a' has an empty key");
  // One long key, memoized, at every level: the joined names are refused past 64 KiB.
  Pickle longname;
  longname.op('}').str(std::string(20000, 'k')).raw(put0);
  for (int i = 0; i < 5; ++i) longname.op('}').raw(get0);
  longname.integer(1);
  for (int i = 0; i < 5; ++i) longname.op('s');
  longname.op('s');
  EXPECT_REFUSED(wrap_pickle(longname.done()), "a name of more than 65536 bytes");
  Pickle dup;
  dup.op('}').str("a.b").integer(1).op('s').str("a").op('}').str("b").integer(2).op('s').op('s');
  EXPECT_REFUSED(wrap_pickle(dup.done()), "two entries are both named 'a.b'");
  Pickle single;
  single.tensor("FloatStorage", "0", 16, 0, {16}, {1});
  EXPECT_REFUSED(wrap_pickle(single.done()), "holds a single tensor, not a dict of tensors");
  EXPECT_REFUSED(wrap_pickle(Pickle().integer(3).done()), "holds a single int");
  EXPECT_REFUSED(
      wrap_pickle(Pickle().op('}').str("f").global("torch", "FloatStorage").op('s').done()),
      "'f' is a bare global");
}

}  // namespace
}  // namespace ember
