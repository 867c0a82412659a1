#include "tools/ember/predict.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <ember/amp.h>
#include <ember/data.h>
#include <ember/ember.h>
#include <ember/graph/onnx.h>
#include <ember/graph/optimize.h>
#include <ember/graph/session.h>
#include <ember/io.h>
#include <ember/models.h>
#include <ember/nn/fuse.h>
#include <fmt/format.h>

#include "api/io/open_file.h"
#include "ember/dispatch/device_registry.h"
#include "tools/ember/train_common.h"

namespace ember::tools {
namespace {

namespace fs = std::filesystem;

// Every model of models::by_name reads 1x28x28 images, as Fashion-MNIST's.
constexpr int64_t kSide = 28;
constexpr int64_t kClasses = 10;

/** Runs `f`; an ember::Error it throws comes back as the same kind, as "[predict] <context>:
 *  <its message>". */
template <typename F>
auto in_context(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw_error(e.kind(), fmt::format("[predict] {}: {}", context, e.what()));
  }
}

/** Up to `bytes` bytes from the start of the regular file at `path` (errors tagged [predict]). */
std::string read_head(const std::string& path, size_t bytes, int64_t* file_size = nullptr) {
  const int fd = io::detail::open_regular_file(path, "predict");
  std::string out(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::pread(fd, out.data() + got, bytes - got, static_cast<off_t>(got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (file_size) *file_size = static_cast<int64_t>(::lseek(fd, 0, SEEK_END));
  ::close(fd);
  out.resize(got);
  return out;
}

enum class InputKind { Idx, Pgm };

/** What the file at `path` is, from its first bytes; anything but an IDX file or a greyscale PGM
 *  is refused, naming what it looks like. */
InputKind sniff(const std::string& path) {
  const std::string h = read_head(path, 8);
  const auto at = [&](size_t i) { return i < h.size() ? static_cast<unsigned char>(h[i]) : -1; };
  EMBER_CHECK_IO(!h.empty(),
                 "[predict] {}: empty file (expected an IDX images file or a PGM image)", path);
  if (at(0) == 0x1f && at(1) == 0x8b) return InputKind::Idx;  // gzip: IDX files come gzipped
  if (at(0) == 0 && at(1) == 0 && at(2) == 0x08) return InputKind::Idx;
  if (at(0) == 'P' && (at(1) == '5' || at(1) == '2')) return InputKind::Pgm;
  const std::string convert = fmt::format(
      "convert it to an 8-bit PGM, e.g. `convert {} -colorspace Gray -resize 28x28! out.pgm`",
      path);
  EMBER_CHECK_IO(!(at(0) == 'P' && (at(1) == '6' || at(1) == '3')),
                 "[predict] {}: a colour PPM image (P{}), but the model reads 28x28 greyscale ({})",
                 path, static_cast<char>(at(1)), convert);
  EMBER_CHECK_IO(!(at(0) == 'P' && (at(1) == '4' || at(1) == '1' || at(1) == '7')),
                 "[predict] {}: a netpbm P{} image, but only greyscale PGM (P5, P2) is read ({})",
                 path, static_cast<char>(at(1)), convert);
  EMBER_CHECK_IO(h.rfind("\x89PNG", 0) != 0,
                 "[predict] {}: a PNG image, but only PGM images and IDX files are read ({})", path,
                 convert);
  EMBER_CHECK_IO(!(at(0) == 0xff && at(1) == 0xd8),
                 "[predict] {}: a JPEG image, but only PGM images and IDX files are read ({})",
                 path, convert);
  std::string bytes;
  for (unsigned char c : h) bytes += fmt::format("{}{:02x}", bytes.empty() ? "" : " ", c);
  EMBER_CHECK_IO(false,
                 "[predict] {}: not an IDX images file or a PGM image: it starts with bytes {} "
                 "(IDX starts 00 00 08 03, gzip 1f 8b, PGM 'P5' or 'P2')",
                 path, bytes);
  return InputKind::Idx;
}

// Note [PGM images]
// A PGM file (netpbm) is "P5" (binary) or "P2" (plain text), then width, height and the largest
// value, as decimal numbers separated by whitespace with '#' comments allowed between them. P5
// is followed by one whitespace byte and width x height bytes (values above 255 would take two
// bytes each: refused), P2 by as many decimal numbers. A file whose largest value is not 255 is
// scaled to 0..255 as Pillow does, so every image reaches the model as ember train's data does:
// bytes divided by 255 (data::to_float_images). Only one image per file; bytes after it other
// than whitespace are refused, as are images of any size but 28x28.
constexpr int64_t kPgmMaxBytes = 1 << 20;  // a 28x28 P2 image with comments is far smaller

/** Reads the image of the PGM file at `path`, 28x28, as bytes 0..255 appended to `dst`
 *  (Note [PGM images]). */
void read_pgm(const std::string& path, std::vector<uint8_t>& dst) {
  int64_t file_size = 0;
  const std::string f = read_head(path, kPgmMaxBytes, &file_size);
  size_t pos = 2;
  const auto skip_space = [&] {
    while (pos < f.size()) {
      if (f[pos] == '#') {
        while (pos < f.size() && f[pos] != '\n' && f[pos] != '\r') ++pos;
      } else if (std::isspace(static_cast<unsigned char>(f[pos]))) {
        ++pos;
      } else {
        break;
      }
    }
  };
  // A decimal number after whitespace, or -1 at the end of the data; `what` names it in errors.
  const auto number = [&](const char* what) -> int64_t {
    skip_space();
    if (pos >= f.size()) return -1;
    const size_t start = pos;
    int64_t v = 0;
    while (pos < f.size() && std::isdigit(static_cast<unsigned char>(f[pos]))) {
      v = std::min<int64_t>(v * 10 + (f[pos] - '0'), int64_t{1} << 40);
      ++pos;
    }
    EMBER_CHECK_IO(
        pos > start &&
            (pos == f.size() || std::isspace(static_cast<unsigned char>(f[pos])) || f[pos] == '#'),
        "[predict] {}: malformed PGM: expected the {} as a decimal number at byte {}, "
        "found '{}'",
        path, what, start, f.substr(start, 8));
    return v;
  };
  const bool binary = f[1] == '5';
  const int64_t width = number("width"), height = number("height"), maxval = number("maxval");
  EMBER_CHECK_IO(maxval >= 0,
                 "[predict] {}: truncated PGM header: {} bytes end before the width, height and "
                 "largest value",
                 path, f.size());
  EMBER_CHECK_IO(width == kSide && height == kSide,
                 "[predict] {}: the image is {}x{}, but the model reads 28x28 greyscale images "
                 "(resize it, e.g. `convert {} -resize 28x28! out.pgm`)",
                 path, width, height, path);
  EMBER_CHECK_IO(maxval >= 1 && maxval <= 255,
                 "[predict] {}: PGM largest value {}: only 8-bit images (1..255) are read{}", path,
                 maxval, maxval > 255 ? " (save it with 8 bits per pixel)" : "");
  const int64_t count = width * height;
  const size_t first = dst.size();
  const auto pixel = [&](int64_t i, int64_t v) {
    EMBER_CHECK_IO(v <= maxval, "[predict] {}: pixel {} is {}, above the header's largest value {}",
                   path, i, v, maxval);
    dst.push_back(static_cast<uint8_t>(v));
  };
  if (binary) {
    ++pos;  // the single whitespace byte after the header
    const int64_t have =
        static_cast<int64_t>(f.size()) - static_cast<int64_t>(std::min(pos, f.size()));
    EMBER_CHECK_IO(have >= count,
                   "[predict] {}: truncated PGM: the header says {}x{} ({} bytes) but only {} "
                   "bytes follow",
                   path, width, height, count, have);
    for (int64_t i = 0; i < count; ++i) pixel(i, static_cast<unsigned char>(f[pos++]));
  } else {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t v = number("pixel value");
      EMBER_CHECK_IO(v >= 0,
                     "[predict] {}: truncated PGM: the header says {}x{} ({} values) but only {} "
                     "follow",
                     path, width, height, count, i);
      pixel(i, v);
    }
  }
  skip_space();
  EMBER_CHECK_IO(pos == f.size() && file_size <= kPgmMaxBytes,
                 "[predict] {}: {} bytes after the 28x28 image (one image per PGM file)", path,
                 file_size - static_cast<int64_t>(pos));
  if (maxval != 255) {
    for (size_t i = first; i < dst.size(); ++i) {
      dst[i] = static_cast<uint8_t>((dst[i] * 255 + maxval / 2) / maxval);
    }
  }
}

/** The images to classify, as bytes, with what is known about each. */
struct Inputs {
  std::vector<uint8_t> pixels;       ///< [N, 28, 28], row-major
  std::vector<int64_t> labels;       ///< per image; -1: unknown
  std::vector<std::string> names;    ///< "a.pgm", "t10k-images-idx3-ubyte.gz[17]"
  std::vector<bool> from_idx;        ///< per image: read from an IDX file
  std::vector<std::string> sources;  ///< per input file, for the header line
  int64_t pgm_files = 0;             ///< how many PGM files were read
  int64_t size() const { return static_cast<int64_t>(names.size()); }
};

/** The labels file of the IDX images file `images` in the same folder (t10k-images-idx3-ubyte.gz
 *  -> t10k-labels-idx1-ubyte[.gz]), or empty. */
std::string labels_beside(const std::string& images) {
  const fs::path path(images);
  std::string name = path.filename().string();
  const size_t at = name.find("images-idx3");
  if (at == std::string::npos) return {};
  name.replace(at, 11, "labels-idx1");
  if (name.ends_with(".gz")) name.resize(name.size() - 3);
  std::error_code ec;
  for (const std::string& candidate : {name + ".gz", name}) {
    const fs::path p = path.parent_path() / candidate;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

/** The labels of an IDX labels file, which must hold `count` of them for `images`. */
std::vector<int64_t> read_labels(const std::string& path, const std::string& images,
                                 int64_t count) {
  const Tensor t = in_context("cannot read the labels", [&] { return data::read_idx(path); });
  EMBER_CHECK_IO(t.dim() == 1, "[predict] {}: not a labels file: it holds {} {} (expected [N])",
                 path, t.dim() == 3 ? "images" : "a tensor", t.sizes());
  EMBER_CHECK_IO(t.size(0) == count,
                 "[predict] {} has {} labels but {} has {} images (pass the matching labels with "
                 "--labels)",
                 path, t.size(0), images, count);
  const uint8_t* p = t.data_ptr<uint8_t>();
  std::vector<int64_t> out(p, p + count);
  for (int64_t i = 0; i < count; ++i) {
    EMBER_CHECK_IO(out[i] < kClasses, "[predict] {}: label {} of image {} is not a class (0..9)",
                   path, out[i], i);
  }
  return out;
}

/** Adds the first images of the IDX file `path` (at most `room`), with the labels of `labels`
 *  (or of the labels file beside it when `labels` is empty). */
void add_idx(Inputs& in, const std::string& path, std::string labels, int64_t room) {
  const Tensor images = in_context("cannot read the images", [&] { return data::read_idx(path); });
  EMBER_CHECK_IO(images.dim() != 1,
                 "[predict] {}: a labels file ({} labels), not images (pass it with --labels)",
                 path, images.size(0));
  EMBER_CHECK_IO(images.dim() == 3, "[predict] {}: expected images [N, rows, cols], got {}", path,
                 images.sizes());
  EMBER_CHECK_IO(images.size(1) == kSide && images.size(2) == kSide,
                 "[predict] {}: the images are {}x{}, but the model reads 28x28 greyscale images",
                 path, images.size(1), images.size(2));
  const int64_t total = images.size(0), n = std::min(total, room);
  if (labels.empty()) labels = labels_beside(path);
  const std::vector<int64_t> y = labels.empty() ? std::vector<int64_t>(static_cast<size_t>(n), -1)
                                                : read_labels(labels, path, total);
  const uint8_t* src = images.data_ptr<uint8_t>();
  in.pixels.insert(in.pixels.end(), src, src + n * kSide * kSide);
  const std::string base = fs::path(path).filename().string();
  for (int64_t i = 0; i < n; ++i) {
    in.labels.push_back(y[static_cast<size_t>(i)]);
    in.names.push_back(fmt::format("{}[{}]", base, i));
    in.from_idx.push_back(true);
  }
  in.sources.push_back(fmt::format("{} ({} of {} images{})", path, n, total,
                                   labels.empty() ? ", no labels" : ", labels " + labels));
}

/** Every input's images, up to `limit` in all (0: no limit) (Note [PGM images]). */
Inputs read_inputs(const PredictOptions& o) {
  std::vector<std::string> files = o.inputs;
  if (files.empty()) {  // the Fashion-MNIST test set, as ember train evaluates on
    const std::string root = data::find_fashion_mnist(o.data);
    for (const char* name : {"t10k-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte"}) {
      std::error_code ec;
      if (fs::is_regular_file(fs::path(root) / name, ec)) {
        files.push_back((fs::path(root) / name).string());
        break;
      }
    }
  }
  EMBER_CHECK(
      o.labels.empty() || (files.size() == 1 && sniff(files[0]) == InputKind::Idx),
      "[predict] --labels {}: labels go with exactly one IDX images file, got {} input(s){}",
      o.labels, files.size(), files.size() == 1 ? " that is a PGM image" : "");
  Inputs in;
  int64_t room = o.limit > 0 ? o.limit : INT64_MAX;
  for (const std::string& f : files) {
    if (room == 0) break;
    if (sniff(f) == InputKind::Idx) {
      const int64_t before = in.size();
      add_idx(in, f, o.labels, room);
      room -= in.size() - before;
    } else {
      read_pgm(f, in.pixels);
      in.labels.push_back(-1);
      in.names.push_back(f);
      in.from_idx.push_back(false);
      ++in.pgm_files;
      --room;
    }
  }
  if (in.pgm_files > 0) in.sources.push_back(fmt::format("{} PGM image(s)", in.pgm_files));
  return in;
}

/** A checkpoint's tensors and metadata (a torch.save file's other values). */
struct Checkpoint {
  StateDict tensors;
  io::Metadata values;
  bool torch = false;
};

Checkpoint read_checkpoint(const std::string& path) {
  const std::string head = read_head(path, 16);
  Checkpoint c;
  c.torch = io::is_torch_file(head.data(), head.size());
  return in_context("cannot read the checkpoint", [&] {
    if (c.torch) {
      io::TorchFile f = io::load_torch(path);
      c.tensors = std::move(f.tensors);
      c.values = std::move(f.values);
    } else {
      c.tensors = io::load(path);
      c.values = io::load_metadata(path);
    }
    return std::move(c);
  });
}

// Note [Which tensors are the weights]
// `ember train` saves the model's state dict as it is; a torch.save file may be a bare state
// dict too, or a checkpoint that nests it ({"model": ..., "optimizer": ..., "epoch": 3}, flattened
// to "model.fc.weight" by io::load_torch), maybe from a DistributedDataParallel ("module.").
// The weights are the tensors under the first of the usual prefixes that holds every entry of
// the model's state dict, with the prefix removed; the rest of such a file (optimizer state) is
// not the model's. A bare state dict is loaded whole, strictly, so a missing, unexpected or
// mis-shaped entry is an error that names it.
StateDict model_weights(const StateDict& all, const nn::Module& model) {
  const StateDict expected = model.state_dict();
  const auto holds_all_under = [&](const std::string& prefix) {
    return std::all_of(expected.begin(), expected.end(),
                       [&](const auto& e) { return all.count(prefix + e.first) > 0; });
  };
  if (holds_all_under("")) return all;
  for (const std::string prefix : {"model.", "state_dict.", "model_state_dict.", "module.",
                                   "model.module.", "state_dict.module."}) {
    if (!holds_all_under(prefix)) continue;
    StateDict out;
    for (const auto& [name, t] : all) {
      if (name.starts_with(prefix)) out.emplace(name.substr(prefix.size()), t);
    }
    return out;
  }
  return all;
}

/** One line per image: its name, the label when known, the top `k` classes. */
std::string image_line(const std::string& name, int64_t label, const float* probs, int64_t k) {
  std::vector<int64_t> order(kClasses);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return probs[a] > probs[b]; });
  std::string line = name + ":";
  for (int64_t j = 0; j < k; ++j) {
    const int64_t c = order[static_cast<size_t>(j)];
    line += fmt::format("{} {} {} ({:.4f})", j ? "," : "", c,
                        data::kFashionMnistClasses[static_cast<size_t>(c)], probs[c]);
  }
  if (label >= 0) {
    line += fmt::format("  [label {} {}: {}]", label,
                        data::kFashionMnistClasses[static_cast<size_t>(label)],
                        order[0] == label ? "right" : "wrong");
  }
  return line;
}

}  // namespace

/** The classifier predict runs: its forward pass and what the summary line says of it. */
struct Model {
  std::function<Tensor(const Tensor&)> forward;  // [N, 1, 28, 28] images to [N, 10] logits
  std::string name;
  int64_t parameters = 0;
  std::string fused;  // what fuse_for_inference or the graph optimizer did, ", ..." or ""
  double trained_accuracy = NAN;
  std::shared_ptr<nn::Module> module;  // an Ember model's module (null for an ONNX graph)
};

/** A model of ember train from its checkpoint, on `device` in `format`, in eval mode. */
Model ember_model(const PredictOptions& o, Device device, MemoryFormat format) {
  // The model: its name from --model or the checkpoint, built as ember train builds it.
  const Checkpoint ckpt = read_checkpoint(o.checkpoint);
  const auto meta = [&](const std::string& key) {
    const auto it = ckpt.values.find(key);
    return it == ckpt.values.end() ? std::string() : it->second;
  };
  EMBER_CHECK(meta("task") != "charlm" && meta("model") != "gpt",
              "[predict] {} is a character-level GPT (ember train --task charlm), not an image "
              "classifier (sample from it with `ember generate {}`)",
              o.checkpoint, o.checkpoint);
  const std::string name = o.model.empty() ? meta("model") : o.model;
  const std::string origin = o.model.empty() ? "as its metadata says" : "from --model";
  const std::vector<std::string>& known = models::names();
  EMBER_CHECK(!name.empty(),
              "[predict] {}: the checkpoint does not say which model it holds (no 'model' in its "
              "metadata; pass --model {})",
              o.checkpoint, fmt::join(known, "|"));
  EMBER_CHECK(std::find(known.begin(), known.end(), name) != known.end(),
              "[predict] unknown model '{}' ({}; known: {})", name, origin, fmt::join(known, ", "));
  std::shared_ptr<nn::Module> model = models::by_name(name);
  try {
    model->load_state_dict(model_weights(ckpt.tensors, *model));  // strict
  } catch (const Error& e) {
    throw_error(e.kind(), fmt::format("[predict] {} does not hold the weights of a '{}' ({}): {}",
                                      o.checkpoint, name, origin, e.what()));
  }
  const int64_t parameters = model->num_parameters();  // before folding adds biases
  model->to(device);
  model->to(format);
  model->eval();

  const std::string trained = meta("test_accuracy");
  Model m;
  m.name = name;
  m.parameters = parameters;
  m.module = model;
  m.trained_accuracy = trained.empty() ? NAN : std::strtod(trained.c_str(), nullptr);
  m.forward = [model](const Tensor& images) { return (*model)(images); };
  return m;
}

/** An ONNX model file (ember::graph::load_onnx), optimized and run by a graph::Session on
 *  `device`; its first input takes the images as [N, 1, 28, 28] or flattened [N, 784]. */
Model onnx_model(const PredictOptions& o, Device device) {
  EMBER_CHECK(o.amp == "none",
              "[predict] --amp is for Ember's own models: an ONNX model runs in "
              "the dtypes it was exported with");
  graph::OptimizeReport report;
  auto session = std::make_shared<graph::Session>(
      graph::optimize(graph::load_onnx(o.checkpoint), graph::OptLevel::All, &report), device);
  const graph::Graph& g = session->graph();
  EMBER_CHECK(!g.inputs().empty() && !g.outputs().empty(),
              "[predict] {} has no inputs or no outputs", o.checkpoint);
  const graph::ValueInfo input = g.inputs()[0];
  const size_t rank = input.shape ? input.shape->size() : 4;
  EMBER_CHECK(rank == 4 || rank == 2,
              "[predict] {} takes its input '{}' with {} dims; 28x28 images go in as [N, 1, 28, "
              "28] or [N, 784]",
              o.checkpoint, input.name, rank);
  EMBER_CHECK(is_floating(input.dtype),
              "[predict] {} takes its input '{}' as {}, not as floating-point images", o.checkpoint,
              input.name, input.dtype);
  Model m;
  m.name = o.checkpoint;
  for (const auto& [name, t] : g.initializers()) m.parameters += t.numel();
  m.fused = fmt::format(", ONNX graph of {} nodes, {} before optimizing", report.nodes_after,
                        report.nodes_before);
  const std::string output = g.outputs()[0].name;
  m.forward = [session, input, rank, output](const Tensor& images) {
    Tensor x = rank == 2 ? images.reshape({images.size(0), kSide * kSide}) : images.contiguous();
    const std::map<std::string, Tensor> out = session->run({{input.name, x.to(input.dtype)}});
    return out.at(output);
  };
  return m;
}

double predict(const PredictOptions& o) {
  EMBER_CHECK(o.batch_size >= 1, "[predict] --batch-size must be at least 1: got {}", o.batch_size);
  EMBER_CHECK(o.top_k >= 1 && o.top_k <= kClasses,
              "[predict] --top-k must be in 1..{} (the model has {} classes): got {}", kClasses,
              kClasses, o.top_k);
  EMBER_CHECK(o.limit >= 0, "[predict] --limit must not be negative: got {}", o.limit);
  EMBER_CHECK(o.amp == "none" || o.amp == "bf16" || o.amp == "f16",
              "[predict] unknown --amp '{}' (none, bf16, f16)", o.amp);
  init();
  if (o.threads > 0) set_num_threads(o.threads);
  const Device device = pick_device(o.device, "predict");

  const MemoryFormat format =
      o.channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  Model m =
      o.checkpoint.ends_with(".onnx") ? onnx_model(o, device) : ember_model(o, device, format);
  Inputs in = read_inputs(o);
  const int64_t n = in.size();
  const Tensor pixels =
      n == 0
          ? empty({0, kSide, kSide}, TensorOptions(DType::UInt8, Device::cpu()))
          : from_vector(in.pixels, {n, kSide, kSide}, TensorOptions(DType::UInt8, Device::cpu()));
  const auto batch = [&](int64_t start) {
    const int64_t b = std::min(o.batch_size, n - start);
    return to_device(data::to_float_images(pixels.narrow(0, start, b)), device, format);
  };
  // --fuse (the default) folds each batch norm into the convolution or linear layer before it,
  // merges the activations after them and fuses ResNet blocks' ends (nn::fuse_for_inference,
  // checked on the first batch):
  // the logits change only by float32 rounding (the default CNN predicts the same class for all
  // 10,000 test images either way), and a model it cannot fold runs as it is.
  std::string& fused = m.fused;
  if (m.module && o.fuse && n > 0) {
    try {
      const nn::FuseReport r = nn::fuse_for_inference(*m.module, batch(0));
      if (!r.folded.empty()) fused = fmt::format(", {} batch norms folded", r.folded.size());
      if (const size_t acts = r.relus.size() + r.activations.size(); acts > 0) {
        fused += fmt::format(", {} activations merged", acts);
      }
      if (!r.residuals.empty()) {
        fused += fmt::format(", {} residual block ends fused", r.residuals.size());
      }
    } catch (const Error& e) {
      fmt::print("note: batch norms left as they are: {}\n", e.what());
    }
  }
  const bool amp_on = o.amp != "none";
  const DType amp_dtype = o.amp == "f16" ? DType::Float16 : DType::BFloat16;
  fmt::print("ember predict: {} ({} parameters{}) from {} on {}, {} threads{}{}{}; {} images: {}\n",
             m.name, m.parameters, m.fused, o.checkpoint, device, get_num_threads(),
             o.channels_last ? ", channels-last" : "", amp_on ? ", amp " + o.amp : "",
             std::isfinite(m.trained_accuracy)
                 ? fmt::format(", trained to {:.2f}% test accuracy", 100 * m.trained_accuracy)
                 : "",
             n, fmt::join(in.sources, "; "));
  std::fflush(stdout);

  // The timed part: each batch's transform, copy, forward pass and results back on the host.
  autograd::InferenceMode inference;  // Note [Inference tensors]
  const amp::autocast mixed(device_type(device.type).name, amp_dtype, amp_on);
  int64_t correct = 0, labelled = 0, batches = 0;
  double compute_s = 0;
  for (int64_t start = 0; start < n; start += o.batch_size) {
    const Clock::time_point t0 = Clock::now();
    const Tensor logits = m.forward(batch(start));
    // As ember train's evaluation counts: argmax of the logits.
    const Tensor predicted = argmax(logits, 1).to(Device::cpu()).contiguous();
    const Tensor probs = softmax(logits.to(DType::Float32), 1).to(Device::cpu()).contiguous();
    compute_s += seconds_since(t0);
    ++batches;
    EMBER_CHECK(probs.dim() == 2 && probs.size(1) == kClasses,
                "[predict] the model gave logits {}, not [N, {}]", probs.sizes(), kClasses);
    const int64_t* p = predicted.data_ptr<int64_t>();
    std::string lines;
    for (int64_t i = 0; i < probs.size(0); ++i) {
      const int64_t at = start + i;
      const int64_t label = in.labels[static_cast<size_t>(at)];
      if (label >= 0) {
        ++labelled;
        correct += p[i] == label;
      }
      const bool show = o.show >= 0 ? at < o.show : !in.from_idx[static_cast<size_t>(at)];
      if (show) {
        lines += image_line(in.names[static_cast<size_t>(at)], label,
                            probs.data_ptr<float>() + i * kClasses, o.top_k) +
                 "\n";
      }
    }
    fmt::print("{}", lines);
  }
  const double accuracy =
      labelled ? static_cast<double>(correct) / static_cast<double>(labelled) : NAN;
  fmt::print("{} images; {}; {:.0f} images/s, {:.2f} ms per batch of {} ({} batches)\n", n,
             labelled ? fmt::format("accuracy {:.2f}% ({} of {} labelled images right)",
                                    100 * accuracy, correct, labelled)
                      : std::string("no labels, no accuracy"),
             compute_s > 0 ? static_cast<double>(n) / compute_s : 0.0,
             batches ? 1000 * compute_s / static_cast<double>(batches) : 0.0, o.batch_size,
             batches);
  std::fflush(stdout);
  return accuracy;
}

}  // namespace ember::tools
