"""torch.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal written as
parametrizations (torch.nn.utils.parametrize), with PyTorch's state-dict keys:
``parametrizations.weight.original0``/``original1`` (weight norm's g and v),
``parametrizations.weight.original`` with ``parametrizations.weight.0._u``/``_v`` (spectral
norm), ``parametrizations.weight.original`` with ``parametrizations.weight.0.base`` (orthogonal).
The older hook-based ``nn.utils.weight_norm``/``spectral_norm`` are Ember's C++ ones."""

from enum import Enum, auto
from typing import Optional

import ember
from ember._C import Tensor
from ember._C.nn import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, Module
from ember.autograd.grad_mode import no_grad
from ember.nn import functional as F
from ember.nn.utils import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _tensor_of(module: Module, name: str, what: str) -> Tensor:
    from ember._errors import ValueError
    tensor = getattr(module, name, None)
    if not isinstance(tensor, Tensor):
        raise ValueError(f"[parametrizations.{what}] Module '{module}' has no parameter or buffer "
                         f"with name '{name}'")
    return tensor


# --- weight_norm ------------------------------------------------------------------------------

def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """||v|| over every dim but `dim`, kept for broadcasting; dim -1: over the whole tensor."""
    if dim == -1:
        return ember.linalg.vector_norm(v)
    dims = [d for d in range(v.dim()) if d != dim]
    return ember.linalg.vector_norm(v, 2, dim=dims, keepdim=True)


class _WeightNorm(Module):
    """weight = g * v / ||v|| (norms over every dim but `dim`)."""

    def __init__(self, dim: Optional[int] = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: Optional[int] = 0) -> Module:
    """Parametrizes `name` of `module` by its magnitude g (``original0``, norms over every dim
    but `dim`; None: one norm) and its direction v (``original1``): name = g * v / ||v||."""
    _tensor_of(module, name, "weight_norm")
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# --- spectral_norm ----------------------------------------------------------------------------

class _SpectralNorm(Module):
    """weight / sigma, sigma its largest singular value estimated by power iteration (buffers
    _u and _v, updated in training mode); a 1-d weight is normalised instead."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        from ember._errors import IndexError, ValueError
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"[parametrizations.spectral_norm] dim must be in [-{ndim}, "
                             f"{ndim - 1}]: got {dim}")
        if n_power_iterations <= 0:
            raise ValueError(f"[parametrizations.spectral_norm] expected n_power_iterations to be "
                             f"positive: got {n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps)
                self._v = F.normalize(ember.mv(weight_mat.t(), self._u), dim=0, eps=self.eps)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = (u * ember.mv(weight_mat, v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: Optional[int] = None) -> Module:
    """Parametrizes `name` of `module` as itself divided by its spectral norm (estimated by
    `n_power_iterations` steps of power iteration each training forward); `dim` is the output
    features' dim, by default 1 for the transposed convolutions, else 0."""
    weight = _tensor_of(module, name, "spectral_norm")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# --- orthogonal -------------------------------------------------------------------------------

class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eye = ember.eye(k, dtype=q.dtype, device=q.device)
    eps = 10.0 * n * ember.finfo(q.dtype).eps
    return ember.allclose(q.transpose(-2, -1) @ q, eye, atol=eps)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a's QR decomposition with R's diagonal made positive."""
    q, r = ember.linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _Orthogonal(Module):
    """An orthogonal (orthonormal-column) matrix from an unconstrained one: the matrix exponential
    or Cayley map of its skew-symmetric part, or a product of Householder reflections; with the
    trivialization (`base`), relative to the matrix last assigned."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:
                x = ember.cat([x, x.new_zeros(*x.shape[:-2], n, n - k)], dim=-1)
            a = x - x.transpose(-2, -1)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = ember.linalg.matrix_exp(a)
            else:
                eye = ember.eye(n, dtype=a.dtype, device=a.device)
                q = ember.linalg.solve(eye - 0.5 * a, eye + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = ember.linalg.householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).to(ember.int32).unsqueeze(-2)
        base = getattr(self, "base", None)
        if base is not None:
            q = base @ q
        if transposed:
            q = q.transpose(-2, -1)
        return q

    def right_inverse(self, q: Tensor) -> Tensor:
        from ember._errors import NotImplementedError, ValueError
        with no_grad():
            if tuple(q.shape) != self.shape:
                raise ValueError(f"[parametrizations.orthogonal] expected a matrix or batch of "
                                 f"matrices of shape {self.shape}: got a tensor of shape "
                                 f"{tuple(q.shape)}")
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = q.transpose(-2, -1)
                n, k = k, n
            if not hasattr(self, "base"):
                raise NotImplementedError(
                    "[parametrizations.orthogonal] assigning to an orthogonal parametrization "
                    "made with use_trivialization=False is not supported (it needs geqrf)")
            if n == k:
                q = _make_orthogonal(q) if not _is_orthogonal(q) else q.clone()
            else:
                extra = ember.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
                q = _make_orthogonal(ember.cat([q, extra], dim=-1))
            self.base = q
            neg_id = ember.zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: Optional[str] = None, *,
               use_trivialization: bool = True) -> Module:
    """Parametrizes the matrix (or batch of matrices) `name` of `module` to stay orthogonal
    (orthonormal rows or columns, whichever are fewer): `orthogonal_map` "matrix_exp" (the
    default for square matrices), "cayley" or "householder" (the default otherwise)."""
    from ember._errors import ValueError
    weight = _tensor_of(module, name, "orthogonal")
    if weight.dim() < 2:
        raise ValueError(f"[parametrizations.orthogonal] expected a matrix or batch of matrices: "
                         f"got a tensor of {weight.dim()} dimensions")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(f'[parametrizations.orthogonal] orthogonal_map has to be one of '
                         f'"matrix_exp", "cayley", "householder": got {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
