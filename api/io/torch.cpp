// torch.save reader: a zip archive (libzip) holding a pickle of the object and one entry per
// storage, rebuilt by a restricted unpickler that never runs code.
#include "ember/io/torch.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/io/open_file.h"
#include "api/io/text.h"
#include "ember/ops/factory.h"

namespace ember::io {

// Note [A restricted unpickler]
// torch.save writes a zip archive: `<name>/data.pkl`, a pickle of the saved object, and
// `<name>/data/<key>`, the raw bytes of each storage, plus `<name>/byteorder` ("little" or
// "big") and version records. Python's pickle rebuilds objects by calling whatever the file
// names (GLOBAL then REDUCE), so loading a pickle runs the file's code; torch.load's
// weights_only mode restricts what may be called, and this reader goes further: it knows a fixed
// list of names and builds every value itself, so nothing in a file is ever called.
//  - Values: None, bool, int (up to 64 bits), float, str, tuple, list, dict and
//    collections.OrderedDict (its state, the `_metadata` of module versions, is dropped).
//  - Tensors: torch._utils._rebuild_tensor_v2(storage, offset, sizes, strides, requires_grad,
//    hooks[, metadata]) over a persistent id ('storage', torch.<T>Storage, key, location, numel);
//    _rebuild_parameter and _rebuild_parameter_with_state give their tensor. The dtype comes from
//    the storage type; the location is ignored (everything loads onto the CPU, as with
//    map_location="cpu"). A view that is contiguous shares its storage, as in PyTorch; others
//    are copied.
//  - Anything else (another GLOBAL, any other callable, an unknown opcode) is refused, naming it.
// Every count comes from the file, so each is checked before it is used: an entry's size against
// the file's (entries must be stored uncompressed, as torch.save writes them, so nothing expands:
// no zip bombs), a storage's size against its numel and dtype, a view's furthest element
// against its storage, the copies of strided views against the file's size, nesting depth and
// the work of flattening against fixed limits. The values are kept in an arena and refer to each
// other by plain pointers, so a pickle that puts a list inside itself (through the memo) makes no
// ownership cycle; flattening refuses it by depth.
//
// Note [Nested torch.save files]
// torch.save takes any object; users save a state_dict or a checkpoint such as
// {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}. The result is
// flattened as Ember's own checkpoints are named: dict keys (str, or int as optimizer states
// have) and list or tuple indices are joined with dots, "model.fc.weight",
// "optimizer.state.0.momentum_buffer", "optimizer.param_groups.0.lr". Tensors go to
// TorchFile::tensors; the other leaves to TorchFile::values as Python's str() prints them, so
// `ember convert` keeps them as safetensors metadata. A plain state_dict therefore loads with
// PyTorch's own names. Two paths that flatten to one name ({"a.b": x, "a": {"b": y}}) are
// refused, as is a file holding a single tensor or value instead of a container.

namespace {

constexpr const char* kOp = "[io.load]";
// Containers nested deeper than this are refused (a state_dict nests 2 deep, a checkpoint 5).
constexpr int kMaxDepth = 64;
// A GLOBAL's line longer than this is not a module path.
constexpr size_t kMaxLineBytes = 4096;
// A flattened name longer than this is refused: the memo lets a file repeat one long key at every
// level of nesting for free, and each level's name is held while the next is built.
constexpr size_t kMaxNameBytes = size_t{1} << 16;
// The legacy format (PyTorch < 1.6) starts with PROTO 2 and LONG1 of this magic number.
constexpr unsigned char kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc,
                                          0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8};

struct StorageType {
  const char* name;
  DType dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", DType::Float32}, {"DoubleStorage", DType::Float64},
    {"HalfStorage", DType::Float16},  {"BFloat16Storage", DType::BFloat16},
    {"LongStorage", DType::Int64},    {"IntStorage", DType::Int32},
    {"CharStorage", DType::Int8},     {"ByteStorage", DType::UInt8},
    {"BoolStorage", DType::Bool},
};

/** What a GLOBAL may name. */
enum class Callable {
  OrderedDict,
  RebuildTensorV2,
  RebuildParameter,
  RebuildParameterWithState,
  StorageType,
};

// ---------------------------------------------------------------------------------------------
// The archive.

struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

std::string zip_error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

/** A torch.save zip archive open for reading: its record prefix and entries by name. */
class Archive {
 public:
  explicit Archive(const std::string& path) : path_(path) {
    const int fd = detail::open_regular_file(path, "io.load");
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      EMBER_CHECK_IO(false, "{} {}: cannot stat: {}", kOp, path, std::strerror(err));
    }
    file_bytes_ = static_cast<uint64_t>(st.st_size);
    // ZIP_CHECKCONS: the local headers must agree with the central directory, and two entries
    // of one name (which readers resolve differently) are refused.
    int code = 0;
    zip_t* z = zip_fdopen(fd, ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (z == nullptr) {
      ::close(fd);  // zip_fdopen owns the descriptor only when it succeeds
      EMBER_CHECK_IO(false, "{} {}: not a readable zip archive: {} (a torch.save file is a zip)",
                     kOp, path, zip_error_text(code));
    }
    zip_.reset(z);
    // The records live under one top-level folder, named after the file when it was saved.
    const zip_int64_t n = zip_get_num_entries(z, 0);
    std::vector<std::string> roots;
    std::string some;
    for (zip_int64_t i = 0; i < n; ++i) {
      const char* name = zip_get_name(z, static_cast<zip_uint64_t>(i), 0);
      if (name == nullptr) continue;
      const std::string_view s(name);
      if (some.size() < 200) some += fmt::format("{}'{}'", some.empty() ? "" : ", ", s);
      const size_t slash = s.find('/');
      if (slash != std::string_view::npos && s.substr(slash) == "/data.pkl") {
        roots.emplace_back(s.substr(0, slash + 1));
      }
    }
    EMBER_CHECK_IO(!roots.empty(),
                   "{} {}: a zip archive without <name>/data.pkl, so not a torch.save file: it "
                   "has {} entries ({})",
                   kOp, path, n, some.empty() ? std::string("none") : some);
    EMBER_CHECK_IO(roots.size() == 1,
                   "{} {}: {} records hold a data.pkl ('{}data.pkl' and '{}data.pkl'); a "
                   "torch.save file has one",
                   kOp, path, roots.size(), roots[0], roots[1]);
    prefix_ = roots[0];
  }

  const std::string& prefix() const { return prefix_; }
  uint64_t file_bytes() const { return file_bytes_; }

  /** The index of record `name` (under the prefix), or nullopt. */
  std::optional<zip_uint64_t> find(const std::string& name) const {
    const zip_int64_t i = zip_name_locate(zip_.get(), (prefix_ + name).c_str(), 0);
    if (i < 0) return std::nullopt;
    return static_cast<zip_uint64_t>(i);
  }

  /** The size of entry `index`, checked to be stored uncompressed and unencrypted inside the
   *  file (Note [A restricted unpickler]). */
  uint64_t size(zip_uint64_t index, const std::string& name) const {
    zip_stat_t st;
    zip_stat_init(&st);
    EMBER_CHECK_IO(zip_stat_index(zip_.get(), index, 0, &st) == 0, "{} {}: entry '{}{}': {}", kOp,
                   path_, prefix_, name, zip_strerror(zip_.get()));
    EMBER_CHECK_IO((st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE,
                   "{} {}: entry '{}{}' is compressed (method {}); torch.save stores entries "
                   "uncompressed (save it again with torch.save)",
                   kOp, path_, prefix_, name, static_cast<int>(st.comp_method));
    EMBER_CHECK_IO(!(st.valid & ZIP_STAT_ENCRYPTION_METHOD) || st.encryption_method == ZIP_EM_NONE,
                   "{} {}: entry '{}{}' is encrypted", kOp, path_, prefix_, name);
    EMBER_CHECK_IO((st.valid & ZIP_STAT_SIZE) && st.size <= file_bytes_,
                   "{} {}: entry '{}{}' claims {} bytes, more than the whole file ({} bytes)", kOp,
                   path_, prefix_, name, st.size, file_bytes_);
    return st.size;
  }

  /** Reads exactly `bytes` bytes of entry `index` into `dst`; libzip checks its CRC. */
  void read(zip_uint64_t index, const std::string& name, void* dst, uint64_t bytes) const {
    std::unique_ptr<zip_file_t, ZipFileClose> f(zip_fopen_index(zip_.get(), index, 0));
    EMBER_CHECK_IO(f != nullptr, "{} {}: cannot open entry '{}{}': {}", kOp, path_, prefix_, name,
                   zip_strerror(zip_.get()));
    auto* p = static_cast<char*>(dst);
    for (uint64_t done = 0; done < bytes;) {
      const zip_int64_t got =
          zip_fread(f.get(), p + done, std::min<uint64_t>(bytes - done, uint64_t{1} << 30));
      EMBER_CHECK_IO(got > 0, "{} {}: entry '{}{}': {}", kOp, path_, prefix_, name,
                     got < 0 ? std::string(zip_file_strerror(f.get()))
                             : fmt::format("ends after {} of its {} bytes", done, bytes));
      done += static_cast<uint64_t>(got);
    }
    // libzip checks the CRC when a read reaches the end of the entry, so one more read is needed.
    char probe = 0;
    const zip_int64_t more = zip_fread(f.get(), &probe, 1);
    EMBER_CHECK_IO(more == 0, "{} {}: entry '{}{}': {}", kOp, path_, prefix_, name,
                   more < 0 ? std::string(zip_file_strerror(f.get()))
                            : fmt::format("holds more than the {} bytes it declares", bytes));
  }

  /** The whole of record `name`, or nullopt if there is none. */
  std::optional<std::string> read_record(const std::string& name) const {
    const std::optional<zip_uint64_t> i = find(name);
    if (!i) return std::nullopt;
    std::string out(size(*i, name), '\0');
    read(*i, name, out.data(), out.size());
    return out;
  }

 private:
  std::string path_, prefix_;
  uint64_t file_bytes_ = 0;
  std::unique_ptr<zip_t, ZipDiscard> zip_;
};

// ---------------------------------------------------------------------------------------------
// Values.

/** One value of the pickle; values refer to each other by pointers into the reader's arena. */
struct Value {
  enum Kind { kNone, kBool, kInt, kFloat, kStr, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = kNone;
  bool b = false;
  int64_t i = 0;                 // Int; Storage: numel
  double f = 0;                  // Float
  std::string s;                 // Str; Storage: its key; Global: "module.name"
  std::vector<Value*> items;     // Tuple, List; Dict: key, value, key, value, ...
  Callable callable{};           // Global
  DType dtype = DType::Float32;  // Storage, and Global of a storage type
  Tensor tensor;                 // Tensor; Storage: its elements, once read
};

const char* kind_name(Value::Kind k) {
  constexpr const char* kNames[] = {"None", "bool", "int",    "float",   "str",   "tuple",
                                    "list", "dict", "global", "storage", "tensor"};
  return kNames[k];
}

/** Python's repr of a float: shortest round trip, with ".0" on integral values. */
std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// ---------------------------------------------------------------------------------------------
// The unpickler (Note [A restricted unpickler]).

class Reader {
 public:
  Reader(const std::string& path, const Archive& archive, std::string_view pickle, bool big_endian)
      : path_(path), archive_(archive), data_(pickle), big_endian_(big_endian) {}

  /** Runs the pickle to its STOP and returns the object it built. */
  const Value* run() {
    while (pos_ < data_.size()) {
      op_at_ = pos_;
      const auto op = static_cast<unsigned char>(data_[pos_++]);
      if (op == '.') {  // STOP
        check(marks_.empty() && stack_.size() == 1,
              "STOP with {} values on the stack and {} open marks (expected one value)",
              stack_.size(), marks_.size());
        return stack_.back();
      }
      step(op);
    }
    fail("the pickle ends at byte {} without STOP (truncated?)", data_.size());
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw IoError(fmt::format("{} {}: {}data.pkl at byte {}: {}", kOp, path_, archive_.prefix(),
                              op_at_, fmt::format(f, std::forward<Args>(args)...)));
  }
  template <typename... Args>
  void check(bool ok, fmt::format_string<Args...> f, Args&&... args) const {
    if (!ok) fail(f, std::forward<Args>(args)...);
  }

  Value* make(Value::Kind kind) {
    arena_.push_back(std::make_unique<Value>());
    arena_.back()->kind = kind;
    return arena_.back().get();
  }

  // Reading the opcode's argument bytes.
  std::string_view take(uint64_t n) {
    check(n <= data_.size() - pos_, "truncated: opcode 0x{:02x} needs {} bytes, {} are left",
          static_cast<unsigned char>(data_[op_at_]), n, data_.size() - pos_);
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t take_le(int n) {
    const std::string_view b = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b[k]);
    return v;
  }
  std::string_view take_line() {
    const size_t end = data_.find('\n', pos_);
    check(end != std::string_view::npos && end - pos_ <= kMaxLineBytes,
          "truncated or overlong GLOBAL line (a module path ends with a newline)");
    std::string_view out = data_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }

  // The stack. Popping never reaches below the innermost mark, as in CPython.
  size_t fence() const { return marks_.empty() ? 0 : marks_.back(); }
  Value* pop() {
    check(stack_.size() > fence(), "stack underflow");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    check(stack_.size() > fence(), "stack underflow");
    return stack_.back();
  }
  std::vector<Value*> pop_to_mark() {
    check(!marks_.empty(), "no MARK to pop to");
    std::vector<Value*> out(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()),
                            stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return out;
  }
  Value* expect(Value* v, Value::Kind kind, const char* what) {
    check(v->kind == kind, "{} must be a {}, got a {}", what, kind_name(kind), kind_name(v->kind));
    return v;
  }
  void push_int(int64_t i) {
    Value* v = make(Value::kInt);
    v->i = i;
    stack_.push_back(v);
  }
  void push_str(std::string_view s) {
    Value* v = make(Value::kStr);
    v->s = s;
    stack_.push_back(v);
  }
  void push_long(uint64_t nbytes) {
    check(nbytes <= 8, "an integer of {} bytes does not fit in 64 bits", nbytes);
    const std::string_view b = take(nbytes);
    uint64_t v = 0;
    for (size_t k = nbytes; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[k]);
    if (nbytes > 0 && nbytes < 8 && (static_cast<unsigned char>(b[nbytes - 1]) & 0x80)) {
      v |= ~uint64_t{0} << (8 * nbytes);  // sign-extend
    }
    push_int(static_cast<int64_t>(v));
  }
  void memo_put(uint64_t index) { memo_[index] = top(); }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    check(it != memo_.end(), "memo entry {} was never stored", index);
    stack_.push_back(it->second);
  }

  void step(unsigned char op) {
    switch (op) {
      case 0x80: {  // PROTO
        const auto proto = static_cast<unsigned char>(take(1)[0]);
        check(proto >= 2 && proto <= 5, "pickle protocol {} (torch.save writes 2; 2 to 5 are read)",
              proto);
        break;
      }
      case 0x95:
        take(8);
        break;  // FRAME: a length hint
      case '(':
        marks_.push_back(stack_.size());
        break;  // MARK
      case '0':
        pop();
        break;  // POP
      case '1':
        pop_to_mark();
        break;  // POP_MARK
      case '2':
        stack_.push_back(top());
        break;  // DUP
      case 'N':
        stack_.push_back(make(Value::kNone));
        break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Value* v = make(Value::kBool);
        v->b = op == 0x88;
        stack_.push_back(v);
        break;
      }
      case 'J':
        push_int(static_cast<int32_t>(take_le(4)));
        break;  // BININT
      case 'K':
        push_int(static_cast<int64_t>(take_le(1)));
        break;  // BININT1
      case 'M':
        push_int(static_cast<int64_t>(take_le(2)));
        break;  // BININT2
      case 0x8a:
        push_long(take_le(1));
        break;  // LONG1
      case 0x8b:
        push_long(take_le(4));
        break;     // LONG4
      case 'G': {  // BINFLOAT, big-endian
        const std::string_view b = take(8);
        uint64_t bits = 0;
        for (char c : b) bits = (bits << 8) | static_cast<unsigned char>(c);
        Value* v = make(Value::kFloat);
        v->f = std::bit_cast<double>(bits);
        stack_.push_back(v);
        break;
      }
      case 'X':
        push_str(take(take_le(4)));
        break;  // BINUNICODE
      case 0x8c:
        push_str(take(take_le(1)));
        break;  // SHORT_BINUNICODE
      case 0x8d:
        push_str(take(take_le(8)));
        break;  // BINUNICODE8
      case 'T':
        push_str(take(take_le(4)));
        break;  // BINSTRING
      case 'U':
        push_str(take(take_le(1)));
        break;  // SHORT_BINSTRING
      case '}':
        stack_.push_back(make(Value::kDict));
        break;  // EMPTY_DICT
      case ']':
        stack_.push_back(make(Value::kList));
        break;  // EMPTY_LIST
      case ')':
        stack_.push_back(make(Value::kTuple));
        break;     // EMPTY_TUPLE
      case 't': {  // TUPLE
        Value* v = make(Value::kTuple);
        v->items = pop_to_mark();
        stack_.push_back(v);
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
        Value* v = make(Value::kTuple);
        v->items.resize(op - 0x84);
        for (size_t k = v->items.size(); k-- > 0;) v->items[k] = pop();
        stack_.push_back(v);
        break;
      }
      case 'a': {  // APPEND
        Value* item = pop();
        expect(top(), Value::kList, "APPEND's target")->items.push_back(item);
        break;
      }
      case 'e': {  // APPENDS
        std::vector<Value*> items = pop_to_mark();
        Value* list = expect(top(), Value::kList, "APPENDS's target");
        list->items.insert(list->items.end(), items.begin(), items.end());
        break;
      }
      case 's': {  // SETITEM
        Value* value = pop();
        Value* key = pop();
        Value* dict = expect(top(), Value::kDict, "SETITEM's target");
        dict->items.push_back(key);
        dict->items.push_back(value);
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<Value*> items = pop_to_mark();
        check(items.size() % 2 == 0, "SETITEMS with an odd number ({}) of keys and values",
              items.size());
        Value* dict = expect(top(), Value::kDict, "SETITEMS's target");
        dict->items.insert(dict->items.end(), items.begin(), items.end());
        break;
      }
      case 'q':
        memo_put(take_le(1));
        break;  // BINPUT
      case 'r':
        memo_put(take_le(4));
        break;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size());
        break;  // MEMOIZE
      case 'h':
        memo_get(take_le(1));
        break;  // BINGET
      case 'j':
        memo_get(take_le(4));
        break;     // LONG_BINGET
      case 'c': {  // GLOBAL
        const std::string module(take_line());
        const std::string name(take_line());
        stack_.push_back(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Value* name = expect(pop(), Value::kStr, "STACK_GLOBAL's name");
        Value* module = expect(pop(), Value::kStr, "STACK_GLOBAL's module");
        stack_.push_back(global(module->s, name->s));
        break;
      }
      case 'Q': {  // BINPERSID
        stack_.push_back(storage(pop()));
        break;
      }
      case 'R': {  // REDUCE
        Value* args = expect(pop(), Value::kTuple, "REDUCE's arguments");
        Value* fn = pop();
        stack_.push_back(call(fn, args));
        break;
      }
      case 'b': {  // BUILD: only an OrderedDict's attributes (its _metadata), which are dropped
        Value* state = pop();
        Value* obj = top();
        check(obj->kind == Value::kDict,
              "BUILD sets the state of a {} (only a dict's state, its "
              "_metadata, is read)",
              kind_name(obj->kind));
        (void)state;
        break;
      }
      default: {
        const bool printable = op >= 0x20 && op < 0x7f;
        fail(
            "pickle opcode 0x{:02x}{} is not read (a state_dict needs only containers, "
            "numbers, strings and tensors)",
            op, printable ? fmt::format(" '{}'", static_cast<char>(op)) : std::string());
      }
    }
  }

  Value* global(const std::string& module, const std::string& name) {
    Value* v = make(Value::kGlobal);
    v->s = module + "." + name;
    if (module == "collections" && name == "OrderedDict") {
      v->callable = Callable::OrderedDict;
    } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
      v->callable = Callable::RebuildTensorV2;
    } else if (module == "torch._utils" && name == "_rebuild_parameter") {
      v->callable = Callable::RebuildParameter;
    } else if (module == "torch._utils" && name == "_rebuild_parameter_with_state") {
      v->callable = Callable::RebuildParameterWithState;
    } else {
      const auto* st = std::find_if(std::begin(kStorageTypes), std::end(kStorageTypes),
                                    [&](const StorageType& t) { return name == t.name; });
      check(
          module == "torch" && st != std::end(kStorageTypes),
          "global '{}' is not allowed: the reader runs no code and rebuilds only tensors and "
          "containers (collections.OrderedDict, torch._utils._rebuild_tensor_v2, "
          "_rebuild_parameter, torch.<Float|Double|Half|BFloat16|Long|Int|Char|Byte|Bool>Storage)",
          fmt::format("{}.{}", module.substr(0, 200), name.substr(0, 200)));
      v->callable = Callable::StorageType;
      v->dtype = st->dtype;
    }
    return v;
  }

  /** BINPERSID: ('storage', torch.<T>Storage, key, location, numel), read on first use. */
  Value* storage(Value* pid) {
    check(pid->kind == Value::kTuple && pid->items.size() == 5 &&
              pid->items[0]->kind == Value::kStr && pid->items[0]->s == "storage",
          "a persistent id must be ('storage', type, key, location, numel), got a {} of {} items",
          kind_name(pid->kind), pid->items.size());
    const Value* type = pid->items[1];
    check(type->kind == Value::kGlobal && type->callable == Callable::StorageType,
          "a persistent id's storage type is a {} '{}', not a torch.<T>Storage",
          kind_name(type->kind), type->s);
    const std::string& key = expect(pid->items[2], Value::kStr, "a storage key")->s;
    expect(pid->items[3], Value::kStr, "a storage location");
    const int64_t numel = expect(pid->items[4], Value::kInt, "a storage's numel")->i;
    check(numel >= 0, "storage '{}' has a negative numel {}", key, numel);
    int64_t nbytes = 0;
    check(!__builtin_mul_overflow(numel, static_cast<int64_t>(itemsize(type->dtype)), &nbytes),
          "storage '{}': {} elements of {} overflow int64", key, numel, type->dtype);

    auto [it, fresh] = storages_.try_emplace(key, nullptr);
    if (!fresh) {
      const Value* s = it->second;
      check(s->dtype == type->dtype && s->i == numel,
            "storage '{}' is used as {} {} and as {} {} (Ember cannot view one storage as two "
            "dtypes)",
            key, s->i, s->dtype, numel, type->dtype);
      return it->second;
    }
    const std::string entry = "data/" + key;
    const std::optional<zip_uint64_t> index = archive_.find(entry);
    check(index.has_value(), "storage '{}' has no entry '{}{}' in the archive", key,
          archive_.prefix(), entry);
    const uint64_t bytes = archive_.size(*index, entry);
    check(bytes == static_cast<uint64_t>(nbytes),
          "storage '{}' of {} {} needs {} bytes but its entry holds {}", key, numel, type->dtype,
          nbytes, bytes);
    Value* v = make(Value::kStorage);
    v->s = key;
    v->i = numel;
    v->dtype = type->dtype;
    v->tensor = empty({numel}, TensorOptions(type->dtype, Device::cpu()));
    archive_.read(*index, entry, v->tensor.data_ptr(), bytes);
    const size_t item = itemsize(type->dtype);
    if (big_endian_ && item > 1) {
      auto* p = static_cast<unsigned char*>(v->tensor.data_ptr());
      for (int64_t e = 0; e < numel; ++e) std::reverse(p + e * item, p + (e + 1) * item);
    }
    if (type->dtype == DType::Bool) {
      const auto* p = static_cast<const unsigned char*>(v->tensor.data_ptr());
      const auto* bad = std::find_if(p, p + numel, [](unsigned char c) { return c > 1; });
      check(bad == p + numel, "storage '{}': bool element {} has byte value {} (must be 0 or 1)",
            key, bad - p, bad < p + numel ? *bad : 0);
    }
    it->second = v;
    return v;
  }

  Value* call(Value* fn, Value* args) {
    check(fn->kind == Value::kGlobal && fn->callable != Callable::StorageType,
          "REDUCE calls a {}{}, which the reader does not call", kind_name(fn->kind),
          fn->kind == Value::kGlobal ? fmt::format(" '{}'", fn->s) : std::string());
    const std::vector<Value*>& a = args->items;
    switch (fn->callable) {
      case Callable::OrderedDict: {
        Value* d = make(Value::kDict);
        check(a.size() <= 1, "OrderedDict() takes at most one argument, got {}", a.size());
        if (a.size() == 1) {
          expect(a[0], Value::kList, "OrderedDict's argument");
          for (Value* pair : a[0]->items) {
            check(pair->kind == Value::kTuple && pair->items.size() == 2,
                  "OrderedDict's argument must be a list of (key, value) pairs");
            d->items.insert(d->items.end(), pair->items.begin(), pair->items.end());
          }
        }
        return d;
      }
      case Callable::RebuildParameter:
      case Callable::RebuildParameterWithState:
        check(a.size() == (fn->callable == Callable::RebuildParameter ? 3u : 4u),
              "{} takes {} arguments, got {}", fn->s,
              fn->callable == Callable::RebuildParameter ? 3 : 4, a.size());
        {
          Value* data = expect(a[0], Value::kTensor, "a parameter's data");
          // _rebuild_parameter(data, requires_grad, hooks): the flag is the parameter's.
          if (expect(a[1], Value::kBool, "requires_grad")->b && is_floating(data->tensor.dtype()) &&
              !data->tensor.requires_grad()) {
            Value* p = make(Value::kTensor);
            p->tensor = data->tensor.detach();
            p->tensor.requires_grad_(true);
            return p;
          }
          return data;
        }
      case Callable::RebuildTensorV2:
        return rebuild_tensor(a);
      case Callable::StorageType:
        break;
    }
    fail("internal: unknown callable");
  }

  /** _rebuild_tensor_v2(storage, offset, sizes, strides, requires_grad, hooks[, metadata]). */
  Value* rebuild_tensor(const std::vector<Value*>& a) {
    check(a.size() == 6 || a.size() == 7, "_rebuild_tensor_v2 takes 6 or 7 arguments, got {}",
          a.size());
    const Value* st = expect(a[0], Value::kStorage, "_rebuild_tensor_v2's storage");
    const int64_t offset = expect(a[1], Value::kInt, "a storage offset")->i;
    const Value* sizes = expect(a[2], Value::kTuple, "a tensor's sizes");
    const Value* strides = expect(a[3], Value::kTuple, "a tensor's strides");
    expect(a[4], Value::kBool, "requires_grad");
    expect(a[5], Value::kDict, "backward hooks");
    Shape size, stride;
    for (Value* v : sizes->items) size.push_back(expect(v, Value::kInt, "a size")->i);
    for (Value* v : strides->items) stride.push_back(expect(v, Value::kInt, "a stride")->i);
    check(size.size() == stride.size() && size.size() <= EMBER_MAX_DIMS,
          "a tensor of {} sizes and {} strides (they must match, at most {}: EMBER_MAX_DIMS)",
          size.size(), stride.size(), EMBER_MAX_DIMS);
    int64_t numel = 1, last = offset;
    bool overflow = false;
    for (size_t d = 0; d < size.size(); ++d) {
      check(size[d] >= 0 && stride[d] >= 0,
            "storage '{}': sizes {} and strides {} must be non-negative", st->s, size, stride);
      overflow = overflow || __builtin_mul_overflow(numel, size[d], &numel);
    }
    check(offset >= 0, "storage '{}': negative storage offset {}", st->s, offset);
    check(!overflow && numel <= st->i,
          "storage '{}': a tensor of sizes {} has more elements than its storage's {} (save "
          "t.contiguous() or t.clone() instead of an expanded view)",
          st->s, size, st->i);
    if (numel > 0) {
      for (size_t d = 0; d < size.size(); ++d) {
        int64_t reach = 0;
        overflow = overflow || __builtin_mul_overflow(size[d] - 1, stride[d], &reach) ||
                   __builtin_add_overflow(last, reach, &last);
      }
      check(!overflow && last < st->i,
            "storage '{}': sizes {}, strides {} and offset {} reach element {} of a storage of "
            "{}",
            st->s, size, stride, offset,
            overflow ? std::string("past int64") : std::to_string(last), st->i);
    }
    Value* v = make(Value::kTensor);
    v->tensor = st->tensor.as_strided(size, stride, numel > 0 ? offset : 0);
    if (!v->tensor.is_contiguous()) {
      copied_bytes_ += static_cast<uint64_t>(v->tensor.nbytes());
      check(copied_bytes_ <= archive_.file_bytes(),
            "the strided views copy {} bytes, more than the file's {} (views of one storage "
            "that overlap?)",
            copied_bytes_, archive_.file_bytes());
      v->tensor = v->tensor.contiguous();
    }
    // A tensor saved while it required grad (a Parameter) requires grad again, as in PyTorch;
    // it is a leaf of its own, whatever else shares its storage.
    if (a[4]->b && is_floating(v->tensor.dtype())) {
      v->tensor = v->tensor.detach();
      v->tensor.requires_grad_(true);
    }
    return v;
  }

  const std::string& path_;
  const Archive& archive_;
  std::string_view data_;
  bool big_endian_ = false;
  size_t pos_ = 0, op_at_ = 0;
  std::vector<std::unique_ptr<Value>> arena_;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
  std::unordered_map<std::string, Value*> storages_;
  uint64_t copied_bytes_ = 0;

 public:
  /** Values made so far: flattening visits at most a multiple of them. */
  size_t values() const { return arena_.size(); }
};

// ---------------------------------------------------------------------------------------------
// Flattening (Note [Nested torch.save files]).

class Flattener {
 public:
  Flattener(const std::string& path, size_t budget) : path_(path), budget_(budget) {}

  void run(const Value* root) {
    EMBER_CHECK_IO(
        root->kind == Value::kDict || root->kind == Value::kList || root->kind == Value::kTuple,
        "{} {}: the file holds a single {}, not a dict of tensors (save a dict such as "
        "{{'weight': t}} or a state_dict())",
        kOp, path_, kind_name(root->kind));
    visit(root, "", 0);
  }

  TorchFile out;

 private:
  void visit(const Value* v, const std::string& name, int depth) {
    EMBER_CHECK_IO(depth <= kMaxDepth && ++visits_ <= budget_,
                   "{} {}: '{}': containers nested deeper than {} levels, or one that holds "
                   "itself",
                   kOp, path_, name.substr(0, 200), kMaxDepth);
    switch (v->kind) {
      case Value::kDict:
        for (size_t k = 0; k + 1 < v->items.size(); k += 2) {
          visit(v->items[k + 1], join(name, key(v->items[k], name)), depth + 1);
        }
        return;
      case Value::kList:
      case Value::kTuple:
        for (size_t k = 0; k < v->items.size(); ++k) {
          visit(v->items[k], join(name, std::to_string(k)), depth + 1);
        }
        return;
      case Value::kTensor:
        return add(name, &out.tensors, v->tensor);
      case Value::kNone:
        return add(name, &out.values, std::string("None"));
      case Value::kBool:
        return add(name, &out.values, std::string(v->b ? "True" : "False"));
      case Value::kInt:
        return add(name, &out.values, std::to_string(v->i));
      case Value::kFloat:
        return add(name, &out.values, float_repr(v->f));
      case Value::kStr:
        return add(name, &out.values, v->s);
      case Value::kGlobal:
      case Value::kStorage:
        break;
    }
    EMBER_CHECK_IO(false, "{} {}: '{}' is a bare {} (only tensors and plain values are read)", kOp,
                   path_, name, kind_name(v->kind));
  }

  std::string key(const Value* k, const std::string& parent) const {
    if (k->kind == Value::kInt) return std::to_string(k->i);
    EMBER_CHECK_IO(k->kind == Value::kStr,
                   "{} {}: '{}' has a dict key that is a {} (keys must be str, or int as in "
                   "optimizer states)",
                   kOp, path_, parent, kind_name(k->kind));
    // Entries are named by their keys joined with dots, so an empty key would name nothing ('')
    // or make names that collide ("a." from {'a': {'': x}}); no state_dict has one.
    EMBER_CHECK_IO(!k->s.empty(),
                   "{} {}: '{}' has an empty key (entries are named by their keys joined with "
                   "dots)",
                   kOp, path_, parent);
    const size_t bad = detail::invalid_utf8_at(k->s);
    EMBER_CHECK_IO(bad == std::string::npos,
                   "{} {}: '{}' has a key that is not valid UTF-8 (byte 0x{:02x} at offset {})",
                   kOp, path_, parent,
                   bad < k->s.size() ? static_cast<unsigned char>(k->s[bad]) : 0, bad);
    return k->s;
  }

  std::string join(const std::string& prefix, const std::string& key) const {
    EMBER_CHECK_IO(prefix.size() + key.size() < kMaxNameBytes,
                   "{} {}: a name of more than {} bytes under '{}' (the keys joined with dots)",
                   kOp, path_, kMaxNameBytes, prefix.substr(0, 200));
    return prefix.empty() ? key : prefix + "." + key;
  }

  template <typename Map, typename T>
  void add(const std::string& name, Map* map, T value) {
    EMBER_CHECK_IO(!names_.contains(name),
                   "{} {}: two entries are both named '{}' once nested names are joined with dots",
                   kOp, path_, name);
    names_.insert(name);
    map->emplace(name, std::move(value));
  }

  const std::string& path_;
  size_t budget_, visits_ = 0;
  std::set<std::string> names_;
};

// ---------------------------------------------------------------------------------------------
// The saved object as it is (torch.load's result).

class Builder {
 public:
  Builder(const std::string& path, size_t budget) : path_(path), budget_(budget) {}

  TorchValue build(const Value* v, int depth) {
    EMBER_CHECK_IO(depth <= kMaxDepth && ++visits_ <= budget_,
                   "{} {}: containers nested deeper than {} levels, or one that holds itself", kOp,
                   path_, kMaxDepth);
    TorchValue out;
    switch (v->kind) {
      case Value::kNone:
        return out;
      case Value::kBool:
        out.kind = TorchValue::Kind::Bool;
        out.b = v->b;
        return out;
      case Value::kInt:
        out.kind = TorchValue::Kind::Int;
        out.i = v->i;
        return out;
      case Value::kFloat:
        out.kind = TorchValue::Kind::Float;
        out.f = v->f;
        return out;
      case Value::kStr:
        out.kind = TorchValue::Kind::Str;
        out.s = v->s;
        return out;
      case Value::kTensor:
        out.kind = TorchValue::Kind::Tensor;
        out.tensor = v->tensor;
        return out;
      case Value::kTuple:
      case Value::kList:
      case Value::kDict:
        out.kind = v->kind == Value::kTuple  ? TorchValue::Kind::Tuple
                   : v->kind == Value::kList ? TorchValue::Kind::List
                                             : TorchValue::Kind::Dict;
        out.items.reserve(v->items.size());
        for (const Value* item : v->items) out.items.push_back(build(item, depth + 1));
        return out;
      case Value::kGlobal:
      case Value::kStorage:
        break;
    }
    EMBER_CHECK_IO(false,
                   "{} {}: the file holds a bare {} (only tensors and plain values are read)", kOp,
                   path_, kind_name(v->kind));
    return out;
  }

 private:
  const std::string& path_;
  size_t budget_, visits_ = 0;
};

}  // namespace

bool is_torch_file(const void* head, size_t size) {
  const auto* p = static_cast<const unsigned char*>(head);
  const bool zip = size >= 4 && p[0] == 'P' && p[1] == 'K' &&
                   ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6));
  return zip ||
         (size >= sizeof(kLegacyMagic) && std::memcmp(p, kLegacyMagic, sizeof(kLegacyMagic)) == 0);
}

namespace {

/** Runs `use(root, values)` on the object a torch.save file pickles (Note [A restricted
 *  unpickler]); `values` is how many values the reader made. */
template <typename Use>
auto read_torch(const std::string& path, Use&& use) {
  {
    // The legacy format is a bare pickle, not a zip: say so rather than what libzip says.
    const int fd = detail::open_regular_file(path, "io.load");
    unsigned char head[sizeof(kLegacyMagic)] = {};
    const ssize_t got = ::pread(fd, head, sizeof(head), 0);
    ::close(fd);
    EMBER_CHECK_IO(got != static_cast<ssize_t>(sizeof(head)) ||
                       std::memcmp(head, kLegacyMagic, sizeof(head)) != 0,
                   "{} {}: the legacy torch.save format of PyTorch before 1.6 is not read (load "
                   "it in PyTorch and save it again: torch.save(torch.load(f), f2))",
                   kOp, path);
  }
  const Archive archive(path);
  bool big_endian = false;
  if (std::optional<std::string> order = archive.read_record("byteorder")) {
    EMBER_CHECK_IO(*order == "little" || *order == "big",
                   "{} {}: record '{}byteorder' is '{}', not 'little' or 'big'", kOp, path,
                   archive.prefix(), order->substr(0, 32));
    big_endian = *order == "big";
  }
  const std::optional<std::string> pickle = archive.read_record("data.pkl");
  EMBER_ASSERT(pickle.has_value());  // Archive found it
  Reader reader(path, archive, *pickle, big_endian);
  const Value* root = reader.run();
  return use(root, reader.values());
}

}  // namespace

TorchFile load_torch(const std::string& path) {
  return read_torch(path, [&](const Value* root, size_t values) {
    Flattener flat(path, 4 * values + 16);
    flat.run(root);
    return std::move(flat.out);
  });
}

TorchValue load_torch_object(const std::string& path) {
  return read_torch(path, [&](const Value* root, size_t values) {
    // The memo lets a file refer to one value from many places, each of which is copied here:
    // the budget bounds the copies as it bounds flattening.
    return Builder(path, 4 * values + 16).build(root, 0);
  });
}

}  // namespace ember::io
