"""ember.accelerator and ember.backends: the switches PyTorch scripts read and set, answered from
the device types the loaded backend plugins registered."""

import pytest

import ember


def _types():
    return {t["name"]: t for t in ember.device_types()}


def test_the_accelerator_is_the_registered_type_above_the_cpu():
    types = _types()
    above = [t for t in types.values() if t["priority"] > types["cpu"]["priority"]]
    acc = ember.accelerator.current_accelerator()
    if not above:
        assert acc is None and not ember.accelerator.is_available()
        return
    best = max(above, key=lambda t: t["priority"])
    assert acc.type == best["name"]
    assert ember.accelerator.device_count() == best["count"]
    assert ember.accelerator.is_available() == (best["count"] > 0)
    checked = ember.accelerator.current_accelerator(check_available=True)
    assert (checked is None) == (best["count"] == 0)


def test_the_reference_backend_is_no_accelerator():
    # It runs on the host at a priority below the CPU's: a script must not move to it.
    acc = ember.accelerator.current_accelerator()
    assert acc is None or acc.type != "reference"


def test_the_script_idiom_picks_a_usable_device():
    acc = ember.accelerator
    device = acc.current_accelerator() if acc.is_available() else ember.device("cpu")
    x = ember.ones(3, device=device)
    assert (x * 2).sum().item() == 6.0


def test_accelerator_calls_run_on_a_device_or_are_device_errors():
    if ember.accelerator.is_available():
        ember.accelerator.set_device_index(0)
        assert ember.accelerator.current_device_index() == 0
        ember.accelerator.synchronize()
        return
    with pytest.raises(ember.DeviceError, match=r"\[accelerator\] no accelerator device"):
        ember.accelerator.synchronize()
    with pytest.raises(ember.DeviceError):
        ember.accelerator.current_device_index()


def test_backend_flags_read_back_what_was_set():
    cudnn = ember.backends.cudnn
    old = cudnn.benchmark, cudnn.deterministic
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        assert cudnn.benchmark is True and cudnn.deterministic is True
        cudnn.benchmark = False
        assert cudnn.benchmark is False
    finally:
        cudnn.benchmark, cudnn.deterministic = old
    if "cuda" in _types():  # the flag is the CUDA backend's own option
        cudnn.benchmark = True
        try:
            assert ember._C.backend_option("cuda", "cudnn.benchmark") == "1"
        finally:
            cudnn.benchmark = False
    assert cudnn.enabled is True
    assert ember.backends.mps.is_available() is False
    assert ember.backends.mkldnn.is_available() == ("cpu" in _types())
    assert isinstance(ember.backends.cuda.matmul.allow_tf32, bool)


def test_unknown_or_mistyped_backend_flags_are_refused():
    with pytest.raises(AttributeError, match="no option 'benchmrk'"):
        ember.backends.cudnn.benchmrk = True
    with pytest.raises(AttributeError):
        ember.backends.cudnn.benchmrk
    with pytest.raises(TypeError, match="must be a bool"):
        ember.backends.cudnn.benchmark = "yes"


def test_flag_objects_import_as_modules():
    import importlib

    import ember.backends.cudnn as cudnn

    assert cudnn is ember.backends.cudnn
    assert importlib.import_module("ember.backends.mps") is ember.backends.mps
