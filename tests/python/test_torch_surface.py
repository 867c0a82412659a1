"""torch names Ember adds to `import ember as torch`, checked against PyTorch's behaviour: the
default dtype."""

import pytest

import ember


# ---- the default dtype --------------------------------------------------------------------------

@pytest.fixture
def float64_default():
    ember.set_default_dtype(ember.float64)
    yield
    ember.set_default_dtype(ember.float32)


def test_default_dtype_is_float32_until_set():
    assert ember.get_default_dtype() is ember.float32
    assert ember.tensor([1.0]).dtype is ember.float32


def test_default_dtype_reaches_factories_promotion_and_modules(float64_default):
    assert ember.get_default_dtype() is ember.float64
    made = {
        "tensor(float)": ember.tensor([1.5]), "tensor(0-d)": ember.tensor(2.5),
        "zeros": ember.zeros(2), "ones": ember.ones(2), "empty": ember.empty(2),
        "full(float)": ember.full((2,), 1.5), "rand": ember.rand(2), "randn": ember.randn(2),
        "arange(float)": ember.arange(0, 1, 0.5), "linspace": ember.linspace(0, 1, 3),
        "eye": ember.eye(2), "int / int": ember.tensor([1]) / 2, "int + 1.5": ember.tensor([1]) + 1.5,
        "Linear.weight": ember.nn.Linear(2, 3).weight, "Linear.bias": ember.nn.Linear(2, 3).bias,
        "Conv2d.weight": ember.nn.Conv2d(1, 2, 3).weight,
        "LayerNorm.weight": ember.nn.LayerNorm(4).weight,
    }
    for name, t in made.items():
        assert t.dtype is ember.float64, name
    assert ember.tensor([1]).dtype is ember.int64
    assert ember.arange(3).dtype is ember.int64
    assert (ember.tensor([1]) / 3).item() == 1 / 3  # computed in float64
    assert "dtype=ember.float32" in repr(ember.tensor([1.0], dtype=ember.float32))
    assert "dtype" not in repr(ember.tensor([1.0]))


def test_default_dtype_accepts_only_floating_dtypes():
    for bad in (ember.int64, ember.bool, ember.uint8):
        with pytest.raises(TypeError, match="floating"):
            ember.set_default_dtype(bad)
    for bad in ("float", float):
        with pytest.raises(TypeError):
            ember.set_default_dtype(bad)
    assert ember.get_default_dtype() is ember.float32
    ember.set_default_dtype(ember.float16)
    try:
        assert ember.tensor([1.0]).dtype is ember.float16
    finally:
        ember.set_default_dtype(ember.float32)
