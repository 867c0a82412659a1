"""ONNX's own backend node tests, run through ember.onnx on the cpu and reference backends.

Each test case of ONNX's node suite (onnx/backend/test/case/node, the generator of the
onnx/backend/test/data/node folders, which the onnx wheel no longer ships) is written out as that
folder is laid out: <case>/model.onnx and <case>/test_data_set_0/{input,output}_<i>.pb. The
adapter reads each folder as ONNX's backend runner does (onnx.backend.test.runner): the inputs
from their .pb files, the model run by Ember, every output compared with the expected .pb for
dtype, shape and values (numpy.testing.assert_allclose with the case's rtol and atol).

CLAIMED lists the ONNX ops Ember claims: every node test of a claimed op must pass, except those
whose tensors have a dtype Ember has no dtype for (int16, the unsigned types but uint8, strings,
float8 and the 4-bit and 2-bit types) or that are not tensors (sequences, optionals); those must
be refused with a clear error at load time. MEASURED are ops that are read but not claimed (some
tests fail); the printed table gives the counts of both (graph/README.md keeps a copy).
"""

import os
import warnings

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")  # pinned by tools/setup.sh (Note [Python build dependencies])
from onnx import numpy_helper  # noqa: E402

# Most-used first, as the table prints them.
CLAIMED = [
    "Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Pow", "Neg", "Abs", "Sqrt", "Exp",
    "Log", "Reciprocal", "Relu", "Sigmoid", "Tanh", "Erf", "LeakyRelu", "HardSigmoid",
    "HardSwish", "Gelu", "Clip", "Softmax", "LogSoftmax", "BatchNormalization",
    "LayerNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    "Flatten", "Reshape", "Transpose", "Concat", "Split", "Squeeze", "Unsqueeze", "Shape",
    "Gather", "GatherElements", "Slice", "Expand", "Constant", "ConstantOfShape", "Where",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "ReduceMean", "ReduceSum",
    "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
    "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "Identity", "Pad", "Tile", "Range",
    "CumSum", "TopK", "Einsum", "Max", "Min", "Sum", "Mean", "Mod", "Not", "And", "Or", "Xor",
    "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh",
    "Cosh", "Asinh", "Acosh", "Atanh", "Elu", "Selu", "Celu", "PRelu", "ThresholdedRelu",
    "Softplus", "Softsign", "IsNaN", "IsInf", "Size", "Trilu", "Cast", "CastLike",
    "InstanceNormalization", "GroupNormalization", "RMSNormalization", "LpNormalization",
    "MeanVarianceNormalization", "LRN", "Mish", "Swish", "Shrink", "Hardmax", "OneHot",
    "NonZero", "EyeLike", "DepthToSpace", "SpaceToDepth", "CumProd", "GatherND",
    "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "LSTM", "GRU", "RNN",
    "Resize", "If", "Loop", "ScatterElements", "ScatterND", "Dropout", "GridSample",
    "AffineGrid", "ConvTranspose", "RotaryEmbedding", "BitShift", "BitwiseAnd", "BitwiseOr",
    "BitwiseXor", "BitwiseNot",
]
# Read but not claimed, with why. Bernoulli draws Ember's own values (ONNX leaves the stream to
# each runtime, Note [Random ops in a graph]), so its tests, which compare NumPy's draws, fail; the
# other random ops have no node tests (tests/python/test_onnx.py checks their distributions).
MEASURED = ["Bernoulli"]

# ONNX's dtypes that Ember has, by TensorProto.DataType.
EMBER_DTYPES = {1, 2, 3, 6, 7, 9, 10, 11, 16}


def _in_ember_dtypes(model):
    for vi in list(model.graph.input) + list(model.graph.output):
        if not vi.type.HasField("tensor_type") or vi.type.tensor_type.elem_type not in EMBER_DTYPES:
            return False
    for node in model.graph.node:
        for a in node.attribute:
            if node.op_type in ("Cast", "CastLike") and a.name == "to" and a.i not in EMBER_DTYPES:
                return False
    return True


def _write_case(root, case):
    """The case as ONNX's data/node folders hold it."""
    path = os.path.join(root, case.name)
    data = os.path.join(path, "test_data_set_0")
    os.makedirs(data)
    with open(os.path.join(path, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    inputs, outputs = case.data_sets[0]
    for kind, values, infos in (("input", inputs, case.model.graph.input),
                                ("output", outputs, case.model.graph.output)):
        for i, (value, info) in enumerate(zip(values, infos)):
            if not info.type.HasField("tensor_type"):  # sequences, optionals: refused at load
                continue
            if not isinstance(value, onnx.TensorProto):
                if not isinstance(value, np.ndarray):
                    value = np.asarray(value)
                if value.dtype == object:  # strings, sequences: refused at load, never read
                    continue
                value = numpy_helper.from_array(value, info.name)
            with open(os.path.join(data, f"{kind}_{i}.pb"), "wb") as f:
                f.write(value.SerializeToString())
    return path


@pytest.fixture(scope="module")
def node_cases(tmp_path_factory):
    """(op, folder, rtol, atol, in Ember's dtypes) for every node test of the listed ops."""
    import onnx.backend.test.case.node as node_suite

    with warnings.catch_warnings():  # the generators divide by zero on purpose
        warnings.simplefilter("ignore")
        cases = node_suite.collect_testcases()
    wanted = set(CLAIMED) | set(MEASURED)
    root = str(tmp_path_factory.mktemp("node"))
    found = []
    for case in cases:
        op = case.model.graph.node[0].op_type
        if "_expanded" in case.name or op not in wanted:  # expanded: other ops' function bodies
            continue
        found.append((op, _write_case(root, case), case.rtol, case.atol,
                      _in_ember_dtypes(case.model)))
    return found


def _read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def _to_ember(a):
    if a.dtype.name == "bfloat16":  # NumPy has no bfloat16 of its own: carried as float32
        return ember.tensor(a.astype(np.float32)).to(ember.bfloat16)
    return a


def _to_numpy(t):
    t = t.cpu()
    if t.dtype == ember.bfloat16:
        import ml_dtypes

        return t.float().numpy().astype(ml_dtypes.bfloat16)
    return t.numpy()


def run_node_folder(folder, device, rtol, atol):
    """One data/node folder through Ember, checked as ONNX's backend runner checks it."""
    model = onnx.load(os.path.join(folder, "model.onnx"))
    session = ember.onnx.load(os.path.join(folder, "model.onnx"), device=device)
    data = os.path.join(folder, "test_data_set_0")
    feeds = {}
    for i, info in enumerate(model.graph.input):
        feeds[info.name] = _to_ember(_read_tensor(os.path.join(data, f"input_{i}.pb")))
    got = session.run(None, feeds)
    assert len(got) == len(model.graph.output)
    for i, out in enumerate(got):
        expected = _read_tensor(os.path.join(data, f"output_{i}.pb"))
        actual = _to_numpy(out)
        assert actual.dtype == expected.dtype, (i, actual.dtype, expected.dtype)
        assert actual.shape == expected.shape, (i, actual.shape, expected.shape)
        if expected.dtype.name == "bfloat16":
            expected, actual = expected.astype(np.float32), actual.astype(np.float32)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def _pass_table(node_cases, device):
    rows = {op: [0, 0, 0] for op in CLAIMED + MEASURED}  # passed, in Ember's dtypes, all
    failures = []
    for op, folder, rtol, atol, in_scope in node_cases:
        rows[op][2] += 1
        if not in_scope:
            # A dtype Ember lacks, or a sequence: refused cleanly, at load time.
            with pytest.raises((ember.NotImplementedError, TypeError)) as err:
                run_node_folder(folder, device, rtol, atol)
            assert "[onnx]" in str(err.value) or "dtype" in str(err.value), str(err.value)
            continue
        rows[op][1] += 1
        try:
            run_node_folder(folder, device, rtol, atol)
            rows[op][0] += 1
        except (AssertionError, Exception) as e:  # noqa: B014 - reported per case below
            failures.append((op, os.path.basename(folder), f"{type(e).__name__}: {e}"[:400]))
    lines = [f"ONNX node tests on {device}: op, passed / in Ember's dtypes / all",
             f"{'op':24s} {'passed':>6s} {'dtypes':>6s} {'all':>4s}"]
    for op in CLAIMED + MEASURED:
        p, s, a = rows[op]
        mark = "" if op in CLAIMED else "  (not claimed)"
        lines.append(f"{op:24s} {p:6d} {s:6d} {a:4d}{mark}")
    print("\n".join(lines))
    return rows, failures


@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_claimed_ops_pass_every_node_test(node_cases, device):
    rows, failures = _pass_table(node_cases, device)
    for op in CLAIMED:
        assert rows[op][2] > 0, f"ONNX has no node test of {op}"
    claimed = [f for f in failures if f[0] in CLAIMED]
    assert not claimed, "\n".join(f"{op} {name}: {msg}" for op, name, msg in claimed)
    # What the measured ops pass, as graph/README.md states it.
    passed = {op: rows[op][0] for op in MEASURED}
    assert passed == {"Bernoulli": 0}
