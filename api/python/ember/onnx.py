"""ONNX models on any Ember device (ARCHITECTURE.md, "Graphs and ONNX").

::

    sess = ember.onnx.load("model.onnx")                 # or device="cuda", optimization_level="basic"
    (y,) = sess.run(None, {"x": numpy_array})          # onnxruntime's InferenceSession.run
    y = sess(x)                                        # the inputs in order, or by name

The model is imported by the C++ graph library (ember::graph::load_onnx) and run there, op by op,
through the backend of the session's device; run() returns ember Tensors.
"""

from ember._C.onnx import InferenceSession, load  # noqa: F401

__all__ = ["InferenceSession", "load"]
