"""The functional forms of the layers (torch.nn.functional)."""

from ember._C.functional import *  # noqa: F401,F403


def _fixing(fn, suffix, what, **fixed):
    """fn under PyTorch's name for it with the keywords `fixed` set: the *_with_indices max
    poolings (return_indices=True) and the in-place activations fn_ (inplace=True)."""

    def run(input, *args, **kwargs):
        return fn(input, *args, **fixed, **kwargs)

    run.__name__ = fn.__name__ + suffix
    run.__doc__ = f"{fn.__name__} {what}."
    return run


def _with_indices(pool):
    return _fixing(pool, "_with_indices", "returning (output, indices)", return_indices=True)


def _in_place(fn):
    return _fixing(fn, "_", "in place", inplace=True)


max_pool1d_with_indices = _with_indices(max_pool1d)  # noqa: F405
max_pool2d_with_indices = _with_indices(max_pool2d)  # noqa: F405
max_pool3d_with_indices = _with_indices(max_pool3d)  # noqa: F405
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)  # noqa: F405
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)  # noqa: F405
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)  # noqa: F405


relu_ = _in_place(relu)  # noqa: F405
elu_ = _in_place(elu)  # noqa: F405
celu_ = _in_place(celu)  # noqa: F405
selu_ = _in_place(selu)  # noqa: F405
leaky_relu_ = _in_place(leaky_relu)  # noqa: F405
hardtanh_ = _in_place(hardtanh)  # noqa: F405
threshold_ = _in_place(threshold)  # noqa: F405


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """PyTorch's older name of interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)  # noqa: F405


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate in 'nearest' mode (PyTorch's older name)."""
    return interpolate(input, size, scale_factor, mode="nearest")  # noqa: F405


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate in 'bilinear' mode with align_corners=True (PyTorch's older name)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)  # noqa: F405
