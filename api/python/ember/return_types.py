"""The named tuples ops return: values and indices (torch.return_types)."""

from typing import NamedTuple

from ember._C import Tensor


class max(NamedTuple):
    """max(input, dim): the largest values and their indices."""

    values: Tensor
    indices: Tensor


class min(NamedTuple):
    """min(input, dim): the smallest values and their indices."""

    values: Tensor
    indices: Tensor


class sort(NamedTuple):
    """sort(input, dim): the sorted values and the indices that sort."""

    values: Tensor
    indices: Tensor


class topk(NamedTuple):
    """topk(input, k): the k largest (or smallest) values and their indices."""

    values: Tensor
    indices: Tensor


class slogdet(NamedTuple):
    """slogdet(A): the sign and the log of the absolute value of the determinant."""

    sign: Tensor
    logabsdet: Tensor


class linalg_slogdet(NamedTuple):
    """linalg.slogdet(A): the sign and the log of the absolute value of the determinant."""

    sign: Tensor
    logabsdet: Tensor


class linalg_qr(NamedTuple):
    """linalg.qr(A): Q with orthonormal columns and upper triangular R."""

    Q: Tensor
    R: Tensor


class linalg_eigh(NamedTuple):
    """linalg.eigh(A): the eigenvalues, ascending, and the eigenvectors as columns."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class linalg_svd(NamedTuple):
    """linalg.svd(A): A = U diag(S) Vh."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class linalg_lstsq(NamedTuple):
    """linalg.lstsq(A, B): the solution, the residuals, the rank and the singular values."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


class IncompatibleKeys(NamedTuple):
    """What load_state_dict did not match: keys the module has that the dict lacks, and keys the
    dict has that the module lacks."""

    missing_keys: list
    unexpected_keys: list


class median(NamedTuple):
    """median(input, dim): the lower medians and their indices."""
    values: Tensor
    indices: Tensor


class nanmedian(NamedTuple):
    """nanmedian(input, dim): the lower medians of the non-NaN values and their indices."""
    values: Tensor
    indices: Tensor


class kthvalue(NamedTuple):
    """kthvalue(input, k, dim): the k-th smallest values and their indices."""
    values: Tensor
    indices: Tensor


class mode(NamedTuple):
    """mode(input, dim): the most frequent values and where each last occurs."""
    values: Tensor
    indices: Tensor


class aminmax(NamedTuple):
    """aminmax(input): the smallest and the largest values."""
    min: Tensor
    max: Tensor


class cummax(NamedTuple):
    """cummax(input, dim): the running maxima and where each was reached."""
    values: Tensor
    indices: Tensor


class cummin(NamedTuple):
    """cummin(input, dim): the running minima and where each was reached."""
    values: Tensor
    indices: Tensor


class linalg_solve_ex(NamedTuple):
    """linalg.solve_ex(A, B): the solution and the LAPACK-style info (0: success)."""
    result: Tensor
    info: Tensor


class linalg_inv_ex(NamedTuple):
    """linalg.inv_ex(A): the inverse and the LAPACK-style info (0: success)."""
    inverse: Tensor
    info: Tensor


class linalg_cholesky_ex(NamedTuple):
    """linalg.cholesky_ex(A): the Cholesky factor and the LAPACK-style info (0: success)."""
    L: Tensor
    info: Tensor


class frexp(NamedTuple):
    """frexp(input): the mantissa in [0.5, 1) and the int32 exponent, input = mantissa * 2 ** exponent."""

    mantissa: Tensor
    exponent: Tensor


class histogram(NamedTuple):
    """histogram(input, bins): the counts (or weights, or density) of each bin, and the bin edges."""

    hist: Tensor
    bin_edges: Tensor


class triangular_solve(NamedTuple):
    """triangular_solve(b, A): the solution X and a copy of A."""

    solution: Tensor
    cloned_coefficient: Tensor


class qr(NamedTuple):
    """qr(A): Q with orthonormal columns and upper triangular R."""

    Q: Tensor
    R: Tensor


class svd(NamedTuple):
    """svd(A): U, S and V (not V^T) with A = U diag(S) V^T."""

    U: Tensor
    S: Tensor
    V: Tensor


class linalg_lu_factor(NamedTuple):
    """linalg.lu_factor(A): L and U packed in one matrix, and the pivots (1-based)."""

    LU: Tensor
    pivots: Tensor


class linalg_lu_factor_ex(NamedTuple):
    """linalg.lu_factor_ex(A): LU, pivots, and info (k where U[k-1, k-1] is zero, else 0)."""

    LU: Tensor
    pivots: Tensor
    info: Tensor


class linalg_lu(NamedTuple):
    """linalg.lu(A): P, L and U with A = P L U."""

    P: Tensor
    L: Tensor
    U: Tensor


class lu_unpack(NamedTuple):
    """lu_unpack(LU, pivots): P, L and U with A = P L U."""

    P: Tensor
    L: Tensor
    U: Tensor
