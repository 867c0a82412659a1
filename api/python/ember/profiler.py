"""The profiler (torch.profiler): what every thread ran, and for how long.

::

    with ember.profiler.profile() as prof:
        with ember.profiler.record_function("step"):
            loss = model(x).sum()
            loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")        # chrome://tracing, ui.perfetto.dev

Ember's C++ profiler records each public op ("add", category "cpu_op"), each kernel call
("cpu::add", "kernel"), each backward node ("MulBackward", "backward") and each record_function
range ("user_annotation") of every thread, with input shapes, dtype, device and the storage bytes
allocated and freed; kernels on devices with timing events (CUDA) are also timed on the device.
Times are in microseconds, as PyTorch reports them (ARCHITECTURE.md, "The profiler").
"""

import contextlib
import enum
import gzip
import os
import socket
import threading
import time
import warnings
from typing import Any, Callable, Iterable, List, Optional, Set

from ember._C import profiler as _native
from ember._C.profiler import FunctionEvent, FunctionEventAvg, KeyAverages, is_enabled  # noqa: F401

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent",
           "FunctionEventAvg", "is_enabled"]


class ProfilerActivity(enum.Enum):
    """What to record: CPU (ops, kernel calls, backward nodes, user ranges; always recorded) and
    CUDA (device times of the kernels, from events around each)."""

    CPU = "cpu"
    CUDA = "cuda"


def supported_activities() -> Set[ProfilerActivity]:
    """The activities this process can record: CPU, and CUDA where a CUDA device is present."""
    from ember import cuda

    return {ProfilerActivity.CPU, ProfilerActivity.CUDA} if cuda.is_available() else {
        ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    """What a schedule asks the profiler to do during a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0) -> Callable[[int], ProfilerAction]:
    """A schedule for profile(schedule=...): after `skip_first` steps, cycles of `wait` idle
    steps, `warmup` steps and `active` recorded steps, the last of which hands the trace to
    on_trace_ready; `repeat` cycles (0: forever). Ember needs no warm-up: warm-up steps are not
    recorded."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("schedule: invalid arguments (wait, warmup, repeat and skip_first must "
                         "be >= 0, active > 0)")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        mod = step % cycle
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = None,
                              use_gzip: bool = False) -> Callable[["profile"], None]:
    """An on_trace_ready that writes each trace as `dir_name`/<worker>.<ms>.pt.trace.json[.gz]
    (the names TensorBoard's profiler plugin reads)."""
    def handler(prof: "profile") -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns() // 1_000_000}.pt.trace.json")
        if use_gzip:
            with gzip.open(path + ".gz", "wt") as f:
                f.write(prof._native.chrome_trace())
        else:
            prof.export_chrome_trace(path)

    return handler


class EventList(list):
    """The rows of key_averages() (FunctionEventAvg), as PyTorch's EventList, with the table."""

    def __init__(self, averages: KeyAverages) -> None:
        super().__init__(averages.rows)
        self._averages = averages

    def table(self, sort_by: str = "self_cpu_time_total", row_limit: int = -1, **_: Any) -> str:
        """PyTorch's text table of the rows, largest `sort_by` first ("self_cpu_time_total",
        "cpu_time_total", "self_cuda_time_total", "cuda_time_total" (or "device" for "cuda"),
        "count", "self_cpu_memory_usage"), the first `row_limit` rows (all if negative)."""
        return self._averages.table(sort_by, row_limit)

    @property
    def self_cpu_time_total(self) -> float:
        """Self host time of all events, in us."""
        return self._averages.self_cpu_time_total

    def __str__(self) -> str:
        return self.table()


class profile:
    """Records what every thread runs while active: a context manager (or start()/stop()) over
    Ember's C++ Profiler, with torch.profiler.profile's arguments. With a `schedule`, call
    ``step()`` at the end of each training step: steps the schedule marks for recording are
    recorded (each inside a "ProfilerStep#<n>" range) and `on_trace_ready(prof)` runs at the end
    of each active cycle (and at stop() if the last steps were recorded). ``with_stack``,
    ``with_flops`` and ``with_modules`` ask for what Ember does not record: they warn."""

    def __init__(self, *, activities: Optional[Iterable[ProfilerActivity]] = None,
                 schedule: Optional[Callable[[int], ProfilerAction]] = None,
                 on_trace_ready: Optional[Callable[["profile"], Any]] = None,
                 record_shapes: bool = True, profile_memory: bool = True, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        for name, value in (("with_stack", with_stack), ("with_flops", with_flops),
                            ("with_modules", with_modules)):
            if value:
                warnings.warn(f"ember.profiler.profile: {name}=True is not supported (events carry "
                              "no Python stacks, FLOP counts or module names); ignored",
                              stacklevel=2)
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action: Optional[ProfilerAction] = None
        self._native = _native.Profiler(record_shapes=record_shapes, profile_memory=profile_memory,
                                        device_timing=ProfilerActivity.CUDA in self.activities)
        self._step_range: Optional[_native._UserRange] = None

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _action(self, step: int) -> ProfilerAction:
        return self.schedule(step) if self.schedule is not None else ProfilerAction.RECORD

    def _begin(self) -> None:
        self._native.start()
        if self.schedule is not None:
            self._step_range = _native._begin_range(f"ProfilerStep#{self.step_num}")

    def _end(self, save: bool) -> None:
        if self._step_range is not None:
            self._step_range.end()
            self._step_range = None
        if self._native.running:
            self._native.stop()
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self) -> None:
        """Starts recording (or waits for the schedule's first recorded step)."""
        self.step_num = 0
        self.current_action = self._action(0)
        if self.current_action in _RECORDING:
            self._begin()

    def stop(self) -> None:
        """Stops recording; runs on_trace_ready if the last steps were recorded."""
        self._end(save=self.current_action in _RECORDING)
        self.current_action = None

    def step(self) -> None:
        """Marks the end of a training step, for the schedule."""
        previous = self.current_action
        self.step_num += 1
        self.current_action = self._action(self.step_num)
        if previous in _RECORDING:
            if previous is ProfilerAction.RECORD_AND_SAVE or self.current_action not in _RECORDING:
                self._end(save=True)
            elif self._step_range is not None:
                self._step_range.end()
                self._step_range = _native._begin_range(f"ProfilerStep#{self.step_num}")
                return
        if self.current_action in _RECORDING and not self._native.running:
            self._begin()

    def events(self) -> List[FunctionEvent]:
        """The recorded ranges of the last recorded run, in start order."""
        return self._native.events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """Totals per name (or per name and input shapes) of the last recorded run."""
        if group_by_stack_n:
            raise ValueError("ember.profiler: group_by_stack_n needs stacks, which Ember does not "
                             "record")
        return EventList(self._native.key_averages(group_by_input_shape))

    def export_chrome_trace(self, path: "str | os.PathLike[str]") -> None:
        """Writes the last recorded run as a Chrome trace (JSON), atomically."""
        self._native.export_chrome_trace(os.fspath(path))


class record_function(contextlib.ContextDecorator):
    """A named range in the profile, around a block (``with record_function("load"):``) or each
    call of a function (``@record_function("forward")``); ranges nest. It must be exited on the
    thread that entered it. Costs one check when no profiler records."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._open = threading.local()

    def __enter__(self) -> "record_function":
        stack = self._open.__dict__.setdefault("stack", [])
        stack.append(_native._begin_range(self.name))
        return self

    def __exit__(self, *exc: Any) -> None:
        r = self._open.stack.pop()
        if r is not None:
            r.end()
