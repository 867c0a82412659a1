// Writing torch.save files byte by byte for tests: a minimal zip writer and a pickle builder, so
// each rule of the reader (api/io/torch.cpp) can be broken on purpose.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ember::torch_files {

/** One entry of a zip archive as written by make_zip. */
struct ZipEntry {
  std::string name;
  std::string data;
  bool deflate = false;                  // compress it (torch.save never does)
  std::optional<uint32_t> claimed_size;  // an uncompressed size to declare instead of the real one
  bool encrypted = false;                // set the "encrypted" flag (the bytes stay plain)
};

inline void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

/** Raw deflate (no zlib header) of `data`, as zip's method 8 stores it. */
inline std::string deflate_raw(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/** A zip archive (no zip64, no data descriptors) of `entries`, in order. */
inline std::string make_zip(const std::vector<ZipEntry>& entries) {
  std::string out, central;
  for (const ZipEntry& e : entries) {
    const std::string body = e.deflate ? deflate_raw(e.data) : e.data;
    const uint32_t crc =
        crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size()));
    const uint32_t size = e.claimed_size.value_or(static_cast<uint32_t>(e.data.size()));
    const auto csize = static_cast<uint32_t>(body.size());
    auto fields = [&](std::string& s) {
      put_le(s, 20, 2);                   // version needed
      put_le(s, e.encrypted ? 1 : 0, 2);  // flags
      put_le(s, e.deflate ? 8 : 0, 2);    // method
      put_le(s, 0, 2);                    // time
      put_le(s, 0x21, 2);                 // date: 1980-01-01
      put_le(s, crc, 4);
      put_le(s, csize, 4);
      put_le(s, size, 4);
      put_le(s, e.name.size(), 2);
      put_le(s, 0, 2);  // extra length
    };
    const size_t offset = out.size();
    put_le(out, 0x04034b50, 4);
    fields(out);
    out += e.name;
    out += body;
    put_le(central, 0x02014b50, 4);
    put_le(central, 20, 2);  // version made by
    fields(central);
    put_le(central, 0, 2);  // comment length
    put_le(central, 0, 2);  // disk
    put_le(central, 0, 2);  // internal attributes
    put_le(central, 0, 4);  // external attributes
    put_le(central, offset, 4);
    central += e.name;
  }
  const size_t cd_offset = out.size();
  out += central;
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 2);
  put_le(out, 0, 2);
  put_le(out, entries.size(), 2);
  put_le(out, entries.size(), 2);
  put_le(out, central.size(), 4);
  put_le(out, cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

/** Builds a pickle opcode by opcode, as Python's pickle (protocol 2) writes them. */
class Pickle {
 public:
  Pickle() { out_ += "\x80\x02"; }
  /** Appends raw bytes (an opcode and its argument). */
  Pickle& raw(const std::string& bytes) {
    out_ += bytes;
    return *this;
  }
  /** Appends one opcode byte. */
  Pickle& op(char c) {
    out_ += c;
    return *this;
  }
  /** BINUNICODE. */
  Pickle& str(const std::string& s) {
    out_ += 'X';
    put_le(out_, s.size(), 4);
    out_ += s;
    return *this;
  }
  /** BININT, or LONG1 beyond 32 bits. */
  Pickle& integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';
      put_le(out_, static_cast<uint64_t>(v), 4);
    } else {
      out_ += "\x8a\x08";
      put_le(out_, static_cast<uint64_t>(v), 8);
    }
    return *this;
  }
  /** GLOBAL module.name. */
  Pickle& global(const std::string& module, const std::string& name) {
    out_ += 'c' + module + '\n' + name + '\n';
    return *this;
  }
  /** MARK, each integer, TUPLE. */
  Pickle& int_tuple(const std::vector<int64_t>& v) {
    op('(');
    for (int64_t x : v) integer(x);
    return op('t');
  }
  /** The persistent id ('storage', torch.<type>, key, 'cpu', numel) and BINPERSID. */
  Pickle& storage(const std::string& type, const std::string& key, int64_t numel) {
    op('(').str("storage").global("torch", type).str(key).str("cpu").integer(numel).op('t');
    return op('Q');
  }
  /** OrderedDict() as torch writes it: GLOBAL, EMPTY_TUPLE, REDUCE. */
  Pickle& ordered_dict() { return global("collections", "OrderedDict").op(')').op('R'); }
  /** _rebuild_tensor_v2(storage, offset, sizes, strides, False, OrderedDict()). */
  Pickle& tensor(const std::string& type, const std::string& key, int64_t numel, int64_t offset,
                 const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    storage(type, key, numel).integer(offset).int_tuple(sizes).int_tuple(strides);
    return op('\x89').ordered_dict().op('t').op('R');
  }
  /** The pickle so far followed by STOP. */
  std::string done() const { return out_ + "."; }
  /** The pickle so far, without STOP. */
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

/** A torch.save archive: `<root>data.pkl`, `<root>byteorder`, `<root>data/<key>` per storage,
 *  `<root>version`. */
inline std::string torch_zip(const std::string& pickle,
                             const std::map<std::string, std::string>& storages,
                             const std::string& byteorder = "little",
                             const std::string& root = "archive/") {
  std::vector<ZipEntry> entries{{root + "data.pkl", pickle}, {root + "byteorder", byteorder}};
  for (const auto& [key, bytes] : storages) entries.push_back({root + "data/" + key, bytes});
  entries.push_back({root + "version", "3\n"});
  return make_zip(entries);
}

// Note [Fuzzing the unpickler behind a zip]
// Mutating a whole torch.save file rarely gets past the zip's CRCs, so the fuzz target and its
// corpus also take bare pickles: wrap_pickle stores one as data.pkl beside four 64-byte storages
// "0" to "3" (16 floats, 8 longs, 64 bytes or bools each; every byte 0 or 1, so any dtype reads
// them), which the seeds' persistent ids name.
/** A torch.save archive around `pickle` with the four fixed storages of the fuzz seeds. */
inline std::string wrap_pickle(const std::string& pickle) {
  std::string bytes(64, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i / 3) % 2);
  return torch_zip(pickle, {{"0", bytes}, {"1", bytes}, {"2", bytes}, {"3", bytes}});
}

/** True if `bytes` starts like a zip archive or a legacy torch.save pickle (then it is a whole
 *  file, not a bare pickle for wrap_pickle). */
inline bool is_whole_file(const std::string& bytes) {
  return bytes.rfind("PK", 0) == 0 || bytes.rfind("\x80\x02\x8a\x0a", 0) == 0;
}

}  // namespace ember::torch_files
