"""Numbers that used to come out silently wrong: integer arithmetic through float, numbers that do
not fit their dtype, bad arguments accepted, and precision lost near 0. References are Python's
own integers, hand-computed values and NumPy's float64 results; every check runs on the CPU and
on the reference backend where the op is an elementwise kernel."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

BIG = 2**62 + 1  # not a double
DEVICES = ["cpu", "reference"]


# --- integer division ----------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_integer_floor_and_trunc_division_are_exact(device):
    a_vals = [7, -7, 7, -7, 6, BIG, -BIG, -2**63]
    b_vals = [2, 2, -2, -2, 3, 1, 3, -1]
    a = ember.tensor(a_vals, device=device)
    b = ember.tensor(b_vals, device=device)
    # Python's // on ints, and C's truncation; INT64_MIN // -1 wraps as in PyTorch.
    want_floor = [x // y for x, y in zip(a_vals, b_vals)]
    want_floor[-1] = -2**63
    want_trunc = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                  for x, y in zip(a_vals, b_vals)]
    want_trunc[-1] = -2**63
    assert (a // b).tolist() == want_floor
    assert ember.floor_divide(a, b).tolist() == want_floor
    assert a.div(b, rounding_mode="floor").tolist() == want_floor
    assert ember.div(a, b, rounding_mode="trunc").tolist() == want_trunc
    assert (a // b).dtype is ember.int64
    assert (ember.tensor([BIG], device=device) // 1).tolist() == [BIG]
    assert (BIG // ember.tensor([2], device=device)).tolist() == [BIG // 2]
    assert (ember.tensor([BIG], device=device) % 10).tolist() == [BIG % 10]
    i8 = ember.tensor([-128, 127, -5], dtype=ember.int8, device=device)
    assert (i8 // 2).dtype is ember.int8 and (i8 // 2).tolist() == [-64, 63, -3]


@pytest.mark.parametrize("device", DEVICES)
def test_floating_floor_division_is_pythons(device):
    a = [1.0, -1.0, 7.5, 5.5, -0.0]
    b = [0.1, 0.1, -2.0, 0.5, 3.0]
    got = (ember.tensor(a, dtype=ember.float64, device=device)
           // ember.tensor(b, dtype=ember.float64, device=device)).tolist()
    assert got == [x // y for x, y in zip(a, b)]  # 1 // 0.1 == 9.0, not floor(1 / 0.1) == 10
    assert math.copysign(1.0, got[-1]) == -1.0


@pytest.mark.parametrize("op", [
    lambda a, b: a // b,
    lambda a, b: a % b,
    lambda a, b: ember.floor_divide(a, b),
    lambda a, b: ember.div(a, b, rounding_mode="trunc"),
    lambda a, b: ember.div(a, b, rounding_mode="floor"),
    lambda a, b: ember.remainder(a, b),
    lambda a, b: ember.fmod(a, b),
])
def test_integer_division_by_zero_raises_zero_division_error(op):
    a = ember.tensor([5, -7])
    for b in (0, ember.tensor([1, 0])):
        with pytest.raises(ZeroDivisionError, match="division by zero"):
            op(a, b)
        # PyTorch raises a RuntimeError: so does Ember (ember.Error), and a ValueError.
        with pytest.raises(RuntimeError):
            op(a, b)
    assert issubclass(ember.ZeroDivisionError, ember.ValueError)
    # Floating division by zero is IEEE's.
    assert math.isinf((ember.tensor([5.0]) // 0).item())


def test_integer_to_a_negative_integer_power_is_refused():
    with pytest.raises(ValueError, match="negative integer powers"):
        ember.tensor([2, 3]) ** -1
    # An exponent tensor is elementwise (PyTorch's rule), a float exponent promotes.
    assert (ember.tensor([2, -1, 1]) ** ember.tensor([-1])).tolist() == [0, -1, 1]
    assert (ember.tensor([2]) ** -1.0).tolist() == [0.5]
    assert (ember.tensor([3]) ** 39).tolist() == [(3**39 + 2**63) % 2**64 - 2**63]


# --- alpha, scalars, clamp: integers stay exact --------------------------------------------------

def test_alpha_keeps_integers_integers():
    r = ember.tensor([1]).add(3, alpha=2)
    assert r.dtype is ember.int64 and r.tolist() == [7]
    assert ember.tensor([BIG]).sub(1, alpha=2).tolist() == [BIG - 2]
    assert ember.add(ember.tensor([BIG]), ember.tensor([1]), alpha=2).tolist() == [BIG + 2]
    t = ember.tensor([10])
    t.add_(2, alpha=3)
    t.sub_(ember.tensor([1]), alpha=4)
    assert t.tolist() == [12]
    with pytest.raises(TypeError, match="alpha"):
        ember.tensor([1]).add(1, alpha=0.5)
    np.testing.assert_allclose(ember.tensor([1.0]).add(ember.tensor([2.0]), alpha=0.25).numpy(), [1.5])


@pytest.mark.parametrize("device", DEVICES)
def test_clamp_with_integer_bounds_is_exact(device):
    x = ember.tensor([BIG, 3, -BIG], device=device)
    assert x.clamp(min=BIG + 2).tolist() == [BIG + 2] * 3
    assert x.clamp(-BIG + 1, BIG - 2).tolist() == [BIG - 2, 3, -BIG + 1]
    assert ember.tensor([5, 200], dtype=ember.uint8, device=device).clamp(-1, 300).tolist() == [5, 200]


def test_int64_tensors_print_exactly():
    assert repr(ember.tensor([BIG, 3])) == f"tensor([{BIG},                   3])"
    assert str(ember.tensor(2**63 - 1)) == "tensor(9223372036854775807)"


# --- numbers that do not fit ---------------------------------------------------------------------

def test_numbers_that_do_not_fit_the_dtype_are_refused():
    with pytest.raises(ValueError, match="300 cannot be converted to type uint8 without overflow"):
        ember.full((2,), 300, dtype=ember.uint8)
    with pytest.raises(ValueError, match="int64"):
        ember.zeros(2, dtype=ember.int64).fill_(float("nan"))
    with pytest.raises(ValueError, match="uint8"):
        ember.tensor([1, 300], dtype=ember.uint8)
    with pytest.raises(ValueError, match="int8"):
        ember.tensor([1.0, 1e10], dtype=ember.int8)
    with pytest.raises(ValueError, match="float16"):
        ember.full((1,), 1e5, dtype=ember.float16)
    u8 = ember.zeros(2, dtype=ember.uint8)
    with pytest.raises(ValueError, match="uint8"):
        u8.add_(300)
    with pytest.raises(ValueError, match="uint8"):
        u8.masked_fill_(ember.tensor([True, False]), 256)
    with pytest.raises(ValueError, match="uint8"):
        u8[0] = 300  # assignment fills through the same check
    with pytest.raises(ValueError, match="uint8"):
        u8[ember.tensor([0, 1])] = -256
    assert u8.tolist() == [0, 0]
    # What fits, as in PyTorch: -1 wraps in uint8, floats truncate, float dtypes take inf and NaN.
    assert ember.full((1,), -1, dtype=ember.uint8).tolist() == [255]
    assert ember.tensor([-1], dtype=ember.uint8).tolist() == [255]
    assert ember.full((1,), 2.9, dtype=ember.int32).tolist() == [2]
    assert math.isinf(ember.full((1,), float("inf"), dtype=ember.float16).item())
    assert math.isinf(ember.tensor([1e40]).item())  # float32 from a Python float: inf
    # Out-of-place arithmetic with a number wraps, as in PyTorch.
    assert (ember.ones(1, dtype=ember.uint8) + 300).tolist() == [45]


def test_int_of_a_floating_tensor_is_pythons_int():
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        int(ember.tensor(float("nan")))
    with pytest.raises(OverflowError):
        int(ember.tensor(float("inf")))
    assert int(ember.tensor(1e20, dtype=ember.float64)) == int(1e20)
    assert int(ember.tensor(-2.7)) == -2
    assert int(ember.tensor(BIG)) == BIG


# --- bad arguments -------------------------------------------------------------------------------

def test_one_hot_refuses_classes_out_of_range():
    with pytest.raises(IndexError, match="smaller than num_classes"):
        F.one_hot(ember.tensor([0, 3]), 3)
    with pytest.raises(IndexError, match="non-negative"):
        F.one_hot(ember.tensor([-1, 1]))
    with pytest.raises(ValueError, match="empty"):
        F.one_hot(ember.tensor([], dtype=ember.int64))
    assert F.one_hot(ember.tensor([0, 2]), 3).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.one_hot(ember.tensor([1, 0])).tolist() == [[0, 1], [1, 0]]


def test_random_draws_refuse_bad_parameters():
    with pytest.raises(ValueError, match=r"std >= 0.0"):
        ember.normal(0, -1, (2,))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ember.bernoulli(ember.zeros(3), p=2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ember.bernoulli(ember.tensor([0.5, float("nan")]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ember.bernoulli(ember.tensor([0.5, -0.1]))
    assert ember.bernoulli(ember.tensor([0.0, 1.0])).tolist() == [0.0, 1.0]
    assert ember.normal(3.0, 0.0, (2,)).tolist() == [3.0, 3.0]


def test_binary_cross_entropy_refuses_input_outside_0_1():
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([0.5, 1.5]), ember.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([float("nan")]), ember.tensor([0.0]))
    got = F.binary_cross_entropy(ember.tensor([0.25]), ember.tensor([1.0])).item()
    assert got == pytest.approx(-math.log(0.25), rel=1e-6)


def test_products_and_layers_take_one_dtype():
    lin = ember.nn.Linear(3, 2)
    with pytest.raises(TypeError, match="float64"):
        lin(ember.ones(4, 3, dtype=ember.float64))
    with pytest.raises(TypeError):
        ember.ones(2, 3) @ ember.ones(3, 2, dtype=ember.float64)
    with pytest.raises(TypeError):
        ember.mm(ember.ones(2, 3), ember.ones(3, 2, dtype=ember.float64))
    with pytest.raises(TypeError):
        ember.bmm(ember.ones(1, 2, 3), ember.ones(1, 3, 2, dtype=ember.float64))
    with pytest.raises(TypeError, match="weight"):
        F.layer_norm(ember.ones(2, 3, dtype=ember.float64), (3,), weight=ember.ones(3))
    conv = ember.nn.Conv2d(1, 1, 1)
    with pytest.raises(TypeError):
        conv(ember.ones(1, 1, 2, 2, dtype=ember.float64))
    assert lin(ember.ones(4, 3)).dtype is ember.float32


def test_an_integer_parameter_cannot_require_grad():
    with pytest.raises(TypeError, match="floating point"):
        ember.nn.Parameter(ember.tensor([1, 2]))
    with pytest.raises(TypeError, match="floating point"):
        ember.tensor([1, 2]).requires_grad_(True)
    p = ember.nn.Parameter(ember.tensor([1, 2]), requires_grad=False)
    assert not p.requires_grad


# --- precision near 0 and at the extremes --------------------------------------------------------

SMALL = np.array([1e-8, -1e-7, 1e-30, 3e-4, -0.5, 2.0, 10.0], dtype=np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ref,xs", [
    ("expm1", np.expm1, SMALL),
    ("log1p", np.log1p, np.abs(SMALL)),
    ("log2", np.log2, np.array([8.0, 1024.0, 1e-3, 3.0, 1e30], dtype=np.float32)),
    ("log10", np.log10, np.array([1000.0, 1e-3, 2.0, 1e30], dtype=np.float32)),
    ("exp2", np.exp2, np.array([3.0, 10.0, -1.0, 0.3, -126.0], dtype=np.float32)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), np.array([-100, -30, -1e-8, 0, 30], dtype=np.float32)),
    ("tanh", np.tanh, np.array([-20, -1e-8, 1e-30, 0.5, 20], dtype=np.float32)),
])
def test_unary_math_matches_float64(device, name, ref, xs):
    got = getattr(ember, name)(ember.tensor(xs, device=device)).cpu().numpy().astype(np.float64)
    want = ref(xs.astype(np.float64))
    # atol: float32's subnormals (below 1.2e-38) keep few digits; sigmoid(-100) may be 0.
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-40)


@pytest.mark.parametrize("device", DEVICES)
def test_activations_near_0_and_at_the_extremes(device):
    x = np.array([-100, -30, -1e-8, 1e-8, 30, 100], dtype=np.float32)
    t = ember.tensor(x, device=device)
    xd = x.astype(np.float64)
    sub = 1e-40  # float32's subnormals keep few digits
    np.testing.assert_allclose(F.logsigmoid(t).cpu().numpy(), -np.logaddexp(0, -xd), rtol=1e-6,
                               atol=sub)
    np.testing.assert_allclose(F.softplus(t).cpu().numpy(), np.logaddexp(0, xd), rtol=1e-6,
                               atol=sub)
    np.testing.assert_allclose(F.elu(t).cpu().numpy(), np.where(xd > 0, xd, np.expm1(xd)), rtol=1e-6)
    np.testing.assert_allclose(ember.erf(t).cpu().numpy(),
                               [math.erf(v) for v in xd], rtol=1e-6)
    # The old composite exp(x) - 1 gave 0 here.
    assert ember.expm1(ember.tensor([1e-8], device=device)).item() == pytest.approx(1e-8, rel=1e-6)


# --- trigonometric, hyperbolic and binary math ---------------------------------------------------

UNIT = np.array([-0.999, -0.5, -1e-8, 0.0, 1e-30, 0.3, 0.75, 0.999])
WIDE = np.array([-20.0, -3.5, -1e-8, 0.0, 0.3, 1.0, 2.5, 30.0])
ABOVE_1 = np.array([1.0, 1.0 + 1e-7, 1.5, 10.0, 1e10])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ref,xs", [
    ("tan", np.tan, np.array([-1.5, -0.7, 1e-8, 0.78539816, 1.2])),
    ("asin", np.arcsin, UNIT), ("arcsin", np.arcsin, UNIT),
    ("acos", np.arccos, UNIT), ("arccos", np.arccos, UNIT),
    ("atan", np.arctan, WIDE), ("arctan", np.arctan, WIDE),
    ("sinh", np.sinh, WIDE), ("cosh", np.cosh, WIDE),
    ("asinh", np.arcsinh, WIDE), ("arcsinh", np.arcsinh, WIDE),
    ("acosh", np.arccosh, ABOVE_1), ("arccosh", np.arccosh, ABOVE_1),
    ("atanh", np.arctanh, UNIT), ("arctanh", np.arctanh, UNIT),
])
def test_trig_and_hyperbolic_match_float64(device, name, ref, xs):
    # float64: to an ulp or two of NumPy's.
    t = ember.tensor(xs, dtype=ember.float64, device=device)
    for got in (getattr(ember, name)(t), getattr(t, name)()):
        np.testing.assert_allclose(got.cpu().numpy(), ref(xs), rtol=1e-15, atol=0)
    # float32: rounded from the float64 value of the float32 input.
    x32 = xs.astype(np.float32)
    got = getattr(ember, name)(ember.tensor(x32, device=device))
    assert got.dtype == ember.float32
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), ref(x32.astype(np.float64)),
                               rtol=2.4e-7, atol=1e-45)
    # Integers promote to float32, as sin does.
    i = getattr(ember, name)(ember.tensor([1, 2], device=device))
    assert i.dtype == ember.float32


@pytest.mark.parametrize("device", DEVICES)
def test_domain_edges_are_numpys(device):
    def run(name, values):
        return getattr(ember, name)(ember.tensor(values, device=device)).cpu().numpy()
    assert np.isnan(run("asin", [2.0])).all() and np.isnan(run("acos", [-1.5])).all()
    assert np.isnan(run("acosh", [0.5])).all() and np.isnan(run("atanh", [1.5])).all()
    assert run("atanh", [1.0, -1.0]).tolist() == [math.inf, -math.inf]
    assert run("cosh", [100.0]).tolist() == [math.inf]
    e = run("erfinv", [1.0, -1.0, 1.5, -2.0, 0.0])
    assert e[0] == math.inf and e[1] == -math.inf and np.isnan(e[2:4]).all() and e[4] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_tan_is_one_op_not_sin_over_cos(device):
    x = np.array([0.78539816, 1.5, -1.2, 1e-20], dtype=np.float32)
    got = ember.tan(ember.tensor(x, device=device)).cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(got, np.tan(x.astype(np.float64)), rtol=1.2e-7)


# erfinv to 20 digits (computed with arbitrary precision).
ERFINV_KNOWN = [(0.5, 0.47693627620446987338), (-0.9, -1.1630871536766741628),
                (0.99, 1.8213863677184494559), (1e-10, 8.8622692545275804594e-11),
                (0.999999, 3.4589107372754987775), (1 - 1e-15, 5.6759157397447131788)]


@pytest.mark.parametrize("device", DEVICES)
def test_erfinv_matches_known_values_and_inverts_erf(device):
    xs = np.array([x for x, _ in ERFINV_KNOWN])
    got = ember.erfinv(ember.tensor(xs, dtype=ember.float64, device=device)).cpu().numpy()
    np.testing.assert_allclose(got, [y for _, y in ERFINV_KNOWN], rtol=3e-16, atol=0)
    sweep = np.linspace(-0.9999, 0.9999, 401)
    t = ember.tensor(sweep, dtype=ember.float64, device=device)
    back = np.array([math.erf(v) for v in t.erfinv().cpu().numpy()])
    np.testing.assert_allclose(back, sweep, rtol=5e-16, atol=1e-17)
    # float32 is the float64 result rounded.
    r32 = ember.erfinv(t.to(ember.float32)).cpu().numpy()
    want = ember.erfinv(t.to(ember.float32).to(ember.float64)).cpu().numpy().astype(np.float32)
    np.testing.assert_array_equal(r32, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ref", [("atan2", np.arctan2), ("arctan2", np.arctan2),
                                      ("hypot", np.hypot), ("logaddexp", np.logaddexp)])
def test_binary_math_broadcasts_and_matches_float64(device, name, ref):
    a = np.array([[1.5], [-0.7], [0.0], [-0.0], [1e300], [-1000.0]])
    b = np.array([2.0, -3.0, 0.0, -1000.0, 1e-300])
    ta = ember.tensor(a, dtype=ember.float64, device=device)
    tb = ember.tensor(b, dtype=ember.float64, device=device)
    for got in (getattr(ember, name)(ta, tb), getattr(ta, name)(tb)):
        assert tuple(got.shape) == (6, 5)
        want = ref(a, b)
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-15, atol=0)
        np.testing.assert_array_equal(np.signbit(got.cpu().numpy()), np.signbit(want))
    # float32 with an int64 operand: float32 (result_type), within float32's rounding.
    got = getattr(ember, name)(ember.tensor(a[:4].astype(np.float32), device=device),
                               ember.tensor([2, -3, 0], device=device))
    assert got.dtype == ember.float32
    np.testing.assert_allclose(got.cpu().numpy(), ref(a[:4], np.array([2.0, -3.0, 0.0])),
                               rtol=2.4e-7)
    # Two integer tensors promote to float32.
    assert getattr(ember, name)(ember.tensor([3], device=device),
                                ember.tensor([4], device=device)).dtype == ember.float32


@pytest.mark.parametrize("device", DEVICES)
def test_logaddexp_is_stable_with_numpys_infinities(device):
    inf, nan = math.inf, math.nan
    a = np.array([1000.0, -1000.0, 0.0, inf, -inf, inf, -inf, nan, 2.0, 1e-3], dtype=np.float32)
    b = np.array([1000.0, -1000.0, -40.0, inf, -inf, -inf, 3.0, 1.0, nan, 0.0], dtype=np.float32)
    got = ember.logaddexp(ember.tensor(a, device=device), ember.tensor(b, device=device))
    with np.errstate(invalid="ignore"):
        want = np.logaddexp(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), want, rtol=2.4e-7)
    # hypot neither overflows nor underflows: the naive sqrt(a*a + b*b) gives inf and 0.
    h = ember.hypot(ember.tensor([3e30, 3e-30], device=device),
                    ember.tensor([4e30, 4e-30], device=device)).cpu().numpy()
    np.testing.assert_allclose(h, [5e30, 5e-30], rtol=1.2e-7)


def test_gradients_of_binary_math_are_the_textbooks():
    a = ember.tensor([1.5, -0.7, 0.4], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([0.8, -1.2, -3.0], dtype=ember.float64, requires_grad=True)
    an, bn = a.detach().numpy(), b.detach().numpy()
    for fn, ga, gb in [
        (ember.atan2, bn / (an**2 + bn**2), -an / (an**2 + bn**2)),
        (ember.hypot, an / np.hypot(an, bn), bn / np.hypot(an, bn)),
        (ember.logaddexp, 1 / (1 + np.exp(bn - an)), 1 / (1 + np.exp(an - bn))),
    ]:
        a.grad = None
        b.grad = None
        fn(a, b).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), ga, rtol=1e-14)
        np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-14)


# --- integer ops: bitwise, shifts, gcd and lcm --------------------------------------------------

def _wrap(v, bits, signed=True):
    """Python's unbounded int as a `bits`-wide integer wraps it."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


@pytest.mark.parametrize("device", DEVICES)
def test_bitwise_operators_on_integers_match_pythons_ints(device):
    rng = np.random.default_rng(7)
    for dtype, bits, signed in [(ember.int64, 64, True), (ember.int32, 32, True),
                                (ember.int8, 8, True), (ember.uint8, 8, False)]:
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        a_vals = [int(v) for v in rng.integers(lo, hi, 40, dtype=np.int64)]
        b_vals = [int(v) for v in rng.integers(lo, hi, 40, dtype=np.int64)]
        a = ember.tensor(a_vals, dtype=dtype, device=device)
        b = ember.tensor(b_vals, dtype=dtype, device=device)
        assert (a & b).tolist() == [x & y for x, y in zip(a_vals, b_vals)]
        assert (a | b).tolist() == [x | y for x, y in zip(a_vals, b_vals)]
        assert (a ^ b).tolist() == [x ^ y for x, y in zip(a_vals, b_vals)]
        assert (~a).tolist() == [_wrap(~x, bits, signed) for x in a_vals]
        assert (a & b).dtype is dtype and (~a).dtype is dtype
        # Shift counts from 0 past the width, and negative ones (signed types): PyTorch's rule
        # shifts every bit out for a count outside [0, width).
        counts = [int(c) for c in rng.integers(-3 if signed else 0, bits + 4, 40)]
        n = ember.tensor(counts, dtype=dtype, device=device)
        left = [_wrap(x << c, bits, signed) if 0 <= c < bits else 0
                for x, c in zip(a_vals, counts)]
        right = [x >> c if 0 <= c < bits else (-1 if x < 0 else 0)
                 for x, c in zip(a_vals, counts)]
        assert (a << n).tolist() == left
        assert (a >> n).tolist() == right
        assert ember.bitwise_left_shift(a, n).tolist() == left
        assert a.bitwise_right_shift(n).tolist() == right
        if signed:
            g = [math.gcd(x, y) for x, y in zip(a_vals, b_vals)]
            assert ember.gcd(a, b).tolist() == [_wrap(v, bits) for v in g]
            small = ember.tensor([v % 1000 - 500 for v in a_vals], dtype=ember.int64, device=device)
            other = ember.tensor([v % 700 - 350 for v in b_vals], dtype=ember.int64, device=device)
            want = [abs(x * y) // math.gcd(x, y) if x and y else 0
                    for x, y in zip(small.tolist(), other.tolist())]
            assert ember.lcm(small, other).tolist() == want


@pytest.mark.parametrize("device", DEVICES)
def test_bitwise_operators_on_bool_numbers_and_in_place_forms(device):
    t = ember.tensor([True, True, False, False], device=device)
    f = ember.tensor([True, False, True, False], device=device)
    assert (t & f).tolist() == [True, False, False, False]
    assert (t | f).tolist() == [True, True, True, False]
    assert (t ^ f).tolist() == [False, True, True, False]
    assert (~t).tolist() == [False, False, True, True]
    assert (t & f).dtype is ember.bool
    # Numbers on either side; a number keeps the tensor's integer dtype.
    i8 = ember.tensor([-1, 6, 5], dtype=ember.int8, device=device)
    assert (i8 & 3).tolist() == [3, 2, 1] and (i8 & 3).dtype is ember.int8
    assert (12 | i8).tolist() == [-1, 14, 13]
    assert (1 << ember.tensor([0, 3, 62], device=device)).tolist() == [1, 8, 1 << 62]
    assert (256 >> ember.tensor([1, 4], device=device)).tolist() == [128, 16]
    # bool with an integer promotes to the integer.
    assert (t & ember.tensor([3, 3, 3, 3], device=device)).tolist() == [1, 1, 0, 0]
    # In place: the tensor itself changes, views included.
    x = ember.tensor([[12, 5], [7, 1]], device=device)
    y = x
    x &= 6
    assert y is x and x.tolist() == [[4, 4], [6, 0]]
    x.t()[0] |= 1
    assert x.tolist() == [[5, 4], [7, 0]]
    x <<= 2
    x >>= 1
    x ^= ember.tensor([1, 0], device=device)
    assert x.tolist() == [[11, 8], [15, 0]]
    x.bitwise_and_(9)
    assert x.tolist() == [[9, 8], [9, 0]]
    # Floats are refused by name, as PyTorch refuses them.
    fl = ember.tensor([1.0], device=device)
    with pytest.raises(TypeError, match=r"\[bitwise_and\] takes integer or bool tensors"):
        fl & fl
    with pytest.raises(TypeError, match=r"\[bitwise_not\]"):
        ~fl
    with pytest.raises(TypeError, match=r"\[bitwise_left_shift\] takes integer tensors"):
        t << t
    with pytest.raises(TypeError, match=r"\[bitwise_or\]"):
        ember.tensor([1], device=device) | 1.5


# --- lgamma, digamma, polygamma, erfc -----------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_lgamma_erfc_and_digamma_match_pythons_math(device):
    xs = [0.1, 0.5, 1.0, 2.5, 7.25, 30.0, 171.5, -0.5, -2.5, -7.3]
    x = ember.tensor(xs, dtype=ember.float64, device=device)
    np.testing.assert_allclose(ember.lgamma(x).cpu().numpy(), [math.lgamma(v) for v in xs],
                               rtol=1e-14)
    es = [-3.0, -0.5, 0.0, 0.5, 3.0, 9.0, 26.0]
    np.testing.assert_allclose(
        ember.tensor(es, dtype=ember.float64, device=device).erfc().cpu().numpy(),
        [math.erfc(v) for v in es], rtol=1e-14)
    # digamma is lgamma's derivative: a central difference of math.lgamma (h = 1e-5, error
    # ~h^2 psi''' / 6) agrees to 1e-9.
    h = 1e-5
    want = [(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in xs]
    np.testing.assert_allclose(ember.digamma(x).cpu().numpy(), want, rtol=1e-8, atol=1e-8)
    # and trigamma digamma's: polygamma(1) against a difference of digamma, which the test above
    # pinned; and the sums that define them: psi(1) = -gamma, psi'(1) = pi^2 / 6.
    d = ember.digamma
    fd = (d(x + h) - d(x - h)) / (2 * h)
    np.testing.assert_allclose(ember.polygamma(1, x).cpu().numpy(), fd.cpu().numpy(), rtol=1e-7)
    np.testing.assert_allclose(x.polygamma(1).cpu().numpy(), fd.cpu().numpy(), rtol=1e-7)
    one = ember.tensor([1.0], dtype=ember.float64, device=device)
    assert abs(ember.digamma(one).item() + 0.5772156649015329) < 1e-15
    assert abs(ember.polygamma(1, one).item() - math.pi**2 / 6) < 1e-14
    # float32 keeps its dtype; integers promote.
    assert ember.lgamma(ember.tensor([3], device=device)).dtype is ember.float32
    assert abs(ember.lgamma(ember.tensor([3], device=device)).item() - math.log(2)) < 1e-6


def test_special_functions_have_gradients_and_polygamma_checks_n():
    x = ember.tensor([0.7, 1.9, 3.3], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(ember.lgamma, (x,))
    assert ember.autograd.gradcheck(ember.digamma, (x,))
    assert ember.autograd.gradcheck(lambda v: ember.polygamma(2, v), (x,))
    assert ember.autograd.gradgradcheck(ember.erfc, (x,))
    with pytest.raises(RuntimeError, match=r"\[polygamma\] n must be non-negative"):
        ember.polygamma(-1, x)
