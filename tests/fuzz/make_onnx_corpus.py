"""Writes the seeds of corpus/onnx_fuzz/: small ONNX models (and cut-off copies) that reach the
importer's paths: raw and typed tensor data, every attribute kind, shape-like inputs, symbolic
dims, several opsets. Run with the onnx package of tools/setup.sh:
    python tests/fuzz/make_onnx_corpus.py tests/fuzz/corpus/onnx_fuzz
Files are named by the SHA-1 of their bytes, as the other corpora are."""

import hashlib
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "seed", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


F, I64 = TensorProto.FLOAT, TensorProto.INT64
seeds = [
    model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 0, 0, 1], strides=[1, 2]),
           helper.make_node("Relu", ["c"], ["r"]),
           helper.make_node("MaxPool", ["r"], ["y", "i"], kernel_shape=[2, 1], ceil_mode=1)],
          [vi("x", F, ["N", 2, 5, 5])], [vi("y", F, None), vi("i", I64, None)],
          [numpy_helper.from_array(np.ones((3, 2, 2, 2), np.float32), "w")]),
    model([helper.make_node("Constant", [], ["s"], value_ints=[2, -1]),
           helper.make_node("Reshape", ["x", "s"], ["r"]),
           helper.make_node("Slice", ["r", "b", "e"], ["y"])],
          [vi("x", F, [2, 3])], [vi("y", F, None)],
          [helper.make_tensor("b", I64, [1], [0]), helper.make_tensor("e", I64, [1], [-1])],
          opset=13),
    model([helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2),
           helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,ij->i"),
           helper.make_node("Cast", ["y"], ["z"], to=TensorProto.DOUBLE)],
          [vi("x", F, [3, 4])], [vi("z", TensorProto.DOUBLE, [3])], opset=18),
    model([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, alpha=0.5),
           helper.make_node("Softmax", ["y"], ["z"], axis=-1)],
          [vi("x", F, ["batch", 3])], [vi("z", F, ["batch", 2])],
          [helper.make_tensor("w", F, [2, 3], [1, 2, 3, 4, 5, 6]),
           numpy_helper.from_array(np.array([0.5, -1], np.float32), "b")], opset=21),
]
seeds += [s[: len(s) // 2] for s in seeds[:2]]

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for s in seeds:
    with open(os.path.join(out, hashlib.sha1(s).hexdigest()), "wb") as f:
        f.write(s)
