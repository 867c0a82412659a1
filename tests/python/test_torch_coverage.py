"""How much of PyTorch's public API `import ember as torch` reaches, measured against committed lists.

fixtures/torch_names.txt is PyTorch's public names (tools/torch_names.py, Note [Which of torch's
names count]); fixtures/torch_names_used.txt is the subset that PyTorch's example scripts and
common model files (Hugging Face Transformers, timm) use. The report goes into pytest's summary;
the test fails when coverage drops below the floors below, which are raised as names are added.
"""

import importlib
import pathlib

import ember
from helpers import SUMMARY_LINES

FIXTURES = pathlib.Path(__file__).parent / "fixtures"

# Names Ember covered when the floors were last raised: a drop fails the test.
FLOOR_ALL = 1476
FLOOR_USED = 216


def _read(name):
    rows = []
    for line in (FIXTURES / name).read_text().splitlines():
        if line and not line.startswith("#"):
            rows.append(tuple(line.split()))
    return rows


_MISSING = object()  # what _resolve returns for a name Ember lacks (a name may be None: newaxis)


def _resolve(qualified):
    """The Ember object for a torch name (torch.nn.utils.rnn.X -> ember.nn.utils.rnn.X), or
    _MISSING."""
    parts = qualified.split(".")
    if parts[0] == "Tensor":
        obj, rest, path = ember.Tensor, parts[1:], "ember.Tensor"
    else:
        obj, rest, path = ember, parts[1:], "ember"
    for part in rest:
        path += "." + part
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(path)
        except ImportError:
            return _MISSING
    return obj


def _namespace(qualified):
    if qualified.startswith("Tensor."):
        return "Tensor"
    return qualified.rsplit(".", 1)[0]


def _table(rows):
    by_space = {}
    for name in rows:
        space = by_space.setdefault(_namespace(name), [0, 0])
        space[1] += 1
        space[0] += _resolve(name) is not _MISSING
    return by_space


def _format(title, by_space):
    have = sum(v[0] for v in by_space.values())
    total = sum(v[1] for v in by_space.values())
    lines = [f"{title}: {have}/{total} ({100.0 * have / total:.1f}%)"]
    for space, (h, t) in sorted(by_space.items()):
        lines.append(f"  {space:<28} {h:>4}/{t:<4} {100.0 * h / t:5.1f}%")
    return have, lines


def test_coverage_of_torch_names_does_not_drop(request):
    names = [row[0] for row in _read("torch_names.txt")]
    used = _read("torch_names_used.txt")
    have_all, lines = _format("torch's public names", _table(names))
    have_used, used_lines = _format("names used by PyTorch's examples and model files",
                                    _table([name for name, _ in used]))
    missing = [f"{name} ({files})" for name, files in used if _resolve(name) is _MISSING]
    report = lines + used_lines + ["  most-used missing: " + ", ".join(missing[:40])]
    request.config.stash.setdefault(SUMMARY_LINES, []).extend(report)
    assert have_all >= FLOOR_ALL, "\n".join(report)
    assert have_used >= FLOOR_USED, "\n".join(report)


def test_every_listed_name_is_unique_and_resolution_finds_known_names():
    names = [row[0] for row in _read("torch_names.txt")]
    assert len(names) == len(set(names))
    for name in ("torch.zeros", "Tensor.add_", "torch.nn.Linear", "torch.nn.functional.relu",
                 "torch.optim.SGD", "torch.utils.data.DataLoader"):
        assert name in names and _resolve(name) is not _MISSING, name
    for name in ("torch.not_a_name", "Tensor.not_a_method", "torch.nn.utils.not_a_module.x"):
        assert _resolve(name) is _MISSING, name

