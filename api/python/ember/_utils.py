"""Small internals the native module refers to by name (pickling needs importable functions)."""

from ember import _C


def _rebuild_tensor(dtype, sizes, data, requires_grad, device, parameter):
    """Rebuilds a pickled tensor (Tensor.__reduce_ex__'s reconstructor)."""
    return _C._rebuild_tensor(dtype, sizes, data, requires_grad, device, parameter)


def _rebuild_dtype(name):
    """Rebuilds a pickled dtype (dtype.__reduce__'s reconstructor): the dtype of that name."""
    return _C._dtypes[name]


def _rebuild_module(cls, init_args):
    """Rebuilds a copied or unpickled module (Module.__reduce_ex__'s reconstructor)."""
    return _C.nn._rebuild_module(cls, init_args)
