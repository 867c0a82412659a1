"""Tensor indexing and assignment against NumPy's semantics (which PyTorch follows), views and
gradients through indices."""

import numpy as np
import pytest

import ember
from helpers import assert_close

A = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)

# Index expressions given as functions of the index helpers (np for NumPy, ember for Ember), so
# integer and bool arrays are built by each library.
CASES = [
    lambda m: 1,
    lambda m: -1,
    lambda m: (1, 2),
    lambda m: (0, -1, 3, 4),
    lambda m: slice(None),
    lambda m: slice(1, None),
    lambda m: (slice(None), slice(0, 3, 2)),
    lambda m: (Ellipsis, 1),
    lambda m: (0, Ellipsis, slice(None, None, 3)),
    lambda m: (None, 1),
    lambda m: (slice(None), None, 2, None),
    lambda m: (Ellipsis, None),
    lambda m: (slice(-2, None), slice(None, -1)),
    lambda m: (slice(10, 20),),
    lambda m: m([1, 0, 1]),
    lambda m: (slice(None), m([2, 0])),
    lambda m: (0, m([2, -1]), slice(1, 3)),
    lambda m: (m([0, 1]), m([1, 2])),
    lambda m: (m([[0], [1]]), slice(None), m([0, 3])),
    lambda m: (slice(None), m([0, 2]), slice(None), m([1, 4])),
    lambda m: (m([1]), Ellipsis, m([0, 2, 4])),
    lambda m: (slice(None), m([[0, 1], [2, 0]])),
    lambda m: m(np.array([True, False])),
    lambda m: (slice(None), m(np.array([True, False, True]))),
    lambda m: m(A[:, :, 0, 0] > 5),
    lambda m: m(A > 60),
    lambda m: (slice(None), m(A[0, :, :, 0] > 8), 2),
    lambda m: (1, m(np.array([True, True, False])), m([0, 3])),
]


def np_index(case):
    return case(lambda v: np.asarray(v))


def ember_index(case):
    return case(lambda v: ember.tensor(np.asarray(v)))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_getitem_matches_numpy(case):
    expected = A[np_index(CASES[case])]
    x = ember.tensor(A)
    got = x[ember_index(CASES[case])]
    assert_close(got, expected)
    # Python lists are index arrays too.
    listed = CASES[case](lambda v: np.asarray(v).tolist())
    assert_close(x[listed], A[np_index(CASES[case])])


@pytest.mark.parametrize("case", range(len(CASES)))
def test_setitem_matches_numpy(case, rng):
    expected = A.copy()
    target_shape = expected[np_index(CASES[case])].shape
    value = rng.standard_normal(target_shape)
    expected[np_index(CASES[case])] = value
    x = ember.tensor(A)
    x[ember_index(CASES[case])] = ember.tensor(value)
    assert_close(x, expected)
    # A number broadcasts.
    expected2 = A.copy()
    expected2[np_index(CASES[case])] = -7
    y = ember.tensor(A)
    y[ember_index(CASES[case])] = -7
    assert_close(y, expected2)


def test_basic_indexing_returns_views():
    x = ember.zeros(3, 4)
    row = x[1]
    row[2] = 5
    assert x[1, 2].item() == 5
    col = x[:, 3]
    col.fill_(1)
    assert x[:, 3].tolist() == [1, 1, 1]
    assert x[...].shape == (3, 4)
    x[...] = 2
    assert x.sum().item() == 24
    x[0:2, 1:3] = ember.tensor([[7.0, 8.0], [9.0, 10.0]])
    assert x[0].tolist() == [2, 7, 8, 2] and x[1].tolist() == [2, 9, 10, 2]
    x[x > 8] = 0
    assert x[1].tolist() == [2, 0, 0, 2]
    x[:, 0] = ember.tensor([1.0, 2.0, 3.0])
    assert x[:, 0].tolist() == [1, 2, 3]
    assert x[None].shape == (1, 3, 4) and x[True].shape == (1, 3, 4) and x[False].shape == (0, 3, 4)


def test_index_errors_are_index_errors():
    x = ember.zeros(3, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(IndexError, match="out of bounds"):
        x[0, -5]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[ember.tensor([0, 5])]
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, ember.tensor([[1, -5]])]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[ember.tensor([0.5])]
    with pytest.raises(IndexError, match="mask"):
        x[ember.tensor([True, False])]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(ValueError, match="step"):
        x[::-1]
    with pytest.raises(IndexError, match="valid indices"):
        x["a"]
    assert isinstance(IndexError(), Exception)


def test_gradients_flow_through_indexing():
    x = ember.arange(12, dtype=ember.float64).reshape(3, 4).requires_grad_()
    y = x[1:, ::2].sum() + (x[ember.tensor([0, 0, 2])] ** 2).sum() + x[x > 9].sum()
    y.backward()
    expected = np.zeros((3, 4))
    expected[1:, ::2] += 1
    base = np.arange(12.0).reshape(3, 4)
    expected[0] += 2 * 2 * base[0]  # row 0 picked twice
    expected[2] += 2 * base[2]
    expected[base > 9] += 1
    assert_close(x.grad, expected)


def test_assignment_is_differentiable():
    w = ember.ones(4, requires_grad=True)
    z = ember.zeros(6, dtype=ember.float32)
    z = z * 1  # a non-leaf to write into
    z[1:5] = w * 3
    z[ember.tensor([0])] = w[0]
    z.sum().backward()
    assert w.grad.tolist() == [4.0, 3.0, 3.0, 3.0]


def test_indexing_matches_pytorch(torch, rng):
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    e, p = ember.tensor(a), torch.tensor(a)
    for make in (
        lambda m, t: t[:, m.tensor([1, 3])],
        lambda m, t: t[m.tensor([[0, 1]]), :, m.tensor([[2], [5]])],
        lambda m, t: t[t > 0],
        lambda m, t: t[1, ..., m.tensor([0, 0, 4])],
        lambda m, t: t[None, :, 2:, None, -1],
    ):
        assert_close(make(ember, e), make(torch, p).numpy())
