// ONNX export: a function of tensors, run once under a kernel-call capture, written as an ONNX
// model (ModelProto, serialized by protobuf with ONNX's own generated classes).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "core/dispatch/capture.h"
#include "ember/autograd/grad_mode.h"
#include "ember/graph/onnx.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "graph/onnx/dtypes.h"

namespace ember::graph {

namespace {

using capture::Operand;
using capture::Recording;
using capture::SlotKind;
using capture::Step;

// Note [Exporting kernel calls]
// The exporter runs the function once under a capture (core/dispatch/capture.h, the recording
// ember::compile replays) and writes each recorded kernel call as ONNX nodes, by the table
// kExportRules: one row per kernel, naming the ONNX op its emitter writes. A kernel call is the
// level where an op's identity and its attributes are known (conv2d's strides, softmax's dim);
// the host code around it (Python, shape logic, views) is not recorded, so views are recovered
// from the operands: every operand is a view (offset, sizes, strides) on a storage slot, and the
// exporter keeps, per slot, the ONNX value that holds its elements (Held: a contiguous value
// starting at an element offset). Reading an operand turns its view into nodes on that value
// (Note [Views as ONNX nodes]); writing an output makes the node's value the slot's. A slot made
// before the capture is an initializer: a parameter or buffer under its name, any other tensor
// as a constant. What cannot be written exactly is refused with an [onnx.export] error naming
// the kernel: a kernel with no row, a host read of a tensor's values (the branch it decides
// would be frozen), random numbers but the draws ONNX has ops for (Note [Random draws in an
// export]), an in-place update of a window of a tensor that is no box of it (a box written into a
// fill is a Pad, into a computed value a Where), a view no reshape, slice and transpose chain
// gives. A composite op that marks its kernel calls as a region (the recurrent layers,
// scatter_reduce's prod, amax and amin, the random draws) is written whole by the region's row
// of kRegionRules instead, its calls skipped, whatever they read on the host (Note [Composite ops
// in a capture]). A dynamic axis is found by running the function a second time with that axis
// larger (Note [Dynamic axes by a second run]).

constexpr char kWho[] = "[onnx.export]";

int32_t onnx_dtype(DType d) {
  return onnx_dtypes::to_onnx(d);
}

std::vector<int64_t> vec(const Shape& s) {
  return {s.begin(), s.end()};
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/** An ONNX value of the graph: its name and the sizes it has in the recorded run. */
struct Val {
  std::string name;
  std::vector<int64_t> sizes;
};

/** What a storage slot holds: a contiguous value of `sizes` from element `offset` on, or, before
 *  any whole write, the parts kernels wrote into it (a concatenation's). */
struct Held {
  std::string name;
  int64_t offset = 0;
  std::vector<int64_t> sizes;
  DType dtype = DType::Float32;
  std::vector<std::pair<Operand, Val>> parts;
  std::string unreadable;      // why reading it is refused (max_pool2d's indices)
  std::string beyond;          // why reading outside [offset, offset + numel(sizes)) is refused
                               // (an LSTM's cell states: ONNX gives the last step's only)
  std::optional<Scalar> fill;  // a fill not written yet: a constant when read, a Pad's value
                               // when a kernel then writes a window of it
};

class Exporter;
using Emit = void (*)(Exporter& x, const Step& s, const char* onnx_op);

/** A value written as x w^T (+ b) by a linear kernel: what a recurrent layer's node takes as its
 *  input and weights instead of the projection (Note [Recurrent layers as ONNX nodes]). */
struct Projection {
  Val x;          // [rows, in]
  std::string w;  // [out, in]
  std::string b;  // [out], empty without bias
};

/** One row of the export table: a kernel and how it is written. */
struct ExportRule {
  std::string_view kernel;
  Emit emit;
  const char* onnx_op;
};

const ExportRule* find_rule(std::string_view kernel);
std::string rule_names();
/** The row for a composite op's region (Note [Composite ops in a capture]), or null. */
const ExportRule* find_region_rule(std::string_view op);

/** Per region of `rec`, whether the exporter writes it whole by its row (a complete region with a
 *  row, inside no region written whole) instead of its kernel calls. */
std::vector<bool> written_whole(const Recording& rec) {
  std::vector<bool> whole(rec.regions.size(), false), inside(rec.regions.size(), false);
  for (size_t k = 0; k < rec.regions.size(); ++k) {
    const capture::Region& r = rec.regions[k];
    if (r.parent >= 0) {
      const auto p = static_cast<size_t>(r.parent);
      inside[k] = whole[p] || inside[p];
    }
    whole[k] = !inside[k] && r.complete && find_region_rule(r.op) != nullptr;
  }
  return whole;
}

/** Whether something recorded inside region `region` (-1: none) is inside one written whole. */
bool within_whole(const Recording& rec, const std::vector<bool>& whole, int32_t region) {
  for (int32_t k = region; k >= 0; k = rec.regions[static_cast<size_t>(k)].parent) {
    if (whole[static_cast<size_t>(k)]) return true;
  }
  return false;
}

class Exporter {
 public:
  /** Writes `rec` into `g`; the inputs (contiguous) hold the graph inputs of those names. */
  Exporter(const Recording& rec, onnx::GraphProto* g, const ExportOptions& opts,
           const std::vector<Tensor>& inputs, const std::vector<std::string>& input_names)
      : rec_(rec), g_(g), held_(rec.slots.size()), opset_(opts.opset_version) {
    for (const auto& [name, t] : opts.parameters) {
      if (t.defined() && t.storage()) params_[t.storage().get()].push_back({name, t});
    }
    for (size_t i = 0; i < rec.slots.size(); ++i) {
      const capture::Slot& slot = rec.slots[i];
      if (slot.kind != SlotKind::Input) continue;
      const auto input = static_cast<size_t>(slot.input);
      held_[i].name = input_names[input];
      held_[i].sizes = vec(inputs[input].sizes());
      held_[i].dtype = inputs[input].dtype();
    }
  }

  /** Writes every recorded kernel call, by its row of the export table, but those of a composite
   *  op written whole, by its region's row. */
  void run() {
    const std::vector<bool> whole = written_whole(rec_);
    size_t next = 0;  // the first region not yet passed
    for (size_t i = 0;;) {
      bool wrote = false;
      while (next < rec_.regions.size() && rec_.regions[next].begin <= i) {
        const size_t k = next++;
        if (!whole[k]) continue;
        write_region(rec_.regions[k]);
        i = rec_.regions[k].end;
        wrote = true;
        break;
      }
      if (wrote) continue;
      if (i >= rec_.steps.size()) break;
      write_step(i++);
    }
    step_ = rec_.steps.size();  // what is read from here on is the function's outputs
  }

  /** Writes kernel call `i` by its row. */
  void write_step(size_t i) {
    const Step& s = rec_.steps[i];
    step_ = i;
    const ExportRule* rule = find_rule(s.op->name());
    EMBER_CHECK_NOT_IMPLEMENTED(rule != nullptr,
                                "{} Ember's kernel '{}' (call {} of {}) has no ONNX form in the "
                                "exporter (it writes: {})",
                                kWho, s.op->name(), i + 1, rec_.steps.size(), rule_names());
    for (const Operand& o : s.outputs) {
      if (o.slot < 0) continue;
      const SlotKind kind = rec_.slots[static_cast<size_t>(o.slot)].kind;
      EMBER_CHECK_NOT_IMPLEMENTED(
          kind == SlotKind::Intermediate,
          "{} kernel '{}' (call {}) writes in place into {}: an ONNX graph cannot update its "
          "inputs or weights (export a function that leaves them unchanged; a batch norm in "
          "training mode updates its running statistics: export in eval mode)",
          kWho, s.op->name(), i + 1,
          kind == SlotKind::Input      ? "an input"
          : kind == SlotKind::External ? "a tensor made outside the function"
                                       : "a tensor the function filled on the host");
    }
    rule->emit(*this, s, rule->onnx_op);
  }

  /** Writes the composite op of region `r` by its row: its kernel calls are not written, and
   *  what they made is unreadable but for the op's outputs. */
  void write_region(const capture::Region& r) {
    for (size_t j = r.begin; j < r.end; ++j) {
      for (const Operand& o : rec_.steps[j].outputs) {
        if (o.slot < 0) continue;
        Held& h = held_[static_cast<size_t>(o.slot)];
        h = Held{};
        h.unreadable = fmt::format(
            "a value {} computes inside, which the export writes whole as its ONNX op", r.op);
      }
    }
    const ExportRule* rule = find_region_rule(r.op);
    EMBER_ASSERT(rule != nullptr);
    Step s;
    s.inputs = r.inputs;
    s.outputs = r.outputs;
    s.ints = r.ints;
    s.floats = r.floats;
    s.dtype = !r.outputs.empty() ? r.outputs[0].dtype : DType::Float32;
    region_ = &r;
    rule->emit(*this, s, rule->onnx_op);
    region_ = nullptr;
  }

  // ---- nodes and constants ----

  /** Appends a node of `op` reading `inputs`; returns it (its outputs named fresh). */
  onnx::NodeProto* node(std::string_view op, const std::vector<std::string>& inputs,
                        int outputs = 1) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(std::string(op));
    n->set_name(fmt::format("/{}_{}", op, g_->node_size() - 1));
    for (const std::string& in : inputs) n->add_input(in);
    for (int i = 0; i < outputs; ++i) n->add_output(fresh(op));
    return n;
  }
  /** A one-output node's output. */
  std::string node1(std::string_view op, const std::vector<std::string>& inputs) {
    return node(op, inputs)->output(0);
  }
  static void attr(onnx::NodeProto* n, const char* name, int64_t v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto* n, const char* name, double v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void attr(onnx::NodeProto* n, const char* name, std::string_view v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(std::string(v));
  }
  static void attr(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t i : v) a->add_ints(i);
  }

  /** Adds `t` as an initializer named `name`. */
  void initializer(const std::string& name, const Tensor& t) {
    const Tensor c = t.to(Device::cpu()).contiguous();
    onnx::TensorProto* p = g_->add_initializer();
    p->set_name(name);
    p->set_data_type(onnx_dtype(c.dtype()));
    for (int64_t d : c.sizes()) p->add_dims(d);
    p->set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), c.nbytes()));
  }
  /** A 1-d int64 constant; `shape`: a Reshape's target (a dynamic axis may make it -1). */
  std::string ints(const std::vector<int64_t>& v, bool shape = false) {
    Tensor t = empty({static_cast<int64_t>(v.size())}, {DType::Int64});
    if (!v.empty()) std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(int64_t));
    std::string name = fresh(shape ? "shape" : "ints");
    initializer(name, t);
    if (shape) shape_constants_.insert(name);
    return name;
  }
  /** A tensor of `sizes` holding `value` everywhere: a ConstantOfShape node, so that a fill of a
   *  dynamic axis' size follows it (its shape is a target no dim of which is inferred). */
  std::string constant_of_shape(const std::vector<int64_t>& sizes, const Scalar& value,
                                DType dtype) {
    const std::string shape = ints(sizes, true);
    exact_shapes_.insert(shape);
    return constant_like(shape, value, dtype);
  }
  /** A ConstantOfShape of the shape the value `shape` holds, `value` everywhere. */
  std::string constant_like(const std::string& shape, const Scalar& value, DType dtype) {
    onnx::NodeProto* n = node("ConstantOfShape", {shape});
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    const Tensor one = full({1}, value, {dtype});
    onnx::TensorProto* t = a->mutable_t();
    t->set_data_type(onnx_dtype(dtype));
    t->add_dims(1);
    t->set_raw_data(std::string(static_cast<const char*>(one.data_ptr()), one.nbytes()));
    return n->output(0);
  }
  /** A 0-d constant of `dtype`. */
  std::string scalar(double v, DType dtype) {
    std::string name = fresh("scalar");
    initializer(name, full({}, v, {dtype}));
    return name;
  }
  /** `v` reshaped to `sizes` (nothing written when it has them). */
  /** The view `u` (its dims of size > 1 `dims`, by decreasing stride) as a window of the value's
   *  own axes, when each of those dims strides as one of them: the axes' sizes stay apart, so a
   *  dynamic one among them is not merged into a product (a state of a recurrent layer, selected
   *  from [layers, batch, hidden]). False when the strides are others. */
  static bool own_axes(const Held& h, const Operand& u, const std::vector<size_t>& dims,
                       int64_t rel, std::vector<int64_t>& radix, std::vector<int64_t>& starts,
                       std::vector<int64_t>& lengths) {
    const size_t rank = h.sizes.size();
    std::vector<int64_t> stride(rank), start(rank), length(rank, 1);
    int64_t s = 1;
    for (size_t k = rank; k-- > 0;) {
      stride[k] = s;
      s *= h.sizes[k];
    }
    size_t k = 0;
    for (size_t d : dims) {
      while (k < rank && (h.sizes[k] == 1 || stride[k] != u.strides[d])) ++k;
      if (k == rank) return false;
      length[k++] = u.sizes[d];
    }
    int64_t rem = rel;
    for (size_t a = 0; a < rank; ++a) {
      start[a] = rem / stride[a];
      rem %= stride[a];
      if (start[a] + length[a] > h.sizes[a]) return false;
    }
    radix = h.sizes;
    starts = std::move(start);
    lengths = std::move(length);
    return true;
  }

  Val reshape(const Val& v, const std::vector<int64_t>& sizes) {
    if (v.sizes == sizes) return v;
    return {node1("Reshape", {v.name, ints(sizes, true)}), sizes};
  }
  /** The names of the Reshape targets written (Note [Dynamic axes by a second run]). */
  const std::set<std::string>& shape_constants() const { return shape_constants_; }
  /** The targets among them that must keep every dim (ConstantOfShape's). */
  const std::set<std::string>& exact_shapes() const { return exact_shapes_; }
  /** The starts and ends of the Slices written, each with the sizes of the axes it slices. */
  const std::map<std::string, std::vector<int64_t>>& slice_extents() const {
    return slice_extents_;
  }

  // ---- operands ----

  /** The ONNX value of input `i` of `s`. `broadcasts`: the op broadcasts as NumPy does, so dims
   *  the core expanded (stride 0) are read as size 1 and leading ones left out, down to
   *  `min_rank` dims, instead of written as an Expand. */
  Val in(const Step& s, size_t i, bool broadcasts = false, size_t min_rank = 0) {
    return read(s.inputs[i], broadcasts, min_rank);
  }
  /** Input `i` of `s` as the value it views, when it views all of it contiguously with the same
   *  first `prefix` dims (batch_norm's x viewed [N, C, S] is the [N, C, H, W] value itself); else
   *  as in(). */
  Val in_whole(const Step& s, size_t i, size_t prefix) {
    const Operand& o = s.inputs[i];
    const Held& h = held_[static_cast<size_t>(o.slot)];
    const auto same_prefix = [&] {
      if (h.sizes.size() < prefix || o.sizes.size() < prefix) return false;
      return std::equal(o.sizes.begin(), o.sizes.begin() + static_cast<ptrdiff_t>(prefix),
                        h.sizes.begin());
    };
    if (!h.name.empty() && h.unreadable.empty() && o.offset == h.offset && contiguous(o) &&
        numel(vec(o.sizes)) == numel(h.sizes) && same_prefix()) {
      return {h.name, h.sizes};
    }
    return in(s, i);
  }
  /** Whether input `i` was given (optional inputs are undefined operands). */
  static bool has(const Step& s, size_t i) { return i < s.inputs.size() && s.inputs[i].slot >= 0; }

  /** Makes `v` the value of output `i` of `s`. */
  void out(const Step& s, size_t i, Val v) {
    const Operand& o = s.outputs[i];
    if (o.slot < 0) return;
    Held& h = held_[static_cast<size_t>(o.slot)];
    const capture::Slot& slot = rec_.slots[static_cast<size_t>(o.slot)];
    const bool whole =
        o.offset == 0 &&
        static_cast<size_t>(numel(vec(o.sizes))) * itemsize(o.dtype) == slot.storage->bytes();
    if (whole && contiguous(o)) {
      EMBER_ASSERT(numel(v.sizes) == numel(vec(o.sizes)));
      h = Held{};
      h.name = v.name;
      h.offset = o.offset;
      h.sizes = v.sizes;  // the value's own shape: the operand may view it otherwise
      h.dtype = o.dtype;
      return;
    }
    if (whole) {
      // A dense output in another dim order (channels-last): the slot holds the value
      // transposed into its memory order.
      if (const std::optional<std::vector<int64_t>> perm = memory_order(o)) {
        std::vector<int64_t> sizes;
        for (int64_t d : *perm) sizes.push_back(o.sizes[static_cast<size_t>(d)]);
        onnx::NodeProto* n = node("Transpose", {reshape(v, vec(o.sizes)).name});
        attr(n, "perm", *perm);
        h = Held{};
        h.name = n->output(0);
        h.sizes = sizes;
        h.dtype = o.dtype;
        return;
      }
    }
    if (h.fill && h.parts.empty() && pad_into(o, h, v)) return;
    if (!h.name.empty() && h.unreadable.empty() && h.beyond.empty() && update_window(o, h, v)) {
      return;
    }
    EMBER_CHECK_NOT_IMPLEMENTED(h.name.empty() && !h.fill,
                                "{} {} updates part of a tensor that already holds values, in a "
                                "window that is no box of it (a strided or lower-rank slice): "
                                "ONNX has no such update Ember writes",
                                kWho, where());
    h.parts.push_back({o, std::move(v)});
  }
  /** Makes output `i` of `s` the constant `value` everywhere (a fill kernel's). */
  void fill(const Step& s, size_t i, Scalar value) {
    const Operand& o = s.outputs[i];
    Held& h = held_[static_cast<size_t>(o.slot)];
    const capture::Slot& slot = rec_.slots[static_cast<size_t>(o.slot)];
    if (contiguous(o) && o.offset == 0 &&
        static_cast<size_t>(numel(vec(o.sizes))) * itemsize(o.dtype) == slot.storage->bytes()) {
      h = Held{};
      h.fill = value;
      h.sizes = vec(o.sizes);
      h.dtype = o.dtype;
      return;
    }
    std::string name = fresh("fill");
    initializer(name, full(o.sizes, value, {o.dtype}));
    out(s, i, {name, vec(o.sizes)});
  }
  /** Makes `v` [sizes] the value of the elements of output `i` from element `offset` of its
   *  storage on; reading any other element of it is refused, saying `why`. */
  void out_window(const Step& s, size_t i, const Val& v, int64_t offset, std::string why) {
    const Operand& o = s.outputs[i];
    if (o.slot < 0) return;
    Held& h = held_[static_cast<size_t>(o.slot)];
    h = Held{};
    h.name = v.name;
    h.offset = offset;
    h.sizes = v.sizes;
    h.dtype = o.dtype;
    h.beyond = std::move(why);
  }
  /** The value of output `i` of `s` before the kernel writes it (a scatter's destination, which
   *  the core filled first). */
  Val before(const Step& s, size_t i) { return read(s.outputs[i], false, 0); }

  /** Notes that the value `name` is the projection `p` (a linear kernel's output). */
  void note_projection(const std::string& name, Projection p) { projections_[name] = std::move(p); }
  /** The projection input `i` of `s` reads whole, if a linear kernel wrote it; else null. */
  const Projection* projection(const Step& s, size_t i) const {
    const Operand& o = s.inputs[i];
    const Held& h = held_[static_cast<size_t>(o.slot)];
    if (h.name.empty() || o.offset != h.offset || !contiguous(o) ||
        numel(vec(o.sizes)) != numel(h.sizes)) {
      return nullptr;
    }
    auto it = projections_.find(h.name);
    return it == projections_.end() ? nullptr : &it->second;
  }

  /** Marks output `i` as a value no ONNX op gives (reading it is refused, saying `why`). */
  void unreadable(const Step& s, size_t i, std::string why) {
    const Operand& o = s.outputs[i];
    if (o.slot < 0) return;
    Held& h = held_[static_cast<size_t>(o.slot)];
    h = Held{};
    h.unreadable = std::move(why);
  }

  /** The value of an operand the function returns. */
  Val result(const Operand& o) { return read(o, false, 0); }

  /** A new value name; the exporter's own names begin with '/', which user names may not. */
  std::string fresh(std::string_view what) { return fmt::format("/{}_{}", what, counter_++); }
  std::string where() const {
    if (region_ != nullptr) {
      return fmt::format("{} (kernel calls {} to {})", region_->op, region_->begin + 1,
                         region_->end);
    }
    return step_ < rec_.steps.size()
               ? fmt::format("kernel '{}' (call {})", rec_.steps[step_].op->name(), step_ + 1)
               : std::string("an output");
  }
  /** The opset written. */
  int64_t opset() const { return opset_; }
  /** The composite op being written, or "" for a kernel call. */
  std::string_view region_op() const {
    return region_ != nullptr ? std::string_view(region_->op) : std::string_view();
  }

  /** Writes output `i` of a composite op (a region's step) as `v`: a view of an earlier output
   *  (an RNN's last state, a step of its outputs) is read from that one; one that is a window of
   *  a value the op computed inside (the LSTM's last cell state among every step's) holds `v`
   *  there, reading the rest of it refused, saying `beyond`. */
  void out_composite(const Step& s, size_t i, const Val& v, std::string beyond) {
    const Operand& o = s.outputs[i];
    if (o.slot < 0) return;
    for (size_t j = 0; j < i; ++j) {
      if (s.outputs[j].slot == o.slot) return;
    }
    const capture::Slot& slot = rec_.slots[static_cast<size_t>(o.slot)];
    const bool whole =
        o.offset == 0 &&
        static_cast<size_t>(numel(vec(o.sizes))) * itemsize(o.dtype) == slot.storage->bytes();
    if (whole) {
      out(s, i, v);
      return;
    }
    EMBER_CHECK_NOT_IMPLEMENTED(contiguous(o),
                                "{} {} returns a strided view of a value it computes inside, "
                                "which the export cannot write",
                                kWho, where());
    out_window(s, i, v, o.offset, std::move(beyond));
  }
  /** A reduction `op` of `v` over `axes`: the axes an input from opset 18 on (ReduceSum's from
   *  13), an attribute before. */
  onnx::NodeProto* reduce(std::string_view op, const std::string& v,
                          const std::vector<int64_t>& axes, bool keepdims) {
    onnx::NodeProto* n;
    if (op == "ReduceSum" || opset_ >= 18) {
      n = node(op, {v, ints(axes)});
    } else {
      n = node(op, {v});
      attr(n, "axes", axes);
    }
    attr(n, "keepdims", int64_t{keepdims ? 1 : 0});
    return n;
  }

 private:
  static bool contiguous(const Operand& o) {
    int64_t expect = 1;
    for (size_t d = o.sizes.size(); d-- > 0;) {
      if (o.sizes[d] != 1 && o.strides[d] != expect) return false;
      expect *= o.sizes[d];
    }
    return true;
  }
  /** The dims of `o` from the outermost in memory to the innermost, when `o` is dense in that
   *  order (a channels-last image is dims {0, 2, 3, 1}); else nothing. */
  static std::optional<std::vector<int64_t>> memory_order(const Operand& o) {
    std::vector<int64_t> perm(o.sizes.size());
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return o.strides[static_cast<size_t>(a)] > o.strides[static_cast<size_t>(b)];
    });
    int64_t expect = 1;
    for (size_t k = perm.size(); k-- > 0;) {
      const auto d = static_cast<size_t>(perm[k]);
      if (o.sizes[d] != 1 && o.strides[d] != expect) return std::nullopt;
      expect *= o.sizes[d];
    }
    return perm;
  }

  Val read(const Operand& o, bool broadcasts, size_t min_rank) {
    EMBER_ASSERT(o.slot >= 0);
    Held& h = held_[static_cast<size_t>(o.slot)];
    EMBER_CHECK_NOT_IMPLEMENTED(h.unreadable.empty(), "{} {} reads {}", kWho, where(),
                                h.unreadable);
    if (!h.beyond.empty() && numel(vec(o.sizes)) > 0) {
      int64_t lo = o.offset, hi = o.offset;
      for (size_t d = 0; d < o.sizes.size(); ++d) {
        const int64_t span = o.strides[d] * (o.sizes[d] - 1);
        (span < 0 ? lo : hi) += span;
      }
      EMBER_CHECK_NOT_IMPLEMENTED(lo >= h.offset && hi < h.offset + numel(h.sizes),
                                  "{} {} reads {}", kWho, where(), h.beyond);
    }
    // The view with its expanded dims (stride 0) as size 1: what is read before an Expand.
    Operand u = o;
    std::vector<bool> expanded(o.sizes.size(), false);
    for (size_t d = 0; d < o.sizes.size(); ++d) {
      if (o.strides[d] == 0 && o.sizes[d] != 1) {
        expanded[d] = true;
        u.sizes[d] = 1;
      }
    }
    std::vector<int64_t> target = vec(u.sizes);
    if (broadcasts) {
      size_t lead = 0;
      while (lead < o.sizes.size() && o.strides[lead] == 0 && target.size() - lead > min_rank) {
        ++lead;
      }
      target.erase(target.begin(), target.begin() + static_cast<ptrdiff_t>(lead));
    }
    Val v;
    const SlotKind kind = rec_.slots[static_cast<size_t>(o.slot)].kind;
    if (h.name.empty() && h.fill) h.name = constant_of_shape(h.sizes, *h.fill, h.dtype);
    if (h.name.empty() && !h.parts.empty()) assemble(o, h);
    if (h.name.empty() && (kind == SlotKind::External || kind == SlotKind::Constant)) {
      adopt_weight(o, h);
    }
    if (h.name.empty()) {
      // A tensor made before the function ran and not a parameter: its values, as read.
      EMBER_CHECK_NOT_IMPLEMENTED(kind == SlotKind::External || kind == SlotKind::Constant,
                                  "{} {} reads a tensor no recorded kernel wrote", kWho, where());
      auto key = std::make_pair(o.slot, fmt::format("{}:{}:{}:{}", u.offset, u.sizes, u.strides,
                                                    static_cast<int>(u.dtype)));
      auto it = constants_.find(key);
      if (it == constants_.end()) {
        const capture::Slot& slot = rec_.slots[static_cast<size_t>(o.slot)];
        Tensor t(make_intrusive<TensorImpl>(slot.storage, u.sizes, u.strides, u.offset, u.dtype));
        std::string name = fresh("constant");
        initializer(name, t.reshape(target));
        it = constants_.emplace(key, name).first;
      }
      v = {it->second, target};
    } else {
      EMBER_CHECK_NOT_IMPLEMENTED(h.dtype == o.dtype,
                                  "{} {} reads a {} tensor as {} (a view as another dtype), which "
                                  "no ONNX op does",
                                  kWho, where(), h.dtype, o.dtype);
      v = view(h, u, target);
    }
    if (!broadcasts && std::find(expanded.begin(), expanded.end(), true) != expanded.end()) {
      std::vector<int64_t> shape(o.sizes.size(), 1);
      for (size_t d = 0; d < o.sizes.size(); ++d) {
        if (expanded[d]) shape[d] = o.sizes[d];
      }
      v = {node1("Expand", {v.name, ints(shape)}), vec(o.sizes)};
    }
    return v;
  }

  /** Pad's pads that place the window `o` in the value `h` holds, when `o` is a box of it (a
   *  narrow of each of its dims); else nothing. */
  static std::optional<std::vector<int64_t>> box_pads(const Operand& o, const Held& h) {
    if (o.sizes.size() != h.sizes.size() || numel(h.sizes) == 0 || o.dtype != h.dtype ||
        o.offset < h.offset) {
      return std::nullopt;
    }
    std::vector<int64_t> pads(2 * h.sizes.size());
    int64_t rem = o.offset - h.offset, stride = numel(h.sizes);
    for (size_t d = 0; d < h.sizes.size(); ++d) {
      stride /= h.sizes[d];
      if (o.sizes[d] != 1 && o.strides[d] != stride) return std::nullopt;
      const int64_t start = rem / stride;
      rem %= stride;
      if (start + o.sizes[d] > h.sizes[d]) return std::nullopt;
      pads[d] = start;
      pads[d + h.sizes.size()] = h.sizes[d] - start - o.sizes[d];
    }
    if (rem != 0) return std::nullopt;
    return pads;
  }

  /** A window `o` of a filled tensor written with `v`: the fill is `v` padded with its value
   *  (constant padding, F.pad's fill and copy). False when `o` is no box of it. */
  bool pad_into(const Operand& o, Held& h, const Val& v) {
    const std::optional<std::vector<int64_t>> pads = box_pads(o, h);
    if (!pads) return false;
    const Val part = reshape(v, vec(o.sizes));
    const std::string value = scalar(h.fill->to_double(), o.dtype);
    const std::string padded = node1("Pad", {part.name, ints(*pads), value});
    h.fill.reset();
    h.name = padded;
    return true;
  }

  /** A window `o` of a tensor holding values written with `v` (an in-place op on a slice,
   *  x[:, :2] *= 0): the value becomes Where(mask, v padded to its size, the old value), the
   *  mask a constant true in the window. False when `o` is no box of it. */
  bool update_window(const Operand& o, Held& h, const Val& v) {
    const std::optional<std::vector<int64_t>> pads = box_pads(o, h);
    if (!pads) return false;
    const size_t rank = h.sizes.size();
    Tensor mask = zeros(IntList(h.sizes), {DType::Bool});
    Tensor window = mask;
    for (size_t d = 0; d < rank; ++d) {
      window = window.narrow(static_cast<int64_t>(d), (*pads)[d], o.sizes[d]);
    }
    window.fill_(true);
    const std::string mask_name = fresh("window");
    initializer(mask_name, mask);
    const Val part = reshape(v, vec(o.sizes));
    const std::string padded = node1("Pad", {part.name, ints(*pads), scalar(0.0, o.dtype)});
    h.name = node1("Where", {mask_name, padded, h.name});
    return true;
  }

  /** Makes a parameter or buffer sharing `o`'s storage the slot's value, by its name. */
  void adopt_weight(const Operand& o, Held& h) {
    const capture::Slot& slot = rec_.slots[static_cast<size_t>(o.slot)];
    auto it = params_.find(slot.storage.get());
    if (it == params_.end()) return;
    for (const auto& [name, t] : it->second) {
      if (!t.is_contiguous() || t.dtype() != o.dtype) continue;
      if (!written_.count(name)) {
        initializer(name, t);
        written_.insert(name);
      }
      h.name = name;
      h.dtype = t.dtype();
      h.offset = t.storage_offset();
      h.sizes = vec(t.sizes());
      return;
    }
  }

  /** The parts kernels wrote into a slot (copies into narrowed views of one contiguous
   *  tensor, as cat writes), read when they cover it: their concatenation. The whole tensor's
   *  sizes follow from the parts' strides and the slot's size. */
  void assemble(const Operand& o, Held& h) {
    const auto refuse = [&](std::string_view why) {
      EMBER_CHECK_NOT_IMPLEMENTED(false,
                                  "{} {} reads a tensor written in {} parts that are not a "
                                  "concatenation Ember writes ({})",
                                  kWho, where(), h.parts.size(), why);
    };
    const Operand& first = h.parts[0].first;
    const size_t rank = first.sizes.size();
    const int64_t total = static_cast<int64_t>(
        rec_.slots[static_cast<size_t>(o.slot)].storage->bytes() / itemsize(first.dtype));
    std::vector<int64_t> full(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t outer = d == 0 ? total : first.strides[d - 1];
      if (first.strides[d] <= 0 || outer % first.strides[d] != 0) refuse("not a dense tensor");
      full[d] = outer / first.strides[d];
    }
    int64_t axis = -1;
    std::vector<std::tuple<int64_t, int64_t, std::string>> spans;  // start, length, value
    for (const auto& [p, v] : h.parts) {
      if (p.sizes.size() != rank || p.strides != first.strides || p.dtype != first.dtype) {
        refuse("parts of different layouts");
      }
      for (size_t d = 0; d < rank; ++d) {
        if (p.sizes[d] == full[d]) continue;
        if (axis >= 0 && axis != static_cast<int64_t>(d)) refuse("parts along two axes");
        axis = static_cast<int64_t>(d);
      }
      if (axis < 0) refuse("a part covers the whole");
      const auto a = static_cast<size_t>(axis);
      if (p.offset % first.strides[a] != 0 || p.offset / first.strides[a] >= full[a]) {
        refuse("a part not at an index of the axis");
      }
      spans.emplace_back(p.offset / first.strides[a], p.sizes[a], v.name);
    }
    std::sort(spans.begin(), spans.end());
    int64_t at = 0;
    std::vector<std::string> names;
    for (const auto& [start, length, name] : spans) {
      if (start != at) refuse("gaps or overlaps");
      at += length;
      names.push_back(name);
    }
    if (at != full[static_cast<size_t>(axis)]) refuse("gaps");
    onnx::NodeProto* n = node("Concat", names);
    attr(n, "axis", axis);
    const DType dtype = first.dtype;  // `first` lives in h.parts, cleared next
    h = Held{};
    h.name = n->output(0);
    h.sizes = full;
    h.dtype = dtype;
  }

  // Note [Views as ONNX nodes]
  // An operand is a view (offset, sizes, strides) on elements a slot's value holds contiguously.
  // Its dims of size > 1, sorted by decreasing stride s1 > ... > sk, are the axes of one reshape
  // of the value, [M / s1, s1 / s2, ..., s(k-1) / sk, sk], when each stride divides the one
  // before (the last axis, of stride 1, is dropped when sk = 1); the view is then a slice of
  // that reshape (its offset's digits are the starts, the sizes the lengths; the last axis gives
  // one element), reshaped to the sorted sizes and transposed back to the view's dim order. A
  // contiguous view (flatten, view, unsqueeze) is one Reshape; a transposed weight one
  // Transpose; a narrow one Slice. Each step is written only when it changes something.
  Val view(const Held& h, const Operand& u, const std::vector<int64_t>& target) {
    const auto refuse = [&](std::string_view why) {
      EMBER_CHECK_NOT_IMPLEMENTED(false,
                                  "{} {} reads a view (offset {}, sizes {}, strides {}) of a "
                                  "value of sizes {} that is not a reshape, slice and transpose "
                                  "of it ({})",
                                  kWho, where(), u.offset - h.offset, u.sizes, u.strides, h.sizes,
                                  why);
    };
    const int64_t m = numel(h.sizes);
    const int64_t rel = u.offset - h.offset;
    Val v{h.name, h.sizes};
    // Dims that matter, by decreasing stride.
    std::vector<size_t> dims;
    for (size_t d = 0; d < u.sizes.size(); ++d) {
      if (u.sizes[d] != 1) dims.push_back(d);
    }
    std::stable_sort(dims.begin(), dims.end(),
                     [&](size_t a, size_t b) { return u.strides[a] > u.strides[b]; });
    const int64_t count = numel(vec(u.sizes));
    if (rel < 0 || rel + 1 > m || count > m) refuse("outside the value");
    if (rel == 0 && count == m && contiguous(u)) return reshape(v, target);
    std::vector<int64_t> radix, starts, lengths;
    if (!own_axes(h, u, dims, rel, radix, starts, lengths)) {
      int64_t rem = rel, outer = m;
      for (size_t j = 0; j < dims.size(); ++j) {
        const int64_t s = u.strides[dims[j]];
        if (s <= 0 || outer % s != 0) refuse("strides that do not nest");
        radix.push_back(outer / s);
        starts.push_back(rem / s);
        lengths.push_back(u.sizes[dims[j]]);
        rem %= s;
        outer = s;
      }
      if (outer > 1) {
        radix.push_back(outer);
        starts.push_back(rem);
        lengths.push_back(1);
      } else if (rem != 0) {
        refuse("strides that do not nest");
      }
    }
    std::vector<int64_t> s_axes, s_starts, s_ends;
    for (size_t a = 0; a < radix.size(); ++a) {
      if (starts[a] + lengths[a] > radix[a]) refuse("a window that wraps around");
      if (starts[a] == 0 && lengths[a] == radix[a]) continue;
      s_axes.push_back(static_cast<int64_t>(a));
      s_starts.push_back(starts[a]);
      s_ends.push_back(starts[a] + lengths[a]);
    }
    if (!s_axes.empty()) {
      v = reshape(v, radix);
      std::vector<int64_t> extents;
      for (int64_t a : s_axes) extents.push_back(radix[static_cast<size_t>(a)]);
      const std::string first = ints(s_starts), last = ints(s_ends);
      slice_extents_[first] = slice_extents_[last] = extents;
      v = {node1("Slice", {v.name, first, last, ints(s_axes)}), lengths};
    }
    std::vector<int64_t> perm(dims.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::vector<size_t> order = dims;
    std::sort(order.begin(), order.end());
    bool moved = false;
    for (size_t i = 0; i < order.size(); ++i) {
      perm[i] = std::find(dims.begin(), dims.end(), order[i]) - dims.begin();
      moved = moved || perm[i] != static_cast<int64_t>(i);
    }
    if (moved) {
      std::vector<int64_t> sorted;
      for (size_t d : dims) sorted.push_back(u.sizes[d]);
      v = reshape(v, sorted);
      std::vector<int64_t> sizes;
      for (size_t d : order) sizes.push_back(u.sizes[d]);
      onnx::NodeProto* n = node("Transpose", {v.name});
      attr(n, "perm", perm);
      v = {n->output(0), sizes};
    }
    return reshape(v, target);
  }

  const Recording& rec_;
  onnx::GraphProto* g_;
  std::vector<Held> held_;
  std::map<const StorageImpl*, std::vector<std::pair<std::string, Tensor>>> params_;
  std::map<std::pair<int32_t, std::string>, std::string> constants_;
  std::map<std::string, Projection> projections_;
  std::map<std::string, std::vector<int64_t>> slice_extents_;
  std::set<std::string> written_, shape_constants_, exact_shapes_;
  size_t step_ = 0;
  int64_t counter_ = 0;
  int64_t opset_ = kOnnxExportOpset;
  const capture::Region* region_ = nullptr;  // the composite op being written, if any
};

// ---- the emitters: one per form a kernel takes ----

/** y = op(x). */
void emit_unary(Exporter& x, const Step& s, const char* op) {
  x.out(s, 0, {x.node1(op, {x.in(s, 0).name}), vec(s.outputs[0].sizes)});
}

/** y = op(a, b) (or where(c, a, b)), ONNX broadcasting what the core expanded. */
void emit_broadcast(Exporter& x, const Step& s, const char* op) {
  const size_t min_rank = std::string_view(op) == "MatMul" ? 2 : 0;
  std::vector<Val> ins;
  size_t rank = 0;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    ins.push_back(x.in(s, i, true, min_rank));
    rank = std::max(rank, ins.back().sizes.size());
  }
  // Every operand expanded from fewer dims: one is read whole, so the result keeps its rank.
  if (rank < s.outputs[0].sizes.size()) ins[0] = x.in(s, 0);
  std::vector<std::string> names;
  for (const Val& v : ins) names.push_back(v.name);
  x.out(s, 0, {x.node1(op, names), vec(s.outputs[0].sizes)});
}

/** A copy: the value itself, or its Cast to the output's dtype. */
void emit_copy(Exporter& x, const Step& s, const char* op) {
  Val v = x.in(s, 0);
  if (s.inputs[0].dtype != s.outputs[0].dtype) {
    onnx::NodeProto* n = x.node(op, {v.name});
    Exporter::attr(n, "to", static_cast<int64_t>(onnx_dtype(s.outputs[0].dtype)));
    v.name = n->output(0);
  }
  x.out(s, 0, v);
}

/** A fill: a constant, or the value of a Pad when a window of it is written next. */
void emit_fill(Exporter& x, const Step& s, const char*) {
  const DType dt = s.outputs[0].dtype;
  x.fill(s, 0, is_floating(dt) ? Scalar(s.floats[0]) : Scalar(s.ints[0]));
}

/** softmax and log_softmax: ints {dim}. */
void emit_softmax(Exporter& x, const Step& s, const char* op) {
  onnx::NodeProto* n = x.node(op, {x.in(s, 0).name});
  Exporter::attr(n, "axis", s.ints[0]);
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
}

/** Reductions over the trailing ints[0] dims (Exporter::reduce: the axes an input or an
 *  attribute by opset). */
void emit_reduce(Exporter& x, const Step& s, const char* op) {
  const Val v = x.in(s, 0);
  const int64_t k = s.ints[0], rank = static_cast<int64_t>(v.sizes.size());
  std::vector<int64_t> axes;
  for (int64_t a = rank - k; a < rank; ++a) axes.push_back(a);
  onnx::NodeProto* n =
      k == 0 ? x.node("Identity", {v.name}) : x.reduce(op, v.name, axes, /*keepdims=*/false);
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
}

/** argmax, argmin: one trailing reduced dim. */
void emit_arg(Exporter& x, const Step& s, const char* op) {
  onnx::NodeProto* n = x.node(op, {x.in(s, 0).name});
  Exporter::attr(n, "axis", int64_t{-1});
  Exporter::attr(n, "keepdims", int64_t{0});
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
}

/** x * Phi(x) (erf form) or its tanh form, as opset 17 has no Gelu. */
std::string gelu(Exporter& x, const std::string& v, DType dt, bool tanh_form) {
  std::string inner;
  if (tanh_form) {
    const std::string cube = x.node1("Mul", {x.node1("Mul", {v, v}), v});
    const std::string poly = x.node1("Add", {v, x.node1("Mul", {cube, x.scalar(0.044715, dt)})});
    inner = x.node1("Tanh", {x.node1("Mul", {poly, x.scalar(std::sqrt(2.0 / M_PI), dt)})});
  } else {
    inner = x.node1("Erf", {x.node1("Div", {v, x.scalar(std::sqrt(2.0), dt)})});
  }
  const std::string half = x.node1("Mul", {v, x.scalar(0.5, dt)});
  return x.node1("Mul", {half, x.node1("Add", {inner, x.scalar(1.0, dt)})});
}

/** An activation code of the fused kernels (0 none, 1 relu, 2 gelu, 3 gelu tanh) on `v`. */
std::string activation(Exporter& x, const std::string& v, DType dt, int64_t code) {
  if (code == 1) return x.node1("Relu", {v});
  if (code == 2 || code == 3) return gelu(x, v, dt, code == 3);
  return v;
}

void emit_gelu(Exporter& x, const Step& s, const char*) {
  x.out(s, 0, {gelu(x, x.in(s, 0).name, s.dtype, s.ints[0] != 0), vec(s.outputs[0].sizes)});
}

void emit_silu(Exporter& x, const Step& s, const char*) {
  const std::string v = x.in(s, 0).name;
  x.out(s, 0, {x.node1("Mul", {v, x.node1("Sigmoid", {v})}), vec(s.outputs[0].sizes)});
}

void emit_rsqrt(Exporter& x, const Step& s, const char*) {
  x.out(s, 0,
        {x.node1("Reciprocal", {x.node1("Sqrt", {x.in(s, 0).name})}), vec(s.outputs[0].sizes)});
}

/** leaky_relu: floats {negative_slope}. */
void emit_leaky_relu(Exporter& x, const Step& s, const char* op) {
  onnx::NodeProto* n = x.node(op, {x.in(s, 0).name});
  Exporter::attr(n, "alpha", s.floats[0]);
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
}

/** elu: floats {alpha, scale, input_scale}; ONNX's Elu is the one with both scales 1. */
void emit_elu(Exporter& x, const Step& s, const char* op) {
  EMBER_CHECK_NOT_IMPLEMENTED(s.floats[1] == 1.0 && s.floats[2] == 1.0,
                              "{} elu with scale {} and input_scale {} has no ONNX form in the "
                              "exporter (only elu's own, both 1)",
                              kWho, s.floats[1], s.floats[2]);
  onnx::NodeProto* n = x.node(op, {x.in(s, 0).name});
  Exporter::attr(n, "alpha", s.floats[0]);
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
}

/** clamp: ints {has_lo, has_hi, int_lo, int_hi}, floats {lo, hi}. */
void emit_clamp(Exporter& x, const Step& s, const char* op) {
  const bool fp = is_floating(s.dtype);
  const auto bound = [&](bool has, int64_t i, double f) {
    return has ? x.scalar(fp ? f : static_cast<double>(i), s.dtype) : std::string();
  };
  const std::string lo = bound(s.ints[0] != 0, s.ints[2], s.floats[0]);
  const std::string hi = bound(s.ints[1] != 0, s.ints[3], s.floats[1]);
  x.out(s, 0, {x.node1(op, {x.in(s, 0).name, lo, hi}), vec(s.outputs[0].sizes)});
}

/** matmul's fused form: {x [M, K], w [N, K], optional b} -> act(x w^T + b), ints {activation}. */
void emit_fused_linear(Exporter& x, const Step& s, const char* op) {
  const Val in = x.in(s, 0);
  std::vector<std::string> ins = {in.name, x.in(s, 1).name};
  if (Exporter::has(s, 2)) ins.push_back(x.in(s, 2).name);
  onnx::NodeProto* n = x.node(op, ins);
  Exporter::attr(n, "transB", int64_t{1});
  if (s.ints[0] == 0) x.note_projection(n->output(0), {in, ins[1], ins.size() > 2 ? ins[2] : ""});
  x.out(s, 0, {activation(x, n->output(0), s.dtype, s.ints[0]), vec(s.outputs[0].sizes)});
}

/** conv2d and its fused forms: ints {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups};
 *  conv2d_add_relu's inputs are {x, w, r, optional b}. */
void emit_conv(Exporter& x, const Step& s, const char*) {
  const std::string_view kernel = s.op->name();
  const bool add = kernel == "conv2d_add_relu";
  const size_t bias = add ? 3 : 2;
  std::vector<std::string> ins = {x.in(s, 0).name, x.in(s, 1).name};
  if (Exporter::has(s, bias)) ins.push_back(x.in(s, bias).name);
  onnx::NodeProto* n = x.node("Conv", ins);
  Exporter::attr(n, "strides", std::vector<int64_t>{s.ints[0], s.ints[1]});
  Exporter::attr(n, "pads", std::vector<int64_t>{s.ints[2], s.ints[3], s.ints[2], s.ints[3]});
  Exporter::attr(n, "dilations", std::vector<int64_t>{s.ints[4], s.ints[5]});
  Exporter::attr(n, "group", s.ints[6]);
  Exporter::attr(n, "kernel_shape",
                 std::vector<int64_t>{s.inputs[1].sizes[2], s.inputs[1].sizes[3]});
  std::string y = n->output(0);
  if (add) y = x.node1("Add", {y, x.in(s, 2).name});
  if (kernel != "conv2d") y = x.node1("Relu", {y});
  x.out(s, 0, {y, vec(s.outputs[0].sizes)});
}

/** Whether a pooling's output sizes are the ceil-mode ones (they differ from the floor ones). */
int64_t ceil_mode(const Step& s, const std::vector<int64_t>& k, const std::vector<int64_t>& st,
                  const std::vector<int64_t>& p, const std::vector<int64_t>& dil) {
  for (size_t a = 0; a < 2; ++a) {
    const int64_t in = s.inputs[0].sizes[2 + a], out = s.outputs[0].sizes[2 + a];
    const int64_t span = in + 2 * p[a] - dil[a] * (k[a] - 1) - 1;
    if (out != span / st[a] + 1) return 1;
  }
  return 0;
}

/** max_pool2d: ints {kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w}. Its
 *  indices (flat within each plane) are not ONNX's (flat over the tensor): reading them is
 *  refused. avg_pool2d: ints {kernel, stride, pad, count_include_pad, divisor_override}. */
void emit_pool(Exporter& x, const Step& s, const char* op) {
  const bool max = std::string_view(op) == "MaxPool";
  const std::vector<int64_t> k = {s.ints[0], s.ints[1]}, st = {s.ints[2], s.ints[3]},
                             p = {s.ints[4], s.ints[5]};
  const std::vector<int64_t> dil =
      max ? std::vector<int64_t>{s.ints[6], s.ints[7]} : std::vector<int64_t>{1, 1};
  if (!max) {
    EMBER_CHECK_NOT_IMPLEMENTED(
        s.ints[7] <= 0, "{} avg_pool2d with divisor_override {} has no ONNX form", kWho, s.ints[7]);
  }
  onnx::NodeProto* n = x.node(op, {x.in(s, 0).name});
  Exporter::attr(n, "kernel_shape", k);
  Exporter::attr(n, "strides", st);
  Exporter::attr(n, "pads", std::vector<int64_t>{p[0], p[1], p[0], p[1]});
  Exporter::attr(n, "ceil_mode", ceil_mode(s, k, st, p, dil));
  if (max) {
    Exporter::attr(n, "dilations", dil);
  } else {
    Exporter::attr(n, "count_include_pad", s.ints[6]);
  }
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
  if (max) x.unreadable(s, 1, "max_pool2d's indices, which ONNX numbers otherwise");
}

/** adaptive_avg_pool2d: GlobalAveragePool for a 1x1 output, else AveragePool where the windows
 *  are equal (the input a multiple of the output). */
void emit_adaptive_avg_pool(Exporter& x, const Step& s, const char*) {
  const Shape& in = s.inputs[0].sizes;
  const Shape& o = s.outputs[0].sizes;
  const std::string v = x.in(s, 0).name;
  std::string y;
  if (o[2] == 1 && o[3] == 1) {
    y = x.node1("GlobalAveragePool", {v});
  } else {
    EMBER_CHECK_NOT_IMPLEMENTED(in[2] % o[2] == 0 && in[3] % o[3] == 0,
                                "{} adaptive_avg_pool2d from {}x{} to {}x{} has unequal windows, "
                                "which no ONNX pooling gives (make the input a multiple of the "
                                "output size)",
                                kWho, in[2], in[3], o[2], o[3]);
    onnx::NodeProto* n = x.node("AveragePool", {v});
    const std::vector<int64_t> k = {in[2] / o[2], in[3] / o[3]};
    Exporter::attr(n, "kernel_shape", k);
    Exporter::attr(n, "strides", k);
    y = n->output(0);
  }
  x.out(s, 0, {y, vec(o)});
}

/** batch_norm in eval: {x, weight, bias, mean, var} -> {y}, floats {eps}. */
void emit_batch_norm(Exporter& x, const Step& s, const char* op) {
  EMBER_CHECK_NOT_IMPLEMENTED(s.ints[0] == 0,
                              "{} batch_norm in training mode (batch statistics, running ones "
                              "updated) has no ONNX form: export the module in eval mode",
                              kWho);
  // The input's own value: [N, C, ...] normalizes as the [N, C, S] view the kernel reads.
  const Val v = x.in_whole(s, 0, 2);
  EMBER_ASSERT(v.sizes.size() >= 2);
  std::vector<std::string> ins = {v.name};
  for (size_t i = 1; i < 5; ++i) ins.push_back(x.in(s, i).name);
  onnx::NodeProto* n = x.node(op, ins);
  Exporter::attr(n, "epsilon", s.floats[0]);
  x.out(s, 0, {n->output(0), v.sizes});
}

/** layer_norm: x viewed [R, D], ints {1, D, 1}, floats {eps}; its statistics are not read. */
void emit_layer_norm(Exporter& x, const Step& s, const char* op) {
  EMBER_CHECK_NOT_IMPLEMENTED(s.ints[0] == 1 && s.ints[2] == 1,
                              "{} layer_norm rows in groups ({} groups, {} spatial) have no ONNX "
                              "form in the exporter",
                              kWho, s.ints[0], s.ints[2]);
  onnx::NodeProto* n = x.node(op, {x.in(s, 0).name, x.in(s, 1).name, x.in(s, 2).name});
  Exporter::attr(n, "axis", int64_t{-1});
  Exporter::attr(n, "epsilon", s.floats[0]);
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
  x.unreadable(s, 1, "layer_norm's mean, which the export does not write");
  x.unreadable(s, 2, "layer_norm's inverse standard deviation, which the export does not write");
}

/** group_norm: x viewed [R, D] (R = N * G rows of D = K * S), ints {G, K, S}, floats {eps}: each
 *  row normalized, then scaled per channel (opset 17 has no GroupNormalization). The statistics
 *  are not written. */
void emit_group_norm(Exporter& x, const Step& s, const char* op) {
  const int64_t g = s.ints[0], k = s.ints[1], sp = s.ints[2];
  const Val v = x.in(s, 0);
  const auto mean_of = [&](const std::string& t) {
    return x.reduce(op, t, {1}, /*keepdims=*/true)->output(0);
  };
  const std::string d = x.node1("Sub", {v.name, mean_of(v.name)});
  const std::string var = mean_of(x.node1("Mul", {d, d}));
  const std::string denom =
      x.node1("Sqrt", {x.node1("Add", {var, x.scalar(s.floats[0], s.dtype)})});
  const std::vector<int64_t> rows = {v.sizes[0] / g, g * k, sp}, per_channel = {g * k, 1};
  const std::string xhat = x.node1("Reshape", {x.node1("Div", {d, denom}), x.ints(rows, true)});
  const std::string w = x.node1("Reshape", {x.in(s, 1).name, x.ints(per_channel)});
  const std::string b = x.node1("Reshape", {x.in(s, 2).name, x.ints(per_channel)});
  x.out(s, 0, {x.node1("Add", {x.node1("Mul", {xhat, w}), b}), rows});
  x.unreadable(s, 1, "group_norm's mean, which the export does not write");
  x.unreadable(s, 2, "group_norm's inverse standard deviation, which the export does not write");
}

/** index_select {x, index (1-d)} (embedding's lookup) and gather {x, index (x's rank)}, ints
 *  {dim}. */
void emit_gather(Exporter& x, const Step& s, const char* op) {
  onnx::NodeProto* n = x.node(op, {x.in(s, 0).name, x.in(s, 1).name});
  Exporter::attr(n, "axis", s.ints[0]);
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
}

/** cumsum: along the last dim (the core moves the dim there). */
void emit_cumsum(Exporter& x, const Step& s, const char* op) {
  const Val v = x.in(s, 0);
  const auto last = static_cast<double>(v.sizes.size()) - 1;
  x.out(s, 0, {x.node1(op, {v.name, x.scalar(last, DType::Int64)}), vec(s.outputs[0].sizes)});
}

/** max_dim, min_dim: the extreme over the one trailing reduced dim and its first index. */
void emit_extreme_dim(Exporter& x, const Step& s, const char* op) {
  const std::string v = x.in(s, 0).name;
  onnx::NodeProto* values = x.reduce(op, v, {-1}, /*keepdims=*/false);
  x.out(s, 0, {values->output(0), vec(s.outputs[0].sizes)});
  onnx::NodeProto* index = x.node(std::string_view(op) == "ReduceMax" ? "ArgMax" : "ArgMin", {v});
  Exporter::attr(index, "axis", int64_t{-1});
  Exporter::attr(index, "keepdims", int64_t{0});
  x.out(s, 1, {index->output(0), vec(s.outputs[1].sizes)});
}

/** scaled_dot_product_attention: {q [B, L, E], k [B, S, E], v [B, S, Ev], optional additive
 *  mask}, ints {is_causal}, floats {scale}: softmax(q k^T * scale + mask) v, written out (opset
 *  17 has no Attention). The causal mask is a constant [L, S]; the logsumexp is not written. */
void emit_attention(Exporter& x, const Step& s, const char* op) {
  const std::string q = x.in(s, 0).name, k = x.in(s, 1).name, v = x.in(s, 2).name;
  onnx::NodeProto* kt = x.node("Transpose", {k});
  Exporter::attr(kt, "perm", std::vector<int64_t>{0, 2, 1});
  std::string scores =
      x.node1("Mul", {x.node1("MatMul", {q, kt->output(0)}), x.scalar(s.floats[0], s.dtype)});
  if (Exporter::has(s, 3)) scores = x.node1("Add", {scores, x.in(s, 3, true).name});
  if (s.ints[0] != 0) {
    const int64_t l = s.inputs[0].sizes[1], n = s.inputs[1].sizes[1];
    Tensor mask = zeros({l, n}, {s.dtype});
    for (int64_t i = 0; i < l; ++i) {
      if (i + 1 < n) mask.narrow(0, i, 1).narrow(1, i + 1, n - i - 1).fill_(-INFINITY);
    }
    const std::string name = x.fresh("causal_mask");
    x.initializer(name, mask);
    scores = x.node1("Add", {scores, name});
  }
  onnx::NodeProto* softmax = x.node(op, {scores});
  Exporter::attr(softmax, "axis", int64_t{-1});
  x.out(s, 0, {x.node1("MatMul", {softmax->output(0), v}), vec(s.outputs[0].sizes)});
  x.unreadable(s, 1, "the attention's logsumexp, which the export does not write");
}

/** conv2d_backward_input, which conv_transpose2d runs: {x [N, C, H, W], w [C, O/g, kH, kW]} ->
 *  {y [N, O, OH, OW]}, ints as conv2d's. The output size beyond the one stride, padding and
 *  kernel give is ConvTranspose's output_padding. */
void emit_conv_transpose(Exporter& x, const Step& s, const char* op) {
  const Shape &in = s.inputs[0].sizes, &w = s.inputs[1].sizes, &out = s.outputs[0].sizes;
  std::vector<int64_t> extra(2);
  for (size_t a = 0; a < 2; ++a) {
    const int64_t stride = s.ints[a], pad = s.ints[2 + a], dil = s.ints[4 + a];
    extra[a] = out[2 + a] - ((in[2 + a] - 1) * stride - 2 * pad + dil * (w[2 + a] - 1) + 1);
    EMBER_CHECK_NOT_IMPLEMENTED(extra[a] >= 0 && extra[a] < std::max(stride, dil),
                                "{} conv2d_backward_input to {} from {} is no ConvTranspose "
                                "(output_padding {} must be in [0, max(stride, dilation)))",
                                kWho, shape_str(out), shape_str(in), extra[a]);
  }
  onnx::NodeProto* n = x.node(op, {x.in(s, 0).name, x.in(s, 1).name});
  Exporter::attr(n, "strides", std::vector<int64_t>{s.ints[0], s.ints[1]});
  Exporter::attr(n, "pads", std::vector<int64_t>{s.ints[2], s.ints[3], s.ints[2], s.ints[3]});
  Exporter::attr(n, "dilations", std::vector<int64_t>{s.ints[4], s.ints[5]});
  Exporter::attr(n, "group", s.ints[6]);
  Exporter::attr(n, "kernel_shape", std::vector<int64_t>{w[2], w[3]});
  Exporter::attr(n, "output_padding", extra);
  x.out(s, 0, {n->output(0), vec(out)});
}

/** sort {x, the sorted dim last} -> {values, indices}, ints {descending}; topk likewise, ints
 *  {k, largest, sorted}. Both are TopK over the last axis (sort's k the whole dim), whose ties go
 *  to the lower index as the kernels' do; topk's unsorted results keep the elements' order in
 *  the input, which a second TopK over the indices gives. */
void emit_topk(Exporter& x, const Step& s, const char* op) {
  const bool sort = s.op->name() == "sort";
  const Val v = x.in(s, 0);
  const int64_t k = sort ? v.sizes.back() : s.ints[0];
  const int64_t largest = sort ? s.ints[0] : s.ints[1];
  const bool sorted = sort || s.ints[2] != 0;
  onnx::NodeProto* n = x.node(op, {v.name, x.ints({k})}, 2);
  Exporter::attr(n, "axis", int64_t{-1});
  Exporter::attr(n, "largest", largest);
  Exporter::attr(n, "sorted", int64_t{1});
  std::string values = n->output(0), indices = n->output(1);
  if (!sorted) {
    onnx::NodeProto* by_place = x.node(op, {indices, x.ints({k})}, 2);
    Exporter::attr(by_place, "axis", int64_t{-1});
    Exporter::attr(by_place, "largest", int64_t{0});
    Exporter::attr(by_place, "sorted", int64_t{1});
    onnx::NodeProto* g = x.node("GatherElements", {values, by_place->output(1)});
    Exporter::attr(g, "axis", int64_t{-1});
    values = g->output(0);
    indices = by_place->output(0);
  }
  x.out(s, 0, {values, vec(s.outputs[0].sizes)});
  x.out(s, 1, {indices, vec(s.outputs[1].sizes)});
}

/** scatter and scatter_add: {index, src} -> {y}, ints {dim}, y holding x already (the core
 *  copied it there). src may be larger than index: its window of index's sizes is read. */
void emit_scatter(Exporter& x, const Step& s, const char* op) {
  const Val data = x.before(s, 0);
  Operand src = s.inputs[1];
  src.sizes = s.inputs[0].sizes;
  onnx::NodeProto* n = x.node(op, {data.name, x.in(s, 0).name, x.result(src).name});
  Exporter::attr(n, "axis", s.ints[0]);
  if (s.op->name() == "scatter_add") Exporter::attr(n, "reduction", std::string_view("add"));
  x.out(s, 0, {n->output(0), vec(s.outputs[0].sizes)});
}

// Note [Recurrent layers as ONNX nodes]
// A whole recurrent layer, the core's rnn_layer (nn.LSTM, nn.GRU and nn.RNN call it once per
// layer and direction), is a composite op's region in the capture (Note [Composite ops in a
// capture]): however it ran (a backend's rnn_layer kernel, which gets a reverse direction's
// sequence flipped by an index the core makes on the host and copies to the device; or the input
// projection, a linear kernel, then the lstm_layer or gru_layer kernel or the Elman RNN's matmul
// and activation per step), the exporter writes it as one ONNX LSTM, GRU or RNN node with its
// direction, from PyTorch's weights, on any device, and none of its steps. So the Elman RNN is one
// node too, and its sequence length can be a dynamic axis. The recurrence kernels called alone
// (lstm_layer {gates_x, w_hh, h0, c0}, gru_layer {gates_x, w_hh, b_hh, h0}) are written as such
// nodes as well: when gates_x is the whole output of a linear kernel (Exporter::projection), the
// node reads that kernel's input and weights, and the projection's own Gemm, read by nothing
// else, is pruned; otherwise the node reads gates_x through an identity W (exact: each gate is a
// sum of one term). ONNX's conventions are not PyTorch's: the gates come in the order i, o, f, c
// (PyTorch's i, f, g, o) and z, r, h (r, z, n), reordered with Split and Concat; the biases are
// B = [Wb; Rb] (zeros for a half the layer lacks); PyTorch's GRU is linear_before_reset = 1, its
// RNN with nonlinearity='relu' activations = [Relu]; Y is [L, num_directions, N, H]. Each
// direction is its own call and so its own node, its Y squeezed to [L, N, H] (the core
// concatenates the directions itself). The cell states of every step (lstm_layer's second output)
// are not ONNX's, which gives the last step's (Y_c): that one is readable, the others are refused
// by name.

/** What one direction of a recurrent node reads: PyTorch's weights, in its gate order. */
struct RecurrentInputs {
  Val x;               // [L, N, I]
  std::string w, r;    // [G H, I], [G H, H]
  std::string wb, rb;  // [G H] each, either empty for none
  std::string h0, c0;  // [N, H]; c0 the LSTM's only
  int64_t hidden = 0;
  bool reverse = false;
  bool relu = false;  // the Elman RNN's activation: relu, else tanh
  DType dtype = DType::Float32;
};

/** `v` [G H, ...] with its G gate blocks from PyTorch's order into ONNX's: block j of the result
 *  is block order[j] of `v`. */
std::string regate(Exporter& x, const std::string& v, int64_t hidden,
                   const std::vector<int64_t>& order) {
  const auto gates = static_cast<int>(order.size());
  onnx::NodeProto* split =
      x.node("Split", {v, x.ints(std::vector<int64_t>(order.size(), hidden))}, gates);
  Exporter::attr(split, "axis", int64_t{0});
  std::vector<std::string> parts;
  for (int64_t k : order) parts.push_back(split->output(static_cast<int>(k)));
  onnx::NodeProto* cat = x.node("Concat", parts);
  Exporter::attr(cat, "axis", int64_t{0});
  return cat->output(0);
}

/** `v` with a leading dim of 1 (ONNX's num_directions). */
std::string unsqueeze0(Exporter& x, const std::string& v) {
  return x.node1("Unsqueeze", {v, x.ints({0})});
}

/** Writes one direction of an LSTM, GRU or RNN node; returns {Y [L, N, H], Y_h [N, H]} and, for
 *  the LSTM, Y_c [N, H]. */
std::vector<Val> recurrent_node(Exporter& x, const char* op, const RecurrentInputs& in) {
  const bool lstm = std::string_view(op) == "LSTM", gru = std::string_view(op) == "GRU";
  const std::vector<int64_t> order = lstm  ? std::vector<int64_t>{0, 3, 1, 2}
                                     : gru ? std::vector<int64_t>{1, 0, 2}
                                           : std::vector<int64_t>{0};
  const int64_t h = in.hidden, gh = static_cast<int64_t>(order.size()) * h;
  const int64_t steps = in.x.sizes[0], batch = in.x.sizes[1];
  // One gate (the Elman RNN's) needs no reordering.
  const auto ordered = [&](const std::string& v) {
    return order.size() == 1 ? v : regate(x, v, h, order);
  };
  const auto weight = [&](const std::string& w) { return unsqueeze0(x, ordered(w)); };
  std::string b;
  if (!in.wb.empty() || !in.rb.empty()) {
    const auto half = [&](const std::string& v) {
      if (!v.empty()) return ordered(v);
      const std::string name = x.fresh("zeros");
      x.initializer(name, zeros({gh}, {in.dtype}));
      return name;
    };
    onnx::NodeProto* cat = x.node("Concat", {half(in.wb), half(in.rb)});
    Exporter::attr(cat, "axis", int64_t{0});
    b = unsqueeze0(x, cat->output(0));
  }
  std::vector<std::string> ins = {in.x.name, weight(in.w), weight(in.r),
                                  b,         "",           unsqueeze0(x, in.h0)};
  if (lstm) ins.push_back(unsqueeze0(x, in.c0));
  onnx::NodeProto* n = x.node(op, ins, lstm ? 3 : 2);
  Exporter::attr(n, "hidden_size", h);
  Exporter::attr(n, "direction", std::string_view(in.reverse ? "reverse" : "forward"));
  if (gru) Exporter::attr(n, "linear_before_reset", int64_t{1});
  if (in.relu) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    a->add_strings("Relu");
  }
  std::vector<Val> outs = {{x.node1("Squeeze", {n->output(0), x.ints({1})}), {steps, batch, h}}};
  for (int k = 1; k < n->output_size(); ++k) {
    outs.push_back({x.node1("Squeeze", {n->output(k), x.ints({0})}), {batch, h}});
  }
  return outs;
}

/** lstm_layer {gates_x [L, N, 4H], w_hh, h0, c0} -> {h, c, gates} and gru_layer {gates_x
 *  [L, N, 3H], w_hh, b_hh, h0} -> {h, gates}, ints {reverse} (Note [Recurrent layers as ONNX
 *  nodes]). */
void emit_recurrence(Exporter& x, const Step& s, const char* op) {
  const bool lstm = std::string_view(op) == "LSTM";
  const Shape& gates = s.inputs[0].sizes;
  const int64_t steps = gates[0], batch = gates[1], gh = gates[2];
  RecurrentInputs in;
  in.hidden = s.inputs[1].sizes[1];
  in.reverse = s.ints[0] != 0;
  in.dtype = s.dtype;
  in.r = x.in(s, 1).name;
  if (const Projection* p = x.projection(s, 0)) {
    in.x = x.reshape(p->x, {steps, batch, p->x.sizes[1]});
    in.w = p->w;
    in.wb = p->b;
  } else {
    in.x = x.in(s, 0);
    in.w = x.fresh("identity");
    x.initializer(in.w, eye(gh, gh, {s.dtype}));
  }
  if (!lstm && Exporter::has(s, 2)) in.rb = x.in(s, 2).name;
  in.h0 = x.in(s, lstm ? 2 : 3).name;
  if (lstm) in.c0 = x.in(s, 3).name;
  const std::vector<Val> ys = recurrent_node(x, op, in);
  x.out(s, 0, ys[0]);
  if (lstm) {
    const int64_t last = in.reverse ? 0 : steps - 1;
    x.out_window(s, 1, ys[2], s.outputs[1].offset + last * batch * in.hidden,
                 "an LSTM's cell state before its last step, which ONNX's LSTM does not give");
    x.unreadable(s, 2, "the LSTM's gates, which ONNX's LSTM does not give");
  } else {
    x.unreadable(s, 1, "the GRU's gates, which ONNX's GRU does not give");
  }
}

/** The region of rnn_layer {x [L, N, I], w_ih, w_hh, b_ih, b_hh, h0, c0 (LSTM)} -> {y, h_n, c_n
 *  (LSTM)}, ints {mode: 0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu; reverse} (Note [Recurrent layers as
 *  ONNX nodes]). */
void emit_rnn_layer(Exporter& x, const Step& s, const char*) {
  const int64_t mode = s.ints[0];
  EMBER_CHECK_NOT_IMPLEMENTED(mode >= 0 && mode <= 3,
                              "{} rnn_layer of mode {} has no ONNX form in the exporter (0 to 3, "
                              "the LSTM, GRU and Elman RNN with tanh or relu, have)",
                              kWho, mode);
  const char* op = mode == 0 ? "LSTM" : mode == 1 ? "GRU" : "RNN";
  RecurrentInputs in;
  in.x = x.in(s, 0);
  in.w = x.in(s, 1).name;
  in.r = x.in(s, 2).name;
  if (Exporter::has(s, 3)) in.wb = x.in(s, 3).name;
  if (Exporter::has(s, 4)) in.rb = x.in(s, 4).name;
  in.h0 = x.in(s, 5).name;
  if (mode == 0) in.c0 = x.in(s, 6).name;
  in.hidden = s.inputs[2].sizes[1];
  in.reverse = s.ints[1] != 0;
  in.relu = mode == 3;
  in.dtype = s.dtype;
  const std::vector<Val> ys = recurrent_node(x, op, in);
  for (size_t i = 0; i < ys.size(); ++i) {
    x.out_composite(
        s, i, ys[i],
        fmt::format("an {}'s state before its last step, which ONNX's {} does not give", op, op));
  }
}

/** The regions of scatter_reduce {x, index, src} with reduce prod, amax or amin, ints {dim,
 *  include_self}: ScatterElements with reduction `reduction` (mul from opset 16, max and min from
 *  18). Without include_self the places index names first take the reduction's identity (1, the
 *  lowest or the highest value), so that only src's values meet there, as scatter_reduce's. */
void emit_scatter_reduce(Exporter& x, const Step& s, const char* reduction) {
  const std::string_view red(reduction);
  const std::string_view reduce = red == "mul" ? "prod" : red == "max" ? "amax" : "amin";
  EMBER_CHECK_NOT_IMPLEMENTED(
      red == "mul" || x.opset() >= 18,
      "{} scatter_reduce with reduce='{}' is ScatterElements with reduction='{}', which ONNX "
      "has from opset 18 on: export with opset_version=18 (opset {} has only 'add' and 'mul')",
      kWho, reduce, red, x.opset());
  const DType dt = s.inputs[0].dtype;
  EMBER_CHECK_NOT_IMPLEMENTED(dt != DType::Bool,
                              "{} scatter_reduce with reduce='{}' on a bool tensor has no "
                              "ScatterElements form (ONNX's reductions are arithmetic)",
                              kWho, reduce);
  const std::string index = x.in(s, 1).name;
  Operand window = s.inputs[2];
  window.sizes = s.inputs[1].sizes;  // src may be larger than index: its window is read
  const std::string src = x.result(window).name;
  std::string data = x.in(s, 0).name;
  const int64_t dim = s.ints[0];
  if (s.ints[1] == 0) {
    Scalar identity(1.0);
    if (red != "mul") {
      const bool max = red == "max";
      if (is_floating(dt)) {
        const double inf = std::numeric_limits<double>::infinity();
        identity = Scalar(max ? -inf : inf);
      } else {
        identity =
            Scalar(max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
        if (dt == DType::Int32) {
          identity = Scalar(static_cast<int64_t>(max ? std::numeric_limits<int32_t>::min()
                                                     : std::numeric_limits<int32_t>::max()));
        } else if (dt == DType::Int8) {
          identity = Scalar(static_cast<int64_t>(max ? -128 : 127));
        } else if (dt == DType::UInt8) {
          identity = Scalar(static_cast<int64_t>(max ? 0 : 255));
        }
      }
    }
    const std::string fill = x.constant_like(x.node1("Shape", {index}), identity, dt);
    onnx::NodeProto* reset = x.node("ScatterElements", {data, index, fill});
    Exporter::attr(reset, "axis", dim);
    data = reset->output(0);
  }
  onnx::NodeProto* n = x.node("ScatterElements", {data, index, src});
  Exporter::attr(n, "axis", dim);
  Exporter::attr(n, "reduction", red);
  x.out_composite(s, 0, {n->output(0), vec(s.inputs[0].sizes)}, "");
}

// Note [Random draws in an export]
// rand, randn and dropout's mask in training mode draw from Ember's generator (Note [Random
// numbers on every device] in core/ops/factory.cpp), each a region of its own (Note [Composite ops
// in a capture]). ONNX has random ops that draw from the runtime's generator: RandomUniformLike
// and RandomNormalLike (the mask: where a uniform draw is >= p; not Bernoulli, which onnxruntime
// 1.32's CPU kernel draws as 1 with probability 1 - p, against ONNX's definition and reference).
// As torch.onnx does, the exporter writes those, without a seed,
// so that the graph draws afresh at every run as the function does at every call; a seed would
// freeze one stream into the file, and Ember's own values could not be reproduced by another
// runtime anyway. What the file promises is the distribution, not the values: a model with
// random draws matches Ember in the outputs that do not depend on them (and in the draws'
// statistics), never value for value. The other draws (randint, randperm, normal_ on the host's
// stream) have no region and no ONNX op that gives their distribution: they are refused as
// random numbers, as a replay refuses every draw.

/** The regions of a random draw of floats {p, scale}, named rand (uniform in [0, 1)), randn
 *  (standard normal) or dropout (its mask: 0 with probability p, else scale): ONNX's
 *  RandomUniformLike or RandomNormalLike on a tensor of the draw's shape, drawn in float32
 *  (float64 for a float64 draw) and cast; the mask is scale where a uniform draw is >= p, else 0
 *  (Note [Random draws in an export]). */
void emit_random(Exporter& x, const Step& s, const char* op) {
  const Operand& o = s.outputs[0];
  const DType dt = o.dtype, draw = dt == DType::Float64 ? DType::Float64 : DType::Float32;
  const std::vector<int64_t> sizes = vec(o.sizes);
  std::string v = x.node1(op, {x.constant_of_shape(sizes, Scalar(0.0), draw)});
  if (x.region_op() == "dropout") {
    const std::string kept = x.node1("GreaterOrEqual", {v, x.scalar(s.floats[0], draw)});
    v = x.node1("Where", {kept, x.scalar(s.floats[1], draw), x.scalar(0.0, draw)});
  }
  if (draw != dt) {
    onnx::NodeProto* cast = x.node("Cast", {v});
    Exporter::attr(cast, "to", static_cast<int64_t>(onnx_dtype(dt)));
    v = cast->output(0);
  }
  x.out_composite(s, 0, {v, sizes}, "");
}

// The export table: each kernel Ember writes as ONNX, and the ONNX op its emitter uses.
const ExportRule kExportRules[] = {
    {"copy", emit_copy, "Cast"},
    {"fill", emit_fill, nullptr},
    {"add", emit_broadcast, "Add"},
    {"sub", emit_broadcast, "Sub"},
    {"mul", emit_broadcast, "Mul"},
    {"div", emit_broadcast, "Div"},
    {"pow", emit_broadcast, "Pow"},
    {"maximum", emit_broadcast, "Max"},
    {"minimum", emit_broadcast, "Min"},
    {"eq", emit_broadcast, "Equal"},
    {"lt", emit_broadcast, "Less"},
    {"le", emit_broadcast, "LessOrEqual"},
    {"gt", emit_broadcast, "Greater"},
    {"ge", emit_broadcast, "GreaterOrEqual"},
    {"logical_and", emit_broadcast, "And"},
    {"logical_or", emit_broadcast, "Or"},
    {"where", emit_broadcast, "Where"},
    {"matmul", emit_broadcast, "MatMul"},
    {"logical_not", emit_unary, "Not"},
    {"neg", emit_unary, "Neg"},
    {"abs", emit_unary, "Abs"},
    {"sign", emit_unary, "Sign"},
    {"relu", emit_unary, "Relu"},
    {"exp", emit_unary, "Exp"},
    {"log", emit_unary, "Log"},
    {"sqrt", emit_unary, "Sqrt"},
    {"sin", emit_unary, "Sin"},
    {"cos", emit_unary, "Cos"},
    {"tan", emit_unary, "Tan"},
    {"tanh", emit_unary, "Tanh"},
    {"sigmoid", emit_unary, "Sigmoid"},
    {"erf", emit_unary, "Erf"},
    {"floor", emit_unary, "Floor"},
    {"ceil", emit_unary, "Ceil"},
    {"round", emit_unary, "Round"},
    {"rsqrt", emit_rsqrt, "Sqrt"},
    {"gelu", emit_gelu, "Erf"},
    {"silu", emit_silu, "Sigmoid"},
    {"leaky_relu", emit_leaky_relu, "LeakyRelu"},
    {"elu", emit_elu, "Elu"},
    {"clamp", emit_clamp, "Clip"},
    {"softmax", emit_softmax, "Softmax"},
    {"log_softmax", emit_softmax, "LogSoftmax"},
    {"sum", emit_reduce, "ReduceSum"},
    {"prod", emit_reduce, "ReduceProd"},
    {"amax", emit_reduce, "ReduceMax"},
    {"amin", emit_reduce, "ReduceMin"},
    {"argmax", emit_arg, "ArgMax"},
    {"argmin", emit_arg, "ArgMin"},
    {"fused_linear", emit_fused_linear, "Gemm"},
    {"conv2d", emit_conv, "Conv"},
    {"conv2d_relu", emit_conv, "Conv"},
    {"conv2d_add_relu", emit_conv, "Conv"},
    {"conv2d_backward_input", emit_conv_transpose, "ConvTranspose"},
    {"max_pool2d", emit_pool, "MaxPool"},
    {"avg_pool2d", emit_pool, "AveragePool"},
    {"adaptive_avg_pool2d", emit_adaptive_avg_pool, "GlobalAveragePool"},
    {"batch_norm", emit_batch_norm, "BatchNormalization"},
    {"layer_norm", emit_layer_norm, "LayerNormalization"},
    {"group_norm", emit_group_norm, "ReduceMean"},
    {"max_dim", emit_extreme_dim, "ReduceMax"},
    {"min_dim", emit_extreme_dim, "ReduceMin"},
    {"cumsum", emit_cumsum, "CumSum"},
    {"index_select", emit_gather, "Gather"},
    {"gather", emit_gather, "GatherElements"},
    {"scatter", emit_scatter, "ScatterElements"},
    {"scatter_add", emit_scatter, "ScatterElements"},
    {"sort", emit_topk, "TopK"},
    {"topk", emit_topk, "TopK"},
    {"lstm_layer", emit_recurrence, "LSTM"},
    {"gru_layer", emit_recurrence, "GRU"},
    {"scaled_dot_product_attention", emit_attention, "Softmax"},
};

// The composite ops Ember writes whole (Note [Composite ops in a capture]), by their regions'
// names, and the ONNX op each emitter writes.
const ExportRule kRegionRules[] = {
    {"rnn_layer", emit_rnn_layer, "LSTM"},
    {"scatter_reduce_prod", emit_scatter_reduce, "mul"},
    {"scatter_reduce_amax", emit_scatter_reduce, "max"},
    {"scatter_reduce_amin", emit_scatter_reduce, "min"},
    {"rand", emit_random, "RandomUniformLike"},
    {"randn", emit_random, "RandomNormalLike"},
    {"dropout", emit_random, "RandomUniformLike"},
};

const ExportRule* find_region_rule(std::string_view op) {
  for (const ExportRule& r : kRegionRules) {
    if (r.kernel == op) return &r;
  }
  return nullptr;
}

const ExportRule* find_rule(std::string_view kernel) {
  for (const ExportRule& r : kExportRules) {
    if (r.kernel == kernel) return &r;
  }
  return nullptr;
}

std::string rule_names() {
  std::vector<std::string_view> names;
  for (const ExportRule& r : kExportRules) names.push_back(r.kernel);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::vector<std::string> names_or(const std::vector<std::string>& given, size_t n,
                                  const char* prefix, const char* what) {
  EMBER_CHECK(given.size() <= n, "{} {} {} given for {} {}s", kWho, given.size(), what, n, prefix);
  std::vector<std::string> names = given;
  for (size_t i = names.size(); i < n; ++i) names.push_back(fmt::format("{}_{}", prefix, i));
  return names;
}

// ---- one run of the function, written as a graph ----

/** A dynamic input axis: its size in the example and in the second run. */
struct DynamicDim {
  std::string input;
  int64_t axis, size, grown;
};

/** Removes the nodes no output depends on (a projection a recurrent node took over: Note
 *  [Recurrent layers as ONNX nodes]) and the initializers no node reads. */
void prune(onnx::GraphProto& g, const std::vector<std::string>& outputs) {
  std::set<std::string> needed(outputs.begin(), outputs.end());
  std::vector<bool> live(static_cast<size_t>(g.node_size()), false);
  for (int i = g.node_size(); i-- > 0;) {
    const onnx::NodeProto& n = g.node(i);
    live[static_cast<size_t>(i)] =
        std::any_of(n.output().begin(), n.output().end(),
                    [&](const std::string& o) { return needed.count(o); });
    if (live[static_cast<size_t>(i)]) needed.insert(n.input().begin(), n.input().end());
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < g.node_size(); ++i) {
    if (live[static_cast<size_t>(i)]) nodes.Add()->Swap(g.mutable_node(i));
  }
  g.mutable_node()->Swap(&nodes);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> inits;
  for (onnx::TensorProto& t : *g.mutable_initializer()) {
    if (needed.count(t.name())) inits.Add()->Swap(&t);
  }
  g.mutable_initializer()->Swap(&inits);
}

/** One run of the function, written as an ONNX graph. */
struct Trace {
  onnx::GraphProto graph;
  std::vector<std::vector<int64_t>> output_sizes;
  std::vector<DType> output_dtypes;
  std::set<std::string> shape_constants, exact_shapes;
  std::map<std::string, std::vector<int64_t>> slice_extents;
  std::vector<std::string> output_names;
};

Trace trace(const TensorFn& fn, const std::vector<Tensor>& inputs, const ExportOptions& opts,
            const std::vector<std::string>& input_names,
            const std::vector<std::string>& output_names) {
  Recording rec;
  std::vector<Tensor> outputs;
  std::vector<Operand> results;
  {
    autograd::NoGradGuard no_grad;
    capture::CaptureScope scope(inputs);
    outputs = fn(inputs);
    for (const Tensor& t : outputs) {
      EMBER_CHECK_TYPE(t.defined(), "{} the function returned an undefined tensor", kWho);
      results.push_back(scope.operand_of(t));
    }
    rec = scope.finish();
  }
  // What a composite op written whole did inside (Note [Composite ops in a capture]) is its own
  // business; anything else the capture could not stand for is refused.
  const std::vector<bool> whole = written_whole(rec);
  for (const capture::Refusal& r : rec.refusals) {
    EMBER_CHECK_NOT_IMPLEMENTED(within_whole(rec, whole, r.region),
                                "{} the function cannot be recorded: {}", kWho, r.why);
  }
  for (const capture::Guard& g : rec.guards) {
    EMBER_CHECK_NOT_IMPLEMENTED(
        within_whole(rec, whole, g.region),
        "{} the function read a tensor's values on the host after {} kernel calls (item(), a "
        "Python comparison, printing, an index check): the ONNX graph would freeze what it "
        "decided (compute it with tensor ops instead)",
        kWho, g.after);
  }
  Trace t;
  t.output_names = names_or(output_names, outputs.size(), "output", "output_names");
  Exporter x(rec, &t.graph, opts, inputs, input_names);
  x.run();
  for (size_t i = 0; i < outputs.size(); ++i) {
    EMBER_CHECK_NOT_IMPLEMENTED(results[i].slot >= 0, "{} output {} has no storage", kWho, i);
    const Val v = x.result(results[i]);
    onnx::NodeProto* n = x.node("Identity", {v.name});
    n->set_output(0, t.output_names[i]);
    t.output_sizes.push_back(vec(outputs[i].sizes()));
    t.output_dtypes.push_back(outputs[i].dtype());
  }
  prune(t.graph, t.output_names);
  t.shape_constants = x.shape_constants();
  t.exact_shapes = x.exact_shapes();
  t.slice_extents = x.slice_extents();
  return t;
}

// Note [Dynamic axes by a second run]
// A recorded run knows sizes, not where they came from: a Reshape's target [2, 512] may be the
// batch and the features or two constants. With dynamic axes the function runs a second time,
// each symbol's axes larger by an amount of its own (1 for the first symbol, 2 for the next...;
// the inputs extended with their own first slices), and both runs are written alike. They must
// give the same nodes: a difference means the function does different things at other sizes,
// and is refused. Initializers may differ only in Reshape targets. A dim of a target that is a
// dynamic input axis in both runs (its size there and its size grown) is read from that input
// (Shape, Gather, and a Concat of the target's dims, at the head of the graph); one other dim
// that differs (a product such as batch * sequence) becomes -1, which ONNX infers. A fill's
// shape (ConstantOfShape's: the zero initial state of a recurrent layer, sized by the batch) is
// such a target too, but one whose every dim must come from an input (it infers none). Any
// other difference (a constant of the batch's size, two such products in one target, a fill of
// a product's size) is refused.
/** Whether `ta`, a Slice's starts or ends that differ in the second run `tb`, is the same
 *  distance from the end of its axes in both (the last step of a sequence, of another length
 *  there): then it is rewritten counted from the end (an end at the end: INT64_MAX). */
bool relative_slice(onnx::TensorProto* ta, const onnx::TensorProto& tb, const Trace& a,
                    const Trace& b) {
  const auto ea = a.slice_extents.find(ta->name());
  const auto eb = b.slice_extents.find(tb.name());
  if (ea == a.slice_extents.end() || eb == b.slice_extents.end() || ta->dims_size() != 1 ||
      tb.dims_size() != 1 || ta->dims(0) != tb.dims(0) ||
      ea->second.size() != static_cast<size_t>(ta->dims(0)) ||
      eb->second.size() != ea->second.size()) {
    return false;
  }
  std::vector<int64_t> va(ea->second.size()), vb(va.size());
  std::memcpy(va.data(), ta->raw_data().data(), va.size() * sizeof(int64_t));
  std::memcpy(vb.data(), tb.raw_data().data(), vb.size() * sizeof(int64_t));
  for (size_t d = 0; d < va.size(); ++d) {
    if (va[d] == vb[d]) continue;
    const int64_t from_end = va[d] - ea->second[d];
    if (from_end != vb[d] - eb->second[d]) return false;
    va[d] = from_end == 0 ? std::numeric_limits<int64_t>::max() : from_end;
  }
  ta->set_raw_data(
      std::string(reinterpret_cast<const char*>(va.data()), va.size() * sizeof(int64_t)));
  return true;
}

void generalize(Trace& a, const Trace& b, const std::vector<DynamicDim>& sources) {
  EMBER_CHECK_NOT_IMPLEMENTED(a.graph.node_size() == b.graph.node_size(),
                              "{} dynamic_axes: the function runs {} ONNX nodes at the example "
                              "sizes and {} with the dynamic axes larger: what it does "
                              "depends on those sizes",
                              kWho, a.graph.node_size(), b.graph.node_size());
  for (int i = 0; i < a.graph.node_size(); ++i) {
    EMBER_CHECK_NOT_IMPLEMENTED(
        a.graph.node(i).SerializeAsString() == b.graph.node(i).SerializeAsString(),
        "{} dynamic_axes: node {} ({}) differs when the dynamic axes are larger (its "
        "attributes depend on those sizes)",
        kWho, a.graph.node(i).name(), a.graph.node(i).op_type());
  }
  EMBER_CHECK_NOT_IMPLEMENTED(a.graph.initializer_size() == b.graph.initializer_size(),
                              "{} dynamic_axes: the function makes {} constants at the example "
                              "sizes and {} with the dynamic axes larger",
                              kWho, a.graph.initializer_size(), b.graph.initializer_size());
  google::protobuf::RepeatedPtrField<onnx::NodeProto> head;  // nodes computing targets
  std::map<std::string, std::string> dims_read;              // "input:axis" -> its 1-d size
  const auto node = [&](const char* op, std::vector<std::string> ins, std::string out) {
    onnx::NodeProto* n = head.Add();
    n->set_op_type(op);
    n->set_name(out);
    for (std::string& in : ins) n->add_input(std::move(in));
    n->add_output(out);
    return n;
  };
  std::set<std::string> computed;  // targets now computed by nodes, no longer initializers
  google::protobuf::RepeatedPtrField<onnx::TensorProto> added;  // their constant pieces
  const int count = a.graph.initializer_size();
  for (int i = 0; i < count; ++i) {
    onnx::TensorProto* ta = a.graph.mutable_initializer(i);
    const onnx::TensorProto& tb = b.graph.initializer(i);
    if (ta->name() == tb.name() && ta->data_type() == tb.data_type() &&
        std::equal(ta->dims().begin(), ta->dims().end(), tb.dims().begin(), tb.dims().end()) &&
        ta->raw_data() == tb.raw_data()) {
      continue;
    }
    if (relative_slice(ta, tb, a, b)) continue;
    const bool shape = a.shape_constants.count(ta->name()) != 0;
    EMBER_CHECK_NOT_IMPLEMENTED(
        shape && ta->dims_size() == 1 && tb.dims_size() == 1 && ta->dims(0) == tb.dims(0),
        "{} dynamic_axes: the constant '{}' depends on the dynamic axes "
        "(a tensor of their size made inside the function)",
        kWho, ta->name());
    std::vector<int64_t> va(static_cast<size_t>(ta->dims(0))), vb(va.size());
    std::memcpy(va.data(), ta->raw_data().data(), va.size() * sizeof(int64_t));
    std::memcpy(vb.data(), tb.raw_data().data(), vb.size() * sizeof(int64_t));
    std::vector<const DynamicDim*> from(va.size(), nullptr);
    const bool exact = a.exact_shapes.count(ta->name()) != 0;
    size_t inferred = 0;
    const auto differ = std::inner_product(va.begin(), va.end(), vb.begin(), size_t{0},
                                           std::plus<>(), std::not_equal_to<>());
    for (size_t d = 0; d < va.size(); ++d) {
      if (va[d] == vb[d]) continue;
      for (const DynamicDim& src : sources) {
        if (differ == 1 && !exact) break;  // the one dim that differs is inferred
        if (src.size == va[d] && src.grown == vb[d]) {
          from[d] = &src;
          break;
        }
      }
      if (from[d] == nullptr) {
        va[d] = -1;
        ++inferred;
      }
    }
    EMBER_CHECK_NOT_IMPLEMENTED(!exact || inferred == 0,
                                "{} dynamic_axes: a tensor of sizes {} made inside the function "
                                "has {} dims that are products of the dynamic axes (only a size "
                                "an input has can follow them)",
                                kWho, va, inferred);
    EMBER_CHECK_NOT_IMPLEMENTED(inferred <= 1,
                                "{} dynamic_axes: a reshape to {} has {} dims that are products "
                                "of the dynamic axes; ONNX infers one",
                                kWho, va, inferred);
    if (std::none_of(from.begin(), from.end(), [](const DynamicDim* f) { return f; })) {
      ta->set_raw_data(
          std::string(reinterpret_cast<const char*>(va.data()), va.size() * sizeof(int64_t)));
      continue;
    }
    // The target as a Concat of 1-d pieces: constants, and sizes read from the inputs.
    std::vector<std::string> pieces;
    for (size_t d = 0; d < va.size(); ++d) {
      const std::string piece = fmt::format("{}/dim{}", ta->name(), d);
      if (from[d] != nullptr) {
        const std::string key = fmt::format("/{}/shape{}", from[d]->input, from[d]->axis);
        if (!dims_read.count(key)) {
          const std::string shape_of = "/" + from[d]->input + "/shape";
          if (!dims_read.count(shape_of)) {
            node("Shape", {from[d]->input}, shape_of);
            dims_read[shape_of] = shape_of;
          }
          onnx::NodeProto* g = node("Gather", {shape_of, key + "/index"}, key);
          Exporter::attr(g, "axis", int64_t{0});
          onnx::TensorProto* index = added.Add();
          index->set_name(key + "/index");
          index->set_data_type(onnx::TensorProto::INT64);
          index->add_dims(1);
          index->set_raw_data(std::string(reinterpret_cast<const char*>(&from[d]->axis), 8));
          dims_read[key] = key;
        }
        pieces.push_back(key);
      } else {
        onnx::TensorProto* c = added.Add();
        c->set_name(piece);
        c->set_data_type(onnx::TensorProto::INT64);
        c->add_dims(1);
        c->set_raw_data(std::string(reinterpret_cast<const char*>(&va[d]), 8));
        pieces.push_back(piece);
      }
    }
    Exporter::attr(node("Concat", pieces, ta->name()), "axis", int64_t{0});
    computed.insert(ta->name());
  }
  if (computed.empty()) return;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (onnx::TensorProto& t : *a.graph.mutable_initializer()) {
    if (!computed.count(t.name())) kept.Add()->Swap(&t);
  }
  for (onnx::TensorProto& t : added) kept.Add()->Swap(&t);
  a.graph.mutable_initializer()->Swap(&kept);
  for (onnx::NodeProto& n : *a.graph.mutable_node()) head.Add()->Swap(&n);
  a.graph.mutable_node()->Swap(&head);
}

void set_type(onnx::ValueInfoProto* v, const std::string& name, DType dtype,
              const std::vector<int64_t>& sizes, const std::map<int64_t, std::string>& symbols,
              const std::vector<int64_t>* other) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx_dtype(dtype));
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (size_t d = 0; d < sizes.size(); ++d) {
    onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
    auto it = symbols.find(static_cast<int64_t>(d));
    if (it != symbols.end()) {
      dim->set_dim_param(it->second);
    } else if (other == nullptr || (*other)[d] == sizes[d]) {
      dim->set_dim_value(sizes[d]);
    }
  }
}

}  // namespace

std::string export_onnx_bytes(const TensorFn& fn, const std::vector<Tensor>& example_inputs,
                              const ExportOptions& options) {
  EMBER_CHECK(
      options.opset_version >= kOnnxExportOpset && options.opset_version <= kOnnxExportMaxOpset,
      "{} opset_version {}: Ember writes opset {} (the default) or {} (pass one, or leave "
      "it unset)",
      kWho, options.opset_version, kOnnxExportOpset, kOnnxExportMaxOpset);
  const std::vector<std::string> input_names =
      names_or(options.input_names, example_inputs.size(), "input", "input_names");
  // Every name the graph declares is its own: inputs, outputs and parameters apart, and none
  // of the form of the exporter's own ("/Conv_3").
  std::set<std::string> seen;
  for (const auto& [n, t] : options.parameters) seen.insert(n);
  for (const std::string& n : input_names) {
    EMBER_CHECK(!n.empty() && n[0] != '/',
                "{} the name '{}' is not one a graph input may have "
                "(empty, or beginning with '/' as the exporter's own names do)",
                kWho, n);
    EMBER_CHECK(seen.insert(n).second,
                "{} the input name '{}' is given twice, or is also a parameter's", kWho, n);
  }
  for (const std::string& n : options.output_names) {
    EMBER_CHECK(!n.empty() && n[0] != '/',
                "{} the name '{}' is not one a graph output may have "
                "(empty, or beginning with '/' as the exporter's own names do)",
                kWho, n);
    EMBER_CHECK(seen.insert(n).second,
                "{} the output name '{}' is given twice, or is also an input's or a parameter's",
                kWho, n);
  }
  // Fresh contiguous inputs: each its own storage, read from element 0.
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    EMBER_CHECK_TYPE(example_inputs[i].defined(), "{} example input {} is undefined", kWho, i);
    inputs.push_back(example_inputs[i].clone(MemoryFormat::Contiguous));
  }
  Trace t = trace(fn, inputs, options, input_names, options.output_names);
  const std::vector<std::string>& output_names = t.output_names;
  const std::map<std::string, std::map<int64_t, std::string>>& axes = options.dynamic_axes;
  std::set<std::string> known(input_names.begin(), input_names.end());
  known.insert(output_names.begin(), output_names.end());
  for (const auto& [name, dims] : axes) {
    EMBER_CHECK_KEY(known.count(name), "{} dynamic_axes names '{}', which is no input or output",
                    kWho, name);
  }
  const Trace* other = nullptr;
  Trace t2;
  // Each symbol grows by its own amount, so that a size tells which symbol it is.
  std::map<std::string, int64_t> growth;
  std::vector<DynamicDim> sources;
  std::vector<Tensor> grown = inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = axes.find(input_names[i]);
    if (it == axes.end()) continue;
    for (const auto& [axis, sym] : it->second) {
      const int64_t rank = inputs[i].dim();
      EMBER_CHECK_INDEX(axis >= 0 && axis < rank,
                        "{} dynamic_axes: axis {} of input '{}', which has {} dims", kWho, axis,
                        input_names[i], rank);
      const int64_t more =
          growth.emplace(sym, static_cast<int64_t>(growth.size()) + 1).first->second;
      const int64_t want = inputs[i].size(axis) + more;
      while (grown[i].size(axis) < want) {
        const int64_t take = std::min(grown[i].size(axis), want - grown[i].size(axis));
        grown[i] = cat({grown[i], grown[i].narrow(axis, 0, take)}, axis);
      }
      sources.push_back({input_names[i], axis, inputs[i].size(axis), want});
    }
  }
  if (!sources.empty()) {
    t2 = trace(fn, grown, options, input_names, output_names);
    generalize(t, t2, sources);
    other = &t2;
  }
  for (size_t i = 0; i < output_names.size(); ++i) {
    auto it = axes.find(output_names[i]);
    if (it == axes.end()) continue;
    for (const auto& [axis, sym] : it->second) {
      const auto rank = static_cast<int64_t>(t.output_sizes[i].size());
      EMBER_CHECK_INDEX(axis >= 0 && axis < rank,
                        "{} dynamic_axes: axis {} of output '{}', which has {} dims", kWho, axis,
                        output_names[i], rank);
    }
  }

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("ember");
  model.add_opset_import()->set_version(options.opset_version);
  onnx::GraphProto* g = model.mutable_graph();
  *g = std::move(t.graph);
  g->set_name("ember");
  const std::map<int64_t, std::string> none;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = axes.find(input_names[i]);
    set_type(g->add_input(), input_names[i], inputs[i].dtype(), vec(inputs[i].sizes()),
             it == axes.end() ? none : it->second, nullptr);
  }
  for (size_t i = 0; i < output_names.size(); ++i) {
    auto it = axes.find(output_names[i]);
    set_type(g->add_output(), output_names[i], t.output_dtypes[i], t.output_sizes[i],
             it == axes.end() ? none : it->second, other ? &other->output_sizes[i] : nullptr);
  }
  std::string bytes;
  EMBER_CHECK(model.SerializeToString(&bytes), "{} the model could not be serialized", kWho);
  return bytes;
}

void export_onnx(const TensorFn& fn, const std::vector<Tensor>& example_inputs,
                 const std::filesystem::path& path, const ExportOptions& options) {
  const std::string bytes = export_onnx_bytes(fn, example_inputs, options);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  EMBER_CHECK_IO(f.good(), "{} cannot open '{}' for writing", kWho, path.string());
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  EMBER_CHECK_IO(f.good(), "{} writing '{}' failed", kWho, path.string());
}

}  // namespace ember::graph
