"""torch.linalg: factorizations, solves and norms of batches of matrices (ARCHITECTURE.md,
"Python"; the semantics are the core's, Note [torch.linalg in Ember] in ember/ops/linalg.h)."""

from ember._C.linalg import (  # noqa: F401
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    matrix_norm,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    svdvals,
    tensorinv,
    tensorsolve,
    vector_norm,
)
from ember._errors import LinAlgError  # noqa: F401

__all__ = [
    "LinAlgError", "cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "lu", "lu_factor",
    "lu_factor_ex", "lu_solve", "matrix_norm", "norm",
    "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals", "tensorinv",
    "tensorsolve", "vector_norm",
]
