"""The functional forms of the layers (torch.nn.functional)."""

from ember._C.functional import *  # noqa: F401,F403


def _with_indices(pool):
    """PyTorch's *_with_indices name of a max pooling: the pooling with return_indices=True."""

    def run(input, *args, **kwargs):
        kwargs["return_indices"] = True
        return pool(input, *args, **kwargs)

    run.__name__ = pool.__name__ + "_with_indices"
    run.__doc__ = f"{pool.__name__} returning (output, indices)."
    return run


max_pool1d_with_indices = _with_indices(max_pool1d)  # noqa: F405
max_pool2d_with_indices = _with_indices(max_pool2d)  # noqa: F405
max_pool3d_with_indices = _with_indices(max_pool3d)  # noqa: F405
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)  # noqa: F405
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)  # noqa: F405
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)  # noqa: F405
