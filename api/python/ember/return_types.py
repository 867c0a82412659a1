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
