// ember._C.distributed: process groups, collectives and DistributedDataParallel under
// torch.distributed's names, over ember::distributed (ARCHITECTURE.md, "Distributed").
// ember/distributed.py re-exports them and adds the pure-Python names (group.WORLD, Backend).
#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

#include <ember/distributed.h>
#include <ember/plugin/loader.h>

#include "bind.h"

namespace ember::python {
namespace {

namespace dist = ember::distributed;
using DDP = nn::DistributedDataParallel;

// Note [Blocking collectives from Python]
// Every call that may wait for other processes (the rendezvous, a collective, Work.wait, the
// DDP constructor's broadcast, destroy_process_group) runs with the GIL released, so the
// process's other Python threads go on while a peer is late; what runs meanwhile touches no
// Python object. A blocking collective calls ember's blocking form (which runs on the
// calling thread, Note [Blocking calls run on the caller]); async_op=True starts it on the
// group's worker and returns a Work. The list forms (all_gather, all_to_all, reduce_scatter with
// lists) go through one flat buffer, as the backends move one tensor per call: the inputs are
// copied in before the call, the outputs out after it, by whoever first sees it finished.

/** A started operation (torch's Work): the native handle, and the copies to make once it
 *  finished, made once, by the first wait() or is_completed() that sees it done. */
class PyWork {
 public:
  PyWork(dist::Work work, std::function<void()> then)
      : work_(std::move(work)), after_(std::make_shared<After>()) {
    after_->then = std::move(then);
  }
  /** Blocks until done (GIL released by the caller); raises the operation's error. */
  void wait() const {
    work_.wait();
    if (after_->then) std::call_once(after_->once, after_->then);
  }
  /** True once finished (successfully or not); never blocks. */
  bool is_completed() const {
    if (!work_.is_completed()) return false;
    try {
      wait();  // returns at once: finishes the copies, so the outputs are there when this is true
    } catch (const std::exception&) {  // a failure is wait()'s to raise
    }
    return true;
  }

 private:
  struct After {
    std::function<void()> then;
    std::once_flag once;
  };
  dist::Work work_;
  std::shared_ptr<After> after_;
};

dist::ProcessGroup group_of(const std::optional<dist::ProcessGroup>& group) {
  return group ? *group : dist::default_group();
}

/** The Work of the operation `start` begins (GIL released); `then` follows its success. */
template <class Start>
PyWork started(Start&& start, std::function<void()> then = {}) {
  std::optional<dist::Work> work;
  {
    GilRelease release;
    work.emplace(start());
  }
  return PyWork(std::move(*work), std::move(then));
}

/** Runs `blocking` (GIL released) and returns None, or begins `start` and returns its Work;
 *  `then` follows a successful operation (Note [Blocking collectives from Python]). */
template <class Blocking, class Start>
std::optional<PyWork> issue(bool async_op, Blocking&& blocking, Start&& start,
                            std::function<void()> then = {}) {
  if (async_op) return started(start, std::move(then));
  GilRelease release;
  blocking();
  if (then) then();
  return std::nullopt;
}

/** The tensors of `list` one after the other in one new flat tensor, each checked to have `n`
 *  elements of `like`'s dtype and device, `world` of them. */
Tensor stage_in(const char* op, const char* role, const std::vector<Tensor>& list, int64_t n,
                const Tensor& like, int world) {
  EMBER_CHECK(static_cast<int>(list.size()) == world,
              "[distributed.{}] {} has {} tensors; the group has {} ranks (one per rank)", op, role,
              list.size(), world);
  for (size_t i = 0; i < list.size(); ++i) {
    EMBER_CHECK(list[i].defined(), "[distributed.{}] {}[{}] is undefined", op, role, i);
    EMBER_CHECK_TYPE(list[i].dtype() == like.dtype() && list[i].device() == like.device(),
                     "[distributed.{}] {}[{}] is {} on {}, the others {} on {} (one dtype and "
                     "device for every tensor)",
                     op, role, i, dtype_name(list[i].dtype()), list[i].device().str(),
                     dtype_name(like.dtype()), like.device().str());
    EMBER_CHECK(list[i].numel() == n,
                "[distributed.{}] {}[{}] has {} elements, not {} (every block is the same size)",
                op, role, i, list[i].numel(), n);
  }
  return empty({n * world}, TensorOptions(like.dtype(), like.device()));
}

/** Copies block i of `flat` into list[i] (after a successful operation). */
std::function<void()> scatter_out(Tensor flat, std::vector<Tensor> list) {
  return [flat = std::move(flat), list = std::move(list)] {
    autograd::NoGradGuard no_grad;
    const int64_t n = list.empty() ? 0 : list[0].numel();
    for (size_t i = 0; i < list.size(); ++i) {
      Tensor dst = list[i];
      dst.copy_(flat.narrow(0, static_cast<int64_t>(i) * n, n).view(dst.sizes()));
    }
  };
}

/** Copies list[i] into block i of `flat` (before the operation). */
void gather_in(const Tensor& flat, const std::vector<Tensor>& list) {
  autograd::NoGradGuard no_grad;
  const int64_t n = list.empty() ? 0 : list[0].numel();
  for (size_t i = 0; i < list.size(); ++i)
    flat.narrow(0, static_cast<int64_t>(i) * n, n).copy_(list[i].reshape({-1}));
}

/** all_to_all_single's split sizes: only equal blocks of size(0) / world rows move. */
void check_splits(const std::optional<std::vector<int64_t>>& splits, const Tensor& t, int world,
                  const char* role) {
  const int64_t rows = t.dim() ? t.size(0) : t.numel();
  EMBER_CHECK(rows % world == 0,
              "[distributed.all_to_all_single] the {} has {} rows (size(0)), which do not split "
              "into {} equal blocks",
              role, rows, world);
  if (!splits || splits->empty()) return;
  EMBER_CHECK(static_cast<int>(splits->size()) == world,
              "[distributed.all_to_all_single] {}_split_sizes has {} entries; the group has {} "
              "ranks",
              role, splits->size(), world);
  EMBER_CHECK_NOT_IMPLEMENTED(
      std::all_of(splits->begin(), splits->end(), [&](int64_t s) { return s * world == rows; }),
      "[distributed.all_to_all_single] uneven {}_split_sizes {} are not supported: every block "
      "has size(0) / world_size = {} rows (pad the blocks to one size, or pass None)",
      role, shape_str(*splits), rows / world);
}

/** A timeout from Python: a datetime.timedelta or a number of seconds. */
std::chrono::milliseconds timeout_arg(nb::handle timeout) {
  const double seconds = nb::hasattr(timeout, "total_seconds")
                             ? nb::cast<double>(timeout.attr("total_seconds")())
                             : nb::cast<double>(timeout);
  EMBER_CHECK(seconds > 0, "[distributed.init_process_group] the timeout must be positive: {} s",
              seconds);
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000 + 0.5));
}

void bind_collectives(nb::module_& m) {
  using dist::ReduceOp;
  m.def(
      "all_reduce",
      [](const Tensor& tensor, ReduceOp op, std::optional<dist::ProcessGroup> group,
         bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        return issue(
            async_op, [&] { pg.all_reduce(tensor, op); },
            [&] { return pg.all_reduce_async(tensor, op); });
      },
      "tensor"_a, "op"_a = ReduceOp::Sum, "group"_a = nb::none(), "async_op"_a = false,
      "In place: tensor becomes the reduction (op) of every rank's tensor.");
  m.def(
      "broadcast",
      [](const Tensor& tensor, int src, std::optional<dist::ProcessGroup> group, bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        return issue(
            async_op, [&] { pg.broadcast(tensor, src); },
            [&] { return pg.broadcast_async(tensor, src); });
      },
      "tensor"_a, "src"_a, "group"_a = nb::none(), "async_op"_a = false,
      "In place: tensor becomes rank src's tensor.");
  m.def(
      "all_gather",
      [](std::vector<Tensor> tensor_list, const Tensor& tensor,
         std::optional<dist::ProcessGroup> group, bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        EMBER_CHECK(tensor.defined(), "[distributed.all_gather] the input tensor is undefined");
        const Tensor flat =
            stage_in("all_gather", "tensor_list", tensor_list, tensor.numel(), tensor, pg.size());
        return issue(
            async_op, [&] { pg.all_gather(flat, tensor); },
            [&] { return pg.all_gather_async(flat, tensor); }, scatter_out(flat, tensor_list));
      },
      "tensor_list"_a, "tensor"_a, "group"_a = nb::none(), "async_op"_a = false,
      "tensor_list[r] gets rank r's tensor (a list of world_size tensors).");
  m.def(
      "all_gather_into_tensor",
      [](const Tensor& output_tensor, const Tensor& input_tensor,
         std::optional<dist::ProcessGroup> group, bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        return issue(
            async_op, [&] { pg.all_gather(output_tensor, input_tensor); },
            [&] { return pg.all_gather_async(output_tensor, input_tensor); });
      },
      "output_tensor"_a, "input_tensor"_a, "group"_a = nb::none(), "async_op"_a = false,
      "output_tensor (world_size times input's elements) gets every rank's input, in rank order.");
  m.def(
      "reduce_scatter_tensor",
      [](const Tensor& output, const Tensor& input, ReduceOp op,
         std::optional<dist::ProcessGroup> group, bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        return issue(
            async_op, [&] { pg.reduce_scatter(output, input, op); },
            [&] { return pg.reduce_scatter_async(output, input, op); });
      },
      "output"_a, "input"_a, "op"_a = ReduceOp::Sum, "group"_a = nb::none(), "async_op"_a = false,
      "output gets block rank of the reduction of every rank's input (world_size equal blocks).");
  m.def(
      "reduce_scatter",
      [](const Tensor& output, std::vector<Tensor> input_list, ReduceOp op,
         std::optional<dist::ProcessGroup> group, bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        EMBER_CHECK(output.defined(), "[distributed.reduce_scatter] the output is undefined");
        const Tensor flat =
            stage_in("reduce_scatter", "input_list", input_list, output.numel(), output, pg.size());
        {
          GilRelease release;
          gather_in(flat, input_list);
        }
        return issue(
            async_op, [&] { pg.reduce_scatter(output, flat, op); },
            [&] { return pg.reduce_scatter_async(output, flat, op); });
      },
      "output"_a, "input_list"_a, "op"_a = ReduceOp::Sum, "group"_a = nb::none(),
      "async_op"_a = false, "output gets the reduction of every rank's input_list[rank].");
  m.def(
      "all_to_all_single",
      [](const Tensor& output, const Tensor& input,
         std::optional<std::vector<int64_t>> output_split_sizes,
         std::optional<std::vector<int64_t>> input_split_sizes,
         std::optional<dist::ProcessGroup> group, bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        EMBER_CHECK(input.defined() && output.defined(),
                    "[distributed.all_to_all_single] the input or output is undefined");
        check_splits(input_split_sizes, input, pg.size(), "input");
        check_splits(output_split_sizes, output, pg.size(), "output");
        return issue(
            async_op, [&] { pg.all_to_all(output, input); },
            [&] { return pg.all_to_all_async(output, input); });
      },
      "output"_a, "input"_a, "output_split_sizes"_a = nb::none(),
      "input_split_sizes"_a = nb::none(), "group"_a = nb::none(), "async_op"_a = false,
      "Block r of output (along dim 0) gets block rank of rank r's input; equal blocks.");
  m.def(
      "all_to_all",
      [](std::vector<Tensor> output_tensor_list, std::vector<Tensor> input_tensor_list,
         std::optional<dist::ProcessGroup> group, bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        EMBER_CHECK(!input_tensor_list.empty() && input_tensor_list[0].defined(),
                    "[distributed.all_to_all] input_tensor_list is empty");
        const Tensor& like = input_tensor_list[0];
        const Tensor in = stage_in("all_to_all", "input_tensor_list", input_tensor_list,
                                   like.numel(), like, pg.size());
        const Tensor out = stage_in("all_to_all", "output_tensor_list", output_tensor_list,
                                    like.numel(), like, pg.size());
        {
          GilRelease release;
          gather_in(in, input_tensor_list);
        }
        return issue(
            async_op, [&] { pg.all_to_all(out, in); }, [&] { return pg.all_to_all_async(out, in); },
            scatter_out(out, output_tensor_list));
      },
      "output_tensor_list"_a, "input_tensor_list"_a, "group"_a = nb::none(), "async_op"_a = false,
      "output_tensor_list[r] gets rank r's input_tensor_list[rank]; tensors of one size.");
  m.def(
      "barrier",
      [](std::optional<dist::ProcessGroup> group, bool async_op) {
        const dist::ProcessGroup pg = group_of(group);
        return issue(
            async_op, [&] { pg.barrier(); }, [&] { return pg.barrier_async(); });
      },
      "group"_a = nb::none(), "async_op"_a = false, "Returns when every rank reached it.");
  m.def(
      "send",
      [](const Tensor& tensor, int dst, std::optional<dist::ProcessGroup> group, int tag) {
        const dist::ProcessGroup pg = group_of(group);
        GilRelease release;
        pg.send(tensor, dst, tag);
      },
      "tensor"_a, "dst"_a, "group"_a = nb::none(), "tag"_a = 0,
      "Sends tensor to rank dst; returns when it was sent.");
  m.def(
      "recv",
      [](const Tensor& tensor, int src, std::optional<dist::ProcessGroup> group, int tag) {
        const dist::ProcessGroup pg = group_of(group);
        GilRelease release;
        pg.recv(tensor, src, tag);
        return src;
      },
      "tensor"_a, "src"_a, "group"_a = nb::none(), "tag"_a = 0,
      "Receives into tensor from rank src; returns the sender's rank.");
  m.def(
      "isend",
      [](const Tensor& tensor, int dst, std::optional<dist::ProcessGroup> group, int tag) {
        const dist::ProcessGroup pg = group_of(group);
        return started([&] { return pg.send_async(tensor, dst, tag); });
      },
      "tensor"_a, "dst"_a, "group"_a = nb::none(), "tag"_a = 0,
      "Starts sending tensor to rank dst; returns a Work.");
  m.def(
      "irecv",
      [](const Tensor& tensor, int src, std::optional<dist::ProcessGroup> group, int tag) {
        const dist::ProcessGroup pg = group_of(group);
        return started([&] { return pg.recv_async(tensor, src, tag); });
      },
      "tensor"_a, "src"_a, "group"_a = nb::none(), "tag"_a = 0,
      "Starts receiving into tensor from rank src; returns a Work.");
}

void bind_groups(nb::module_& m) {
  nb::enum_<dist::ReduceOp>(m, "ReduceOp", "How all_reduce and reduce_scatter combine values.")
      .value("SUM", dist::ReduceOp::Sum, "The sum.")
      .value("AVG", dist::ReduceOp::Avg, "The mean over the ranks (floating tensors).")
      .value("PRODUCT", dist::ReduceOp::Product, "The product.")
      .value("MIN", dist::ReduceOp::Min, "The minimum.")
      .value("MAX", dist::ReduceOp::Max, "The maximum.");

  nb::class_<PyWork>(m, "Work", "A started collective or point-to-point operation.")
      .def(
          "wait",
          [](const PyWork& w) {
            w.wait();
            return true;
          },
          release_gil(), "Blocks until the operation finished; raises its error; returns True.")
      .def("is_completed", &PyWork::is_completed,
           "True once the operation finished (successfully or not); never blocks.");

  nb::class_<dist::ProcessGroup>(m, "ProcessGroup", "The ranks of one job and their communicator.")
      .def("rank", &dist::ProcessGroup::rank, "This process's rank in the group.")
      .def("size", &dist::ProcessGroup::size, "Number of ranks.")
      .def("name", &dist::ProcessGroup::backend, "The communication backend's name.")
      .def("__repr__", [](const dist::ProcessGroup& g) {
        return fmt::format("ProcessGroup(backend='{}', rank={}, size={})", g.backend(), g.rank(),
                           g.size());
      });

  m.def(
      "init_process_group",
      [](std::optional<std::string> backend, std::optional<std::string> init_method,
         nb::handle timeout, int world_size, int rank, nb::handle device_id) {
        dist::InitOptions o;
        if (backend) {
          o.backend = *backend;
          std::transform(o.backend.begin(), o.backend.end(), o.backend.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        }
        if (init_method) o.init_method = *init_method;
        if (!timeout.is_none()) o.timeout = timeout_arg(timeout);
        o.world_size = world_size;
        o.rank = rank;
        if (!device_id.is_none()) o.device_index = static_cast<int>(device_from(device_id).index);
        GilRelease release;
        dist::init_process_group(o);
      },
      "backend"_a = nb::none(), "init_method"_a = nb::none(), "timeout"_a = nb::none(),
      "world_size"_a = -1, "rank"_a = -1, nb::kw_only(), "device_id"_a = nb::none(),
      nb::sig("def init_process_group(backend: str | None = None, init_method: str | None = None, "
              "timeout: datetime.timedelta | float | None = None, world_size: int = -1, rank: "
              "int = -1, *, device_id: ember._C.device | int | None = None) -> None"),
      "Joins the job (env:// reads MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE) as the default "
      "group.");
  m.def("is_initialized", &dist::is_initialized, "True while a default process group exists.");
  m.def("default_group", &dist::default_group, "The default process group.");
  m.def(
      "destroy_process_group",
      [](std::optional<dist::ProcessGroup>) {
        GilRelease release;
        dist::destroy_process_group();
      },
      "group"_a = nb::none(),
      "Leaves the default group (a process has no other) once its queued work is done.");
  m.def(
      "get_rank", [](std::optional<dist::ProcessGroup> group) { return group_of(group).rank(); },
      "group"_a = nb::none(), "This process's rank in the group.");
  m.def(
      "get_world_size",
      [](std::optional<dist::ProcessGroup> group) { return group_of(group).size(); },
      "group"_a = nb::none(), "Number of ranks in the group.");
  m.def(
      "get_backend",
      [](std::optional<dist::ProcessGroup> group) { return group_of(group).backend(); },
      "group"_a = nb::none(), "The group's communication backend ('gloo', 'nccl', 'mpi').");
  m.def("available_backends", &dist::available_backends,
        "The communication backends the loaded plugins registered, usable here or not.");
  m.def(
      "is_backend_available",
      [](std::string_view backend) {
        for (const CommBackend& b : comm_backends())
          if (b.name == backend) return b.usable;
        return false;
      },
      "backend"_a, "True if a loaded plugin offers this backend and it is usable here.");
}

/** `with ddp.no_sync():` holds DDP's guard from __enter__ to __exit__. */
struct NoSyncScope {
  DDP* ddp = nullptr;
  std::unique_ptr<DDP::NoSync> guard;
};

/** device_ids and output_device as PyTorch takes them for a module on one device: None, or
 *  that device, which every parameter must be on. */
void check_ddp_devices(const nn::Module& module, nb::handle device_ids, nb::handle output_device) {
  std::vector<nb::handle> ids;
  if (!device_ids.is_none())
    for (nb::handle d : device_ids) ids.push_back(d);
  EMBER_CHECK(ids.size() <= 1,
              "[DistributedDataParallel] device_ids names {} devices: a module is replicated on "
              "one device per process (start one process per device)",
              ids.size());
  // A CPU module takes no device_ids: said before they are parsed, since they name devices
  // (GPUs) this machine may not have.
  for (const auto& [name, p] : module.named_parameters()) {
    EMBER_CHECK_TYPE(ids.empty() || p.device() != Device::cpu(),
                     "[DistributedDataParallel] device_ids is [{}] but parameter '{}' is on cpu "
                     "(move the module there first; a CPU module takes device_ids=None)",
                     nb::cast<std::string>(nb::str(ids[0])), name);
  }
  std::vector<Device> devices;
  for (nb::handle d : ids) devices.push_back(device_from(d));
  if (!output_device.is_none()) {
    const Device out = device_from(output_device);
    EMBER_CHECK(devices.empty() || devices[0] == out,
                "[DistributedDataParallel] output_device {} differs from device_ids [{}] (the "
                "output stays where the module computes it)",
                out.str(), devices[0].str());
    devices.assign(1, out);
  }
  if (devices.empty()) return;
  for (const auto& [name, p] : module.named_parameters()) {
    EMBER_CHECK_TYPE(p.device() == devices[0],
                     "[DistributedDataParallel] device_ids is [{}] but parameter '{}' is on {} "
                     "(move the module there first; a CPU module takes device_ids=None)",
                     devices[0].str(), name, p.device().str());
  }
}

void bind_ddp(nb::module_& m) {
  nb::class_<NoSyncScope>(m, "_NoSync",
                          "The context manager DistributedDataParallel.no_sync returns.")
      .def(
          "__enter__",
          [](NoSyncScope& s) {
            EMBER_CHECK(!s.guard,
                        "[DistributedDataParallel.no_sync] this context is already entered");
            s.guard.reset(new DDP::NoSync(s.ddp->no_sync()));
          },
          release_gil(), "Turns gradient synchronization off.")
      .def(
          "__exit__", [](NoSyncScope& s, nb::args) { s.guard.reset(); }, "args"_a, release_gil(),
          "Turns it back on: the next backward averages the accumulated gradients.");

  nb::class_<DDP, nn::Module>(
      m, "DistributedDataParallel", nb::dynamic_attr(), module_type_slots(),
      "Data-parallel training: every backward leaves the average of all ranks' gradients in .grad.")
      .def(
          "__init__",
          [](DDP* self, std::shared_ptr<nn::Module> module, nb::handle device_ids,
             nb::handle output_device, int64_t /*dim*/, bool broadcast_buffers,
             std::optional<dist::ProcessGroup> process_group, std::optional<double> bucket_cap_mb,
             bool find_unused_parameters) {
            check_ddp_devices(*module, device_ids, output_device);
            nn::DDPOptions o;
            o.bucket_cap_mb = bucket_cap_mb.value_or(o.bucket_cap_mb);
            o.find_unused_parameters = find_unused_parameters;
            o.broadcast_buffers = broadcast_buffers;
            GilRelease release;  // the constructor broadcasts rank 0's state
            new (self) DDP(std::move(module), o, std::move(process_group));
          },
          "module"_a, "device_ids"_a = nb::none(), "output_device"_a = nb::none(), "dim"_a = 0,
          "broadcast_buffers"_a = true, "process_group"_a = nb::none(),
          "bucket_cap_mb"_a = nb::none(), "find_unused_parameters"_a = false,
          nb::sig("def __init__(self, module: ember._C.nn.Module, device_ids: "
                  "collections.abc.Sequence[ember._C.device | int] | None = None, output_device: "
                  "ember._C.device | int | None = None, dim: int = 0, broadcast_buffers: bool = "
                  "True, process_group: ProcessGroup | None = None, bucket_cap_mb: float | None = "
                  "None, find_unused_parameters: bool = False) -> None"),
          "Wraps module (replicas start from rank 0's parameters and buffers); dim is unused, as "
          "in PyTorch for a module on one device.")
      .def_prop_ro(
          "module", [](const DDP& d) { return d.module(); }, "The wrapped module.")
      .def(
          "forward",
          [](nb::handle self, nb::args args, nb::kwargs kwargs) -> nb::object {
            DDP& d = nb::cast<DDP&>(self);
            nb::object wrapped = nb::cast(d.module());
            // A Python module may take and return anything: it is called from Python.
            if (args.size() == 1 && kwargs.size() == 0 && nb::isinstance<PyTensor>(args[0]) &&
                !nb::inst_python_derived(wrapped)) {
              const Tensor x = *nb::inst_ptr<PyTensor>(args[0]);
              Tensor out;
              {
                GilRelease release;
                out = d.forward(x);
              }
              return wrap_tensor(out);
            }
            {
              GilRelease release;
              d.sync_buffers();
            }
            return wrapped(*args, **kwargs);
          },
          "args"_a, "kwargs"_a,
          nb::sig("def forward(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any"),
          "The wrapped module on the inputs, after broadcasting rank 0's buffers if asked to.")
      .def(
          "no_sync",
          [](DDP& d) {
            return NoSyncScope{&d, nullptr};
          },
          nb::keep_alive<0, 1>(),
          "A context manager: backward inside it accumulates gradients without communicating.")
      .def("num_buckets", &DDP::num_buckets,
           "Number of gradient buckets (Note [Gradient buckets]).");
}

}  // namespace

void bind_distributed(nb::module_& root) {
  nb::module_ m = root.def_submodule(
      "distributed",
      "Process groups, collectives and DistributedDataParallel (torch.distributed).");
  bind_groups(m);
  bind_collectives(m);
  bind_ddp(m);
}

}  // namespace ember::python
