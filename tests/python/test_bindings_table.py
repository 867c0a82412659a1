"""The ops bound from api/python/ops.sig (Note [Bindings from one table] in api/python/src/ops.cpp):
every row is reachable under each name and variant it declares, and the semantics the rows hand
to the core hold from Python."""
import importlib.util
import pathlib

import numpy as np
import pytest

import ember
import ember.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_bindings", ROOT / "api/python/gen_bindings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
ROWS = [GEN.ROW.match(row) for _, row in GEN.read_rows(ROOT / "api/python/ops.sig")]


def test_every_row_parses():
    assert ROWS and all(ROWS), "a row of ops.sig does not parse"
    assert len(ROWS) > 250


@pytest.mark.parametrize("row", ROWS, ids=lambda m: m.group("names"))
def test_every_name_and_variant_is_bound(row):
    variants = row.group("variants")
    for name in row.group("names").split("|"):
        if "f" in variants:
            assert callable(getattr(ember._C, name)), f"ember._C.{name}"
            if not name.startswith("_"):
                assert callable(getattr(ember, name)), f"ember.{name}"
        if "m" in variants or "o" in variants:
            assert callable(getattr(ember.Tensor, name)), f"Tensor.{name}"
        if "F" in variants:
            assert callable(getattr(F, name)), f"F.{name}"
        if "_" in variants or "~" in variants:
            assert callable(getattr(ember.Tensor, name + "_")), f"Tensor.{name}_"


def test_generator_refuses_an_unknown_type(tmp_path):
    sig = tmp_path / "bad.sig"
    sig.write_text("fm  frob(Tensor input, complex z) | nothing.\n")
    with pytest.raises(SystemExit, match="unknown type 'complex'"):
        GEN.generate(GEN.read_rows(sig))


def test_generator_refuses_a_method_without_input(tmp_path):
    sig = tmp_path / "bad.sig"
    sig.write_text("m  frob(int n) | nothing.\n")
    with pytest.raises(SystemExit, match="a method needs 'Tensor input' first"):
        GEN.generate(GEN.read_rows(sig))


def test_round_to_decimals_matches_numpy():
    x = np.array([1.2345, -2.5, 0.125, 1234.5, 15.0, 25.0])
    for decimals in (-1, 0, 1, 2):
        got = ember.round(ember.tensor(x), decimals=decimals).numpy()
        np.testing.assert_array_equal(got, np.round(x, decimals))
        assert ember.tensor(x).round(decimals=decimals).tolist() == got.tolist()


def test_trunc_fix_reciprocal():
    x = ember.tensor([-2.7, -0.5, 0.5, 2.7])
    assert ember.trunc(x).tolist() == [-2.0, -0.0, 0.0, 2.0]
    assert x.fix().tolist() == [-2.0, -0.0, 0.0, 2.0]
    y = x.clone()
    y.trunc_()
    assert y.tolist() == [-2.0, -0.0, 0.0, 2.0]
    assert ember.reciprocal(ember.tensor([2, -4])).tolist() == [0.5, -0.25]


def test_shape_semantics_live_in_the_core():
    x = ember.zeros(2, 1, 3, 1)
    assert x.squeeze((1, 3)).shape == (2, 3)
    assert ember.squeeze(x, 1).shape == (2, 3, 1)
    y = ember.zeros(1, 2, 1)
    assert y.squeeze_((0, 2)) is y and y.shape == (2,)
    assert ember.movedim(ember.zeros(2, 3, 4), (0, 1), (2, 0)).shape == (3, 4, 2)
    assert ember.moveaxis(ember.zeros(2, 3, 4), 0, -1).shape == (3, 4, 2)
    u = ember.arange(24).reshape(2, 12).unflatten(1, (3, -1))
    np.testing.assert_array_equal(u.numpy(), np.arange(24).reshape(2, 3, 4))
    with pytest.raises(ember.Error, match="movedim"):
        ember.movedim(ember.zeros(2, 3), (0, 0), (0, 1))


def test_products_and_counts():
    a, b = ember.tensor([1.0, 2.0, 3.0]), ember.tensor([4.0, 5.0, 6.0])
    assert ember.dot(a, b).item() == 32.0
    assert ember.outer(a, b).tolist() == np.outer(a.numpy(), b.numpy()).tolist()
    assert ember.ger(a, b).shape == (3, 3)
    with pytest.raises(ember.Error, match=r"\[mv\]"):
        ember.mv(a, a)
    x = ember.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    assert ember.count_nonzero(x).item() == 3
    assert x.count_nonzero(dim=0).tolist() == [0, 1, 2]
    assert ember.trace(ember.arange(9.0).reshape(3, 3)).item() == 12.0


def test_logic_and_masks():
    a, b = ember.tensor([0, 1, 2, 0]), ember.tensor([0, 0, 3, -1])
    assert ember.logical_xor(a, b).tolist() == [False, True, False, True]
    assert ember.equal(a, a.clone()) is True and a.equal(b) is False
    x = ember.arange(6.0).reshape(2, 3)
    mask = ember.tensor([True, False, True])
    assert ember.masked_select(x, mask).tolist() == [0.0, 2.0, 3.0, 5.0]
    z = ember.zeros(2, 3)
    assert z.scatter(1, ember.tensor([[2], [0]]), 7.0).tolist() == [[0, 0, 7], [7, 0, 0]]


def test_inplace_forms_keep_the_object():
    x = ember.tensor([1.0, 2.0, 4.0])
    for name, args in [("div_", (2,)), ("divide_", (2,)), ("multiply_", (2,)), ("clip_", (0, 1)),
                       ("subtract_", (1,)), ("swapaxes_", (0, 0)), ("relu_", ())]:
        assert getattr(x, name)(*args) is x, name
    assert ember.relu_(x) is x
    y = ember.tensor([1.0, 4.0])
    y /= 2
    assert y.tolist() == [0.5, 2.0]


def test_operators_decline_what_they_cannot_take():
    x = ember.tensor([1.0, 2.0])
    assert (3 - x).tolist() == [2.0, 1.0]
    assert (3 // x).tolist() == [3.0, 1.0]
    assert (2 ** x).tolist() == [2.0, 4.0]
    assert (x.__add__("a")) is NotImplemented
    with pytest.raises(TypeError):
        x + "a"
