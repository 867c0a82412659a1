// ember._C.linalg (ember.linalg) and the aliases torch has outside it (torch.det,
// torch.inverse, torch.slogdet and their Tensor methods): each a call of ember::linalg with
// PyTorch's argument names and defaults; the semantics are the core's (Note [torch.linalg in
// Ember] in ember/ops/linalg.h). The only translation: ord may be a number or a string.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "bind.h"

namespace ember::python {
namespace {

/** ember.return_types.<type_name>(*fields). */
template <typename... Ts>
nb::object named(const char* type_name, const Ts&... fields) {
  nb::object type = nb::module_::import_("ember").attr("return_types").attr(type_name);
  return type(fields...);
}

/** Runs fn() with the GIL released and returns its result. */
template <typename Fn>
auto released(Fn&& fn) {
  GilRelease release;
  return fn();
}

IntList dims_or(const std::optional<Ints>& dim) {
  return dim ? IntList(dim->v) : IntList();
}

/** The ord of a norm: None, a number (inf included) or a string. */
struct Ord {
  std::optional<double> number;
  std::optional<std::string> name;
};

Ord ord_of(nb::handle ord, const char* op) {
  Ord o;
  if (ord.is_none()) return o;
  if (nb::isinstance<nb::str>(ord)) {
    o.name = nb::cast<std::string>(ord);
    return o;
  }
  EMBER_CHECK_TYPE(nb::isinstance<nb::int_>(ord) || nb::isinstance<nb::float_>(ord),
                   "[{}] ord must be a number or a string: got {}", op,
                   nb::cast<std::string>(nb::str(ord.type().attr("__name__"))));
  o.number = nb::cast<double>(ord);
  return o;
}

}  // namespace

void bind_linalg(nb::module_& root, nb::class_<PyTensor>& cls) {
  nb::module_ m = root.def_submodule("linalg", "torch.linalg: factorizations, solves and norms.");
  m.def("inv", &linalg::inv, "A"_a, release_gil(), "Inverse of a batch of square matrices.");
  m.def("det", &linalg::det, "A"_a, release_gil(), "Determinant of a batch of square matrices.");
  const auto slogdet = [](const Tensor& a, const char* type) {
    auto [sign, logabs] = released([&] { return linalg::slogdet(a); });
    return named(type, sign, logabs);
  };
  m.def(
      "slogdet", [slogdet](const Tensor& a) { return slogdet(a, "linalg_slogdet"); }, "A"_a,
      "(sign, logabsdet) of a batch of square matrices.");
  m.def("solve", &linalg::solve, "A"_a, "B"_a, nb::kw_only(), "left"_a = true, release_gil(),
        "X with A X = B (left) or X A = B; B may be a batch of vectors.");
  m.def("solve_triangular", &linalg::solve_triangular, "A"_a, "B"_a, nb::kw_only(), "upper"_a,
        "left"_a = true, "unitriangular"_a = false, release_gil(),
        "X with A X = B (left) or X A = B for triangular A.");
  m.def("tensorinv", &linalg::tensorinv, "A"_a, "ind"_a = 2, release_gil(),
        "The inverse of A as a map from its first ind dims to the rest.");
  m.def(
      "tensorsolve",
      [](const Tensor& a, const Tensor& b, std::optional<Ints> dims) {
        GilRelease release;
        return linalg::tensorsolve(a, b, dims_or(dims));
      },
      "A"_a, "B"_a, "dims"_a = nb::none(), "X with tensordot(A, X, X.dim()) = B.");
  m.def(
      "lu_factor",
      [](const Tensor& a, bool pivot) {
        auto [packed, piv] = released([&] { return linalg::lu_factor(a, pivot); });
        return named("linalg_lu_factor", packed, piv);
      },
      "A"_a, nb::kw_only(), "pivot"_a = true, "(LU, pivots): LU with partial pivoting, packed.");
  m.def(
      "lu_factor_ex",
      [](const Tensor& a, bool pivot, bool check_errors) {
        auto [packed, piv, info] =
            released([&] { return linalg::lu_factor_ex(a, pivot, check_errors); });
        return named("linalg_lu_factor_ex", packed, piv, info);
      },
      "A"_a, nb::kw_only(), "pivot"_a = true, "check_errors"_a = false,
      "(LU, pivots, info): lu_factor without its error check unless check_errors.");
  m.def(
      "lu",
      [](const Tensor& a, bool pivot) {
        auto [p, l, u] = released([&] { return linalg::lu(a, pivot); });
        return named("linalg_lu", p, l, u);
      },
      "A"_a, nb::kw_only(), "pivot"_a = true, "(P, L, U) with A = P L U.");
  m.def("lu_solve", &linalg::lu_solve, "LU"_a, "pivots"_a, "B"_a, nb::kw_only(), "left"_a = true,
        "adjoint"_a = false, release_gil(), "X with A X = B for the A that LU and pivots factor.");
  m.def("cholesky", &linalg::cholesky, "A"_a, nb::kw_only(), "upper"_a = false, release_gil(),
        "Cholesky factor of symmetric positive-definite matrices.");
  m.def(
      "qr",
      [](const Tensor& a, const std::string& mode) {
        auto [q, r] = released([&] { return linalg::qr(a, mode); });
        return named("linalg_qr", q, r);
      },
      "A"_a, "mode"_a = "reduced", "(Q, R) by Householder reflections.");
  m.def(
      "eigh",
      [](const Tensor& a, const std::string& uplo) {
        auto [w, v] = released([&] { return linalg::eigh(a, uplo); });
        return named("linalg_eigh", w, v);
      },
      "A"_a, "UPLO"_a = "L", "(eigenvalues, eigenvectors) of symmetric matrices.");
  m.def(
      "eigvalsh",
      [](const Tensor& a, const std::string& uplo) { return linalg::eigvalsh(a, uplo); }, "A"_a,
      "UPLO"_a = "L", release_gil(), "Eigenvalues of symmetric matrices, ascending.");
  m.def(
      "svd",
      [](const Tensor& a, bool full_matrices, nb::handle) {
        auto [u, s, vh] = released([&] { return linalg::svd(a, full_matrices); });
        return named("linalg_svd", u, s, vh);
      },
      "A"_a, "full_matrices"_a = true, nb::kw_only(), "driver"_a = nb::none(),
      "(U, S, Vh) with A = U diag(S) Vh.");
  m.def(
      "svdvals", [](const Tensor& a, nb::handle) { return linalg::svdvals(a); }, "A"_a,
      nb::kw_only(), "driver"_a = nb::none(), "Singular values, descending.");
  m.def(
      "pinv",
      [](const Tensor& a, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
        GilRelease release;
        return linalg::pinv(a, atol, rtol, hermitian);
      },
      "A"_a, nb::kw_only(), "atol"_a = nb::none(), "rtol"_a = nb::none(), "hermitian"_a = false,
      "Moore-Penrose pseudo-inverse.");
  m.def(
      "lstsq",
      [](const Tensor& a, const Tensor& b, std::optional<double> rcond,
         std::optional<std::string> driver) {
        auto r = released([&] {
          return linalg::lstsq(a, b, rcond,
                               driver ? std::optional<std::string_view>(*driver) : std::nullopt);
        });
        return named("linalg_lstsq", std::get<0>(r), std::get<1>(r), std::get<2>(r),
                     std::get<3>(r));
      },
      "A"_a, "B"_a, "rcond"_a = nb::none(), nb::kw_only(), "driver"_a = nb::none(),
      "(solution, residuals, rank, singular_values) of the least-squares problem A X = B.");
  m.def(
      "vector_norm",
      [](const Tensor& x, double ord, std::optional<Ints> dim, bool keepdim,
         std::optional<DType> dtype) {
        GilRelease release;
        return linalg::vector_norm(x, ord, dims_or(dim), keepdim, dtype);
      },
      "x"_a, "ord"_a = 2.0, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "dtype"_a = nb::none(), "Vector norm of order ord over dim (every dim by default).");
  m.def(
      "matrix_norm",
      [](const Tensor& a, nb::handle ord, std::optional<Ints> dim, bool keepdim,
         std::optional<DType> dtype) {
        const Ord o = ord_of(ord, "linalg.matrix_norm");
        const Shape dims = dim ? dim->v : Shape{-2, -1};
        GilRelease release;
        if (o.number) return linalg::matrix_norm(a, *o.number, dims, keepdim, dtype);
        return linalg::matrix_norm(a, o.name.value_or("fro"), dims, keepdim, dtype);
      },
      "A"_a, "ord"_a = "fro", "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "dtype"_a = nb::none(),
      "Matrix norm: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf over the two dims.");
  m.def(
      "norm",
      [](const Tensor& a, nb::handle ord, std::optional<Ints> dim, bool keepdim,
         std::optional<DType> dtype) {
        const Ord o = ord_of(ord, "linalg.norm");
        GilRelease release;
        if (o.name) return linalg::norm(a, *o.name, dims_or(dim), keepdim, dtype);
        return linalg::norm(a, o.number, dims_or(dim), keepdim, dtype);
      },
      "A"_a, "ord"_a = nb::none(), "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "dtype"_a = nb::none(), "A vector or matrix norm, as torch.linalg.norm chooses.");

  // torch's names outside torch.linalg.
  root.def("det", &det, "input"_a, release_gil(), "Determinant (linalg.det).");
  cls.def("det", &det, release_gil(), "Determinant (linalg.det).");
  root.def("inverse", &inverse, "input"_a, release_gil(), "Inverse (linalg.inv).");
  cls.def("inverse", &inverse, release_gil(), "Inverse (linalg.inv).");
  root.def(
      "slogdet", [slogdet](const Tensor& a) { return slogdet(a, "slogdet"); }, "input"_a,
      "(sign, logabsdet) (linalg.slogdet).");
  cls.def(
      "slogdet", [slogdet](const Tensor& a) { return slogdet(a, "slogdet"); },
      "(sign, logabsdet) (linalg.slogdet).");
  const auto lu_unpack = [](const Tensor& lu, const Tensor& pivots, bool data, bool pivots_too) {
    auto [p, l, u] = released([&] { return ember::lu_unpack(lu, pivots, data, pivots_too); });
    return named("lu_unpack", p, l, u);
  };
  root.def("lu_unpack", lu_unpack, "LU_data"_a, "LU_pivots"_a, "unpack_data"_a = true,
           "unpack_pivots"_a = true, "(P, L, U) from lu_factor's LU and pivots.");
  // torch.lu (deprecated): (LU, pivots), with the infos if asked.
  const auto lu_old = [](const Tensor& a, bool pivot, bool get_infos) -> nb::object {
    auto [packed, piv, info] = released([&] { return linalg::lu_factor_ex(a, pivot, !get_infos); });
    if (get_infos) return nb::make_tuple(packed, piv, info);
    return nb::make_tuple(packed, piv);
  };
  root.def("lu", lu_old, "A"_a, "pivot"_a = true, "get_infos"_a = false,
           "(LU, pivots) (linalg.lu_factor), with infos if get_infos.");
  cls.def("lu", lu_old, "pivot"_a = true, "get_infos"_a = false,
          "(LU, pivots) (linalg.lu_factor), with infos if get_infos.");
  const auto lu_solve_old = [](const Tensor& b, const Tensor& lu, const Tensor& pivots) {
    GilRelease release;
    return linalg::lu_solve(lu, pivots, b);
  };
  root.def("lu_solve", lu_solve_old, "b"_a, "LU_data"_a, "LU_pivots"_a,
           "X with A X = b for the A that LU_data and LU_pivots factor (linalg.lu_solve).");
  cls.def("lu_solve", lu_solve_old, "LU_data"_a, "LU_pivots"_a,
          "X with A X = self for the A that LU_data and LU_pivots factor (linalg.lu_solve).");
  // torch.svd: V rather than Vh, reduced unless some=False; without compute_uv, U and V are
  // zeros of their shapes, as in PyTorch.
  const auto svd = [](const Tensor& a, bool some, bool compute_uv) {
    auto [u, s, vh] = released([&] { return linalg::svd(a, !some); });
    Tensor v = vh.transpose(-2, -1);
    if (!compute_uv) {
      u = zeros_like(u);
      v = zeros_like(v);
    }
    return named("svd", u, s, v);
  };
  root.def("svd", svd, "input"_a, "some"_a = true, "compute_uv"_a = true,
           "(U, S, V) with input = U diag(S) V^T (linalg.svd, V transposed).");
  cls.def("svd", svd, "some"_a = true, "compute_uv"_a = true,
          "(U, S, V) with self = U diag(S) V^T (linalg.svd, V transposed).");
}

}  // namespace ember::python
