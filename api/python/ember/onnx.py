"""ONNX models on any Ember device, and Ember models as ONNX (ARCHITECTURE.md, "Graphs and ONNX").

::

    sess = ember.onnx.load("model.onnx")                 # or device="cuda", optimization_level="basic"
    (y,) = sess.run(None, {"x": numpy_array})          # onnxruntime's InferenceSession.run
    y = sess(x)                                        # the inputs in order, or by name

    ember.onnx.export(model, x, "model.onnx", input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})   # torch.onnx.export's

The model is imported by the C++ graph library (ember::graph::load_onnx) and run there, op by op,
through the backend of the session's device; run() returns ember Tensors. Export runs the model
once and writes the kernel calls it made (ember::graph::export_onnx, opset 17, or 18 with
opset_version=18).
"""

import os
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Union

from ember._C import Tensor
from ember._C.onnx import InferenceSession, _export, load  # noqa: F401

__all__ = ["InferenceSession", "export", "load"]


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
