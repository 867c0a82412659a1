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

}  // namespace
}  // namespace ember::testing
