"""ember.jit: TorchScript's annotations behave as in eager PyTorch; compiling is a clear error."""

import pytest

import ember
from ember import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    @ember.jit.ignore
    def no_weight_decay(self):
        return {"fc.bias"}

    @ember.jit.ignore(drop=True)
    def helper(self, x):
        return x * 2

    @ember.jit.unused
    def unused(self):
        return "unused"

    @ember.jit.export
    def exported(self):
        return 7

    def forward(self, x):
        if ember.jit.is_scripting() or ember.jit.is_tracing():
            raise AssertionError("eager code took the TorchScript branch")
        return self.helper(self.fc(x))


def test_annotations_leave_methods_as_they_are():
    m = Block()
    assert m.no_weight_decay() == {"fc.bias"}
    assert m.unused() == "unused" and m.exported() == 7
    x = ember.randn(4, 3)
    y = m(x)
    assert y.shape == (4, 2)
    assert (y - m.fc(x) * 2).abs().max().item() == 0
    assert ember.jit.Final[int] is not None


@pytest.mark.parametrize("compile_fn", ["script", "trace"])
def test_compiling_to_torchscript_is_a_clear_error(compile_fn):
    with pytest.raises(RuntimeError, match=rf"\[jit\.{compile_fn}\] TorchScript is not part of Ember"):
        getattr(ember.jit, compile_fn)(Block(), ember.randn(1, 3))
