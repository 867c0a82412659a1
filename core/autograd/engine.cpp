#include "ember/autograd/engine.h"

#include <cmath>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/autograd/op_math.h"
#include "core/autograd/profiled.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"

namespace ember::autograd {
namespace {

// Note [Callbacks at the end of backward]
// A hook that starts work which must finish before backward returns (DistributedDataParallel's
// bucket all-reduces) queues a callback; it runs on the calling thread once every node ran,
// before backward() returns, in the order queued (a callback may queue more). A failing graph
// drops the callbacks with the error.
thread_local std::vector<std::function<void()>>* t_final_callbacks = nullptr;

struct ReadyOrder {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

bool has_non_finite(const Tensor& g) {
  if (!is_floating(g.dtype()) || g.numel() == 0) return false;
  NoGradGuard no_grad;
  const Tensor h = g.to(Device::cpu()).to(DType::Float64).contiguous();
  const double* p = h.data_ptr<double>();
  for (int64_t i = 0; i < h.numel(); ++i) {
    if (!std::isfinite(p[i])) return true;
  }
  return false;
}

// True if a tensor of shape `from` broadcasts to `to`.
bool expandable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != to[lead + i] && from[i] != 1) return false;
  }
  return true;
}

// Note [Gradients are checked where they enter a node]
// Every gradient a node returns, and every root gradient, is checked against the input it flows
// into (the OutputMeta its edge points at: the forward tensor's shape, dtype and device) before
// it is summed there, whatever made it: a built-in formula, a custom Function in C++ or Python,
// an extension op's backward. A shape the input broadcasts to is summed down to the input's;
// another shape is an error. Another dtype is converted to the input's, so a float64 gradient
// from a custom backward never turns a float32 parameter's .grad into float64. Another device
// is an error, except for a 0-dim gradient, which is moved (PyTorch's validate_outputs).
// `from` is the node that returned g (null for a root gradient), named only in a message.
Tensor validate_grad(Tensor g, const OutputMeta& m, const Node* from, size_t index) {
  auto who = [from] {
    return from ? fmt::format("function '{}'", from->name()) : std::string("the caller");
  };
  if (!(g.sizes() == m.sizes)) {
    EMBER_CHECK(expandable(m.sizes, g.sizes()),
                "[autograd] {} returned an invalid gradient at index {}: got shape {} but "
                "expected shape compatible with {}",
                who(), index, shape_str(g.sizes()), shape_str(m.sizes));
    g = sum_to(g, m.sizes);
  }
  if (g.device() != m.device) {
    EMBER_CHECK_TYPE(g.dim() == 0,
                     "[autograd] {} returned an invalid gradient at index {}: expected device {} "
                     "but got {}",
                     who(), index, m.device, g.device());
    g = g.to(m.device);
  }
  if (g.dtype() != m.dtype) g = g.to(m.dtype);
  return g;
}

// Runs `n` as the engine does, recorded as a backward range (a profiler is running).
std::vector<Tensor> apply_profiled(Node& n, std::vector<Tensor>&& grads) {
  profiler::detail::BackwardRange range(n, grads);
  return n.apply(std::move(grads));
}

// Note [The backward engine]
// One call runs one graph task on the calling thread (so independent graphs run concurrently
// from several threads): (1) walk the graph from the roots counting, for every node, how many
// edges point at it; (2) if specific inputs were asked for (grad()), mark which nodes lead to
// them and skip the rest; (3) run nodes whose count reached zero, latest-created first,
// summing the gradients that arrive at each node's inputs in a buffer. Gradients for the
// requested inputs are captured where they arrive instead of being accumulated into .grad.
struct GraphTask {
  bool retain_graph;
  bool create_graph;
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, bool> needed;   // only used when capturing: must run
  std::unordered_map<Node*, bool> reaches;  // leads to a captured gradient
  // (node, input_nr) -> capture slot
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  std::vector<Tensor> captured;
  bool capturing = false;

  // Counts the edges into every node reachable from the roots; a node is walked the first time
  // an edge reaches it (its count becomes 1), so no separate set of seen nodes is needed.
  void count_deps(const std::unordered_set<Node*>& root_set) {
    std::vector<Node*> stack(root_set.begin(), root_set.end());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges) {
        if (!e.fn) continue;
        if (++deps[e.fn.get()] == 1 && root_set.count(e.fn.get()) == 0) {
          stack.push_back(e.fn.get());
        }
      }
    }
  }

  // Marks, for every node reachable from `roots`, whether a captured gradient is reachable from
  // it (the node itself included) in `reaches`, and in `needed` whether the node must run, i.e.
  // whether one is reachable through its next edges. A captured node whose inputs lead nowhere
  // (a leaf's accumulator) is captured, not run. A post-order walk with an explicit stack
  // (Note [Freeing deep graphs] in node.cpp has why no graph walk recurses on depth).
  void mark_needed(const std::vector<Node*>& roots) {
    struct Frame {
      Node* node;
      size_t next = 0;   // the next edge to look at
      bool run = false;  // a captured gradient is reachable through an edge seen so far
    };
    std::vector<Frame> stack;
    for (Node* root : roots) {
      if (!reaches.emplace(root, false).second) continue;
      stack.push_back({root});
      while (!stack.empty()) {
        Frame& top = stack.back();
        if (top.next < top.node->next_edges.size()) {
          Node* m = top.node->next_edges[top.next++].fn.get();
          if (m == nullptr) continue;
          // A node seen before is finished (a valid graph has no cycles): use its answer.
          if (auto [it, fresh] = reaches.emplace(m, false); !fresh) {
            top.run = top.run || it->second;
          } else {
            stack.push_back({m});
          }
          continue;
        }
        const Frame done = top;
        stack.pop_back();
        needed[done.node] = done.run;
        const bool reached = done.run || captures.count(done.node) > 0;
        reaches[done.node] = reached;
        if (reached && !stack.empty()) stack.back().run = true;
      }
    }
  }

  void add_to_buffer(Node* n, uint32_t input_nr, Tensor g) {
    std::vector<Tensor>& buf = buffers[n];
    if (buf.size() < n->outputs.size()) buf.resize(n->outputs.size());
    if (input_nr >= buf.size()) buf.resize(input_nr + 1);
    buf[input_nr] = buf[input_nr].defined() ? detail::add_grads(buf[input_nr], g) : g;
  }

  void run(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads) {
    // A synthetic root that fans out to the requested tensors.
    std::vector<Node*> root_nodes;
    for (const Edge& e : roots) root_nodes.push_back(e.fn.get());
    std::unordered_set<Node*> root_set(root_nodes.begin(), root_nodes.end());
    count_deps(root_set);
    if (capturing) mark_needed(root_nodes);
    std::priority_queue<Node*, std::vector<Node*>, ReadyOrder> ready;
    for (size_t i = 0; i < roots.size(); ++i) {
      Node* root = roots[i].fn.get();
      add_to_buffer(root, roots[i].input_nr,
                    validate_grad(root_grads[i], root->outputs[roots[i].input_nr], nullptr, i));
    }
    for (Node* r : root_set) {
      if (deps[r] == 0) ready.push(r);
    }
    // Keep nodes alive while they run even if the user dropped the outputs.
    std::vector<std::shared_ptr<Node>> keep;
    for (const Edge& e : roots) keep.push_back(e.fn);

    AutoGradMode mode(create_graph);
    while (!ready.empty()) {
      Node* n = ready.top();
      ready.pop();
      std::vector<Tensor> inputs = std::move(buffers[n]);
      buffers.erase(n);
      inputs.resize(n->outputs.size());
      if (auto it = captures.find(n); it != captures.end()) {
        for (auto [nr, slot] : it->second) {
          Tensor g = nr < inputs.size() ? inputs[nr] : Tensor();
          for (const auto& [hook_nr, hook] : n->pre_hooks) {
            if (hook_nr == nr && g.defined()) g = apply_grad_hook(hook, g);
          }
          captured[slot] = g;
        }
      }
      if (capturing && !needed[n]) continue;
      for (const auto& [nr, hook] : n->pre_hooks) {
        if (nr < inputs.size() && inputs[nr].defined()) {
          inputs[nr] = apply_grad_hook(hook, inputs[nr]);
        }
      }
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined()) {
          inputs[i] = detail::zeros_grad(n->outputs[i]);
        }
      }
      // Note [One branch when the profiler is off] in ember/dispatch/profiling.h.
      std::vector<Tensor> outs = __builtin_expect(profiler::is_enabled(), 0)
                                     ? apply_profiled(*n, std::move(inputs))
                                     : n->apply(std::move(inputs));
      if (!retain_graph) n->release_saved();
      if (is_anomaly_enabled()) {
        for (size_t i = 0; i < outs.size(); ++i) {
          EMBER_CHECK(!(outs[i].defined() && has_non_finite(outs[i])),
                      "[autograd] function '{}' returned nan or inf values in its {}th output; "
                      "the forward op that created it was '{}' (anomaly mode)",
                      n->name(), i, n->forward_op);
        }
      }
      EMBER_ASSERT(outs.size() <= n->next_edges.size() || n->next_edges.empty());
      for (size_t i = 0; i < n->next_edges.size(); ++i) {
        const Edge& e = n->next_edges[i];
        if (!e.fn) continue;
        Node* next = e.fn.get();
        if (i < outs.size() && outs[i].defined()) {
          add_to_buffer(next, e.input_nr,
                        validate_grad(std::move(outs[i]), next->outputs[e.input_nr], n, i));
        }
        keep.push_back(e.fn);
        if (--deps[next] == 0) ready.push(next);
      }
    }
  }
};

std::vector<Tensor> make_root_grads(const std::vector<Tensor>& tensors,
                                    const std::vector<Tensor>& grads, const char* op) {
  EMBER_CHECK(grads.empty() || grads.size() == tensors.size(),
              "[{}] got {} tensors but {} gradients", op, tensors.size(), grads.size());
  std::vector<Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!grads.empty() && grads[i].defined()) {
      EMBER_CHECK(grads[i].sizes() == t.sizes(),
                  "[{}] gradient {} has shape {} but the tensor has shape {}", op, i,
                  shape_str(grads[i].sizes()), shape_str(t.sizes()));
      out.push_back(grads[i]);
    } else {
      EMBER_CHECK(t.numel() == 1,
                  "[{}] grad can be implicitly created only for scalar outputs: tensor {} has "
                  "shape {} (pass a gradient)",
                  op, i, shape_str(t.sizes()));
      out.push_back(detail::ones_grad(t));
    }
  }
  return out;
}

std::vector<Edge> root_edges(const std::vector<Tensor>& tensors, const char* op) {
  std::vector<Edge> edges;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Edge e = gradient_edge(tensors[i]);
    EMBER_CHECK(e.valid(),
                "[{}] element {} of tensors does not require grad and does not have a grad_fn", op,
                i);
    edges.push_back(std::move(e));
  }
  return edges;
}

// Runs `task` with its own list of final callbacks, then the callbacks.
void run_task(GraphTask& task, const std::vector<Edge>& roots, const std::vector<Tensor>& grads) {
  std::vector<std::function<void()>> callbacks;
  auto* outer = std::exchange(t_final_callbacks, &callbacks);
  struct Restore {
    std::vector<std::function<void()>>* outer;
    ~Restore() { t_final_callbacks = outer; }
  } restore{outer};
  task.run(roots, grads);
  for (size_t i = 0; i < callbacks.size(); ++i) {
    std::function<void()> fn = std::move(callbacks[i]);
    fn();
  }
}

}  // namespace

void queue_callback(std::function<void()> callback) {
  EMBER_CHECK(t_final_callbacks != nullptr,
              "[queue_callback] no backward pass is running on this thread (queue callbacks "
              "from a gradient hook)");
  t_final_callbacks->push_back(std::move(callback));
}

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              bool retain_graph, bool create_graph) {
  std::vector<Edge> roots = root_edges(tensors, "backward");
  std::vector<Tensor> grads = make_root_grads(tensors, grad_tensors, "backward");
  GraphTask task{retain_graph || create_graph, create_graph, {}, {}, {}, {}, {}, {}, false};
  run_task(task, roots, grads);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  std::vector<Edge> roots = root_edges(outputs, "grad");
  std::vector<Tensor> grads = make_root_grads(outputs, grad_outputs, "grad");
  GraphTask task{retain_graph.value_or(create_graph), create_graph, {}, {}, {}, {}, {}, {}, true};
  task.captured.resize(inputs.size());
  std::vector<std::shared_ptr<Node>> keep;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].defined() && inputs[i].requires_grad(),
                "[grad] input {} does not require grad", i);
    Edge e = gradient_edge(inputs[i]);
    keep.push_back(e.fn);
    task.captures[e.fn.get()].push_back({e.input_nr, i});
  }
  run_task(task, roots, grads);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(allow_unused || task.captured[i].defined(),
                "[grad] one of the differentiated tensors (input {}) appears to not have been "
                "used in the graph (set allow_unused=true if this is intended)",
                i);
  }
  return task.captured;
}

}  // namespace ember::autograd
