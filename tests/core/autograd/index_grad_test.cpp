// Gradcheck cases and gradient values for indexing, joining and ordering ops.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/core/autograd/gradcheck_cases.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

// Elements of a tensor as float64, row-major.
std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// ---------------------------------------------------------------------------------------------
// take, take_along_dim and Tensor::unfold (a view whose windows overlap)
EMBER_GRADCHECK_CASE({"take", "negative and repeated indices, 2-d index",
                      [](const V& in) {
                        return take(in[0].t(), on(in[0], tensor({{-1, 0}, {5, -1}})));
                      },
                      [] {
                        return V{input({2, 3}, 140)};
                      }});
EMBER_GRADCHECK_CASE({"take_along_dim", "broadcast in the other dims",
                      [](const V& in) {
                        return take_along_dim(in[0], on(in[0], tensor({{2, 0}})), 1);
                      },
                      [] {
                        return V{input({3, 4}, 141)};
                      }});
EMBER_GRADCHECK_CASE({"unfold", "overlapping windows",
                      [](const V& in) { return in[0].unfold(1, 3, 2); },
                      [] {
                        return V{input({2, 7}, 142)};
                      }});

// ---------------------------------------------------------------------------------------------
// index_select
EMBER_GRADCHECK_CASE({"index_select", "dim 0, repeated indices",
                      [](const V& in) {
                        return index_select(in[0], 0, on(in[0], tensor({2, 0, 2, 3})));
                      },
                      [] {
                        return V{input({4, 3}, 101)};
                      }});
EMBER_GRADCHECK_CASE({"index_select", "negative dim, transposed input",
                      [](const V& in) {
                        return index_select(in[0].t(), -1, on(in[0], tensor({1, 1, 0})));
                      },
                      [] {
                        return V{input({3, 4}, 102)};
                      }});
EMBER_GRADCHECK_CASE({"index_select", "3-d middle dim, sliced and permuted input",
                      [](const V& in) {
                        return index_select(in[0].slice(2, 1, 3).permute({2, 1, 0}), 1,
                                            on(in[0], tensor({2, 0, 0, 1})));
                      },
                      [] {
                        return V{input({2, 3, 3}, 103)};
                      }});
EMBER_GRADCHECK_CASE({"index_select", "0-d input",
                      [](const V& in) { return index_select(in[0], 0, on(in[0], tensor({0}))); },
                      [] { return V{input({}, 104)}; }});

// ---------------------------------------------------------------------------------------------
// gather
EMBER_GRADCHECK_CASE(
    {"gather", "dim 0, repeated indices, index longer than input",
     [](const V& in) {
       return gather(in[0], 0, on(in[0], tensor({{0, 1}, {2, 0}, {0, 0}, {1, 1}})));
     },
     [] {
       return V{input({3, 2}, 111)};
     }});
EMBER_GRADCHECK_CASE({"gather", "negative dim, smaller index, transposed input",
                      [](const V& in) {
                        return gather(in[0].t(), -1, on(in[0], tensor({{2, 2}, {0, 1}, {1, 0}})));
                      },
                      [] {
                        return V{input({3, 4}, 112)};
                      }});
EMBER_GRADCHECK_CASE(
    {"gather", "3-d dim 1",
     [](const V& in) {
       return gather(in[0], 1, on(in[0], tensor({{{1, 0}, {1, 1}}, {{0, 0}, {2, 1}}})));
     },
     [] {
       return V{input({2, 3, 2}, 113)};
     }});
EMBER_GRADCHECK_CASE({"gather", "0-d input",
                      [](const V& in) {
                        return gather(in[0], 0, on(in[0], tensor(0).reshape({})));
                      },
                      [] { return V{input({}, 114)}; }});

// ---------------------------------------------------------------------------------------------
// scatter: indices distinct per destination (with repeats the kept value is unspecified).
EMBER_GRADCHECK_CASE(
    {"scatter", "dim 0",
     [](const V& in) {
       return scatter(in[0], 0, on(in[0], tensor({{0, 2, 1, 0}, {2, 1, 0, 1}})), in[1]);
     },
     [] {
       return V{input({3, 4}, 121), input({2, 4}, 122)};
     }});
EMBER_GRADCHECK_CASE(
    {"scatter", "negative dim, src larger than index, transposed input",
     [](const V& in) {
       return scatter(in[0].t(), -1, on(in[0], tensor({{3, 0}, {1, 2}, {0, 3}})), in[1]);
     },
     [] {
       return V{input({4, 3}, 123), input({3, 3}, 124)};
     }});
EMBER_GRADCHECK_CASE({"scatter", "only x requires grad",
                      [](const V& in) {
                        return scatter(in[0], 1, on(in[0], tensor({{1}, {0}})),
                                       on(in[0], full({2, 1}, 0.25, DType::Float64)));
                      },
                      [] {
                        return V{input({2, 3}, 125)};
                      }});

// ---------------------------------------------------------------------------------------------
// scatter_add
EMBER_GRADCHECK_CASE(
    {"scatter_add", "dim 0, repeated indices",
     [](const V& in) {
       return scatter_add(in[0], 0, on(in[0], tensor({{0, 1}, {0, 0}, {2, 1}, {0, 1}})), in[1]);
     },
     [] {
       return V{input({3, 2}, 131), input({4, 2}, 132)};
     }});
EMBER_GRADCHECK_CASE(
    {"scatter_add", "negative dim, src larger than index, transposed src",
     [](const V& in) {
       return scatter_add(in[0], -1, on(in[0], tensor({{1, 1}, {2, 0}})), in[1].t());
     },
     [] {
       return V{input({2, 3}, 133), input({4, 2}, 134)};
     }});
EMBER_GRADCHECK_CASE(
    {"scatter_add", "3-d dim 2, result used twice",
     [](const V& in) {
       const Tensor y = scatter_add(in[0], 2, on(in[0], tensor({{{0, 0, 0}}, {{1, 0, 1}}})), in[1]);
       return mul(y, y);
     },
     [] {
       return V{input({2, 1, 2}, 135), input({2, 1, 3}, 136)};
     }});

// ---------------------------------------------------------------------------------------------
// masked_fill (differentiable through where)
EMBER_GRADCHECK_CASE({"masked_fill", "broadcast mask",
                      [](const V& in) {
                        return masked_fill(in[0], on(in[0], tensor({true, false, true})), 0.5);
                      },
                      [] {
                        return V{input({2, 3}, 141)};
                      }});
EMBER_GRADCHECK_CASE({"masked_fill", "transposed input",
                      [](const V& in) {
                        return masked_fill(
                            in[0].t(),
                            on(in[0], tensor({{false, true, true}, {true, false, false}})), -2.0);
                      },
                      [] {
                        return V{input({3, 2}, 142)};
                      }});

// ---------------------------------------------------------------------------------------------
// cat
EMBER_GRADCHECK_CASE({"cat", "dim 0, three inputs",
                      [](const V& in) {
                        return cat({in[0], in[1], in[2]}, 0);
                      },
                      [] {
                        return V{input({2, 3}, 151), input({1, 3}, 152), input({3, 3}, 153)};
                      }});
EMBER_GRADCHECK_CASE({"cat", "negative dim, transposed input, skipped empty 1-d input",
                      [](const V& in) {
                        return cat({in[0].t(), on(in[0], zeros({0}, DType::Float64)), in[1]}, -1);
                      },
                      [] {
                        return V{input({3, 2}, 154), input({2, 2}, 155)};
                      }});
EMBER_GRADCHECK_CASE(
    {"cat", "an input without grad, the same input twice",
     [](const V& in) {
       return cat({in[0], on(in[0], ones({2, 1}, DType::Float64)), mul(in[0], in[0])}, 1);
     },
     [] {
       return V{input({2, 2}, 156)};
     }});

// ---------------------------------------------------------------------------------------------
// stack (cat of unsqueezed views)
EMBER_GRADCHECK_CASE({"stack", "dim 0",
                      [](const V& in) {
                        return stack({in[0], in[1]}, 0);
                      },
                      [] {
                        return V{input({2, 3}, 161), input({2, 3}, 162)};
                      }});
EMBER_GRADCHECK_CASE({"stack", "negative dim, transposed input",
                      [](const V& in) {
                        return stack({in[0].t(), in[1], in[0].t()}, -1);
                      },
                      [] {
                        return V{input({3, 2}, 163), input({2, 3}, 164)};
                      }});

// ---------------------------------------------------------------------------------------------
// split and chunk (narrow views); every piece reaches the result differently.
EMBER_GRADCHECK_CASE({"split", "size 2 along dim 1, uneven",
                      [](const V& in) {
                        const V p = split(in[0], 2, 1);
                        return cat({mul(p[0], 2.0), p[2], mul(p[1], p[1])}, 1);
                      },
                      [] {
                        return V{input({3, 5}, 171)};
                      }});
EMBER_GRADCHECK_CASE({"split", "sizes list, negative dim, transposed input",
                      [](const V& in) {
                        const V p = split(in[0].t(), {1, 3}, -2);
                        return mul(p[0], sum(p[1], {0}, true));
                      },
                      [] {
                        return V{input({3, 4}, 172)};
                      }});
EMBER_GRADCHECK_CASE({"unbind", "slices used unevenly, one unused",
                      [](const V& in) {
                        const V p = unbind(in[0], 1);
                        return cat({mul(p[0], 2.0), mul(p[2], p[2]), p[0]}, 0);
                      },
                      [] {
                        return V{input({3, 4}, 176)};
                      }});
EMBER_GRADCHECK_CASE({"chunk", "3 chunks of 5 rows",
                      [](const V& in) {
                        const V p = chunk(in[0], 3, 0);
                        return cat({p[2], mul(p[0], 3.0), p[1]}, 0);
                      },
                      [] {
                        return V{input({5, 2}, 173)};
                      }});
EMBER_GRADCHECK_CASE({"chunk", "negative dim, sliced input",
                      [](const V& in) {
                        const V p = chunk(in[0].slice(0, 1, 3), 2, -1);
                        return sub(p[0], mul(p[1], p[1]));
                      },
                      [] {
                        return V{input({3, 4}, 174)};
                      }});

// ---------------------------------------------------------------------------------------------
// sort and topk: only values are differentiable (random inputs have no ties).
EMBER_GRADCHECK_CASE({"sort", "dim -1 ascending",
                      [](const V& in) { return std::get<0>(sort(in[0], -1)); },
                      [] {
                        return V{input({3, 4}, 181)};
                      }});
EMBER_GRADCHECK_CASE({"sort", "dim 0 descending, transposed input",
                      [](const V& in) { return std::get<0>(sort(in[0].t(), 0, true)); },
                      [] {
                        return V{input({3, 4}, 182)};
                      }});
EMBER_GRADCHECK_CASE({"sort", "0-d input", [](const V& in) { return std::get<0>(sort(in[0])); },
                      [] { return V{input({}, 183)}; }});
EMBER_GRADCHECK_CASE({"topk", "k 2 largest along dim -1",
                      [](const V& in) { return std::get<0>(topk(in[0], 2, -1)); },
                      [] {
                        return V{input({3, 4}, 184)};
                      }});
EMBER_GRADCHECK_CASE({"topk", "k 3 smallest unsorted along dim 0, transposed input",
                      [](const V& in) {
                        return std::get<0>(topk(in[0].t(), 3, 0, /*largest=*/false,
                                                /*sorted=*/false));
                      },
                      [] {
                        return V{input({3, 5}, 185)};
                      }});
EMBER_GRADCHECK_CASE({"topk", "0-d input, k 1",
                      [](const V& in) { return std::get<0>(topk(in[0], 1)); },
                      [] { return V{input({}, 186)}; }});

// ---------------------------------------------------------------------------------------------
// Gradient values

TEST(IndexGrad, IndexSelectRepeatedIndicesAccumulate) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, DType::Float64).requires_grad_(true);
  Tensor y = index_select(x, 0, tensor({2, 0, 2, 2}));
  EXPECT_EQ(y.grad_fn()->name(), "IndexSelectBackward");
  sum(mul(y, tensor({1.0, 10.0}, DType::Float64))).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 10, 0, 0, 3, 30}));
}

TEST(IndexGrad, GatherRepeatedIndicesAccumulate) {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, DType::Float64).requires_grad_(true);
  Tensor y = gather(x, 1, tensor({{2, 2, 0}, {1, 1, 1}}));
  sum(y).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 0, 2, 0, 3, 0}));
}

TEST(IndexGrad, ScatterZeroesTheOverwrittenPlaces) {
  Tensor x = zeros({2, 3}, DType::Float64).requires_grad_(true);
  Tensor src = ones({2, 2}, DType::Float64).requires_grad_(true);
  // Only src's first column is read; its second column gets a zero gradient.
  Tensor y = scatter(x, 1, tensor({{2}, {0}}), src);
  sum(mul(y, tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, DType::Float64))).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 0, 0, 5, 6}));
  EXPECT_EQ(values(src.grad()), (std::vector<double>{3, 0, 4, 0}));
}

TEST(IndexGrad, ScatterAddSendsGradientToEveryRepeat) {
  Tensor x = zeros({3}, DType::Float64).requires_grad_(true);
  Tensor src = ones({4}, DType::Float64).requires_grad_(true);
  Tensor y = scatter_add(x, 0, tensor({1, 1, 0, 1}), src);
  EXPECT_EQ(values(y), (std::vector<double>{1, 3, 0}));
  sum(mul(y, tensor({1.0, 2.0, 3.0}, DType::Float64))).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(values(src.grad()), (std::vector<double>{2, 2, 1, 2}));
}

TEST(IndexGrad, MaskedFillBlocksTheFilledPlaces) {
  Tensor x = ones({2, 2}, DType::Float64).requires_grad_(true);
  sum(masked_fill(x, tensor({{true, false}, {false, true}}), 7.0)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 1, 0}));
}

TEST(IndexGrad, CatGivesEachInputItsSliceInItsOwnDtype) {
  Tensor a = tensor({{1.0}, {2.0}}).requires_grad_(true);  // float32
  Tensor b = tensor({{3.0, 4.0}, {5.0, 6.0}}, DType::Float64).requires_grad_(true);
  Tensor c = tensor({{7.0}, {8.0}}, DType::Float64);  // no grad
  Tensor y = cat({a, b, c}, -1);
  EXPECT_EQ(y.grad_fn()->name(), "CatBackward");
  EXPECT_EQ(y.dtype(), DType::Float64);
  y.backward(tensor({{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}}, DType::Float64));
  EXPECT_EQ(a.grad().dtype(), DType::Float32);
  EXPECT_EQ(values(a.grad()), (std::vector<double>{1, 5}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{2, 3, 6, 7}));
  EXPECT_FALSE(c.grad().defined());
}

TEST(IndexGrad, CatRecordsOnlyWhenNeeded) {
  Tensor a = ones({2}, DType::Float64).requires_grad_(true);
  EXPECT_FALSE(cat({ones({2}), ones({3})}).requires_grad());
  {
    autograd::NoGradGuard no_grad;
    EXPECT_FALSE(cat({a, a}).requires_grad());
  }
  // Integer results carry no gradient.
  EXPECT_FALSE(cat({tensor({1, 2}), tensor({3})}).requires_grad());
  // A skipped empty 1-d input that requires grad gets an empty gradient.
  Tensor e = zeros({0}, DType::Float64).requires_grad_(true);
  sum(cat({e, a})).backward();
  EXPECT_EQ(e.grad().sizes(), Shape({0}));
  EXPECT_EQ(values(a.grad()), (std::vector<double>{1, 1}));
}

TEST(IndexGrad, StackAndSplitRoundTrip) {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, DType::Float64).requires_grad_(true);
  const std::vector<Tensor> rows = chunk(x, 2, 0);
  Tensor y = stack({rows[1].squeeze(0), mul(rows[0].squeeze(0), 2.0)}, 1);  // [3, 2]
  EXPECT_EQ(y.sizes(), Shape({3, 2}));
  sum(mul(y, y)).backward();
  // d/dx of x1^2 + 4 x0^2.
  EXPECT_EQ(values(x.grad()), (std::vector<double>{8, 16, 24, 8, 10, 12}));
}

TEST(IndexGrad, SortValuesHaveHistoryAndIndicesDoNot) {
  Tensor x = tensor({{3.0, 1.0, 2.0}, {0.0, 5.0, 4.0}}, DType::Float64).requires_grad_(true);
  auto [v, i] = sort(x, 1, /*descending=*/true);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_EQ(v.grad_fn()->name(), "SortBackward");
  EXPECT_FALSE(i.requires_grad());
  EXPECT_FALSE(i.grad_fn());
  // The gradient of the j-th largest is j + 1 (row 0) or 10 (j + 1) (row 1).
  v.backward(tensor({{1.0, 2.0, 3.0}, {10.0, 20.0, 30.0}}, DType::Float64));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 3, 2, 30, 10, 20}));
}

TEST(IndexGrad, TopkGradientLandsAtThePickedPlaces) {
  Tensor x = tensor({{0.5, 2.0}, {3.0, -1.0}, {1.0, 4.0}}, DType::Float64).requires_grad_(true);
  auto [v, i] = topk(x, 2, 0, /*largest=*/true);
  EXPECT_FALSE(i.requires_grad());
  v.backward(tensor({{1.0, 2.0}, {3.0, 4.0}}, DType::Float64));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 4, 1, 0, 3, 2}));
  // k = 0 gives an empty result whose gradient is all zeros.
  Tensor z = tensor({1.0, 2.0}, DType::Float64).requires_grad_(true);
  auto [v0, i0] = topk(z, 0);
  sum(v0).backward();
  EXPECT_EQ(values(z.grad()), (std::vector<double>{0, 0}));
}

TEST(IndexGrad, NonzeroIsNotDifferentiable) {
  Tensor x = tensor({0.0, 1.0, 2.0}, DType::Float64).requires_grad_(true);
  Tensor n = nonzero(x);
  EXPECT_EQ(n.dtype(), DType::Int64);
  EXPECT_FALSE(n.requires_grad());
}

TEST(IndexGrad, IndexModifiedInPlaceAfterUseIsAnError) {
  Tensor x = ones({3}, DType::Float64).requires_grad_(true);
  Tensor index = tensor({0, 2});
  Tensor y = index_select(x, 0, index);
  index.fill_(1);
  try {
    sum(y).backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("index_select"), std::string::npos) << e.what();
  }
}

TEST(IndexGrad, SecondOrderThroughGather) {
  // y = sum(gather(x, 0, idx)^2): dy/dx = 2 scatter_add(x at idx); d2y/dx2 counts repeats.
  Tensor x = tensor({1.0, 2.0, 3.0}, DType::Float64).requires_grad_(true);
  Tensor g = gather(x, 0, tensor({0, 0, 2}));
  Tensor y = sum(mul(g, g));
  Tensor dx = autograd::grad({y}, {x}, {}, {}, /*create_graph=*/true)[0];
  EXPECT_EQ(values(dx), (std::vector<double>{4, 0, 6}));
  Tensor ddx = autograd::grad({sum(dx)}, {x})[0];
  EXPECT_EQ(values(ddx), (std::vector<double>{4, 0, 2}));
}

// ---- tril, triu -------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"tril", "batched, diagonal -1", [](const V& in) { return tril(in[0], -1); },
                      [] {
                        return V{input({2, 3, 4}, 150)};
                      }});
EMBER_GRADCHECK_CASE({"triu", "diagonal 1", [](const V& in) { return triu(in[0], 1); },
                      [] {
                        return V{input({4, 3}, 151)};
                      }});

TEST(Triangles, KeepTheirSideOfTheDiagonal) {
  const Tensor x = add(arange(12, TensorOptions{DType::Int64}), 1).view({3, 4});
  EXPECT_EQ(values(tril(x)), (std::vector<double>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  EXPECT_EQ(values(triu(x, 2)), (std::vector<double>{0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}));
  EXPECT_EQ(values(tril(x, -2)), (std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0}));
  EXPECT_EQ(tril(x).dtype(), DType::Int64);
  EXPECT_EQ(values(triu(ones({2, 2}, DType::Bool))), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_THROW(tril(ones({3})), Error);
}

// ---- Diagonals, grids, repeats ------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"diagonal", "offset 1 of dims 2, 0",
                      [](const V& in) { return diagonal(in[0], 1, 2, 0); },
                      [] {
                        return V{input({3, 2, 4}, 200)};
                      }});
EMBER_GRADCHECK_CASE({"diag", "1-d, offset -1", [](const V& in) { return diag(in[0], -1); },
                      [] { return V{input({3}, 201)}; }});
EMBER_GRADCHECK_CASE({"diag", "2-d, offset 1", [](const V& in) { return diag(in[0], 1); },
                      [] {
                        return V{input({3, 4}, 202)};
                      }});
EMBER_GRADCHECK_CASE({"diag_embed", "batched, offset 2, dims 0 and 2",
                      [](const V& in) { return diag_embed(in[0], 2, 0, 2); },
                      [] {
                        return V{input({2, 3}, 203)};
                      }});
EMBER_GRADCHECK_CASE({"meshgrid", "xy",
                      [](const V& in) {
                        const std::vector<Tensor> g = meshgrid({in[0], in[1], in[2]}, "xy");
                        return add(mul(g[0], g[1]), g[2]);
                      },
                      [] {
                        return V{input({2}, 204), input({3}, 205), input({}, 206)};
                      }});
EMBER_GRADCHECK_CASE({"repeat_interleave", "int repeats along dim 1",
                      [](const V& in) { return repeat_interleave(in[0], 3, 1); },
                      [] {
                        return V{input({2, 2}, 207)};
                      }});
EMBER_GRADCHECK_CASE({"repeat_interleave", "tensor repeats, flattened",
                      [](const V& in) {
                        return repeat_interleave(in[0], on(in[0], tensor({2, 0, 1, 3})));
                      },
                      [] {
                        return V{input({2, 2}, 208)};
                      }});

// ---- index_add, index_copy, index_fill, scatter_reduce, masked_scatter -------------------------
EMBER_GRADCHECK_CASE({"index_add", "repeated index, alpha 2",
                      [](const V& in) {
                        return index_add(in[0], 1, on(in[0], tensor({2, 0, 2})), in[1], 2.0);
                      },
                      [] {
                        return V{input({2, 3}, 210), input({2, 3}, 211)};
                      }});
EMBER_GRADCHECK_CASE({"index_copy", "dim 0",
                      [](const V& in) {
                        return index_copy(in[0], 0, on(in[0], tensor({3, 0})), in[1]);
                      },
                      [] {
                        return V{input({4, 2}, 212), input({2, 2}, 213)};
                      }});
EMBER_GRADCHECK_CASE({"index_fill", "0-d tensor value",
                      [](const V& in) {
                        return index_fill(in[0], 1, on(in[0], tensor({1, 1})), in[1]);
                      },
                      [] {
                        return V{input({2, 3}, 214), input({}, 215)};
                      }});
EMBER_GRADCHECK_CASE(
    {"scatter_reduce", "sum without self",
     [](const V& in) {
       return scatter_reduce(in[0], 0, on(in[0], tensor({1, 0, 1, 1})), in[1], "sum", false);
     },
     [] {
       return V{input({3}, 216), input({4}, 217)};
     }});
EMBER_GRADCHECK_CASE(
    {"scatter_reduce", "mean with self",
     [](const V& in) {
       return scatter_reduce(in[0], 1, on(in[0], tensor({{0, 0, 2}, {1, 1, 1}})), in[1], "mean");
     },
     [] {
       return V{input({2, 3}, 218), input({2, 4}, 219)};
     }});
EMBER_GRADCHECK_CASE(
    {"scatter_reduce", "prod with a zero",
     [](const V& in) {
       const Tensor src = mul(in[1], on(in[1], tensor({1.0, 0.0, 1.0, 1.0, 1.0}, DType::Float64)));
       return scatter_reduce(in[0], 0, on(in[0], tensor({0, 0, 2, 0, 2})), src, "prod");
     },
     [] {
       return V{input({3}, 220), input({5}, 221)};
     }});
EMBER_GRADCHECK_CASE(
    {"scatter_reduce", "amax without self",
     [](const V& in) {
       return scatter_reduce(in[0], 0, on(in[0], tensor({0, 2, 0, 0, 2})), in[1], "amax", false);
     },
     [] {
       return V{input({3}, 222), input({5}, 223)};
     }});
EMBER_GRADCHECK_CASE(
    {"scatter_reduce", "amin with self",
     [](const V& in) {
       return scatter_reduce(in[0], 0, on(in[0], tensor({1, 2, 1, 1})), in[1], "amin");
     },
     [] {
       return V{input({3}, 224), input({4}, 225)};
     }});
EMBER_GRADCHECK_CASE({"masked_scatter", "broadcast mask, longer source",
                      [](const V& in) {
                        return masked_scatter(in[0], on(in[0], tensor({false, true, true})), in[1]);
                      },
                      [] {
                        return V{input({2, 3}, 226), input({5}, 227)};
                      }});

TEST(ScatterReduce, ExtremaShareTheGradientEvenlyAmongTies) {
  // PyTorch's rule: every value equal to the result, self included, gets g / count.
  Tensor x = tensor({5.0, 1.0}, DType::Float64).requires_grad_(true);
  Tensor src = tensor({5.0, 5.0, 0.5, 1.0}, DType::Float64).requires_grad_(true);
  const Tensor index = tensor({0, 0, 1, 1});
  Tensor y = scatter_reduce(x, 0, index, src, "amax");
  EXPECT_EQ(values(y), (std::vector<double>{5, 1}));
  sum(y).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1.0 / 3, 0.5}));
  EXPECT_EQ(values(src.grad()), (std::vector<double>{1.0 / 3, 1.0 / 3, 0, 0.5}));
}

TEST(ScatterReduce, MatchesLoopsForEveryReduction) {
  Generator gen(7);
  const Tensor x = randint(-5, 6, {4, 3}, TensorOptions(DType::Int64), &gen);
  const Tensor src = randint(-5, 6, {6, 3}, TensorOptions(DType::Int64), &gen);
  const Tensor index = randint(0, 4, {5, 2}, TensorOptions(DType::Int64), &gen);
  const std::vector<double> xv = values(x), sv = values(src), iv = values(index);
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      // The loop: gather every value bound for each place, then reduce.
      std::vector<std::vector<double>> bound(12);
      for (int64_t i = 0; i < 5; ++i) {
        for (int64_t j = 0; j < 2; ++j) {
          bound[static_cast<size_t>(iv[i * 2 + j] * 3 + j)].push_back(sv[i * 3 + j]);
        }
      }
      std::vector<double> want(12);
      for (size_t p = 0; p < 12; ++p) {
        std::vector<double> vs = bound[p];
        if (vs.empty()) {
          want[p] = xv[p];
          continue;
        }
        if (include_self) vs.push_back(xv[p]);
        const std::string r = reduce;
        double acc = r == "prod" ? 1 : r == "amax" ? -1e9 : r == "amin" ? 1e9 : 0;
        for (double v : vs) {
          acc = r == "prod"   ? acc * v
                : r == "amax" ? std::max(acc, v)
                : r == "amin" ? std::min(acc, v)
                              : acc + v;
        }
        if (r == "mean") acc = std::floor(acc / static_cast<double>(vs.size()));
        want[p] = acc;
      }
      EXPECT_EQ(values(scatter_reduce(x, 0, index, src, reduce, include_self)), want)
          << reduce << " include_self=" << include_self;
    }
  }
}

TEST(IndexOps, IndexAddCopyFillMatchLoops) {
  const Tensor x = arange(12, TensorOptions(DType::Float64)).view({3, 4});
  const Tensor src = ones({3, 2}, DType::Float64);
  const Tensor idx = tensor({3, 0});
  EXPECT_EQ(values(index_add(x, 1, idx, src, -1)),
            (std::vector<double>{-1, 1, 2, 2, 3, 5, 6, 6, 7, 9, 10, 10}));
  EXPECT_EQ(values(index_copy(x, 1, idx, src)),
            (std::vector<double>{1, 1, 2, 1, 1, 5, 6, 1, 1, 9, 10, 1}));
  EXPECT_EQ(values(index_fill(x, 0, tensor({1}), -2.0)),
            (std::vector<double>{0, 1, 2, 3, -2, -2, -2, -2, 8, 9, 10, 11}));
  // In place, through apply_inplace; an index past the dim is an IndexError naming the op.
  Tensor y = zeros({3}, DType::Int64);
  index_add_(y, 0, tensor({0, 0, 2}), tensor({1, 2, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{3, 0, 3}));
  EXPECT_THROW(index_add_(y, 0, tensor({3}), tensor({1})), IndexError);
  EXPECT_EQ(values(masked_scatter(zeros({2, 2}), tensor({{true, false}, {true, true}}),
                                  arange(5, TensorOptions(DType::Float32)))),
            (std::vector<double>{0, 0, 1, 2}));
}

TEST(Diagonals, DiagEmbedAndDiagMatchLoops) {
  const Tensor v = tensor({1, 2, 3});
  for (int64_t k : {-2, -1, 0, 1, 3}) {
    const int64_t m = 3 + (k < 0 ? -k : k);
    std::vector<double> want(static_cast<size_t>(m * m), 0);
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t r = k >= 0 ? i : i - k, c = k >= 0 ? i + k : i;
      want[static_cast<size_t>(r * m + c)] = static_cast<double>(i + 1);
    }
    const Tensor d = diag(v, k);
    EXPECT_EQ(d.sizes(), (Shape{m, m})) << k;
    EXPECT_EQ(values(d), want) << k;
    EXPECT_EQ(values(diag(d, k)), (std::vector<double>{1, 2, 3})) << k;
  }
  EXPECT_EQ(diag(zeros({0}), 2).sizes(), (Shape{2, 2}));
  EXPECT_EQ(diag_embed(ones({2, 3}), 0, 0, 2).sizes(), (Shape{3, 2, 3}));
}

TEST(Grids, MeshgridAndTriangleIndices) {
  const auto g = meshgrid({tensor({1, 2}), tensor({3, 4, 5})}, "xy");
  EXPECT_EQ(g[0].sizes(), (Shape{3, 2}));
  EXPECT_EQ(values(g[0]), (std::vector<double>{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(values(g[1]), (std::vector<double>{3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(values(tril_indices(3, 2, 0)), (std::vector<double>{0, 1, 1, 2, 2, 0, 0, 1, 0, 1}));
  EXPECT_EQ(values(triu_indices(2, 3, -1)),
            (std::vector<double>{0, 0, 0, 1, 1, 1, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(tril_indices(0, 3).sizes(), (Shape{2, 0}));
}

}  // namespace
}  // namespace ember::testing
