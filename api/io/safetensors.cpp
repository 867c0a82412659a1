// safetensors reader and writer: a validated JSON header, then raw little-endian tensor bytes.
#include "ember/io/safetensors.h"
#include "ember/io/torch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/io/open_file.h"
#include "api/io/text.h"
#include "core/util/file_writer.h"
#include "ember/ops/factory.h"

namespace ember::io {

// Note [safetensors are little-endian]
// The format stores elements little-endian; tensors are written and read by copying their
// bytes, which is only right on a little-endian host (every platform Ember targets).
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

namespace {

using nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Our header is object > tensor entry > shape array; anything deeper is not a safetensors file.
constexpr size_t kMaxJsonDepth = 3;
constexpr const char* kMetadataKey = "__metadata__";

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypeNames[] = {
    {DType::Float64, "F64"},   {DType::Float32, "F32"}, {DType::Float16, "F16"},
    {DType::BFloat16, "BF16"}, {DType::Int64, "I64"},   {DType::Int32, "I32"},
    {DType::Int8, "I8"},       {DType::UInt8, "U8"},    {DType::Bool, "BOOL"},
};

const char* safetensors_name(DType d) {
  for (const DTypeName& e : kDTypeNames) {
    if (e.dtype == d) return e.name;
  }
  EMBER_ASSERT(false);
  return "";
}

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  for (const DTypeName& e : kDTypeNames) {
    if (name == e.name) return e.dtype;
  }
  return std::nullopt;
}

std::string errno_str(int err) {
  return std::strerror(err);
}

// ---------------------------------------------------------------------------------------------
// Loading.

/** One tensor's entry in a validated header. */
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

/** A validated header: entries, metadata and where the data section starts. */
struct Header {
  std::vector<Entry> tensors;
  Metadata metadata;
  uint64_t data_start = 0;
};

using FilePtr = std::unique_ptr<FILE, int (*)(FILE*)>;

// Finds duplicate keys (nlohmann keeps the last one silently) and caps the nesting depth,
// in one SAX pass over the header before it is parsed into a DOM.
class KeyChecker : public json::json_sax_t {
 public:
  std::string error;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(size_t) override { return push(true); }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second) {
      error = fmt::format("duplicate key '{}' in the JSON header", k);
      return false;
    }
    return true;
  }
  bool end_object() override { return pop(); }
  bool start_array(size_t) override { return push(false); }
  bool end_array() override { return pop(); }
  bool parse_error(size_t, const std::string&, const json::exception& ex) override {
    error = fmt::format("invalid JSON header: {}", detail::printable_utf8(ex.what()));
    return false;
  }

 private:
  bool push(bool) {
    if (keys_.size() >= kMaxJsonDepth) {
      error = fmt::format("JSON header nested deeper than {} levels", kMaxJsonDepth);
      return false;
    }
    keys_.emplace_back();
    return true;
  }
  bool pop() {
    keys_.pop_back();
    return true;
  }
  std::vector<std::set<std::string>> keys_;
};

uint64_t checked_uint(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  return UINT64_MAX;  // callers report this as "not a non-negative integer"
}

bool is_uint(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

Entry parse_entry(const std::string& path, const std::string& name, const json& v,
                  uint64_t data_bytes) {
  const char* op = "[io.load]";
  EMBER_CHECK_IO(v.is_object(), "{} {}: tensor '{}': entry is a JSON {}, not an object", op, path,
                 name, v.type_name());
  for (const auto& [field, _] : v.items()) {
    EMBER_CHECK_IO(field == "dtype" || field == "shape" || field == "data_offsets",
                   "{} {}: tensor '{}': unknown field '{}' (expected dtype, shape, data_offsets)",
                   op, path, name, field);
  }
  Entry e;
  e.name = name;

  auto dt = v.find("dtype");
  EMBER_CHECK_IO(dt != v.end(), "{} {}: tensor '{}': missing dtype", op, path, name);
  EMBER_CHECK_IO(dt->is_string(), "{} {}: tensor '{}': dtype is a JSON {}, not a string", op, path,
                 name, dt->type_name());
  std::optional<DType> dtype = parse_safetensors_dtype(dt->get<std::string>());
  EMBER_CHECK_IO(
      dtype.has_value(),
      "{} {}: tensor '{}': unsupported dtype '{}' (Ember reads F64, F32, F16, BF16, I64, "
      "I32, I8, U8, BOOL)",
      op, path, name, dt->get<std::string>());
  e.dtype = *dtype;

  auto sh = v.find("shape");
  EMBER_CHECK_IO(sh != v.end(), "{} {}: tensor '{}': missing shape", op, path, name);
  EMBER_CHECK_IO(sh->is_array(), "{} {}: tensor '{}': shape is a JSON {}, not an array", op, path,
                 name, sh->type_name());
  // Note [A zero dim does not excuse huge ones]
  // A zero dim makes a tensor empty, but its strides are still products of the other dims, so
  // those must fit in int64 too: [0, 2^62, 4] is refused rather than overflowing the strides.
  int64_t numel = 1;  // of the non-zero dims
  bool overflow = false, has_zero = false;
  for (const json& d : *sh) {
    EMBER_CHECK_IO(d.is_number_integer(), "{} {}: tensor '{}': shape {} has a non-integer dim", op,
                   path, name, sh->dump());
    EMBER_CHECK_IO(is_uint(d), "{} {}: tensor '{}': shape {} has a negative dim", op, path, name,
                   sh->dump());
    uint64_t u = checked_uint(d);
    EMBER_CHECK_IO(u <= static_cast<uint64_t>(INT64_MAX), "{} {}: tensor '{}': dim {} is too large",
                   op, path, name, u);
    int64_t s = static_cast<int64_t>(u);
    e.shape.push_back(s);
    if (s == 0) {
      has_zero = true;
    } else {
      overflow = overflow || __builtin_mul_overflow(numel, s, &numel);
    }
  }
  // Note [At most EMBER_MAX_DIMS dims] in core/tensor/tensor_impl.cpp.
  EMBER_CHECK_IO(e.shape.size() <= EMBER_MAX_DIMS,
                 "{} {}: tensor '{}': shape {} has {} dims, at most {} are supported "
                 "(EMBER_MAX_DIMS)",
                 op, path, name, sh->dump(), e.shape.size(), EMBER_MAX_DIMS);
  int64_t nbytes = 0;
  if (!has_zero) {
    overflow =
        overflow || __builtin_mul_overflow(numel, static_cast<int64_t>(itemsize(e.dtype)), &nbytes);
  }
  EMBER_CHECK_IO(!overflow, "{} {}: tensor '{}': shape {} of {} overflows int64 {}", op, path, name,
                 sh->dump(), dt->get<std::string>(), has_zero ? "strides" : "bytes");

  auto off = v.find("data_offsets");
  EMBER_CHECK_IO(off != v.end(), "{} {}: tensor '{}': missing data_offsets", op, path, name);
  EMBER_CHECK_IO(
      off->is_array() && off->size() == 2 && is_uint((*off)[0]) && is_uint((*off)[1]),
      "{} {}: tensor '{}': data_offsets must be [begin, end] non-negative integers, got {}", op,
      path, name, off->dump());
  e.begin = checked_uint((*off)[0]);
  e.end = checked_uint((*off)[1]);
  EMBER_CHECK_IO(e.begin <= e.end,
                 "{} {}: tensor '{}': data_offsets [{}, {}] end before they begin", op, path, name,
                 e.begin, e.end);
  EMBER_CHECK_IO(e.end - e.begin == static_cast<uint64_t>(nbytes),
                 "{} {}: tensor '{}': data_offsets [{}, {}] cover {} bytes but {} {} needs {}", op,
                 path, name, e.begin, e.end, e.end - e.begin, dt->get<std::string>(), sh->dump(),
                 nbytes);
  EMBER_CHECK_IO(e.end <= data_bytes,
                 "{} {}: tensor '{}': data_offsets [{}, {}] run past the end of the file: the data "
                 "section has {} bytes",
                 op, path, name, e.begin, e.end, data_bytes);
  return e;
}

// The tensors' byte ranges, sorted, must tile [0, data_bytes): no overlap (two tensors aliasing
// the same bytes), no hole, nothing before the first or after the last (Note [A strict reader]).
void check_coverage(const std::string& path, const std::vector<Entry>& tensors,
                    uint64_t data_bytes) {
  const char* op = "[io.load]";
  const char* rule = "the tensors must cover the data section exactly";
  std::vector<const Entry*> sorted;
  for (const Entry& e : tensors) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  EMBER_CHECK_IO(!sorted.empty() || data_bytes == 0,
                 "{} {}: the header lists no tensors but the data section has {} bytes ({})", op,
                 path, data_bytes, rule);
  const Entry* prev = nullptr;
  uint64_t covered = 0;  // the data section up to here belongs to the tensors seen so far
  for (const Entry* e : sorted) {
    if (prev != nullptr) {
      EMBER_CHECK_IO(e->begin >= covered, "{} {}: tensors '{}' [{}, {}] and '{}' [{}, {}] overlap",
                     op, path, prev->name, prev->begin, prev->end, e->name, e->begin, e->end);
      EMBER_CHECK_IO(e->begin == covered,
                     "{} {}: bytes [{}, {}) of the data section, between tensors '{}' [{}, {}] and "
                     "'{}' [{}, {}], belong to no tensor ({})",
                     op, path, covered, e->begin, prev->name, prev->begin, prev->end, e->name,
                     e->begin, e->end, rule);
    } else {
      EMBER_CHECK_IO(e->begin == 0,
                     "{} {}: bytes [0, {}) of the data section, before the first tensor '{}' [{}, "
                     "{}], belong to no tensor ({})",
                     op, path, e->begin, e->name, e->begin, e->end, rule);
    }
    covered = e->end;
    prev = e;
  }
  EMBER_CHECK_IO(covered == data_bytes,
                 "{} {}: {} bytes after the last tensor '{}', which ends at {}, belong to no "
                 "tensor: the data section has {} bytes ({})",
                 op, path, data_bytes - covered, prev != nullptr ? prev->name : "", covered,
                 data_bytes, rule);
}

Header read_header(const std::string& path, FILE* f) {
  const char* op = "[io.load]";
  struct stat st {};
  EMBER_CHECK_IO(fstat(fileno(f), &st) == 0, "{} {}: cannot stat: {}", op, path, errno_str(errno));
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);
  EMBER_CHECK_IO(file_bytes >= 8,
                 "{} {}: file too short: {} bytes, but a safetensors file starts with an 8-byte "
                 "header length",
                 op, path, file_bytes);

  unsigned char len_bytes[8];
  EMBER_CHECK_IO(std::fread(len_bytes, 1, 8, f) == 8, "{} {}: cannot read the header length: {}",
                 op, path, errno_str(errno));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  EMBER_CHECK_IO(n <= kMaxHeaderBytes, "{} {}: header length {} is absurd (the limit is {} bytes)",
                 op, path, n, kMaxHeaderBytes);
  EMBER_CHECK_IO(n <= file_bytes - 8,
                 "{} {}: header length {} is larger than the {} bytes that follow it", op, path, n,
                 file_bytes - 8);

  std::string text(n, '\0');
  EMBER_CHECK_IO(std::fread(text.data(), 1, n, f) == n, "{} {}: cannot read the {}-byte header: {}",
                 op, path, n, errno_str(errno));
  EMBER_CHECK_IO(
      !text.empty() && text[0] == '{',
      "{} {}: the header must be a JSON object starting with '{{', it starts with {}", op, path,
      text.empty() ? std::string("nothing")
                   : json(text.substr(0, 16)).dump(-1, ' ', false, json::error_handler_t::replace));

  // Note [A strict reader]
  // The format's header is UTF-8 JSON that starts with '{', and its data section is covered
  // exactly by the tensors' byte ranges. The reference reader (serde_json's from_str after that
  // first byte) refuses anything else, and so do we; what it accepts, we accept: JSON whitespace
  // (space, tab, newline, carriage return) inside the JSON and after it, which writers use to pad
  // the header to an alignment. nlohmann's strict parse allows exactly that whitespace after the
  // object, except that it takes a NUL byte for the end of the input, so `{...}\0<more JSON>`
  // would load with the second part invisible: a NUL is refused first. Holes or trailing bytes
  // in the data would let a file carry content that one tool shows and another ignores.
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    EMBER_CHECK_IO(false,
                   "{} {}: the header has a NUL byte at offset {} (a header is UTF-8 JSON, padded "
                   "only with JSON whitespace)",
                   op, path, nul);
  }
  if (const size_t bad = detail::invalid_utf8_at(text); bad != std::string::npos) {
    EMBER_CHECK_IO(false, "{} {}: the header is not valid UTF-8: byte 0x{:02x} at offset {}", op,
                   path, static_cast<unsigned char>(text[bad]), bad);
  }
  KeyChecker checker;
  bool ok = json::sax_parse(text, &checker, json::input_format_t::json, /*strict=*/true);
  EMBER_CHECK_IO(ok, "{} {}: {}", op, path,
                 checker.error.empty() ? std::string("invalid JSON header") : checker.error);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& ex) {
    EMBER_CHECK_IO(false, "{} {}: invalid JSON header: {}", op, path,
                   detail::printable_utf8(ex.what()));
  }
  EMBER_CHECK_IO(root.is_object(), "{} {}: the header is a JSON {}, not an object", op, path,
                 root.type_name());

  Header h;
  h.data_start = 8 + n;
  const uint64_t data_bytes = file_bytes - h.data_start;
  for (const auto& [key, value] : root.items()) {
    if (key == kMetadataKey) {
      EMBER_CHECK_IO(value.is_object(), "{} {}: __metadata__ is a JSON {}, not an object", op, path,
                     value.type_name());
      for (const auto& [mk, mv] : value.items()) {
        EMBER_CHECK_IO(mv.is_string(),
                       "{} {}: __metadata__ value of '{}' is a JSON {}, not a string", op, path, mk,
                       mv.type_name());
        h.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    h.tensors.push_back(parse_entry(path, key, value, data_bytes));
  }

  check_coverage(path, h.tensors, data_bytes);
  return h;
}

FilePtr open_for_reading(const std::string& path) {
  const int fd = detail::open_regular_file(path, "io.load");
  FilePtr f(::fdopen(fd, "rb"), &std::fclose);
  if (f == nullptr) {
    const int err = errno;
    ::close(fd);
    EMBER_CHECK_IO(false, "[io.load] {}: cannot open: {}", path, errno_str(err));
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// Saving.

std::string json_string(const std::string& path, const std::string& s) {
  try {
    return json(s).dump();
  } catch (const json::exception&) {
    EMBER_CHECK(false, "[io.save] {}: name or metadata {} is not valid UTF-8", path,
                json(s).dump(-1, ' ', true, json::error_handler_t::replace));
  }
  return {};
}

}  // namespace

// Note [safetensors header layout]
// We write what the reference implementation (huggingface/safetensors) writes: compact JSON with
// "__metadata__" first (omitted when empty), then one entry per tensor with fields in the order
// dtype, shape, data_offsets; the header is padded with spaces to a multiple of 8 bytes so the
// data section starts 8-byte aligned. Tensors are laid out in name order with no gaps (the
// reference orders by dtype alignment first; for single-dtype files, the common case, the bytes
// are identical). Our reader copies each tensor, so it never depends on alignment.
void save(const std::string& path, const StateDict& tensors, const Metadata& metadata) {
  // Everything that can fail on bad input fails here, before a file exists.
  std::vector<Tensor> data;
  data.reserve(tensors.size());
  std::string header = "{";
  if (!metadata.empty()) {
    header += fmt::format("\"{}\":{{", kMetadataKey);
    bool first = true;
    for (const auto& [k, v] : metadata) {
      header +=
          fmt::format("{}{}:{}", first ? "" : ",", json_string(path, k), json_string(path, v));
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK(name != kMetadataKey, "[io.save] {}: '{}' is reserved for metadata, not a tensor",
                path, name);
    EMBER_CHECK_TYPE(t.defined(), "[io.save] {}: tensor '{}' is undefined", path, name);
    Tensor host = t.detach().to(Device::cpu()).contiguous();
    std::string shape;
    for (size_t i = 0; i < host.sizes().size(); ++i) {
      shape += fmt::format("{}{}", i ? "," : "", host.sizes()[i]);
    }
    const uint64_t nbytes = host.nbytes();
    header += fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          header.size() > 1 ? "," : "", json_string(path, name),
                          safetensors_name(host.dtype()), shape, offset, offset + nbytes);
    offset += nbytes;
    data.push_back(std::move(host));
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');

  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(header.size() >> (8 * i));

  // Atomically where the path is a regular file (Note [Writing files] in core/util/file_writer.h).
  ember::detail::FileWriter out(path, "io.save");
  out.write(len_bytes, 8);
  out.write(header.data(), header.size());
  for (const Tensor& t : data) {
    if (t.nbytes() > 0) out.write(t.data_ptr(), t.nbytes());
  }
  out.commit();
}

StateDict load(const std::string& path) {
  FilePtr f = open_for_reading(path);
  unsigned char head[16] = {};
  const ssize_t got = ::pread(fileno(f.get()), head, sizeof(head), 0);
  if (got > 0 && is_torch_file(head, static_cast<size_t>(got))) return load_torch(path).tensors;
  Header h = read_header(path, f.get());
  StateDict out;
  for (const Entry& e : h.tensors) {
    Tensor t = empty(e.shape, TensorOptions(e.dtype, Device::cpu()));
    const size_t nbytes = e.end - e.begin;
    if (nbytes > 0) {
      EMBER_CHECK_IO(::fseeko(f.get(), static_cast<off_t>(h.data_start + e.begin), SEEK_SET) == 0 &&
                         std::fread(t.data_ptr(), 1, nbytes, f.get()) == nbytes,
                     "[io.load] {}: tensor '{}': cannot read {} bytes at offset {} (file changed "
                     "while reading?)",
                     path, e.name, nbytes, h.data_start + e.begin);
    }
    if (e.dtype == DType::Bool) {
      const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
      const auto* bad = std::find_if(bytes, bytes + nbytes, [](unsigned char b) { return b > 1; });
      EMBER_CHECK_IO(
          bad == bytes + nbytes,
          "[io.load] {}: tensor '{}': BOOL element {} has byte value {} (must be 0 or 1)", path,
          e.name, bad - bytes, static_cast<int>(bad < bytes + nbytes ? *bad : 0));
    }
    out.emplace(e.name, std::move(t));
  }
  return out;
}

Metadata load_metadata(const std::string& path) {
  FilePtr f = open_for_reading(path);
  return read_header(path, f.get()).metadata;
}

namespace testing {
void fail_writes_after(std::optional<int64_t> bytes) {
  ember::detail::testing::fail_writes_after(bytes);
}
}  // namespace testing

void write_bytes(const std::string& path, std::string_view bytes) {
  ember::detail::write_file(path, bytes, "io.save");
}

}  // namespace ember::io
