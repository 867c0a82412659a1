# The Python surface of Ember's ops: one row per op, from which api/python/gen_bindings.py writes
# the nanobind registrations (Note [Bindings from one table] in api/python/src/ops.cpp).
#
#   <variants> <name>[|<alias>...](<params>) [-> <result>] [= <C++ expression>] | <doc>
#
# variants  f: ember.<name>(input, ...)   m: Tensor.<name>(...)   F: ember.nn.functional.<name>
#           _: Tensor.<name>_(...) through the core's in-place op (<name>_ of the expression)
#           ~: Tensor.<name>_(...) as the core's apply_inplace over the method (no kernel)
# params    PyTorch's: `Type name[=default]`, `*` before the keyword-only ones. A method's first
#           parameter is `Tensor input` (self). Types: Tensor, Tensor?, Tensor[], Tensor?[]
#           (None entries undefined), Tensor... (*args), Number, Number?, Tensor|Number (the
#           expression is read with a tensor or a number there, whichever was given), int, int?,
#           int[], int[]? (None: every dim, an empty list to the core), int... (*sizes), float,
#           float?, float[2]? (a (min, max) range), bool, bool?, str, str?, dtype, dtype?,
#           device?, Generator?, any.
# result    Tensor (the default), Tensor[] (a tuple), bool, float, int, dtype, or `(Tensor, Tensor) name`
#           for ember.return_types.<name>.
# expression  the core call, with the parameters by name; by default <name>(<params in order>).
# A row may go on over indented lines. The semantics are the core's: an expression only picks
# the core function and orders its arguments.

# --- Arithmetic ---------------------------------------------------------------------------------
fm_  add(Tensor input, Tensor|Number other, *, Number alpha=1) | input + alpha * other, broadcast and promoted.
fm_  sub|subtract(Tensor input, Tensor|Number other, *, Number alpha=1) | input - alpha * other.
f    rsub(Tensor input, Tensor|Number other, *, Number alpha=1) | other - alpha * input.
fm_  mul|multiply(Tensor input, Tensor|Number other) | input * other.
fm~  div|divide(Tensor input, Tensor|Number other, *, str? rounding_mode=None)
       | input / other: true division, or rounded 'trunc' or 'floor'.
m    div_(Tensor! input, Tensor|Number other) | In place: input /= other.
fm~  true_divide(Tensor input, Tensor|Number other) = div(input, other) | input / other (true division).
fm~  floor_divide(Tensor input, Tensor|Number other) | floor(input / other).
fm~  remainder(Tensor input, Tensor|Number other) | input - floor(input / other) * other (Python's %).
fm~  fmod(Tensor input, Tensor|Number other) | input - trunc(input / other) * other (C's fmod).
fm~  pow(Tensor input, Tensor|Number exponent) | input ** exponent.
f    pow(Number self, Tensor exponent) = pow(detail::scalar_tensor(self, exponent.dtype(), exponent.device()), exponent)
       | base ** exponent for a number base.
fm   maximum(Tensor input, Tensor other) | Elementwise larger (NaN propagates).
fm   minimum(Tensor input, Tensor other) | Elementwise smaller (NaN propagates).
fm~  atan2|arctan2(Tensor input, Tensor other) | The angle of the point (other, input), in the right quadrant.
fm~  hypot(Tensor input, Tensor other) | sqrt(input ** 2 + other ** 2), without overflow.
fm~  logaddexp(Tensor input, Tensor other) | log(exp(input) + exp(other)), without overflow.

# --- Comparisons and logic ----------------------------------------------------------------------
fm~  eq(Tensor input, Tensor|Number other) | input == other, as bool.
fm~  ne|not_equal(Tensor input, Tensor|Number other) | input != other, as bool.
fm~  lt|less(Tensor input, Tensor|Number other) | input < other, as bool.
fm~  le|less_equal(Tensor input, Tensor|Number other) | input <= other, as bool.
fm~  gt|greater(Tensor input, Tensor|Number other) | input > other, as bool.
fm~  ge|greater_equal(Tensor input, Tensor|Number other) | input >= other, as bool.
fm   equal(Tensor input, Tensor other) -> bool | True if both have the same shape and elements.
fm   is_nonzero(Tensor input) -> bool | The truth of a one-element tensor.
fm   is_same_size(Tensor input, Tensor other) -> bool = input.sizes() == other.sizes() | True if both have the same shape.
fm   is_signed(Tensor input) -> bool = is_signed(input.dtype()) | True for a dtype with negative values.
f    promote_types(dtype type1, dtype type2) -> dtype | The dtype two dtypes promote to.
f    can_cast(dtype from_, dtype to) -> bool | Whether casting `from_` to `to` keeps the kind of value (PyTorch's rule).
f    result_type(Tensor|Number tensor1, Tensor|Number tensor2) -> dtype
       | The dtype an elementwise op of the two computes in.
fm~  logical_and(Tensor input, Tensor other) | Truthiness of input and other.
fm~  logical_or(Tensor input, Tensor other) | Truthiness of input or other.
fm~  logical_xor(Tensor input, Tensor other) | Truthiness of input xor other.
fm~  bitwise_and(Tensor input, Tensor|Number other) | input & other: bitwise for integers, logical for bool.
fm~  bitwise_or(Tensor input, Tensor|Number other) | input | other: bitwise for integers, logical for bool.
fm~  bitwise_xor(Tensor input, Tensor|Number other) | input ^ other: bitwise for integers, logical for bool.
fm~  bitwise_not(Tensor input) | ~input: every bit flipped for integers, not for bool.
fm~  bitwise_left_shift(Tensor input, Tensor|Number other)
       | input << other, wrapping; 0 where other is negative or at least the width.
fm~  bitwise_right_shift(Tensor input, Tensor|Number other)
       | input >> other, keeping the sign; the sign alone where other is negative or at least the width.
fm~  gcd(Tensor input, Tensor other) | Greatest common divisor of |input| and |other| (integers).
fm~  lcm(Tensor input, Tensor other) | Least common multiple of |input| and |other| (integers).
fm~  logical_not(Tensor input) | Not truthiness of input.
fm   isnan(Tensor input) | True where input is NaN.
fm   isinf(Tensor input) | True where input is +-inf.
fm   isfinite(Tensor input) | True where input is finite.
fm   isclose(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False)
       | |input - other| <= atol + rtol * |other|, elementwise, as bool.
fm   allclose(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False)
       -> bool | True if isclose(input, other) everywhere.

# --- Unary math ---------------------------------------------------------------------------------
fm_  neg(Tensor input) | -input.
fm~  negative(Tensor input) = neg(input) | -input.
fm_  abs(Tensor input) | |input|.
fm~  absolute(Tensor input) = abs(input) | |input|.
fm_  exp(Tensor input) | e ** input.
fm_  log(Tensor input) | Natural logarithm.
fm~  log1p(Tensor input) | log(1 + input).
fm_  sqrt(Tensor input) | Square root.
fm~  rsqrt(Tensor input) | 1 / sqrt(input).
fm~  sin(Tensor input) | Sine.
fm~  cos(Tensor input) | Cosine.
fm_  tanh(Tensor input) | Hyperbolic tangent.
fm_  sigmoid(Tensor input) | 1 / (1 + exp(-input)).
fm_  relu(Tensor input) | max(input, 0).
f    relu_(Tensor! input) | In place: max(input, 0).
fm~  sign(Tensor input) | -1, 0 or 1.
fm~  sgn(Tensor input) | sign(input) (for real dtypes, torch.sgn is sign).
fm   positive(Tensor input) | input itself (unary +); refused for bool, as in PyTorch.
fm~  floor(Tensor input) | Round down.
fm~  ceil(Tensor input) | Round up.
fm~  erf(Tensor input) | Error function.
fm~  square(Tensor input) | input * input.
fm~  round(Tensor input, *, int decimals=0) | Round half to even (to `decimals` places).
fm~  trunc|fix(Tensor input) | Round toward zero.
fm~  reciprocal(Tensor input) | 1 / input.
fm~  log2(Tensor input) | Base-2 logarithm.
fm~  log10(Tensor input) | Base-10 logarithm.
fm~  exp2(Tensor input) | 2 ** input.
fm~  expm1(Tensor input) | exp(input) - 1, accurate near 0.
fm~  tan(Tensor input) | Tangent.
fm~  asin|arcsin(Tensor input) | Inverse sine (NaN outside [-1, 1]).
fm~  acos|arccos(Tensor input) | Inverse cosine (NaN outside [-1, 1]).
fm~  atan|arctan(Tensor input) | Inverse tangent.
fm~  sinh(Tensor input) | Hyperbolic sine.
fm~  cosh(Tensor input) | Hyperbolic cosine.
fm~  asinh|arcsinh(Tensor input) | Inverse hyperbolic sine.
fm~  acosh|arccosh(Tensor input) | Inverse hyperbolic cosine (NaN below 1).
fm~  atanh|arctanh(Tensor input) | Inverse hyperbolic tangent (+-inf at +-1).
fm~  erfinv(Tensor input) | Inverse error function (+-inf at +-1, NaN outside [-1, 1]).
fm~  erfc(Tensor input) | 1 - erf(input), accurate where erf(input) is close to 1.
fm~  lgamma(Tensor input) | log |Gamma(input)|.
fm~  digamma(Tensor input) | Gamma'(input) / Gamma(input).
f    polygamma(int n, Tensor input) | The n-th derivative of digamma.
m~   polygamma(Tensor input, int n) = polygamma(n, input) | The n-th derivative of digamma.
fm~  clamp_min(Tensor input, Number min) = clamp(input, min, std::nullopt) | max(input, min).
fm~  clamp_max(Tensor input, Number max) = clamp(input, std::nullopt, max) | min(input, max).
fm~  lerp(Tensor input, Tensor end, Tensor|Number weight) | input + weight * (end - input).
fm_  masked_fill(Tensor input, Tensor mask, Number value) | A copy with value where mask is true.

# --- Reductions ---------------------------------------------------------------------------------
fm   sum(Tensor input, int[]? dim=None, bool keepdim=False, *, dtype? dtype=None)
       = sum(cast_input(input, dtype), dim, keepdim) | Sum over dim (all dims if None); ints and bool sum to int64.
fm   mean(Tensor input, int[]? dim=None, bool keepdim=False, *, dtype? dtype=None)
       = mean(cast_input(input, dtype), dim, keepdim) | Mean over dim (all dims if None).
fm   nansum(Tensor input, int[]? dim=None, bool keepdim=False, *, dtype? dtype=None)
       = nansum(cast_input(input, dtype), dim, keepdim) | Sum over dim treating NaN as 0.
fm   nanmean(Tensor input, int[]? dim=None, bool keepdim=False, *, dtype? dtype=None)
       = nanmean(cast_input(input, dtype), dim, keepdim) | Mean over dim of the elements that are not NaN.
fm   prod(Tensor input, int? dim=None, bool keepdim=False, *, dtype? dtype=None)
       = dim ? prod(cast_input(input, dtype), {*dim}, keepdim) : prod(cast_input(input, dtype))
       | Product over dim (all elements if None).
fm   amax(Tensor input, int[]? dim=None, bool keepdim=False) | Largest value over dim.
fm   amin(Tensor input, int[]? dim=None, bool keepdim=False) | Smallest value over dim.
fm   argmax(Tensor input, int? dim=None, bool keepdim=False) | Index of the largest element.
fm   argmin(Tensor input, int? dim=None, bool keepdim=False) | Index of the smallest element.
fm   var(Tensor input, int[]? dim=None, bool? unbiased=None, bool keepdim=False, *, int? correction=None)
       = var(input, dim, correction_of(correction, unbiased), keepdim)
       | Variance over dim with `correction` (1: unbiased).
fm   std(Tensor input, int[]? dim=None, bool? unbiased=None, bool keepdim=False, *, int? correction=None)
       = std(input, dim, correction_of(correction, unbiased), keepdim)
       | Standard deviation over dim with `correction`.
fm   all(Tensor input, int[]? dim=None, bool keepdim=False) | True if every element is truthy.
fm   any(Tensor input, int[]? dim=None, bool keepdim=False) | True if any element is truthy.
fm   logsumexp(Tensor input, int[] dim, bool keepdim=False) | log(sum(exp(input))) over dim, computed stably.
fm~  cumsum(Tensor input, int dim, *, dtype? dtype=None) = cumsum(cast_input(input, dtype), dim)
       | Running sum along dim.
fm~  cumprod(Tensor input, int dim, *, dtype? dtype=None) = cumprod(cast_input(input, dtype), dim)
       | Running product along dim.
fm   count_nonzero(Tensor input, int[]? dim=None) | Number of non-zero elements over dim.
f    trapezoid|trapz(Tensor y, Tensor x, *, int dim=-1)
       | The integral of y along dim by the trapezoidal rule at sample points x.
f    trapezoid|trapz(Tensor y, *, Number dx=1, int dim=-1)
       | The integral of y along dim by the trapezoidal rule at spacing dx.
f    cumulative_trapezoid(Tensor y, Tensor x, *, int dim=-1)
       | The running integrals of y along dim by the trapezoidal rule at sample points x.
f    cumulative_trapezoid(Tensor y, *, Number dx=1, int dim=-1)
       | The running integrals of y along dim by the trapezoidal rule at spacing dx.
fm   cov(Tensor input, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None)
       | Covariance matrix of the variables in input's rows over the observations in its columns.
fm   corrcoef(Tensor input) | Pearson's correlation coefficients of the variables in input's rows.
fm   softmax(Tensor input, int dim, dtype? dtype=None) = softmax(cast_input(input, dtype), dim)
       | exp(input) / sum(exp(input)) along dim.
fm   log_softmax(Tensor input, int dim, dtype? dtype=None) = log_softmax(cast_input(input, dtype), dim)
       | log(softmax(input)) along dim, computed stably.
fm   hardshrink(Tensor input, float lambd=0.5) | input where |input| > lambd, else 0.
fm   prelu(Tensor input, Tensor weight) | input where positive, else weight * input.

m    sum_to_size(Tensor input, int... size) = sum_to_size(input, size) | Summed down to size, a shape that broadcasts to input's.
# --- Products -----------------------------------------------------------------------------------
fm   matmul(Tensor input, Tensor other) | Matrix product with NumPy's broadcasting rules.
fm   mm(Tensor input, Tensor mat2) | 2-d matrix product.
fm   bmm(Tensor input, Tensor mat2) | Batched matrix product [b, n, k] x [b, k, m].
fm   mv(Tensor input, Tensor vec) | Matrix-vector product.
fm   dot(Tensor input, Tensor other) | Inner product of two 1-d tensors.
fm   vdot(Tensor input, Tensor other) | Inner product of two 1-d tensors (the first conjugated: itself for real ones).
fm   logdet(Tensor input) | log(det(input)) of square matrices: NaN where det < 0, -inf where it is 0.
fm   adjoint(Tensor input) | The last two dims swapped (the conjugate transpose of real matrices).
fm~  renorm(Tensor input, float p, int dim, float maxnorm)
       | input with each slice along dim whose p-norm exceeds maxnorm scaled down to it.
fm~  ldexp(Tensor input, Tensor other) | input * 2 ** other.
fm~  mvlgamma(Tensor input, int p) | The multivariate log-gamma of dimension p (every element above (p - 1) / 2).
fm   angle(Tensor input) | The argument as a complex number: 0 for input >= 0, pi below, NaN for NaN.
f    real(Tensor input) | The real part: input itself (Ember's dtypes are real).
f    imag(Tensor input) | The imaginary part: an error, as in PyTorch for a real tensor.
fm   conj|conj_physical|resolve_conj|resolve_neg(Tensor input) = input
       | The complex conjugate (no conjugate or negative bit to resolve): input itself for real dtypes.
fm   is_conj|is_neg(Tensor input) -> bool = false | False: a real tensor has no conjugate or negative bit.
fm   frexp(Tensor input) -> (Tensor, Tensor) frexp
       | (mantissa, exponent): input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1), exponent int32.
fm   triangular_solve(Tensor input, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False)
       -> (Tensor, Tensor) triangular_solve = triangular_solve(input, A, upper, transpose, unitriangular)
       | (solution, cloned_coefficient): X with A X = input (A^T X with transpose) for triangular A.
fm   cholesky(Tensor input, bool upper=False) = linalg::cholesky(input, upper)
       | The Cholesky factor (linalg.cholesky): lower L with A = L L^T, or upper.
fm   qr(Tensor input, bool some=True) -> (Tensor, Tensor) qr = linalg::qr(input, some ? "reduced" : "complete")
       | (Q, R) by Householder reflections (linalg.qr, reduced unless some=False).
fm   pinverse(Tensor input, float rcond=1e-15) = linalg::pinv(input, std::nullopt, rcond)
       | The Moore-Penrose pseudo-inverse (linalg.pinv with rtol=rcond).
f    vander(Tensor x, int? N=None, bool increasing=False) = vander(x, N, increasing)
       | The Vandermonde matrix of 1-d x: powers N-1 down to 0 (up with increasing).
fm   cholesky_solve(Tensor input, Tensor input2, bool upper=False)
       | X with A X = input for A = L L^T given its Cholesky factor L = input2 (U^T U with upper).
fm   cholesky_inverse(Tensor input, bool upper=False)
       | The inverse of A = L L^T given its Cholesky factor L = input (U^T U with upper).
fm   outer|ger(Tensor input, Tensor vec2) | Outer product of two 1-d tensors.
fm_  addmm(Tensor input, Tensor mat1, Tensor mat2, *, Number beta=1, Number alpha=1)
       | beta * input + alpha * (mat1 @ mat2).
fm_  baddbmm(Tensor input, Tensor batch1, Tensor batch2, *, Number beta=1, Number alpha=1)
       | beta * input + alpha * bmm(batch1, batch2).
fm_  addbmm(Tensor input, Tensor batch1, Tensor batch2, *, Number beta=1, Number alpha=1)
       | beta * input + alpha * the sum over b of batch1[b] @ batch2[b].
fm_  addmv(Tensor input, Tensor mat, Tensor vec, *, Number beta=1, Number alpha=1)
       | beta * input + alpha * (mat @ vec).
fm_  addr(Tensor input, Tensor vec1, Tensor vec2, *, Number beta=1, Number alpha=1)
       | beta * input + alpha * outer(vec1, vec2).
fm_  addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value=1)
       | input + value * tensor1 * tensor2.
fm_  addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value=1)
       | input + value * tensor1 / tensor2.
fm   trace(Tensor input) | The sum of the diagonal of a 2-d tensor.

# --- Views and shapes ---------------------------------------------------------------------------
m    view_as(Tensor input, Tensor other) = input.view(other.sizes()) | A view with other's shape.
m    reshape_as(Tensor input, Tensor other) = input.reshape(other.sizes()) | input reshaped to other's shape.
f    reshape(Tensor input, int[] shape) = input.reshape(shape) | input with a new shape.
m    reshape(Tensor input, int... shape) = input.reshape(shape) | A view with a new shape when strides allow, else a copy.
fm_  transpose|swapaxes|swapdims(Tensor input, int dim0, int dim1) = input.transpose(dim0, dim1)
       | Swaps two dims (a view).
fm_  t(Tensor input) = input.t() | Transpose of a tensor of at most 2 dims.
f    permute(Tensor input, int[] dims) = input.permute(dims) | Reorders the dims (a view).
m    permute(Tensor input, int... dims) = input.permute(dims) | Reorders the dims (a view).
fm   movedim|moveaxis(Tensor input, int[] source, int[] destination) | Moves dims to new positions (a view).
fm   narrow(Tensor input, int dim, int start, int length) = input.narrow(dim, start, length)
       | `length` elements from `start` along dim (a view).
fm   select(Tensor input, int dim, int index) = input.select(dim, index) | Removes dim by picking one index (a view).
m    expand(Tensor input, int... sizes) = input.expand(sizes)
       | Broadcasts size-1 dims to sizes (-1 keeps a size), without copying.
m    expand_as(Tensor input, Tensor other) = input.expand_as(other) | Broadcasts to other's shape.
fm   broadcast_to(Tensor input, int[] size) = input.expand(size) | Broadcasts to size.
fm_  squeeze(Tensor input, int[]? dim=None) | Drops size-1 dims (all, or those in dim).
fm_  unsqueeze(Tensor input, int dim) = input.unsqueeze(dim) | Inserts a size-1 dim at dim.
fm   flatten(Tensor input, int start_dim=0, int end_dim=-1) = input.flatten(start_dim, end_dim)
       | Merges dims start_dim..end_dim into one.
fm   unflatten(Tensor input, int dim, int[] sizes) | Splits dim into sizes.
fm   ravel(Tensor input) = input.reshape({-1}) | input as one dim.
fm   as_strided(Tensor input, int[] size, int[] stride, int? storage_offset=None)
       = input.as_strided(size, stride, storage_offset) | A view with explicit sizes, strides and offset.
m    repeat(Tensor input, int... repeats) | The tensor tiled `repeats` times along each dim (a copy).
m    flip(Tensor input, int... dims) | The elements in reverse order along dims (a copy).
f    flip(Tensor input, int[] dims) | The elements in reverse order along dims (a copy).
fm   roll(Tensor input, int[] shifts, int[]? dims=None) | Elements shifted cyclically along dims.
fm~  tril(Tensor input, int diagonal=0) | The lower triangle of the last two dims.
fm~  triu(Tensor input, int diagonal=0) | The upper triangle of the last two dims.
fm   diagonal(Tensor input, int offset=0, int dim1=0, int dim2=1) | The diagonal of dims dim1, dim2 (a view).
fm   diag(Tensor input, int diagonal=0) | A 1-d input as a diagonal matrix, or a 2-d input's diagonal.
fm   diag_embed(Tensor input, int offset=0, int dim1=-2, int dim2=-1)
       | The last dim as diagonals of matrices in dims dim1, dim2.

# --- Joining and splitting ----------------------------------------------------------------------
f    cat|concat|concatenate(Tensor[] tensors, int dim=0) | Joins tensors along an existing dim.
f    stack(Tensor[] tensors, int dim=0) | Joins tensors along a new dim.
f    hstack(Tensor[] tensors) | Joins tensors column-wise.
f    vstack(Tensor[] tensors) | Joins tensors row-wise.
fm   chunk(Tensor input, int chunks, int dim=0) -> Tensor[] | `chunks` nearly equal views along dim.
fm   split_with_sizes|unsafe_split_with_sizes(Tensor input, int[] split_sizes, int dim=0) -> Tensor[]
       = split(input, split_sizes, dim) | Views of the given sizes along dim.
fm   unsafe_split(Tensor input, int split_size, int dim=0) -> Tensor[] = split(input, split_size, dim)
       | Views of split_size along dim (the last may be smaller).
fm   unsafe_chunk(Tensor input, int chunks, int dim=0) -> Tensor[] = chunk(input, chunks, dim)
       | `chunks` nearly equal views along dim (chunk).
fm   unbind(Tensor input, int dim=0) -> Tensor[] | The slices along dim, as views.
f    broadcast_tensors(Tensor... tensors) -> Tensor[]
       | Every tensor expanded (a view) to the shape they broadcast to together.
f    meshgrid(Tensor... tensors, *, str? indexing=None) -> Tensor[] = meshgrid(tensors, indexing.value_or("ij"))
       | Coordinate grids of 1-d tensors ('ij' indexing unless told 'xy').
f    _pad_sequence(Tensor[] sequences, bool batch_first=False, float padding_value=0.0, str padding_side='right')
       = pad_sequence(sequences, batch_first, padding_value, padding_side)
       | torch.nn.utils.rnn.pad_sequence (ember.nn.utils.rnn's).

# --- Indexing -----------------------------------------------------------------------------------
fm   index_select(Tensor input, int dim, Tensor index) | The entries at index (1-d int64) along dim.
fm   gather(Tensor input, int dim, Tensor index) | out[i][j] = input[index[i][j]][j] (for dim 0).
fm   take(Tensor input, Tensor index) | The elements at index in row-major order (negative from the end), of index's shape.
m    fill_diagonal_(Tensor! input, Number fill_value, bool wrap=False)
       | In place: the main diagonal set to fill_value (wrap: again every columns + 1 rows of a tall matrix).
fm_  put(Tensor input, Tensor index, Tensor source, bool accumulate=False)
       | A copy with source's elements at the flat positions index (accumulate: added, repeats adding up).
fm_  index_put(Tensor input, Tensor?[] indices, Tensor values, bool accumulate=False)
       | A copy with input[indices] = values (accumulate: +=, repeated positions adding up; None: a full slice).
fm   take_along_dim(Tensor input, Tensor indices, int? dim=None)
       | gather along dim with input and indices broadcast in the other dims (flattened without dim).
m    unfold(Tensor input, int dimension, int size, int step) = input.unfold(dimension, size, step)
       | The windows of `size` elements every `step` along dimension, as a view with a new last dim.
fm~  scatter(Tensor input, int dim, Tensor index, Tensor|Number src) | A copy with src written at index along dim.
fm~  scatter_add(Tensor input, int dim, Tensor index, Tensor src) | A copy with src added at index along dim.
fm_  index_reduce(Tensor input, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True)
       | A copy with source's slices reduced ('prod', 'mean', 'amax', 'amin') into the slices index names along dim.
fm_  scatter_reduce(Tensor input, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True)
       | A copy with src reduced ('sum', 'prod', 'mean', 'amax', 'amin') into index along dim.
fm   masked_select(Tensor input, Tensor mask) | The elements where mask is true, as a 1-d tensor.
fm_  masked_scatter(Tensor input, Tensor mask, Tensor source)
       | A copy with source's elements, in order, where mask is true.
fm_  index_add(Tensor input, int dim, Tensor index, Tensor source, *, Number alpha=1)
       | A copy with alpha * source added at index along dim.
fm_  index_copy(Tensor input, int dim, Tensor index, Tensor source) | A copy with source's slices at index along dim.
fm_  index_fill(Tensor input, int dim, Tensor index, Tensor|Number value)
       | A copy with the slices at index along dim set to value.
fm   sort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False) -> (Tensor, Tensor) sort
       = sort(input, dim, descending) | (values, indices) sorted along dim (stable).
fm   argsort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False)
       = std::get<1>(sort(input, dim, descending)) | The indices that sort input along dim.
fm   topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor, Tensor) topk
       | (values, indices) of the k largest (or smallest) along dim.
fm_  nan_to_num(Tensor input, float? nan=0.0, float? posinf=None, float? neginf=None)
       = nan_to_num(input, nan.value_or(0.0), posinf, neginf)
       | NaN, +inf and -inf replaced by nan, posinf and neginf (default: the dtype's extremes).
f    cdist(Tensor x1, Tensor x2, float p=2.0, any compute_mode=None) = cdist(x1, x2, p)
       | p-norm distances between the rows of x1 and x2.
fm   histc(Tensor input, int bins=100, float min=0.0, float max=0.0)
       | Histogram in `bins` equal bins over [min, max] (the data's range if min == max).
fm   histogram(Tensor input, int bins=100, *, float[2]? range=None, Tensor? weight=None, bool density=False)
       -> (Tensor, Tensor) histogram
       | (hist, bin_edges): `bins` equal bins over range (the data's), the last closed; weighted, or a density.
fm   histogram(Tensor input, Tensor bins, *, Tensor? weight=None, bool density=False)
       -> (Tensor, Tensor) histogram | (hist, bin_edges) over the given increasing bin edges.
fm   bincount(Tensor input, Tensor? weights=None, int minlength=0)
       | How often each value 0..max occurs in a 1-d non-negative integer tensor (with weights: their sums).
f    isin(Tensor elements, Tensor|Number test_elements, *, bool assume_unique=False, bool invert=False)
       | True where an element is among test_elements (invert: where it is not).
f    isin(Number element, Tensor test_elements, *, bool assume_unique=False, bool invert=False)
       | True if element is among test_elements (invert: if not), as a 0-d tensor.
fm   argwhere(Tensor input) | The indices of the non-zero elements, as an [n, ndim] int64 tensor.
f    unravel_index(Tensor indices, int[] shape) -> Tensor[]
       | The coordinates in a tensor of `shape` of each flat index, one tensor per dim.
fm   slice_scatter(Tensor input, Tensor src, int dim=0, int? start=None, int? end=None, int step=1)
       | A copy of input with src in place of input[start:end:step] along dim.
fm   select_scatter(Tensor input, Tensor src, int dim, int index)
       | A copy of input with src in place of input.select(dim, index).
fm   diagonal_scatter(Tensor input, Tensor src, int offset=0, int dim1=0, int dim2=1)
       | A copy of input with src in place of its diagonal(offset, dim1, dim2).
f    combinations(Tensor input, int r=2, bool with_replacement=False)
       | The r-element combinations of a 1-d tensor's elements, as rows.
f    repeat_interleave(Tensor repeats, *, int? output_size=None)
       | i repeated repeats[i] times (the indices repeat_interleave picks).

# --- Operators (NotImplemented when the other operand is neither a tensor nor a number) ---------
o    __add__|__radd__(Tensor input, Tensor|Number other) = add(input, other) | input + other.
o    __sub__(Tensor input, Tensor|Number other) = sub(input, other) | input - other.
o    __rsub__(Tensor input, Tensor|Number other) = other - input | other - input.
o    __mul__|__rmul__(Tensor input, Tensor|Number other) = mul(input, other) | input * other.
o    __truediv__(Tensor input, Tensor|Number other) = div(input, other) | input / other.
o    __rtruediv__(Tensor input, Tensor|Number other) = other / input | other / input.
o    __floordiv__(Tensor input, Tensor|Number other) = floor_divide(input, other) | input // other.
o    __rfloordiv__(Tensor input, Tensor|Number other) = floor_divide(tensor_like(other, input), input)
       | other // input.
o    __mod__(Tensor input, Tensor|Number other) = remainder(input, other) | input % other.
o    __rmod__(Tensor input, Tensor|Number other) = remainder(tensor_like(other, input), input) | other % input.
o    __pow__(Tensor input, Tensor|Number other) = pow(input, other) | input ** other.
o    __rpow__(Tensor input, Tensor|Number other) = pow(tensor_like(other, input), input) | other ** input.
o    __matmul__(Tensor input, Tensor other) = matmul(input, other) | input @ other.
o    __rmatmul__(Tensor input, Tensor other) = matmul(other, input) | other @ input.
o    __neg__(Tensor input) = neg(input) | -input.
o    __pos__(Tensor input) = positive(input) | +input (input itself; refused for bool).
o    __abs__(Tensor input) = abs(input) | abs(input).
o    __eq__(Tensor input, Tensor|Number other) = eq(input, other) | input == other.
o    __ne__(Tensor input, Tensor|Number other) = ne(input, other) | input != other.
o    __lt__(Tensor input, Tensor|Number other) = lt(input, other) | input < other.
o    __le__(Tensor input, Tensor|Number other) = le(input, other) | input <= other.
o    __gt__(Tensor input, Tensor|Number other) = gt(input, other) | input > other.
o    __ge__(Tensor input, Tensor|Number other) = ge(input, other) | input >= other.
o    __and__|__rand__(Tensor input, Tensor|Number other) = bitwise_and(input, other) | input & other.
o    __or__|__ror__(Tensor input, Tensor|Number other) = bitwise_or(input, other) | input | other.
o    __xor__|__rxor__(Tensor input, Tensor|Number other) = bitwise_xor(input, other) | input ^ other.
o    __invert__(Tensor input) = bitwise_not(input) | ~input.
o    __lshift__(Tensor input, Tensor|Number other) = bitwise_left_shift(input, other) | input << other.
o    __rlshift__(Tensor input, Tensor|Number other) = bitwise_left_shift(tensor_like(other, input), input)
       | other << input.
o    __rshift__(Tensor input, Tensor|Number other) = bitwise_right_shift(input, other) | input >> other.
o    __rrshift__(Tensor input, Tensor|Number other) = bitwise_right_shift(tensor_like(other, input), input)
       | other >> input.
o    __iadd__(Tensor! input, Tensor|Number other) = add_(input, other) | input += other.
o    __isub__(Tensor! input, Tensor|Number other) = sub_(input, other) | input -= other.
o    __imul__(Tensor! input, Tensor|Number other) = mul_(input, other) | input *= other.
o    __itruediv__(Tensor! input, Tensor|Number other) = div_(input, other) | input /= other.
o    __iand__(Tensor! input, Tensor|Number other)
       = apply_inplace(input, "bitwise_and_", [&](const Tensor& v) { return bitwise_and(v, other); })
       | input &= other.
o    __ior__(Tensor! input, Tensor|Number other)
       = apply_inplace(input, "bitwise_or_", [&](const Tensor& v) { return bitwise_or(v, other); })
       | input |= other.
o    __ixor__(Tensor! input, Tensor|Number other)
       = apply_inplace(input, "bitwise_xor_", [&](const Tensor& v) { return bitwise_xor(v, other); })
       | input ^= other.
o    __ilshift__(Tensor! input, Tensor|Number other)
       = apply_inplace(input, "bitwise_left_shift_", [&](const Tensor& v) { return bitwise_left_shift(v, other); })
       | input <<= other.
o    __irshift__(Tensor! input, Tensor|Number other)
       = apply_inplace(input, "bitwise_right_shift_", [&](const Tensor& v) { return bitwise_right_shift(v, other); })
       | input >>= other.

# --- ember.nn.functional: layers ----------------------------------------------------------------
F    linear(Tensor input, Tensor weight, Tensor? bias=None) | input @ weight.T + bias.
F    dropout(Tensor input, float p=0.5, bool training=True, bool inplace=False)
       = maybe_inplace(input, dropout(input, p, training), inplace)
       | Zeroes elements with probability p in training, scaling the rest by 1 / (1 - p).
F    dropout1d(Tensor input, float p=0.5, bool training=True, bool inplace=False)
       = maybe_inplace(input, feature_dropout(input, p, 1, training), inplace)
       | Zeroes whole channels with probability p in training, scaling the rest by 1 / (1 - p).
F    dropout2d(Tensor input, float p=0.5, bool training=True, bool inplace=False)
       = maybe_inplace(input, feature_dropout(input, p, 2, training), inplace)
       | Zeroes whole channels with probability p in training, scaling the rest by 1 / (1 - p).
F    dropout3d(Tensor input, float p=0.5, bool training=True, bool inplace=False)
       = maybe_inplace(input, feature_dropout(input, p, 3, training), inplace)
       | Zeroes whole channels with probability p in training, scaling the rest by 1 / (1 - p).
F    one_hot(Tensor tensor, int num_classes=-1) | The classes as one-hot int64 rows.
F    pad(Tensor input, int[] pad, str mode='constant', float? value=None)
       = ember::pad(input, pad, mode, value.value_or(0.0))
       | Pads the last dims: (left, right[, top, bottom]) with 'constant', 'reflect', 'replicate' or 'circular'.
F    affine_grid(Tensor theta, int[] size, bool? align_corners=None)
       = affine_grid(theta, size, align_corners.value_or(false))
       | The sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of affine matrices theta [N, 2, 3]
         (or [N, 3, 4]) for an output of size (N, C, H, W) (or (N, C, D, H, W)).
F    grid_sample(Tensor input, Tensor grid, str mode='bilinear', str padding_mode='zeros', bool? align_corners=None)
       = grid_sample(input, grid, mode, padding_mode, align_corners.value_or(false))
       | Samples input at the normalized points of grid (bilinear, nearest or bicubic; zeros,
         border or reflection padding).
F    pixel_shuffle(Tensor input, int upscale_factor) | [*, C r^2, H, W] into [*, C, H r, W r].
F    pixel_unshuffle(Tensor input, int downscale_factor) | [*, C, H r, W r] into [*, C r^2, H, W].
F    channel_shuffle(Tensor input, int groups) | ShuffleNet's shuffle of the channels across groups.
F    max_unpool1d(Tensor input, Tensor indices, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, int[]? output_size=None)
       | Max pooling's values back at their indices.
F    max_unpool2d(Tensor input, Tensor indices, int[] kernel_size, int[]? stride=None, int[] padding=0, int[]? output_size=None)
       | Max pooling's values back at their indices.
F    max_unpool3d(Tensor input, Tensor indices, int[] kernel_size, int[]? stride=None, int[] padding=0, int[]? output_size=None)
       | Max pooling's values back at their indices.
F    lp_pool1d(Tensor input, float norm_type, int[1] kernel_size, int[1]? stride=None, bool ceil_mode=False)
       | Power-average pooling: (sum of x^p over each window)^(1/p).
F    lp_pool2d(Tensor input, float norm_type, int[] kernel_size, int[]? stride=None, bool ceil_mode=False)
       | Power-average pooling: (sum of x^p over each window)^(1/p).
F    lp_pool3d(Tensor input, float norm_type, int[] kernel_size, int[]? stride=None, bool ceil_mode=False)
       | Power-average pooling: (sum of x^p over each window)^(1/p).
F    conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1)
       = conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)
       | Transposed 1-d convolution over [N, C, L].
F    conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] output_padding=0, int groups=1, int[2] dilation=1)
       = conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
       | Transposed 2-d convolution.
F    conv_transpose3d(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=1, int[] padding=0, int[] output_padding=0, int groups=1, int[] dilation=1)
       = conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)
       | Transposed 3-d convolution over [N, C, D, H, W].
F    unfold(Tensor input, int[] kernel_size, int[] dilation=1, int[] padding=0, int[] stride=1)
       | The sliding blocks of [N, C, H, W] as columns [N, C kH kW, L] (im2col).
F    fold(Tensor input, int[] output_size, int[] kernel_size, int[] dilation=1, int[] padding=0, int[] stride=1)
       | Columns [N, C kH kW, L] summed into images [N, C, output_size] (col2im).
F    avg_pool1d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True)
       | Average pooling over [N, C, L].
F    avg_pool2d(Tensor input, int[2] kernel_size, int[2]? stride=None, int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None)
       | Average pooling over [N, C, H, W].
F    avg_pool3d(Tensor input, int[3] kernel_size, int[3]? stride=None, int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None)
       | Average pooling over [N, C, D, H, W].
F    adaptive_avg_pool1d(Tensor input, int[1] output_size) | Average pooling over [N, C, L] to output_size.
F    adaptive_avg_pool2d(Tensor input, int?[2] output_size)
       | Average pooling to a fixed output size (None keeps a size).
F    adaptive_avg_pool3d(Tensor input, int?[3] output_size)
       | Average pooling over [N, C, D, H, W] to a fixed output size (None keeps a size).
F    batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None, bool training=False, float momentum=0.1, float eps=1e-5)
       = batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
       | Batch normalisation over channel dim 1.
F    instance_norm(Tensor input, Tensor? running_mean=None, Tensor? running_var=None, Tensor? weight=None, Tensor? bias=None, bool use_input_stats=True, float momentum=0.1, float eps=1e-5)
       = instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)
       | Instance normalisation of [N, C, ...]: each sample's channels over their spatial dims.
F    layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-5)
       | Layer normalisation over the trailing normalized_shape.
F    rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None)
       | RMS normalisation over the trailing normalized_shape.
F    group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-5)
       | Group normalisation of [N, C, ...].
F    local_response_norm(Tensor input, int size, float alpha=1e-4, float beta=0.75, float k=1.0)
       | input / (k + alpha * mean of input^2 over size neighbouring channels)^beta.
F    bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) | x1^T A x2 + b for each output feature.
F    normalize(Tensor input, float p=2.0, int dim=1, float eps=1e-12) | input / max(||input||_p along dim, eps).
F    cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-8) | Cosine of the angle between x1 and x2 along dim.
F    pairwise_distance(Tensor x1, Tensor x2, float p=2.0, float eps=1e-6, bool keepdim=False)
       | The p-norm of x1 - x2 + eps over the last dim.
F    scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, float? scale=None)
       | softmax(q @ k^T * scale + mask) @ v, fused.

# --- ember.nn.functional: activations -----------------------------------------------------------
F    relu(Tensor input, bool inplace=False) = maybe_inplace(input, relu(input), inplace) | max(input, 0).
F    relu6(Tensor input, bool inplace=False) = maybe_inplace(input, relu6(input), inplace) | min(max(input, 0), 6).
F    selu(Tensor input, bool inplace=False) = maybe_inplace(input, selu(input), inplace) | The self-normalising ELU.
F    silu(Tensor input, bool inplace=False) = maybe_inplace(input, silu(input), inplace) | input * sigmoid(input).
F    mish(Tensor input, bool inplace=False) = maybe_inplace(input, mish(input), inplace) | input * tanh(softplus(input)).
F    hardsigmoid(Tensor input, bool inplace=False) = maybe_inplace(input, hardsigmoid(input), inplace) | relu6(input + 3) / 6.
F    hardswish(Tensor input, bool inplace=False) = maybe_inplace(input, hardswish(input), inplace) | input * relu6(input + 3) / 6.
F    leaky_relu(Tensor input, float negative_slope=0.01, bool inplace=False)
       = maybe_inplace(input, leaky_relu(input, negative_slope), inplace) | input where positive, else negative_slope * input.
F    elu(Tensor input, float alpha=1.0, bool inplace=False) = maybe_inplace(input, elu(input, alpha), inplace)
       | input where positive, else alpha * (exp(input) - 1).
F    celu(Tensor input, float alpha=1.0, bool inplace=False) = maybe_inplace(input, celu(input, alpha), inplace)
       | max(0, input) + min(0, alpha * (exp(input / alpha) - 1)).
F    hardtanh(Tensor input, float min_val=-1.0, float max_val=1.0, bool inplace=False)
       = maybe_inplace(input, hardtanh(input, min_val, max_val), inplace) | input clamped to [min_val, max_val].
F    threshold(Tensor input, Number threshold, Number value, bool inplace=False)
       = maybe_inplace(input, ember::threshold(input, threshold, value), inplace) | input where input > threshold, else value.
F    gelu(Tensor input, str approximate='none') | input * Phi(input), or its tanh approximation.
F    softplus(Tensor input, float beta=1.0, float threshold=20.0) | log(1 + exp(beta * input)) / beta.
F    logsigmoid(Tensor input) | log(sigmoid(input)).
F    hardshrink(Tensor input, float lambd=0.5) | input where |input| > lambd, else 0.
F    softshrink(Tensor input, float lambd=0.5) | input shrunk towards 0 by lambd (0 within it).
F    tanhshrink(Tensor input) | input - tanh(input).
F    glu(Tensor input, int dim=-1) | a * sigmoid(b) for the halves a, b of input along dim.
F    prelu(Tensor input, Tensor weight) | input where positive, else weight * input (weight per channel or one).
F    sigmoid(Tensor input) | 1 / (1 + exp(-input)).
F    tanh(Tensor input) | tanh(input).
F    softsign(Tensor input) | input / (1 + |input|).
F    softmax(Tensor input, int? dim=None, int _stacklevel=3, dtype? dtype=None)
       = softmax(cast_input(input, dtype), dim.value_or(legacy_softmax_dim(input))) | exp(input) / sum(exp(input)) along dim.
F    log_softmax(Tensor input, int? dim=None, int _stacklevel=3, dtype? dtype=None)
       = log_softmax(cast_input(input, dtype), dim.value_or(legacy_softmax_dim(input))) | log(softmax(input)) along dim.
F    softmin(Tensor input, int? dim=None, int _stacklevel=3, dtype? dtype=None)
       = softmin(cast_input(input, dtype), dim.value_or(legacy_softmax_dim(input))) | softmax(-input) along dim.

# --- ember.nn.functional: losses (size_average and reduce are PyTorch's legacy spellings) --------
F    cross_entropy(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, int ignore_index=-100, bool? reduce=None, str reduction='mean', float label_smoothing=0.0)
       = cross_entropy(input, target, weight, ignore_index, loss_reduction(size_average, reduce, reduction, "cross_entropy"), label_smoothing)
       | Cross entropy of logits against class indices (or probabilities).
F    nll_loss(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, int ignore_index=-100, bool? reduce=None, str reduction='mean')
       = nll_loss(input, target, weight, ignore_index, loss_reduction(size_average, reduce, reduction, "nll_loss"))
       | Negative log likelihood of log-probabilities.
F    soft_margin_loss(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = soft_margin_loss(input, target, loss_reduction(size_average, reduce, reduction, "soft_margin_loss"))
       | log(1 + exp(-target * input)).
F    mse_loss(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = mse_loss(input, target, loss_reduction(size_average, reduce, reduction, "mse_loss")) | Mean squared error.
F    l1_loss(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = l1_loss(input, target, loss_reduction(size_average, reduce, reduction, "l1_loss")) | Mean absolute error.
F    hinge_embedding_loss(Tensor input, Tensor target, float margin=1.0, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = hinge_embedding_loss(input, target, margin, loss_reduction(size_average, reduce, reduction, "hinge_embedding_loss"))
       | input where target is 1, max(0, margin - input) where it is -1.
F    multilabel_margin_loss(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = multilabel_margin_loss(input, target, loss_reduction(size_average, reduce, reduction, "multilabel_margin_loss"))
       | The multi-class hinge loss over each sample's target classes (ended by -1), averaged over the classes.
F    multilabel_soft_margin_loss(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = multilabel_soft_margin_loss(input, target, weight, loss_reduction(size_average, reduce, reduction, "multilabel_soft_margin_loss"))
       | The per-class logistic loss averaged over the classes.
F    poisson_nll_loss(Tensor input, Tensor target, bool log_input=True, bool full=False, bool? size_average=None, float eps=1e-8, bool? reduce=None, str reduction='mean')
       = poisson_nll_loss(input, target, log_input, full, eps, loss_reduction(size_average, reduce, reduction, "poisson_nll_loss"))
       | Poisson negative log-likelihood.
F    gaussian_nll_loss(Tensor input, Tensor target, Tensor|Number var, bool full=False, float eps=1e-6, str reduction='mean')
       = gaussian_nll_loss(input, target, tensor_or_double(var), full, eps, parse_reduction(reduction, "gaussian_nll_loss"))
       | Gaussian negative log-likelihood of target under N(input, var).
F    ctc_loss(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank=0, str reduction='mean', bool zero_infinity=False)
       = ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, parse_reduction(reduction, "ctc_loss"), zero_infinity)
       | Connectionist temporal classification loss of log_probs [T, N, C] against targets.
F    ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int blank=0, str reduction='mean', bool zero_infinity=False)
       = ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, parse_reduction(reduction, "ctc_loss"), zero_infinity)
       | Connectionist temporal classification loss of log_probs [T, N, C] against targets.
F    margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = margin_ranking_loss(input1, input2, target, margin, loss_reduction(size_average, reduce, reduction, "margin_ranking_loss"))
       | max(0, -target * (input1 - input2) + margin).
F    cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = cosine_embedding_loss(input1, input2, target, margin, loss_reduction(size_average, reduce, reduction, "cosine_embedding_loss"))
       | 1 - cos where target is 1, max(0, cos - margin) where it is -1.
F    triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1.0, float p=2.0, float eps=1e-6, bool swap=False, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, loss_reduction(size_average, reduce, reduction, "triplet_margin_loss"))
       | max(0, margin + d(anchor, positive) - d(anchor, negative)).
F    huber_loss(Tensor input, Tensor target, str reduction='mean', float delta=1.0)
       = huber_loss(input, target, parse_reduction(reduction, "huber_loss"), delta) | Huber's loss: quadratic below delta, linear above.
F    smooth_l1_loss(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean', float beta=1.0)
       = smooth_l1_loss(input, target, loss_reduction(size_average, reduce, reduction, "smooth_l1_loss"), beta)
       | Quadratic below beta (divided by beta), linear above.
F    kl_div(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean', bool log_target=False)
       = kl_div(input, target, loss_reduction(size_average, reduce, reduction, "kl_div"), log_target)
       | Kullback-Leibler divergence of log-probabilities input from target.
F    binary_cross_entropy(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, bool? reduce=None, str reduction='mean')
       = binary_cross_entropy(input, target, weight, loss_reduction(size_average, reduce, reduction, "binary_cross_entropy"))
       | Binary cross entropy of probabilities.
F    binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, bool? reduce=None, str reduction='mean', Tensor? pos_weight=None)
       = binary_cross_entropy_with_logits(input, target, weight, pos_weight, loss_reduction(size_average, reduce, reduction, "binary_cross_entropy_with_logits"))
       | Binary cross entropy of logits, computed stably.

# --- Tensor conversions and fills ---------------------------------------------------------------
m    cpu(Tensor input) = input.to(Device::cpu()) | A copy on the CPU (the tensor if already there).
m    float(Tensor input) = input.to(DType::Float32) | As float32.
m    double(Tensor input) = input.to(DType::Float64) | As float64.
m    half(Tensor input) = input.to(DType::Float16) | As float16.
m    bfloat16(Tensor input) = input.to(DType::BFloat16) | As bfloat16.
m    long(Tensor input) = input.to(DType::Int64) | As int64.
m    int(Tensor input) = input.to(DType::Int32) | As int32.
m    char(Tensor input) = input.to(DType::Int8) | As int8.
m    byte(Tensor input) = input.to(DType::UInt8) | As uint8.
m    bool(Tensor input) = input.to(DType::Bool) | As bool.
m    type_as(Tensor input, Tensor other) = input.to(other.dtype()) | As the other tensor's dtype.
m    contiguous(Tensor input, memory_format memory_format=MemoryFormat::Contiguous) = input.contiguous(memory_format)
       | The tensor if dense in that format, else a copy that is.
m    clone(Tensor input, *, memory_format memory_format=MemoryFormat::Preserve) = input.clone(memory_format)
       | A copy (differentiable).
m    detach(Tensor input) = input.detach() | The same data, cut from the graph.
m    copy_(Tensor! input, Tensor src, bool non_blocking=False) = input.copy_(src)
       | Copies `src` (broadcast, converted) into this tensor; returns it.
m    fill_(Tensor! input, Number value) = input.fill_(value) | Sets every element to `value`; returns the tensor.
m    zero_(Tensor! input) = input.zero_() | Sets every element to zero; returns the tensor.

# --- Factories (with the keywords every factory takes) --------------------------------------------
f    logspace(float start, float end, int steps, float base=10.0, *, dtype? dtype=None, device? device=None,
              bool requires_grad=False)
       = finish(logspace(start, end, steps, base, options(dtype, device, false)), requires_grad)
       | base ** each of `steps` evenly spaced exponents from start to end.
f    scalar_tensor(Number s, *, dtype? dtype=None, device? device=None, bool requires_grad=False)
       = finish(scalar_tensor(s, options(dtype, device, false)), requires_grad) | A 0-d tensor holding s.
f    hann_window(int window_length, bool periodic=True, *, dtype? dtype=None, device? device=None,
                 bool requires_grad=False)
       = finish(hann_window(window_length, periodic, options(dtype, device, false)), requires_grad)
       | The Hann window (periodic: the symmetric window of window_length + 1 points without the last).
f    hamming_window(int window_length, bool periodic=True, float alpha=0.54, float beta=0.46, *,
                    dtype? dtype=None, device? device=None, bool requires_grad=False)
       = finish(hamming_window(window_length, periodic, alpha, beta, options(dtype, device, false)),
                requires_grad)
       | The Hamming window alpha - beta cos(2 pi n / (N - 1)).
f    blackman_window(int window_length, bool periodic=True, *, dtype? dtype=None, device? device=None,
                     bool requires_grad=False)
       = finish(blackman_window(window_length, periodic, options(dtype, device, false)), requires_grad)
       | The Blackman window.
f    bartlett_window(int window_length, bool periodic=True, *, dtype? dtype=None, device? device=None,
                     bool requires_grad=False)
       = finish(bartlett_window(window_length, periodic, options(dtype, device, false)), requires_grad)
       | The Bartlett (triangular) window.
f    kaiser_window(int window_length, bool periodic=True, float beta=12.0, *, dtype? dtype=None,
                   device? device=None, bool requires_grad=False)
       = finish(kaiser_window(window_length, periodic, beta, options(dtype, device, false)), requires_grad)
       | The Kaiser window with shape parameter beta.

# --- Random sampling as Tensor methods (the functions are ember.bernoulli and ember.multinomial) ---
m    bernoulli(Tensor input, float? p=None, *, Generator? generator=None)
       = p ? bernoulli(input, *p, generator) : bernoulli(input, generator)
       | 1 with probability input (or p), else 0, elementwise.
m    bernoulli_(Tensor! input, float p=0.5, *, Generator? generator=None)
       = apply_inplace(input, "bernoulli_", [&](const Tensor& v) { return bernoulli(v, p, generator); })
       | In place: 1 with probability p, else 0.
m    exponential_(Tensor! input, float lambd=1.0, *, Generator? generator=None)
       | In place: draws of the exponential distribution of rate lambd.
m    geometric_(Tensor! input, float p, *, Generator? generator=None)
       | In place: draws of the geometric distribution (trials to the first success) with p.
m    log_normal_(Tensor! input, float mean=1.0, float std=2.0, *, Generator? generator=None)
       | In place: draws of exp(N(mean, std^2)).
m    cauchy_(Tensor! input, float median=0.0, float sigma=1.0, *, Generator? generator=None)
       | In place: draws of the Cauchy distribution at median with scale sigma.
m    random_(Tensor! input, *, Generator? generator=None) = random_(input, 0, std::nullopt, generator)
       | In place: integers uniform from 0 up to the largest the dtype holds exactly.
m    random_(Tensor! input, int to, *, Generator? generator=None) = random_(input, 0, to, generator)
       | In place: integers uniform in [0, to).
m    random_(Tensor! input, int from_, int? to, *, Generator? generator=None)
       = random_(input, from_, to, generator) | In place: integers uniform in [from_, to).
m    multinomial(Tensor input, int num_samples, bool replacement=False, *, Generator? generator=None)
       | Indices drawn from each row of input's weights.
