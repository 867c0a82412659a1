"""A custom autograd Function written in Python: softplus with its own backward, checked
against finite differences and used inside a model.

    python examples/python/custom_function.py
"""

import ember
from ember import nn
from ember.autograd import Function


class Softplus(Function):
    """log(1 + exp(x)), computed without overflow; d/dx = sigmoid(x)."""

    @staticmethod
    def forward(ctx, x, beta):
        ctx.beta = beta
        ctx.save_for_backward(x)
        z = x * beta
        return (ember.relu(z) + ember.log1p(ember.exp(-z.abs()))) / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ember.sigmoid(x * ctx.beta), None  # no gradient for beta


def main():
    x = ember.randn(6, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: Softplus.apply(t, 2.0), (x,))
    print("gradcheck passed")

    model = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 1))
    inputs = ember.randn(32, 4)
    targets = inputs.sum(dim=1, keepdim=True).abs()
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    for step in range(200):
        loss = ((Softplus.apply(model(inputs), 1.0) - targets) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")
    print(f"final loss {loss.item():.4f}, grad_fn of the output: {Softplus.apply(x, 1.0).grad_fn.name()}")


if __name__ == "__main__":
    main()
