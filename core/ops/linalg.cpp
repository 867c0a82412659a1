// Matrix products: matmul (NumPy semantics), mm, bmm.
// Kernel contract ("matmul"): inputs {A [..., M, K], B [..., K, N]} of one dtype (the promoted
// dtype of the operands; bool never reaches a kernel), with equal rank >= 2 and batch dims
// already broadcast to the same sizes (expanded views: stride 0 where broadcast; any strides
// in the last two dims too); outputs {C [..., M, N]} contiguous, of the same dtype. No
// attributes. The kernel sees M, N > 0 but may see K == 0 (then C is all zeros). 1-d operands
// never reach a kernel: the core makes them [1, K] / [K, 1] and squeezes the result.
// backward (C = A B): dA = dC B^T, dB = A^T dC, summed over broadcast batch dims.
#include "ember/ops/linalg.h"

#include <algorithm>

#include "core/dispatch/call.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"

namespace ember {
namespace {

// Shared body of matmul, mm and bmm: `name` prefixes every error message.
Tensor product(const char* name, const Tensor& a, const Tensor& b) {
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(a.dim() >= 1 && b.dim() >= 1,
              "[{}] both arguments need at least 1 dimension: got {}-d and {}-d", name, a.dim(),
              b.dim());
  EMBER_CHECK_TYPE(a.dtype() != DType::Bool && b.dtype() != DType::Bool,
                   "[{}] not defined for bool tensors: got {} and {} (convert with .to())", name,
                   a.dtype(), b.dtype());
  const Device device = common_device({&a, &b}, name);
  const DType dtype = promote_types(a.dtype(), b.dtype());

  // Note [1-d operands of matmul]
  // As in NumPy, a 1-d left operand is a row vector [1, K] and a 1-d right operand a column
  // vector [K, 1]; the added dim is removed from the result, so vector x vector is a 0-d dot
  // product and matrix x vector is a vector.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  EMBER_CHECK(k == b2.size(-2),
              "[{}] shapes {} and {} cannot be multiplied: size(-1)={} but size(-2)={}", name,
              shape_str(a.sizes()), shape_str(b.sizes()), k, b2.size(-2));

  const IntList a_batch(a2.sizes().data(), a2.sizes().size() - 2);
  const IntList b_batch(b2.sizes().data(), b2.sizes().size() - 2);
  for (size_t i = 1; i <= std::min(a_batch.size(), b_batch.size()); ++i) {
    const int64_t da = a_batch[a_batch.size() - i], db = b_batch[b_batch.size() - i];
    EMBER_CHECK(da == db || da == 1 || db == 1,
                "[{}] shapes {} and {} cannot be multiplied: batch dims {} and {} do not broadcast",
                name, shape_str(a.sizes()), shape_str(b.sizes()), shape_str(a_batch),
                shape_str(b_batch));
  }
  Shape shape = broadcast_shapes(a_batch, b_batch, name);
  Shape a_shape = shape, b_shape = shape;
  a_shape.push_back(m);
  a_shape.push_back(k);
  b_shape.push_back(k);
  b_shape.push_back(n);
  shape.push_back(m);
  shape.push_back(n);
  Tensor out = empty(shape, {dtype, device});
  if (out.numel() > 0) {
    if (k == 0) {
      out.zero_();
    } else {
      const Tensor ax = a2.to(dtype).expand(a_shape), bx = b2.to(dtype).expand(b_shape);
      run_kernel(core_op(ops::matmul), dtype, {&ax, &bx}, {&out});
    }
  }
  if (a.dim() > 1 && b.dim() > 1) return out;
  Shape result;
  for (size_t i = 0; i + 2 < shape.size(); ++i) result.push_back(shape[i]);
  if (a.dim() > 1) result.push_back(m);
  if (b.dim() > 1) result.push_back(n);
  return out.view(result);
}

// Note [Backward of matmul]
// With 1-d operands viewed as [1, K] / [K, 1] (Note [1-d operands of matmul]) and the output
// gradient viewed back to [..., M, N], the gradients are dA = dC B^T and dB = A^T dC, written
// with the public matmul and transpose so they are differentiable again. Their batch dims are
// the broadcast ones; reduce_grad sums them back to each operand's own batch dims and casts to
// its own dtype (a float32 operand of a float64 product gets a float32 gradient). mm and bmm
// are special cases and share this formula.
Tensor differentiable_product(const char* name, const char* node, const Tensor& a,
                              const Tensor& b) {
  return autograd::differentiable(
      node, name, {&a, &b}, [&] { return product(name, a, b); },
      [&] {
        return [sa = autograd::SavedTensor(a), sb = autograd::SavedTensor(b),
                ra = a.requires_grad(), rb = b.requires_grad()](const std::vector<Tensor>& g,
                                                                const autograd::LambdaNode& self) {
          const Tensor a = self.unpack(sa), b = self.unpack(sb);
          const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
          const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
          // dC without the dims of 1-d operands: its leading dims are the batch dims.
          const int64_t batch = g[0].dim() - (a.dim() > 1) - (b.dim() > 1);
          Shape full;
          for (int64_t i = 0; i < batch; ++i) full.push_back(g[0].size(i));
          full.push_back(a2.size(-2));
          full.push_back(b2.size(-1));
          const Tensor g2 = g[0].reshape(full);
          Tensor ga, gb;
          if (ra) {
            ga = autograd::reduce_grad(matmul(g2, b2.transpose(-1, -2)), a2).reshape(a.sizes());
          }
          if (rb) {
            gb = autograd::reduce_grad(matmul(a2.transpose(-1, -2), g2), b2).reshape(b.sizes());
          }
          return std::vector<Tensor>{ga, gb};
        };
      });
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(Lower, matmul, a, a, b);
  return differentiable_product("matmul", "MatmulBackward", a, b);
}

Tensor mm(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(Lower, mm, a, a, b);
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[mm] undefined tensor argument");
  EMBER_CHECK(a.dim() == 2 && b.dim() == 2, "[mm] expected 2-d tensors: got shapes {} and {}",
              shape_str(a.sizes()), shape_str(b.sizes()));
  return differentiable_product("mm", "MmBackward", a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(Lower, bmm, a, a, b);
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[bmm] undefined tensor argument");
  EMBER_CHECK(a.dim() == 3 && b.dim() == 3, "[bmm] expected 3-d tensors: got shapes {} and {}",
              shape_str(a.sizes()), shape_str(b.sizes()));
  EMBER_CHECK(a.size(0) == b.size(0),
              "[bmm] batch sizes differ: shapes {} and {} (bmm does not broadcast; use matmul)",
              shape_str(a.sizes()), shape_str(b.sizes()));
  return differentiable_product("bmm", "BmmBackward", a, b);
}

}  // namespace ember
