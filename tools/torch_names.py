#!/usr/bin/env python3
"""Writes the list of PyTorch's public names that Ember's Python package measures itself against.

    python tools/torch_names.py names > tests/python/fixtures/torch_names.txt
    python tools/torch_names.py used FILE_OR_DIR... > tests/python/fixtures/torch_names_used.txt

`names` needs an importable `torch` and lists, one a line, `<qualified name> <kind>` for the
namespaces a PyTorch script reaches (torch.*, Tensor methods and properties, torch.nn.*,
torch.nn.functional.*, torch.nn.init.*, torch.nn.utils.*, torch.optim.*,
torch.optim.lr_scheduler.*, torch.linalg.*, torch.utils.data.*). `used` reads Python sources
(PyTorch's example scripts, model files) and lists the names of that list they use, each with the
number of files using it; it needs only the list (read from tests/python/fixtures/torch_names.txt).
tests/python/test_torch_coverage.py reports Ember's coverage of both.

Note [Which of torch's names count]
torch's own `__all__` mixes the API with TorchScript's internal types (AliasDb, ClassType...) and
dir(torch) holds backend-private entry points (fbgemm_*, mkldnn_*, cudnn_*...) and the `*_copy`
variants of views that exist for functionalization. Counted: the functions, dtypes and values a
script calls, the documented classes (Tensor, Generator, the grad modes, the legacy *Tensor
types), and submodules as kind `module`; left out: the prefixes in EXCLUDED_PREFIXES and the
`*_copy` view copies. In `used`, a name counts when a source reaches it through an import alias
(`torch.x`, `nn.X`, `F.x`, `from torch.optim import Adam`); a method call or attribute read whose
name is a Tensor method or property (`.view(...)`, `.shape`) counts as that Tensor name, which
over-counts a little (`.add` of a set); the figure is meant as a guide, not a proof.
"""

import ast
import collections
import inspect
import os
import sys
import types

EXCLUDED_PREFIXES = ("fbgemm_", "mkldnn_", "miopen_", "cudnn_", "native_", "q_", "quantize",
                     "quantized_", "sym_", "is_vulkan", "vulkan_", "batch_norm_", "slice_inverse",
                     "segment_reduce", "prepare_multiprocessing", "profiler_allow", "parse_",
                     "import_ir", "merge_type", "unify_type", "fake_quant", "fused_moving_avg",
                     "choose_qparams", "int_repr", "dequantize", "empty_quantized",
                     "classproperty", "get_file_path", "compiled_with_cxx11_abi",
                     "autocast_increment", "autocast_decrement", "get_autocast_ipu",
                     "get_autocast_xla", "set_autocast_ipu", "set_autocast_xla",
                     "is_autocast_ipu", "is_autocast_xla")
TORCH_CLASSES = {"Tensor", "Generator", "Size", "device", "dtype", "layout", "memory_format",
                 "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast",
                 "GradScaler", "finfo", "iinfo", "BFloat16Tensor", "BoolTensor", "ByteTensor",
                 "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor",
                 "LongTensor", "ShortTensor"}
TORCH_VALUES = {"e", "pi", "inf", "nan", "newaxis", "channels_last", "channels_last_3d",
                "contiguous_format", "preserve_format", "strided", "sparse_coo"}
TORCH_MODULES = {"accelerator", "amp", "autograd", "backends", "cuda", "cpu", "distributed",
                 "distributions", "fft", "func", "hub", "jit", "linalg", "mps", "multiprocessing",
                 "nn", "onnx", "optim", "profiler", "random", "serialization", "sparse", "special",
                 "testing", "utils", "xpu", "compiler", "export"}
SUBMODULES = {"torch.nn": {"attention", "functional", "init", "modules", "parallel", "parameter",
                           "utils"},
              "torch.nn.utils": {"parametrizations", "parametrize", "rnn", "stateless"}}


def _kind(obj):
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "value"


def _from_torch(obj):
    module = getattr(obj, "__module__", None) or ""
    return module.startswith("torch") or module == "builtins" and callable(obj)


def _public(names):
    return sorted(n for n in names if not n.startswith("_") and not n.startswith(EXCLUDED_PREFIXES)
                  and not n.endswith("_copy"))


def list_names():
    import torch
    import torch.nn.functional
    import torch.nn.init
    import torch.nn.utils.rnn
    import torch.optim.lr_scheduler
    import torch.utils.data

    rows = []
    for name in _public(dir(torch)):
        obj = getattr(torch, name)
        if isinstance(obj, torch.dtype):
            rows.append((f"torch.{name}", "dtype"))
        elif isinstance(obj, types.ModuleType):
            if name in TORCH_MODULES:
                rows.append((f"torch.{name}", "module"))
        elif inspect.isclass(obj):
            if name in TORCH_CLASSES:
                rows.append((f"torch.{name}", "class"))
        elif callable(obj):
            rows.append((f"torch.{name}", "function"))
        elif name in TORCH_VALUES:
            rows.append((f"torch.{name}", "value"))
    for name in _public(dir(torch.Tensor)):
        attr = inspect.getattr_static(torch.Tensor, name)
        kind = "method" if callable(attr) and not isinstance(attr, property) else "property"
        rows.append((f"Tensor.{name}", kind))
    spaces = {
        "torch.nn": (torch.nn, None),
        "torch.nn.functional": (torch.nn.functional, None),
        "torch.nn.init": (torch.nn.init, None),
        "torch.nn.utils": (torch.nn.utils, None),
        "torch.nn.utils.rnn": (torch.nn.utils.rnn, getattr(torch.nn.utils.rnn, "__all__", None)),
        "torch.optim": (torch.optim, torch.optim.__all__),
        "torch.optim.lr_scheduler": (torch.optim.lr_scheduler, torch.optim.lr_scheduler.__all__),
        "torch.linalg": (torch.linalg, None),
        "torch.utils.data": (torch.utils.data, torch.utils.data.__all__),
    }
    for prefix, (module, listed) in spaces.items():
        for name in _public(listed if listed is not None else dir(module)):
            obj = getattr(module, name)
            kind = _kind(obj)
            if kind == "module":
                if name in SUBMODULES.get(prefix, ()):
                    rows.append((f"{prefix}.{name}", "module"))
                continue
            if listed is None and (kind == "value" or not _from_torch(obj) or name == "Tensor"):
                continue
            if "DataPipe" in name or name == "DataChunk":
                continue
            rows.append((f"{prefix}.{name}", kind))
    return rows


def _read_names(path):
    with open(path) as f:
        return dict(line.split() for line in f if line.strip() and not line.startswith("#"))


def _aliases(tree):
    """Local name -> the torch module or object it stands for."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch" or a.name.startswith("torch."):
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else "torch"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "torch" or node.module.startswith("torch."):
                for a in node.names:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return list(reversed(parts))
    return None


def used_names(paths, names):
    known = set(names)
    tensor_attrs = {n.split(".", 1)[1] for n in known if n.startswith("Tensor.")}
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, fs in os.walk(p):
                files += [os.path.join(root, f) for f in fs if f.endswith(".py")]
        else:
            files.append(p)
    counts = collections.Counter()
    for path in sorted(files):
        try:
            tree = ast.parse(open(path, encoding="utf-8").read())
        except (SyntaxError, UnicodeDecodeError):
            continue
        aliases = _aliases(tree)
        found = set()
        for qualified in aliases.values():
            if qualified in known:
                found.add(qualified)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            chain = _dotted(node)
            if chain and chain[0] in aliases:
                full = aliases[chain[0]].split(".") + chain[1:]
                # The longest known prefix of the chain: torch.nn.functional.relu, not torch.nn.
                for end in range(len(full), 1, -1):
                    if ".".join(full[:end]) in known:
                        found.add(".".join(full[:end]))
                        break
            elif node.attr in tensor_attrs:
                found.add(f"Tensor.{node.attr}")
        counts.update(found)
    return counts, len(files)


def main(argv):
    if len(argv) >= 2 and argv[1] == "names":
        import torch

        print(f"# PyTorch {torch.__version__}'s public names (tools/torch_names.py names)")
        for name, kind in list_names():
            print(name, kind)
    elif len(argv) >= 3 and argv[1] == "used":
        here = os.path.dirname(os.path.abspath(__file__))
        names = _read_names(os.path.join(here, "..", "tests", "python", "fixtures",
                                         "torch_names.txt"))
        counts, n_files = used_names(argv[2:], names)
        print(f"# names of torch_names.txt used by {n_files} files (tools/torch_names.py used), "
              "with the number of files using each")
        for name in sorted(counts, key=lambda n: (-counts[n], n)):
            print(name, counts[name])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
