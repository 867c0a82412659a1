// IDX files (gzipped or raw) and the (Fashion-)MNIST dataset built from them.
#include "ember/data/mnist.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "api/io/open_file.h"
#include "ember/ops/factory.h"

namespace ember::data {

namespace {

namespace fs = std::filesystem;

constexpr const char* kDebianDir = "/usr/share/datasets/fashion-mnist";
constexpr const char* kStems[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                  "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

/** Closes a gzFile. */
struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

std::string gz_error(gzFile f) {
  int code = Z_OK;
  const char* msg = gzerror(f, &code);
  if (code == Z_ERRNO) return std::strerror(errno);
  return msg ? msg : "unknown zlib error";
}

/** Reads up to `bytes` into `dst`; returns how many arrived (fewer only at the end of data). */
size_t read_some(gzFile f, const std::string& path, unsigned char* dst, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    const auto chunk = static_cast<unsigned>(std::min<size_t>(bytes - done, size_t{1} << 30));
    const int got = gzread(f, dst + done, chunk);
    if (got < 0) {
      int code = Z_OK;
      gzerror(f, &code);
      // A gzip stream cut short reads as the end of the data; the size checks then report it.
      if (code == Z_BUF_ERROR) break;
      EMBER_CHECK_IO(false, "[data.idx] {}: cannot read: {}", path, gz_error(f));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

std::string describe(const std::vector<int64_t>& dims) {
  if (dims.size() == 3) return fmt::format("{} images of {}x{}", dims[0], dims[1], dims[2]);
  return fmt::format("{} labels", dims[0]);
}

/** The path of `stem` under `dir`, gzipped or raw, or nullopt. */
std::optional<std::string> find_file(const fs::path& dir, const std::string& stem) {
  std::error_code ec;
  for (const std::string& name : {stem + ".gz", stem}) {
    if (fs::is_regular_file(dir / name, ec)) return (dir / name).string();
  }
  return std::nullopt;
}

/** Empty if all four files are in `dir`, else what is wrong with it. */
std::string check_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "does not exist";
  std::string missing;
  for (const char* stem : kStems) {
    if (!find_file(dir, stem))
      missing += fmt::format("{}{}[.gz]", missing.empty() ? "" : ", ", stem);
  }
  return missing.empty() ? "" : "missing " + missing;
}

}  // namespace

// Note [IDX format]
// Big-endian throughout: a magic number 0x000008NN (0x08: unsigned bytes, NN: the number of
// dims), NN 32-bit sizes, then the bytes row-major. The sizes are checked against the data that
// is actually there (read to the end, so nothing is allocated on the header's word alone).
Tensor read_idx(const std::string& path) {
  const int fd = io::detail::open_regular_file(path, "data.idx");
  errno = 0;
  GzFile f(gzdopen(fd, "rb"));
  if (f == nullptr) ::close(fd);
  EMBER_CHECK_IO(f != nullptr, "[data.idx] {}: cannot open: {}", path,
                 errno ? std::strerror(errno) : "out of memory");
  unsigned char magic[4];
  const size_t got = read_some(f.get(), path, magic, 4);
  EMBER_CHECK_IO(
      got == 4,
      "[data.idx] {}: truncated: {} bytes, but an IDX file starts with a 4-byte magic number", path,
      got);
  const uint32_t m = (uint32_t{magic[0]} << 24) | (uint32_t{magic[1]} << 16) |
                     (uint32_t{magic[2]} << 8) | magic[3];
  EMBER_CHECK_IO(m == 0x803 || m == 0x801,
                 "[data.idx] {}: bad magic number 0x{:08x}: expected 0x00000803 (images) or "
                 "0x00000801 (labels)",
                 path, m);
  const size_t ndim = m & 0xff;
  std::vector<unsigned char> raw_dims(4 * ndim);
  const size_t dim_bytes = read_some(f.get(), path, raw_dims.data(), raw_dims.size());
  EMBER_CHECK_IO(
      dim_bytes == raw_dims.size(),
      "[data.idx] {}: truncated: magic 0x{:08x} announces {} dims ({} bytes) but only {} "
      "bytes follow",
      path, m, ndim, raw_dims.size(), dim_bytes);
  std::vector<int64_t> dims(ndim);
  // The product of the non-zero dims must fit in int64 even when a zero dim makes the tensor
  // empty: the tensor's strides are made of it.
  uint64_t span = 1;
  bool overflow = false, has_zero = false;
  for (size_t d = 0; d < ndim; ++d) {
    const unsigned char* p = &raw_dims[4 * d];
    dims[d] = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3];
    if (dims[d] == 0) has_zero = true;
    if (dims[d] != 0)
      overflow = overflow || __builtin_mul_overflow(span, static_cast<uint64_t>(dims[d]), &span);
  }
  EMBER_CHECK_IO(!overflow && span <= static_cast<uint64_t>(INT64_MAX),
                 "[data.idx] {}: header says {}, which overflows int64", path, describe(dims));
  const uint64_t expected = has_zero ? 0 : span;

  // Grow the buffer only as data arrives, up to what the header announces.
  auto data = std::make_shared<std::vector<unsigned char>>();
  size_t have = 0;
  while (have < expected) {
    data->resize(std::min<uint64_t>(expected, std::max<uint64_t>(2 * have, 1 << 20)));
    const size_t want = data->size() - have;
    const size_t n = read_some(f.get(), path, data->data() + have, want);
    have += n;
    if (n < want) break;
  }
  EMBER_CHECK_IO(have == expected,
                 "[data.idx] {}: truncated: header says {} but only {} bytes follow", path,
                 describe(dims), have);
  unsigned char extra[4096];
  size_t trailing = 0;
  for (size_t n; (n = read_some(f.get(), path, extra, sizeof(extra))) > 0;) trailing += n;
  EMBER_CHECK_IO(trailing == 0,
                 "[data.idx] {}: {} unexpected bytes after the {} the header announces", path,
                 trailing, describe(dims));

  const IntList sizes(dims);
  if (expected == 0) return empty(sizes, TensorOptions(DType::UInt8, Device::cpu()));
  return from_blob(data->data(), sizes, DType::UInt8, [data](void*) mutable { data.reset(); });
}

Tensor to_float_images(const Tensor& pixels) {
  EMBER_CHECK(pixels.dim() == 3 && pixels.dtype() == DType::UInt8,
              "[data.to_float_images] expected uint8 images [N, rows, cols]: got {} {}",
              pixels.dtype(), pixels.sizes());
  const Tensor src = pixels.to(Device::cpu()).contiguous();
  const int64_t n = src.size(0), rows = src.size(1), cols = src.size(2);
  // As torchvision's ToTensor: x / 255 in float32.
  Tensor x = empty({n, 1, rows, cols}, TensorOptions(DType::Float32, Device::cpu()));
  const uint8_t* pixel_src = src.data_ptr<uint8_t>();
  float* pixel_dst = x.data_ptr<float>();
  const int64_t count = n * rows * cols;
  for (int64_t i = 0; i < count; ++i) pixel_dst[i] = static_cast<float>(pixel_src[i]) / 255.0f;
  return x;
}

std::string find_fashion_mnist(std::optional<std::string> root) {
  const std::string install =
      "install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist) "
      "or set EMBER_DATA_DIR to a directory holding the four IDX files";
  if (root) {
    const std::string problem = check_dir(*root);
    EMBER_CHECK_IO(problem.empty(), "[data.fashion_mnist] Fashion-MNIST not found in {}: {} ({})",
                   *root, problem, install);
    return *root;
  }
  std::vector<std::string> looked;
  std::vector<fs::path> places;
  const char* env = std::getenv("EMBER_DATA_DIR");
  if (env && *env) {
    places.push_back(env);
    places.push_back(fs::path(env) / "fashion-mnist");
  } else {
    looked.push_back("$EMBER_DATA_DIR (unset)");
  }
  places.push_back(kDebianDir);
  for (const fs::path& dir : places) {
    const std::string problem = check_dir(dir);
    if (problem.empty()) return dir.string();
    looked.push_back(fmt::format("{} ({})", dir.string(), problem));
  }
  EMBER_CHECK_IO(false, "[data.fashion_mnist] Fashion-MNIST not found; looked in: {}; {}",
                 fmt::join(looked, "; "), install);
  return {};
}

MNIST::MNIST(const std::string& root, bool train, std::optional<int64_t> limit)
    : tensors_(read(root, train, limit)) {}

TensorDataset MNIST::read(const std::string& root, bool train, std::optional<int64_t> limit) {
  EMBER_CHECK(!limit || *limit >= 0, "[data.MNIST] limit must be >= 0, got {}", *limit);
  const std::string split = train ? "train" : "t10k";
  auto path_of = [&](const std::string& stem) {
    std::optional<std::string> p = find_file(root, stem);
    EMBER_CHECK_IO(p.has_value(), "[data.MNIST] {}: neither {}.gz nor {} exists", root, stem, stem);
    return *p;
  };
  const std::string image_path = path_of(split + "-images-idx3-ubyte");
  const std::string label_path = path_of(split + "-labels-idx1-ubyte");
  Tensor images = read_idx(image_path);
  Tensor labels = read_idx(label_path);
  EMBER_CHECK_IO(images.dim() == 3, "[data.MNIST] {}: expected images [N, rows, cols], got {}",
                 image_path, images.sizes());
  EMBER_CHECK_IO(labels.dim() == 1, "[data.MNIST] {}: expected labels [N], got {}", label_path,
                 labels.sizes());
  EMBER_CHECK_IO(images.size(0) == labels.size(0),
                 "[data.MNIST] {} has {} images but {} has {} labels", image_path, images.size(0),
                 label_path, labels.size(0));

  const int64_t n = limit ? std::min(*limit, images.size(0)) : images.size(0);
  const uint8_t* label_src = labels.data_ptr<uint8_t>();
  Tensor y = empty({n}, TensorOptions(DType::Int64, Device::cpu()));
  int64_t* label_dst = y.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK_IO(label_src[i] <= 9,
                   "[data.MNIST] {}: label {} of example {} is not a class (0..9)", label_path,
                   static_cast<int>(label_src[i]), i);
    label_dst[i] = label_src[i];
  }
  return TensorDataset({to_float_images(images.narrow(0, 0, n)), y});
}

int64_t MNIST::size() const {
  return tensors_.size();
}

std::vector<Tensor> MNIST::get(int64_t i) const {
  return tensors_.get(i);
}

std::vector<Tensor> MNIST::get_batch(const std::vector<int64_t>& indices) const {
  return tensors_.get_batch(indices);
}

}  // namespace ember::data
