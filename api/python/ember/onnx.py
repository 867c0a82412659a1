"""ONNX models on any Ember device, and Ember models as ONNX (ARCHITECTURE.md, "Graphs and ONNX").

::

    sess = ember.onnx.InferenceSession("model.onnx")   # as onnxruntime's; providers= or device=
    (y,) = sess.run(None, {"x": numpy_array})          # NumPy arrays out, as onnxruntime's
    [i.name for i in sess.get_inputs()]                # .name, .shape, .type as onnxruntime's

    s = ember.onnx.load("model.onnx", device="cuda")   # Ember's own Session; optimization_level=
    (y,) = s.run(None, {"x": numpy_array})             # ember Tensors out
    y = s(x)                                           # the inputs in order, or by name

    ember.onnx.export(model, x, "model.onnx", input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})   # torch.onnx.export's

The model is imported by the C++ graph library (ember::graph::load_onnx) and run there through the
backend of the session's device. ``InferenceSession`` mirrors onnxruntime's class over a
``Session`` (what ``load`` returns), so switching runtimes is one import. Export runs the model
once and writes the kernel calls it made (ember::graph::export_onnx, opset 17, or 18 with
opset_version=18).
"""

import enum
import os
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Union

import ember
from ember._C import Tensor
from ember._C.onnx import Session, _export, load  # noqa: F401

__all__ = [
    "GraphOptimizationLevel",
    "InferenceSession",
    "NodeArg",
    "Session",
    "SessionOptions",
    "export",
    "get_available_providers",
    "load",
]


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's optimization levels, read as Ember's ('none', 'basic', 'extended', 'all')."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


_LEVEL_NAMES = {
    GraphOptimizationLevel.ORT_DISABLE_ALL: "none",
    GraphOptimizationLevel.ORT_ENABLE_BASIC: "basic",
    GraphOptimizationLevel.ORT_ENABLE_EXTENDED: "extended",
    GraphOptimizationLevel.ORT_ENABLE_ALL: "all",
}


class SessionOptions:
    """onnxruntime's SessionOptions, the fields Ember reads: the optimization level, the threads
    within an op (0: Ember's current count), memory planning, and the optimizers to leave out
    (``disabled_optimizers``, given to InferenceSession in onnxruntime)."""

    def __init__(self) -> None:
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.enable_mem_pattern = True
        self.disabled_optimizers: List[str] = []


class NodeArg:
    """An input or output as onnxruntime describes it: ``name``, ``shape`` (ints; a symbolic dim
    as its name, an unknown one None) and ``type`` (``"tensor(float)"``)."""

    def __init__(self, name: str, dtype: Any, shape: Optional[List[Any]]) -> None:
        self.name = name
        self.shape = shape
        dtype_name = str(dtype).rsplit(".", 1)[-1]
        self.type = f"tensor({_ONNX_TYPE_NAMES.get(dtype_name, dtype_name)})"

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


# ONNX's type names where they differ from Ember's dtype names.
_ONNX_TYPE_NAMES = {"float32": "float", "float64": "double"}

_PROVIDER_DEVICES = {"CPUExecutionProvider": "cpu", "CUDAExecutionProvider": "cuda"}


def get_available_providers() -> List[str]:
    """The onnxruntime provider names of the devices Ember can run on here, CUDA first."""
    providers = ["CPUExecutionProvider"]
    if ember.cuda.is_available():
        providers.insert(0, "CUDAExecutionProvider")
    return providers


def _device_of_providers(providers: Optional[Sequence[Any]]) -> str:
    """The device of the first provider Ember has (a name, or a (name, options) pair)."""
    if not providers:
        return "cpu"
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
    for name in names:
        if name == "CUDAExecutionProvider" and not ember.cuda.is_available():
            continue
        if name in _PROVIDER_DEVICES:
            return _PROVIDER_DEVICES[name]
    raise ValueError(
        f"[onnx] none of the providers {names} runs here (Ember runs "
        f"{', '.join(get_available_providers())}; or pass device=)"
    )


class InferenceSession:
    """onnxruntime's InferenceSession on Ember: ``InferenceSession(path_or_bytes, sess_options=None,
    providers=None)`` (``providers`` picks the device, or pass ``device=`` any Ember device),
    ``get_inputs()``, ``get_outputs()``, ``get_providers()`` and ``run(output_names, input_feed)``
    returning NumPy arrays in the order asked. ``session`` is the Ember ``Session`` underneath."""

    def __init__(
        self,
        path_or_bytes: Union[str, "os.PathLike[str]", bytes],
        sess_options: Optional[SessionOptions] = None,
        providers: Optional[Sequence[Any]] = None,
        provider_options: Optional[Sequence[Any]] = None,
        *,
        device: Any = None,
        disabled_optimizers: Optional[Sequence[str]] = None,
    ) -> None:
        del provider_options  # onnxruntime's per-provider settings have no Ember meaning
        options = sess_options if sess_options is not None else SessionOptions()
        level = GraphOptimizationLevel(options.graph_optimization_level)
        disabled = list(options.disabled_optimizers) + list(disabled_optimizers or [])
        if device is None:
            device = _device_of_providers(providers)
        if options.intra_op_num_threads < 0:
            raise ValueError(
                f"[onnx] intra_op_num_threads must be 0 (Ember's count) or more: got "
                f"{options.intra_op_num_threads}"
            )
        source = path_or_bytes if isinstance(path_or_bytes, bytes) else os.fspath(path_or_bytes)
        self._threads = int(options.intra_op_num_threads)
        self.session = load(
            source,
            device=device,
            optimization_level=_LEVEL_NAMES[level],
            disabled_optimizers=disabled,
            enable_mem_pattern=bool(options.enable_mem_pattern),
        )

    def get_inputs(self) -> List[NodeArg]:
        """The model's inputs, in order."""
        return [NodeArg(*v) for v in self.session.inputs]

    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs, in order."""
        return [NodeArg(*v) for v in self.session.outputs]

    def get_providers(self) -> List[str]:
        """The provider name of the session's device."""
        on_cuda = self.session.device.type == "cuda"
        return ["CUDAExecutionProvider" if on_cuda else "CPUExecutionProvider"]

    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, Any],
        run_options: Any = None,
    ) -> List[Any]:
        """The outputs named (all for None or an empty list) as NumPy arrays, in that order, for
        inputs given by name as NumPy arrays, Ember tensors or anything ember.tensor reads."""
        del run_options
        names = list(output_names) if output_names else None
        if self._threads > 0:
            # onnxruntime's intra_op_num_threads is a session's own. Ember's thread count is the
            # calling thread's (the CPU backend sets OpenMP's per-thread count), so a run sets it
            # for itself and puts it back after, whatever other threads run meanwhile.
            before = ember.get_num_threads()
            ember.set_num_threads(self._threads)
            try:
                outs = self.session.run(names, dict(input_feed))
            finally:
                ember.set_num_threads(before)
        else:
            outs = self.session.run(names, dict(input_feed))
        return [t.cpu().numpy() for t in outs]


def export(
    model: Any,
    args: Union[Tensor, Sequence[Any]],
    f: Union[str, "os.PathLike[str]", IO[bytes]],
    input_names: Optional[Sequence[str]] = None,
    output_names: Optional[Sequence[str]] = None,
    dynamic_axes: Optional[Mapping[str, Union[Mapping[int, str], Sequence[int]]]] = None,
    opset_version: Optional[int] = None,
) -> None:
    """Exports ``model`` (an nn.Module, in eval mode, its parameters and buffers as named
    initializers; or a function of tensors) called on ``args`` (a tensor or a tuple of them;
    nested tuples and lists, an LSTM's ``(h0, c0)``, are graph inputs in order) as
    an ONNX model file at ``f`` (a path, or a binary file object it is written to), as
    torch.onnx.export. ``dynamic_axes`` maps an input or output
    name to its symbolic axes, ``{axis: name}`` or a list of axes (named as PyTorch names
    them). ``opset_version`` is 17 (the default) or 18 (for scatter_reduce's amax and amin).
    Random draws (rand, randn, dropout in training) become ONNX's random ops, which draw afresh
    at every run. What has no ONNX form is a NotImplementedError naming it."""
    inputs: List[Tensor] = [args] if isinstance(args, Tensor) else list(args)
    axes: Dict[str, Dict[int, str]] = {}
    for name, dims in (dynamic_axes or {}).items():
        if isinstance(dims, Mapping):
            axes[name] = {int(k): str(v) for k, v in dims.items()}
        else:
            axes[name] = {int(d): f"{name}_dynamic_axes_{i + 1}" for i, d in enumerate(dims)}
    rest = (list(input_names or []), list(output_names or []), axes, opset_version)
    if isinstance(f, (str, os.PathLike)):
        _export(model, inputs, os.fspath(f), *rest)
    else:
        data = _export(model, inputs, None, *rest)
        assert data is not None  # the bytes, when no path is given
        f.write(data)
