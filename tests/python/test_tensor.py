"""ember.Tensor from Python: construction, properties, printing, conversions, NumPy and DLPack
interop (aliasing checked), pickling and object identity."""

import copy
import gc
import pickle

import numpy as np
import pytest

import ember
from helpers import assert_close


def test_tensor_from_nested_lists_infers_the_dtype_as_pytorch():
    assert ember.tensor([[1.0, 2.0], [3.0, 4.0]]).dtype is ember.float32
    assert ember.tensor([1, 2, 3]).dtype is ember.int64
    assert ember.tensor([True, False]).dtype is ember.bool
    assert ember.tensor([1, 2.5]).dtype is ember.float32  # a float anywhere makes it floating
    assert ember.tensor([True, 2]).dtype is ember.int64
    assert ember.tensor(3.5).shape == ()
    assert ember.tensor([]).shape == (0,)
    assert ember.tensor([]).dtype is ember.float32
    assert ember.tensor([[], []]).shape == (2, 0)
    t = ember.tensor([[1, 2, 3], [4, 5, 6]], dtype=ember.float64)
    assert t.dtype is ember.float64 and t.shape == (2, 3)
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert ember.tensor((1, 2), dtype=float).dtype is ember.float64
    assert ember.tensor([1.7, -1.7], dtype=ember.int64).tolist() == [1, -1]


def test_tensor_keeps_int64_values_exactly():
    big = 2**62 + 1
    t = ember.tensor([big, -big])
    assert t.tolist() == [big, -big]
    with pytest.raises(ValueError, match="int64"):
        ember.tensor([2**64])


def test_ragged_and_non_numeric_data_are_refused_clearly():
    with pytest.raises(ValueError, match="length"):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match="ragged|length"):
        ember.tensor([[1, 2], 3])
    with pytest.raises(TypeError, match="str"):
        ember.tensor(["a"])
    with pytest.raises(TypeError):
        ember.tensor([None])


def test_one_element_tensors_and_numpy_scalars_are_data():
    t = ember.tensor([ember.tensor(1.5), np.float32(2.5), np.int64(3)])
    assert t.tolist() == [1.5, 2.5, 3.0]
    with pytest.raises(ValueError, match="one-element"):
        ember.tensor([ember.ones(2)])


def test_properties(rng):
    a = ember.tensor(rng.standard_normal((2, 3, 4)).astype(np.float32))
    assert a.shape == ember.Size([2, 3, 4]) == (2, 3, 4)
    assert isinstance(a.shape, tuple) and repr(a.shape) == "ember.Size([2, 3, 4])"
    assert a.size() == (2, 3, 4) and a.size(1) == 3 and a.size(-1) == 4
    assert a.stride() == (12, 4, 1) and a.stride(0) == 12
    assert a.dim() == a.ndim == 3
    assert a.numel() == a.nelement() == 24 == a.shape.numel()
    assert a.element_size() == a.itemsize == 4 and a.nbytes == 96
    assert a.dtype.is_floating_point and not ember.int64.is_floating_point
    assert a.device == ember.device("cpu") and a.is_cpu and not a.is_cuda
    assert a.is_contiguous() and not a.transpose(0, 1).is_contiguous()
    assert a.is_floating_point() and not a.long().is_floating_point()
    assert len(a) == 2
    assert a.T.shape == (4, 3, 2) and a.mT.shape == (2, 4, 3)


def test_repr_matches_pytorchs_format():
    assert repr(ember.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(ember.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ember.tensor([1.0, 2.0], dtype=ember.float64)) == "tensor([1., 2.], dtype=ember.float64)"
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward>)"
    assert repr(ember.nn.Parameter(ember.zeros(2))).startswith("Parameter containing:\ntensor([0., 0.]")
    assert repr(ember.float16) == "ember.float16" and str(ember.device("cpu")) == "cpu"
    assert repr(ember.device("cpu")) == "device(type='cpu')"
    assert f"{ember.tensor(3.14159):.2f}" == "3.14"


def test_set_printoptions_as_torch():
    from ember._tensor_str import get_printoptions, printoptions

    x = ember.tensor([1.0, 2.5])
    try:
        ember.set_printoptions(precision=2)
        assert repr(x) == "tensor([1.00, 2.50])"
        ember.set_printoptions(threshold=5, edgeitems=1)  # precision stays 2
        assert repr(ember.arange(10)) == "tensor([0,  ..., 9])" and repr(x) == "tensor([1.00, 2.50])"
        ember.set_printoptions(profile="full")  # a profile resets the rest
        assert get_printoptions()["precision"] == 4 and "..." not in repr(ember.arange(2000))
        ember.set_printoptions(threshold=float("inf"), sci_mode=True)
        assert repr(x) == "tensor([1.0000e+00, 2.5000e+00])"
        ember.set_printoptions(linewidth=20)  # sci_mode is always set: None again
        assert repr(ember.arange(6)) == "tensor([0, 1, 2, 3,\n        4, 5])" and "e+00" not in repr(x)
        with printoptions(precision=1, linewidth=80):
            assert repr(x) == "tensor([1.0, 2.5])"
        assert get_printoptions()["precision"] == 4 and repr(x) == "tensor([1.0000,\n        2.5000])"
        for bad, error in (({"precision": -1}, ValueError), ({"profile": "long"}, ValueError),
                           ({"edgeitems": 1.5}, TypeError), ({"sci_mode": "yes"}, TypeError)):
            with pytest.raises(error, match="set_printoptions"):
                ember.set_printoptions(**bad)
        assert get_printoptions()["linewidth"] == 20  # refused calls change nothing
    finally:
        ember.set_printoptions(profile="default")
    assert repr(ember.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"


def test_item_tolist_and_python_number_protocols():
    assert ember.tensor(2.5).item() == 2.5 and isinstance(ember.tensor(2.5).item(), float)
    assert ember.tensor(7).item() == 7 and isinstance(ember.tensor(7).item(), int)
    assert ember.tensor(True).item() is True
    assert float(ember.tensor([1.5])) == 1.5 and int(ember.tensor(3.9)) == 3
    assert [10, 20, 30][ember.tensor(1)] == 20  # __index__
    assert bool(ember.tensor(0.0)) is False
    with pytest.raises(ValueError, match="ambiguous"):
        bool(ember.ones(2))
    with pytest.raises(ValueError, match="one-element|only"):
        ember.ones(3).item()
    with pytest.raises(TypeError, match="0-d"):
        len(ember.tensor(1.0))
    assert [t.tolist() for t in ember.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
    assert 3 in ember.tensor([1, 2, 3]) and 5 not in ember.tensor([1, 2, 3])


def test_to_and_dtype_conversions():
    a = ember.tensor([1.5, -2.5])
    assert a.to(ember.float64).dtype is ember.float64
    assert a.to("cpu") is a  # already there: the same tensor, as in PyTorch
    assert a.to(ember.float32) is a
    b = a.to("cpu", ember.int32)
    assert b.dtype is ember.int32 and b.tolist() == [1, -2]
    assert a.to(ember.zeros(1, dtype=ember.float64)).dtype is ember.float64
    assert a.to(dtype=ember.float16).dtype is ember.float16
    c = a.to(copy=True)
    assert c is not a and c.tolist() == a.tolist()
    assert a.double().dtype is ember.float64 and a.half().dtype is ember.float16
    assert a.bfloat16().dtype is ember.bfloat16 and a.long().dtype is ember.int64
    assert a.int().dtype is ember.int32 and a.bool().tolist() == [True, True]
    assert a.byte().dtype is ember.uint8 and a.char().dtype is ember.int8
    assert a.type_as(ember.zeros(1, dtype=ember.float64)).dtype is ember.float64
    with pytest.raises(TypeError, match="unexpected"):
        a.to(object())


def test_factories():
    assert ember.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert ember.zeros((2, 3)).shape == (2, 3)
    assert ember.ones([4], dtype=ember.int64).tolist() == [1, 1, 1, 1]
    assert ember.empty(3, 2).shape == (3, 2)
    assert ember.full((2,), 7).dtype is ember.int64 and ember.full((2,), 7.5).dtype is ember.float32
    assert ember.full((1,), True).dtype is ember.bool
    assert ember.arange(5).tolist() == [0, 1, 2, 3, 4] and ember.arange(5).dtype is ember.int64
    assert ember.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert ember.arange(0, 3, dtype=ember.float64).dtype is ember.float64
    assert_close(ember.linspace(0, 1, 5), np.linspace(0, 1, 5))
    assert_close(ember.eye(2, 3), np.eye(2, 3))
    x = ember.zeros(2, 3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    like = ember.ones_like(ember.zeros(2, 2, dtype=ember.float64))
    assert like.dtype is ember.float64 and like.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert ember.full_like(ember.zeros(2), 3).tolist() == [3.0, 3.0]
    assert ember.zeros_like(ember.ones(2), dtype=ember.int64).dtype is ember.int64
    perm = ember.randperm(10)
    assert sorted(perm.tolist()) == list(range(10))
    r = ember.randint(3, 7, (1000,))
    assert r.dtype is ember.int64 and r.min().item() >= 3 and r.max().item() <= 6
    assert ember.randint(5, (3,)).shape == (3,)


def test_random_numbers_are_seeded():
    ember.manual_seed(7)
    a = ember.randn(5)
    ember.manual_seed(7)
    assert ember.randn(5).tolist() == a.tolist()
    g = ember.Generator().manual_seed(3)
    b = ember.rand(4, generator=g)
    g.manual_seed(3)
    assert ember.rand(4, generator=g).tolist() == b.tolist()
    s = g.get_state()
    c = ember.rand(3, generator=g)
    g.set_state(s)
    assert ember.rand(3, generator=g).tolist() == c.tolist()
    u = ember.rand(100000)
    assert 0.49 < u.mean().item() < 0.51 and u.min().item() >= 0 and u.max().item() < 1
    n = ember.randn(100000, dtype=ember.float64)
    assert abs(n.mean().item()) < 0.02 and abs(n.std().item() - 1) < 0.02


def test_default_generator_state_and_fork_rng_are_pytorchs():
    g = ember.default_generator
    assert isinstance(g, ember.Generator) and ember.random.default_generator is g
    assert ember.manual_seed(11) is g and ember.initial_seed() == 11
    state = ember.get_rng_state()
    assert state.dtype is ember.uint8 and state.dim() == 1
    a = ember.rand(4)
    ember.set_rng_state(state)
    assert ember.rand(4).tolist() == a.tolist()
    # The generator object is the one the factories use.
    ember.manual_seed(5)
    x = ember.rand(2, generator=ember.default_generator)
    ember.manual_seed(5)
    assert ember.rand(2).tolist() == x.tolist()
    # fork_rng: the block's draws do not advance the generator, also when the block raises.
    with ember.random.fork_rng():
        inside = ember.rand(3)
    assert ember.rand(3).tolist() == inside.tolist()
    with pytest.raises(KeyError):
        with ember.random.fork_rng(devices=[]):
            inside = ember.rand(3)
            raise KeyError("out")
    assert ember.rand(3).tolist() == inside.tolist()
    with ember.random.fork_rng(enabled=False):
        ember.rand(3)
    assert ember.rand(3).tolist() != inside.tolist()
    # seed() draws a fresh seed for every device and reports it.
    s = ember.seed()
    assert ember.initial_seed() == s and ember.random.initial_seed() == s
    with pytest.raises(ValueError):
        ember.set_rng_state(ember.zeros(3, dtype=ember.uint8))


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.from_numpy(a)
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    t[1, 2] = -1
    assert a[1, 2] == -1
    # Strided views keep their strides.
    v = ember.from_numpy(a[:, ::2])
    assert v.shape == (2, 2) and v.stride() == (3, 2) and v.tolist() == [[42, 2], [3, -1]]
    for dtype in (np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8, np.bool_):
        arr = (np.arange(4) % 2).astype(dtype)
        assert ember.from_numpy(arr).tolist() == arr.tolist()
    with pytest.raises(TypeError, match="supported"):
        ember.from_numpy(np.zeros(2, dtype=np.uint16))
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(4.0)[::-1])


def test_from_numpy_keeps_the_array_alive():
    t = ember.from_numpy(np.arange(1000, dtype=np.float64))
    gc.collect()
    assert t.sum().item() == sum(range(1000))


def test_numpy_shares_memory_and_refuses_what_pytorch_refuses():
    t = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    a = t.numpy()
    assert a.dtype == np.float32 and a.shape == (2, 3)
    a[0, 1] = 9
    assert t[0, 1].item() == 9
    assert ember.tensor([True, False]).numpy().dtype == np.bool_
    assert ember.ones(2, dtype=ember.float16).numpy().dtype == np.float16
    tt = t.transpose(0, 1).numpy()
    assert tt.strides == (4, 12)
    with pytest.raises(RuntimeError, match="requires grad"):
        ember.ones(2, requires_grad=True).numpy()
    assert ember.ones(2, requires_grad=True).numpy(force=True).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="bfloat16"):
        ember.ones(2, dtype=ember.bfloat16).numpy()
    assert np.asarray(ember.tensor([1, 2])).tolist() == [1, 2]


def test_tensor_copies_numpy_data_and_keeps_its_dtype():
    a = np.array([[1, 2], [3, 4]], dtype=np.int32)
    t = ember.tensor(a)
    a[0, 0] = 100
    assert t.dtype is ember.int32 and t.tolist() == [[1, 2], [3, 4]]
    assert ember.as_tensor(a)[0, 0].item() == 100  # as_tensor shares


def test_dlpack_with_numpy_both_ways_without_copies():
    t = ember.arange(12, dtype=ember.float64).reshape(3, 4)
    a = np.from_dlpack(t)
    a[2, 3] = -5
    assert t[2, 3].item() == -5
    b = np.arange(8, dtype=np.int32).reshape(2, 4)
    u = ember.from_dlpack(b)
    b[1, 1] = 77
    assert u.dtype is ember.int32 and u[1, 1].item() == 77
    assert t.__dlpack_device__() == (1, 0)
    flags = np.from_dlpack(ember.tensor([True, False, True]))
    assert flags.dtype == np.bool_ and flags.tolist() == [True, False, True]
    # A capsule is consumed once.
    cap = t.__dlpack__()
    ember.from_dlpack(cap)
    with pytest.raises(TypeError, match="once"):
        ember.from_dlpack(cap)
    with pytest.raises(TypeError, match="__dlpack__"):
        ember.from_dlpack(object())


def test_dlpack_with_pytorch_both_ways_without_copies(torch):
    t = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    p = torch.from_dlpack(t)
    p[0, 0] = 11
    assert t[0, 0].item() == 11
    q = torch.arange(6, dtype=torch.int64).reshape(3, 2)
    e = ember.from_dlpack(q)
    q[2, 1] = -3
    assert e[2, 1].item() == -3 and e.dtype is ember.int64
    assert torch.from_dlpack(ember.tensor([True, False])).dtype == torch.bool


def test_pickle_and_deepcopy_round_trip():
    t = ember.tensor([[1.5, 2.5]], dtype=ember.float64, requires_grad=True)
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is ember.float64 and u.tolist() == t.tolist() and u.requires_grad
    p = ember.nn.Parameter(ember.ones(3))
    assert type(pickle.loads(pickle.dumps(p))) is ember.nn.Parameter
    d = copy.deepcopy(t)
    assert d is not t and d.tolist() == t.tolist() and d.requires_grad
    d.data[0, 0] = 0
    assert t[0, 0].item() == 1.5
    for dtype in (ember.float16, ember.bfloat16, ember.int8, ember.bool):  # bool: not in _C
        assert pickle.loads(pickle.dumps(dtype)) is dtype
    assert pickle.loads(pickle.dumps(ember.Size([2, 3]))) == (2, 3)


def test_python_objects_keep_their_identity():
    lin = ember.nn.Linear(3, 2)
    assert lin.weight is lin.weight
    w = lin.weight
    state = {w: "weight"}
    assert state[next(iter(lin.parameters()))] == "weight"
    x = ember.ones(2)
    assert x.add_(1) is x
    assert x.requires_grad_() is x
    x.label = "kept"  # tensors take attributes, like PyTorch's
    assert x.label == "kept"
    y = x * 2
    assert y.grad_fn.next_functions[0][0].variable is x


def test_data_attribute_and_grad_assignment():
    p = ember.ones(3, requires_grad=True)
    p.data.mul_(2)  # no history recorded
    assert p.tolist() == [2.0, 2.0, 2.0] and p.grad_fn is None
    p.grad = ember.full((3,), 0.5)
    assert p.grad.tolist() == [0.5] * 3
    p.grad = None
    assert p.grad is None
    with pytest.raises(ValueError, match="shape"):
        p.grad = ember.ones(2)


# --- Input that used to crash or mislead -----------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda d: ember.device(d), lambda d: ember.zeros(2, device=d), lambda d: ember.tensor([1.0], device=d),
    lambda d: ember.ones(2).to(d), lambda d: ember.ones(2).to(device=d), lambda d: ember.arange(3, device=d),
    lambda d: ember.nn.Linear(2, 2).to(d), lambda d: ember.nn.Linear(2, 2, device=d),
    lambda d: ember.ones(2).cuda(d), lambda d: ember.empty_like(ember.ones(2), device=d),
])
@pytest.mark.parametrize("spec", ["cpu:1", "cpu:7", "reference:3", "cuda:64"])
def test_a_device_index_that_does_not_exist_is_refused_where_it_is_given(make, spec):
    if spec.startswith("cuda") and "cuda" not in [t["name"] for t in ember._C.device_types()]:
        spec = "cpu:64"
    with pytest.raises(RuntimeError, match=rf"\[device\] device '{spec}' does not exist") as info:
        make(spec)
    assert isinstance(info.value, ember.DeviceError)


def test_existing_device_indices_are_accepted():
    assert ember.device("cpu:0") == ember.device("cpu") and ember.zeros(1, device="cpu:0").is_cpu
    assert ember.device("reference:0").index == 0 and ember.device("reference", 0).type == "reference"


def _read_only(a):
    a.setflags(write=False)
    return a


def test_copying_a_read_only_array_does_not_warn_sharing_it_does():
    import warnings

    a = _read_only(np.arange(4.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = ember.tensor(a)  # a copy: nothing to warn about
        t[0] = 7.0
        assert a[0] == 0.0
        ember.as_tensor(a, dtype=ember.float32)  # converted: a copy too
        ember.Tensor(a)
    with pytest.warns(UserWarning, match=r"\[from_numpy\] the given array is not writable"):
        ember.from_numpy(a)
    with pytest.warns(UserWarning, match=r"\[as_tensor\] the given array is not writable"):
        ember.as_tensor(a)


def test_warnings_turned_into_errors_raise_them_not_system_error():
    import warnings

    a = _read_only(np.arange(4.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for share in (ember.from_numpy, ember.as_tensor):
            with pytest.raises(UserWarning, match="not writable"):
                share(a)


def test_a_list_that_contains_itself_is_a_value_error_not_a_crash():
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match=r"\[tensor\] too many dimensions"):
        ember.tensor(loop)
    deep = [1.0]
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="too many dimensions"):
        ember.tensor(deep)
    with pytest.raises(ValueError, match="too many dimensions"):
        ember.Tensor(deep)
    ok = [1.0]
    for _ in range(7):
        ok = [ok]
    assert ember.tensor(ok).dim() == 8


def test_from_dlpack_leaves_a_refused_capsule_to_its_producer():
    import sys

    a = np.zeros(3, dtype=np.complex64)  # a dtype Ember does not have
    base = sys.getrefcount(a)
    for _ in range(10):
        with pytest.raises(TypeError, match=r"\[from_dlpack\] unsupported DLPack dtype"):
            ember.from_dlpack(a)
    gc.collect()
    assert sys.getrefcount(a) == base  # each refused capsule released the array
    capsule = a.__dlpack__()
    with pytest.raises(TypeError):
        ember.from_dlpack(capsule)
    del capsule
    assert sys.getrefcount(a) == base
    # An accepted capsule is consumed once.
    b = np.arange(3.0)
    capsule = b.__dlpack__()
    assert ember.from_dlpack(capsule).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="consumed only once"):
        ember.from_dlpack(capsule)


# ---- The dim limit (Note [At most EMBER_MAX_DIMS dims] in core/tensor/tensor_impl.cpp) ----------

MAX_DIMS = 64


def test_seventeen_and_more_dims_compute_right():
    # 17 permuted dims of size 2 summed to 3 (and 18 crashed) while the CPU loops held 16 dims.
    x = ember.ones([2] * 17).permute(list(range(16, -1, -1)))
    assert x.sum().item() == 2**17
    rng = np.random.default_rng(0)
    shape = [2 if i % 3 == 0 and i < 54 else 1 for i in range(MAX_DIMS)]
    a = rng.standard_normal(shape)  # float64, 18 dims of size 2
    axes = list(range(MAX_DIMS - 1, -1, -1))
    t = ember.tensor(a).permute(axes)
    at = np.transpose(a, axes)
    assert t.dim() == MAX_DIMS
    assert_close(t.sum(), at.sum(), rtol=1e-12)
    assert_close(t + t.contiguous(), 2 * at, rtol=1e-12)
    assert_close(t.exp(), np.exp(at), rtol=1e-12)
    assert_close(t.amax(dim=12), at.max(axis=12), rtol=1e-12)
    assert_close(t.cumsum(60), np.cumsum(at, axis=60), rtol=1e-12)
    assert_close(ember.from_numpy(np.ascontiguousarray(at)), at)


def test_more_dims_than_the_limit_are_a_value_error():
    at_limit = ember.zeros([1] * MAX_DIMS)
    for make in (lambda: ember.zeros([1] * (MAX_DIMS + 1)),
                 lambda: ember.ones([1] * (MAX_DIMS + 1)),
                 lambda: at_limit.unsqueeze(0),
                 lambda: at_limit.reshape([1] * (MAX_DIMS + 1)),
                 lambda: at_limit.view([1] * (MAX_DIMS + 1)),
                 lambda: at_limit.expand([1] * (MAX_DIMS + 1))):
        with pytest.raises(ValueError, match=r"too many dims: a tensor of 65 dims, at most 64"):
            make()
    assert at_limit.squeeze().shape == ()


def test_new_factories_take_the_tensors_dtype_and_device_unless_told():
    d = ember.ones(2, dtype=ember.float64)
    assert d.new_zeros(2, 3).dtype == ember.float64 and d.new_zeros((2, 3)).shape == (2, 3)
    assert d.new_ones(4, dtype=ember.int32).dtype == ember.int32
    assert d.new_full((2,), 7).tolist() == [7.0, 7.0] and d.new_full((2,), 7).dtype == ember.float64
    assert d.new_empty(0).shape == (0,)
    assert d.new_zeros(1, requires_grad=True).requires_grad
    src = ember.ones(2, requires_grad=True)
    copy = d.new_tensor(src)
    assert copy.dtype == ember.float64 and not copy.requires_grad and not copy.is_same_storage(src)
    assert ember.ones(1, dtype=ember.int64).new_tensor([1.5]).dtype == ember.int64
    assert d.new_zeros(2, device="reference").device.type == "reference"


def test_type_names_and_converts_as_in_pytorch():
    t = ember.ones(2)
    assert t.type() == "ember.FloatTensor"
    assert ember.ones(1, dtype=ember.int64).type() == "ember.LongTensor"
    assert t.type(ember.float32) is t
    assert t.type(ember.int64).dtype == ember.int64
    assert t.type("torch.DoubleTensor").dtype == ember.float64
    assert t.type("torch.ByteTensor").tolist() == [1, 1]
    with pytest.raises(TypeError, match="invalid type: 'torch.FooTensor'"):
        t.type("torch.FooTensor")
    assert not t.is_xpu and not t.is_mps and not t.is_cuda


def test_randint_takes_its_arguments_by_position_or_keyword():
    for t in (ember.randint(5, (40,)), ember.randint(5, size=(40,)),
              ember.randint(high=5, size=(40,)), ember.randint(0, 5, size=(40,))):
        assert t.shape == (40,) and t.dtype == ember.int64
        assert 0 <= t.min().item() and t.max().item() < 5
    t = ember.randint(low=3, high=6, size=(2, 50))
    assert t.shape == (2, 50) and 3 <= t.min().item() and t.max().item() < 6
    with pytest.raises(TypeError, match=r"\[randint\] missing high"):
        ember.randint(5)
    with pytest.raises(TypeError, match=r"\[randint\] takes \(high, size\)"):
        ember.randint(1, 2, 3, (2,))


def test_a_range_indexes_as_the_sequence_it_is():
    x = ember.arange(10) * 10
    assert x[range(2, 8, 2)].tolist() == [20, 40, 60]
    assert x[range(0)].tolist() == []
    assert x[range(9, 0, -4)].tolist() == [90, 50, 10]
    y = ember.zeros(4)
    y[range(1, 3)] = 5
    assert y.tolist() == [0, 5, 5, 0]
    with pytest.raises(IndexError):
        x[range(8, 12)]


def test_clone_as_a_function():
    x = ember.ones(2, requires_grad=True)
    c = ember.clone(x)
    assert c.grad_fn is not None and not c.is_same_storage(x) and c.tolist() == [1, 1]


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_numpys_figures(name):
    info = ember.finfo(getattr(ember, name))
    ref = np.finfo(np.float32) if name == "bfloat16" else np.finfo(getattr(np, name))
    if name == "bfloat16":  # 8 exponent bits like float32, 7 mantissa bits
        assert (info.bits, info.eps, info.resolution) == (16, 2.0 ** -7, 0.01)
        assert info.max == float.fromhex("0x1.fep127") and info.tiny == float(ref.tiny)
    else:
        assert info.bits == ref.bits and info.eps == float(ref.eps) and info.max == float(ref.max)
        assert info.tiny == info.smallest_normal == float(ref.tiny)
        assert info.resolution == pytest.approx(float(ref.resolution), rel=1e-3)  # f16: 0.001
    assert info.min == -info.max and info.dtype == name
    assert "finfo(resolution=" in repr(info)


def test_finfo_defaults_to_float32_and_iinfo_gives_integer_ranges():
    assert ember.finfo().dtype == "float32"
    for name in ("uint8", "int8", "int32", "int64"):
        info, ref = ember.iinfo(getattr(ember, name)), np.iinfo(getattr(np, name))
        assert (info.bits, info.min, info.max, info.dtype) == (ref.bits, ref.min, ref.max, name)
    # A mask filled with finfo(dtype).min, as Hugging Face's attention does, stays finite.
    mask = ember.full((2,), ember.finfo(ember.float16).min, dtype=ember.float16)
    assert ember.isfinite(mask).all()
    with pytest.raises(TypeError, match=r"\[finfo\] int32 is not supported"):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError, match=r"\[iinfo\] float32 is not supported"):
        ember.iinfo(ember.float32)


def test_legacy_tensor_types_construct_check_and_convert():
    x = ember.LongTensor(7).zero_().view(-1, 1)  # word_language_model's dummy input
    assert x.dtype == ember.int64 and x.shape == (7, 1) and x.sum().item() == 0
    assert ember.FloatTensor(2, 3).shape == (2, 3)
    assert ember.FloatTensor(ember.Size([4])).shape == (4,)
    assert ember.FloatTensor().shape == (0,)
    y = ember.FloatTensor([[1, 2], [3, 4]])
    assert y.dtype == ember.float32 and y.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert ember.BoolTensor([True, False]).dtype == ember.bool
    assert isinstance(y, ember.FloatTensor) and isinstance(y, ember.Tensor)
    assert not isinstance(y, ember.DoubleTensor) and not isinstance(x, ember.FloatTensor)
    z = y.type(ember.DoubleTensor)
    assert z.dtype == ember.float64 and isinstance(z, ember.DoubleTensor)
    with pytest.raises(TypeError, match="expected a tensor of dtype ember.float32"):
        ember.FloatTensor(ember.arange(3))


@pytest.fixture
def default_reference():
    """ember.set_default_device('reference') for one test, then back to the CPU."""
    if "reference" not in [t["name"] for t in ember._C.device_types()]:
        pytest.fail("the reference backend is not loaded")
    ember.set_default_device("reference")
    try:
        yield ember.device("reference")
    finally:
        ember.set_default_device(None)


def test_the_default_device_is_the_cpu_until_set():
    assert ember.get_default_device() == ember.device("cpu")
    assert ember.zeros(3).device == ember.device("cpu")


def test_set_default_device_moves_every_factory_and_module(default_reference):
    ref = default_reference
    assert ember.get_default_device() == ref
    made = {
        "zeros": ember.zeros(3), "ones": ember.ones(2, 2), "empty": ember.empty(3),
        "full": ember.full((2,), 1.5), "arange": ember.arange(4), "arange_f": ember.arange(0.0, 1.0, 0.5),
        "linspace": ember.linspace(0, 1, 3), "eye": ember.eye(2), "rand": ember.rand(3),
        "randn": ember.randn(3), "randint": ember.randint(0, 5, (3,)), "randperm": ember.randperm(4),
        "tensor(list)": ember.tensor([[1.0, 2.0], [3.0, 4.0]]),
        "tensor(numpy)": ember.tensor(np.arange(3.0)), "as_tensor(numpy)": ember.as_tensor(np.arange(3.0)),
    }
    for name, t in made.items():
        assert t.device == ref, name
    np.testing.assert_array_equal(ember.tensor([[1.0, 2.0], [3.0, 4.0]]).cpu().numpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(ember.arange(4).cpu().numpy(), [0, 1, 2, 3])
    lin = ember.nn.Linear(2, 3)
    assert lin.weight.device == ref and lin.bias.device == ref
    assert lin(ember.ones(4, 2)).device == ref
    assert ember.nn.BatchNorm1d(2).running_mean.device == ref
    # Naming a device still wins, and the *_like and new_* forms keep their input's device.
    assert ember.zeros(2, device="cpu").device == ember.device("cpu")
    on_cpu = ember.ones(2, device="cpu")
    for t in (ember.zeros_like(on_cpu), ember.ones_like(on_cpu), ember.empty_like(on_cpu),
              ember.full_like(on_cpu, 2), ember.rand_like(on_cpu), on_cpu.new_zeros(3), on_cpu.new_tensor([1])):
        assert t.device == ember.device("cpu")
    # A tensor given as data moves to the default device as PyTorch's does (torch.tensor(t) and
    # as_tensor(t) under set_default_device); pickles and indices are host data.
    assert ember.tensor(on_cpu).device == ref and ember.as_tensor(on_cpu).device == ref
    assert ember.tensor(on_cpu, device="cpu").device == ember.device("cpu")
    assert ember.tensor(on_cpu).cpu().equal(on_cpu)
    assert pickle.loads(pickle.dumps(on_cpu)).device == ember.device("cpu")
    assert on_cpu[[0, 1]].device == ember.device("cpu")


def test_set_default_device_none_resets_and_a_missing_device_is_refused(default_reference):
    with pytest.raises(RuntimeError, match="does not exist"):
        ember.set_default_device("cpu:1")
    assert ember.get_default_device() == default_reference  # a refused device changes nothing
    ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")
    assert ember.nn.Linear(2, 3).weight.device == ember.device("cpu")
    # The best device is another question, which set_default_device does not answer.
    assert ember.best_device().type != "reference"


def test_view_as_another_dtype_matches_numpy():
    import numpy as np
    a = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -0.25]], dtype=np.float32)
    t = ember.tensor(a)
    np.testing.assert_array_equal(t.view(ember.int32).numpy(), a.view(np.int32))
    np.testing.assert_array_equal(t.view(ember.uint8).numpy(), a.view(np.uint8))
    np.testing.assert_array_equal(t.view(ember.float16).numpy(), a.view(np.float16))
    np.testing.assert_array_equal(t.view(ember.uint8).view(ember.float32).numpy(), a)
    assert not ember.ones(2, requires_grad=True).view(ember.int32).requires_grad
    with pytest.raises(ValueError, match=r"self.stride\(-1\) must be 1"):
        t.t().view(ember.uint8)
