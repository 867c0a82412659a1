// Op fuzzer: decodes the input bytes into an op among many core ops, operands of random shapes
// (0, negative and huge sizes included), dtypes and views (transposed, sliced, expanded,
// permuted), and scalar arguments; then calls the op. Every call must either return a result
// of the expected shape whose every element can be read, or throw ember::Error with an "[op]"
// prefix. Anything else (another exception, a crash, a sanitizer report) is a finding.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/fuzz/fuzz_tensors.h"

namespace ember::fuzz {
namespace {

void expect_shape(const Tensor& r, IntList want, const char* op) {
  if (r.sizes() != Shape(want)) {
    finding(op, "result shape " + shape_str(r.sizes()) + " but expected " + shape_str(want));
  }
}

/** Runs op number `which` with operands decoded from `in`. */
void run_op(uint8_t which, Bytes& in) {
  switch (which % 60) {
    case 0: {
      Tensor a = operand(in), b = operand(in);
      Tensor r = add(a, b);
      expect_shape(r, broadcast_shapes(a.sizes(), b.sizes(), "add"), "add");
      touch(r);
      break;
    }
    case 1: {
      Tensor a = operand(in), b = operand(in);
      Tensor r = mul(a, b);
      expect_shape(r, broadcast_shapes(a.sizes(), b.sizes(), "mul"), "mul");
      touch(r);
      break;
    }
    case 2: {
      Tensor a = operand(in), b = operand(in);
      touch(div(a, b));
      break;
    }
    case 3: {
      Tensor a = operand(in);
      touch(pow(a, in.real()));
      break;
    }
    case 4: {
      Tensor a = operand(in), b = operand(in);
      touch(maximum(a, b));
      touch(lt(a, b));
      break;
    }
    case 5: {
      Tensor c = operand(in), a = operand(in), b = operand(in);
      touch(where(c, a, b));
      break;
    }
    case 6: {
      Tensor a = operand(in);
      const uint8_t f = in.u8() % 12;
      Tensor r = f == 0    ? neg(a)
                 : f == 1  ? abs(a)
                 : f == 2  ? exp(a)
                 : f == 3  ? log(a)
                 : f == 4  ? sqrt(a)
                 : f == 5  ? relu(a)
                 : f == 6  ? sigmoid(a)
                 : f == 7  ? tanh(a)
                 : f == 8  ? gelu(a, (in.u8() & 1) ? "tanh" : "none")
                 : f == 9  ? sign(a)
                 : f == 10 ? floor(a)
                           : logical_not(a);
      expect_shape(r, a.sizes(), "unary");
      touch(r);
      break;
    }
    case 7: {
      Tensor a = operand(in);
      std::optional<Scalar> lo, hi;
      if (in.u8() & 1) lo = in.real();
      if (in.u8() & 1) hi = in.real();
      touch(clamp(a, lo, hi));
      break;
    }
    case 8: {
      Tensor a = operand(in);
      const auto dims = in.args(3);
      const bool keep = in.u8() & 1;
      const uint8_t f = in.u8() % 7;
      Tensor r = f == 0   ? sum(a, dims, keep)
                 : f == 1 ? mean(a, dims, keep)
                 : f == 2 ? prod(a, dims, keep)
                 : f == 3 ? amax(a, dims, keep)
                 : f == 4 ? all(a, dims, keep)
                 : f == 5 ? var(a, dims, in.arg(), keep)
                          : norm(a, in.real(), dims, keep);
      touch(r);
      break;
    }
    case 9: {
      Tensor a = operand(in);
      touch(
          argmax(a, (in.u8() & 1) ? std::optional<int64_t>(in.arg()) : std::nullopt, in.u8() & 1));
      break;
    }
    case 10: {
      Tensor a = operand(in);
      auto [v, i] = max(a, in.arg(), in.u8() & 1);
      touch(v);
      touch(i);
      break;
    }
    case 11: {
      Tensor a = operand(in);
      touch(logsumexp(a, in.args(2), in.u8() & 1));
      break;
    }
    case 12: {
      Tensor a = operand(in);
      Tensor r = cumsum(a, in.arg());
      expect_shape(r, a.sizes(), "cumsum");
      touch(r);
      break;
    }
    case 13: {
      Tensor a = operand(in);
      Tensor r = (in.u8() & 1) ? softmax(a, in.arg()) : log_softmax(a, in.arg());
      expect_shape(r, a.sizes(), "softmax");
      touch(r);
      break;
    }
    case 14: {
      Tensor a = operand(in), b = operand(in);
      touch(matmul(a, b));
      break;
    }
    case 15: {
      Tensor a = operand(in, 2), b = operand(in, 2);
      Tensor r = mm(a, b);
      expect_shape(r, {a.size(0), b.size(1)}, "mm");
      touch(r);
      break;
    }
    case 16: {
      Tensor a = operand(in, 3), b = operand(in, 3);
      touch(bmm(a, b));
      break;
    }
    case 17: {
      Tensor a = operand(in);
      const int64_t dim = in.arg();
      touch(index_select(a, dim, index_operand(in).flatten()));
      break;
    }
    case 18: {
      Tensor a = operand(in);
      touch(gather(a, in.arg(), index_operand(in)));
      break;
    }
    case 19: {
      Tensor a = operand(in);
      const int64_t dim = in.arg();
      Tensor idx = index_operand(in);
      touch(scatter_add(a, dim, idx, operand(in)));
      break;
    }
    case 20: {
      Tensor a = operand(in);
      touch(masked_fill(a, operand(in), in.real()));
      break;
    }
    case 21: {
      touch(nonzero(operand(in)));
      break;
    }
    case 22: {
      std::vector<Tensor> ts(in.u8() % 4);
      for (auto& t : ts) t = operand(in);
      touch((in.u8() & 1) ? cat(ts, in.arg()) : stack(ts, in.arg()));
      break;
    }
    case 23: {
      Tensor a = operand(in);
      for (const Tensor& p : split(a, in.arg(), in.arg())) touch(p);
      break;
    }
    case 24: {
      Tensor a = operand(in);
      for (const Tensor& p : chunk(a, in.arg(), in.arg())) touch(p);
      break;
    }
    case 25: {
      Tensor a = operand(in);
      auto [v, i] = topk(a, in.arg(), in.arg());
      touch(v);
      touch(i);
      break;
    }
    case 26: {
      Tensor a = operand(in);
      auto [v, i] = sort(a, in.arg());
      expect_shape(v, a.sizes(), "sort");
      touch(v);
      touch(i);
      break;
    }
    case 27: {
      Tensor x = operand(in), w = operand(in);
      Tensor b = (in.u8() & 1) ? operand(in, 1) : Tensor();
      const std::vector<int64_t> stride = in.args(2), padding = in.args(2), dilation = in.args(2);
      touch(conv2d(x, w, b, stride, padding, dilation, in.arg()));
      break;
    }
    case 28: {
      Tensor x = operand(in), w = operand(in);
      touch(conv_transpose2d(x, w, {}, in.args(2), in.args(2), in.args(2), in.arg(), in.args(2)));
      break;
    }
    case 29: {
      Tensor x = operand(in);
      const std::vector<int64_t> k = in.args(2), s = in.args(2), p = in.args(2), d = in.args(2);
      auto [v, i] = max_pool2d_with_indices(x, k, s, p, d, in.u8() & 1);
      touch(v);
      touch(i);
      break;
    }
    case 30: {
      Tensor x = operand(in);
      const std::vector<int64_t> k = in.args(2), s = in.args(2), p = in.args(2);
      touch(avg_pool2d(x, k, s, p, in.u8() & 1, in.u8() & 1));
      break;
    }
    case 31: {
      touch(adaptive_avg_pool2d(operand(in), in.args(2)));
      break;
    }
    case 32: {
      Tensor x = operand(in);
      Tensor w = operand(in, 1), b = operand(in, 1);
      Tensor rm = (in.u8() & 1) ? operand(in, 1) : Tensor();
      Tensor rv = (in.u8() & 1) ? operand(in, 1) : Tensor();
      touch(batch_norm(x, w, b, rm, rv, in.u8() & 1, 0.1, 1e-5));
      break;
    }
    case 33: {
      Tensor x = operand(in);
      touch(layer_norm(x, in.args(2), (in.u8() & 1) ? operand(in, 2) : Tensor()));
      break;
    }
    case 34: {
      Tensor x = operand(in);
      touch(group_norm(x, in.arg(), (in.u8() & 1) ? operand(in, 1) : Tensor()));
      break;
    }
    case 35: {
      Tensor x = operand(in), w = operand(in, 2);
      touch(linear(x, w, (in.u8() & 1) ? operand(in, 1) : Tensor()));
      break;
    }
    case 36: {
      Tensor w = operand(in, 2);
      touch(embedding(w, index_operand(in)));
      break;
    }
    case 37: {
      Tensor x = operand(in);
      static const char* kModes[] = {"constant", "reflect", "replicate", "circular", "bogus"};
      touch(pad(x, in.args(6), kModes[in.u8() % 5], in.real()));
      break;
    }
    case 38: {
      Tensor x = operand(in);
      touch(interpolate(x, in.args(2), (in.u8() & 1) ? "bilinear" : "nearest", in.u8() & 1));
      break;
    }
    case 39: {
      Tensor x = operand(in);
      touch(nll_loss(x, index_operand(in), {}, in.arg(), static_cast<Reduction>(in.u8() % 3)));
      break;
    }
    case 40: {
      Tensor x = operand(in);
      touch(cross_entropy(x, (in.u8() & 1) ? index_operand(in) : operand(in), {}, in.arg(),
                          static_cast<Reduction>(in.u8() % 3), (in.u8() % 4) / 4.0));
      break;
    }
    case 41: {
      Tensor x = operand(in), t = operand(in);
      touch((in.u8() & 1) ? mse_loss(x, t) : binary_cross_entropy_with_logits(x, t));
      break;
    }
    // --- views: the result must have the numel of its input where the op preserves it.
    case 42: {
      Tensor a = operand(in);
      Tensor r = (in.u8() & 1) ? a.reshape(in.sizes(4)) : a.view(in.sizes(4));
      if (r.numel() != a.numel()) finding("reshape", "numel changed");
      touch(r);
      break;
    }
    case 43: {
      Tensor a = operand(in);
      touch(a.expand(in.sizes(5)));
      break;
    }
    case 44: {
      Tensor a = operand(in);
      Tensor r = a.permute(in.args(4));
      if (r.numel() != a.numel()) finding("permute", "numel changed");
      touch(r);
      break;
    }
    case 45: {
      Tensor a = operand(in);
      touch(a.narrow(in.arg(), in.arg(), in.arg()));
      touch(a.select(in.arg(), in.arg()));
      break;
    }
    case 46: {
      Tensor a = operand(in);
      touch(a.slice(in.arg(), in.arg(), in.arg(), in.arg()));
      break;
    }
    case 47: {
      Tensor a = operand(in);
      touch(a.squeeze(in.arg()).unsqueeze(in.arg()).flatten(in.arg(), in.arg()));
      break;
    }
    case 48: {
      Tensor a = operand(in);
      const std::vector<int64_t> s = in.sizes(3), st = in.sizes(3);
      touch(a.as_strided(s, st, (in.u8() & 1) ? std::optional<int64_t>(in.arg()) : std::nullopt));
      break;
    }
    case 49: {
      Tensor a = operand(in);
      Tensor r = a.to(dtype_of(in));
      expect_shape(r, a.sizes(), "to");
      touch(r);
      break;
    }
    case 50: {
      Tensor a = operand(in).clone();
      a.copy_(operand(in));
      touch(a);
      break;
    }
    case 51: {
      Tensor a = operand(in).clone();
      a.fill_(in.real());
      Tensor b = operand(in);
      add_(a, b);
      touch(a);
      break;
    }
    case 52: {
      const std::vector<int64_t> s = in.sizes(4);
      const uint8_t f = in.u8() % 4;
      Tensor r = f == 0   ? full(s, in.real(), dtype_of(in))
                 : f == 1 ? zeros(s, dtype_of(in))
                 : f == 2 ? rand(s)
                          : randint(in.arg(), in.arg(), s);
      expect_shape(r, s, "factory");
      touch(r);
      break;
    }
    case 53: {
      const uint8_t f = in.u8() % 3;
      if (f == 0) touch(arange(in.real(), in.real(), in.real()));
      if (f == 1) touch(arange(in.arg(), in.arg(), in.arg()));
      if (f == 2) touch(linspace(in.real(), in.real(), in.arg()));
      break;
    }
    case 54: {
      touch(eye(in.arg(), in.arg()));
      break;
    }
    case 55: {
      Tensor a = operand(in);
      touch(dropout(a, in.real(), in.u8() & 1));
      break;
    }
    case 56: {
      Tensor a = operand(in), b = operand(in);
      touch(l1_loss(a, b, static_cast<Reduction>(in.u8() % 3)));
      break;
    }
    case 57: {
      Tensor a = operand(in);
      touch(a.t());
      touch(a.transpose(in.arg(), in.arg()));
      break;
    }
    case 58: {
      Tensor a = operand(in);
      if (a.numel() == 1)
        (void)a.item();
      else
        (void)a.item();
      break;
    }
    default: {
      Tensor a = operand(in), b = operand(in);
      touch(any(eq(a, b), in.args(2), in.u8() & 1));
      break;
    }
  }
}

}  // namespace
}  // namespace ember::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ember::fuzz::Bytes in(data, size);
  const uint8_t which = in.u8();
  ember::fuzz::expect_clean([&] { ember::fuzz::run_op(which, in); });
  return 0;
}
