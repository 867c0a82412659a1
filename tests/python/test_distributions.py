"""ember.distributions against formulas computed here in float64 NumPy, and the gradients the
REINFORCE and reparameterized estimators need."""

import math

import numpy as np
import pytest

import ember
from ember.distributions import Bernoulli, Categorical, Normal, Uniform, kl_divergence


def test_categorical_normalizes_probs_and_scores_samples():
    p = np.array([[1.0, 3.0], [2.0, 2.0], [0.5, 4.5]])
    c = Categorical(ember.tensor(p))
    q = p / p.sum(-1, keepdims=True)
    assert c.batch_shape == (3,) and c.event_shape == ()
    np.testing.assert_allclose(c.probs.numpy(), q, rtol=1e-6)
    value = ember.tensor([1, 0, 1])
    np.testing.assert_allclose(c.log_prob(value).numpy(), np.log(q[[0, 1, 2], [1, 0, 1]]),
                               rtol=1e-5)
    np.testing.assert_allclose(c.entropy().numpy(), -(q * np.log(q)).sum(-1), rtol=1e-5)
    # log_prob broadcasts a sample batch against the distribution's batch.
    assert c.log_prob(ember.zeros(5, 3, dtype=ember.int64)).shape == (5, 3)


def test_categorical_samples_follow_the_probabilities():
    ember.manual_seed(0)
    c = Categorical(logits=ember.tensor([0.0, math.log(3.0)]))
    s = c.sample((4000,))
    assert s.shape == (4000,) and s.dtype == ember.int64
    assert abs(float(s.float().mean()) - 0.75) < 0.03
    assert Categorical(ember.ones(2, 5)).sample((7,)).shape == (7, 2)


def test_categorical_log_prob_carries_the_score_function_gradient():
    logits = ember.tensor([0.2, -0.4, 1.0], requires_grad=True)
    Categorical(logits=logits).log_prob(ember.tensor(2)).backward()
    e = np.exp([0.2, -0.4, 1.0])
    expected = -e / e.sum()
    expected[2] += 1  # d/dlogits log softmax(logits)[2]
    np.testing.assert_allclose(logits.grad.numpy(), expected, rtol=1e-5)


def test_categorical_zero_probability_has_finite_entropy():
    c = Categorical(ember.tensor([0.0, 1.0]))
    assert float(c.entropy()) == 0.0
    assert float(c.log_prob(ember.tensor(0))) < -80


def test_normal_matches_the_gaussian_density_and_reparameterizes():
    loc = ember.tensor([0.0, 1.0], dtype=ember.float64, requires_grad=True)
    scale = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    n = Normal(loc, scale)
    x = np.array([0.5, -1.0])
    want = -((x - [0, 1]) ** 2) / (2 * np.array([1.0, 4.0])) - np.log([1, 2]) - \
        0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(n.log_prob(ember.tensor(x)).detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(n.entropy().detach().numpy(),
                               0.5 * np.log(2 * math.pi * math.e * np.array([1.0, 4.0])))
    np.testing.assert_allclose(n.cdf(ember.tensor([0.0, 1.0], dtype=ember.float64)).detach().numpy(),
                               [0.5, 0.5])
    s = n.rsample((3,))
    assert s.shape == (3, 2) and s.requires_grad
    s.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [3.0, 3.0])
    assert not n.sample().requires_grad


def test_bernoulli_and_uniform():
    b = Bernoulli(ember.tensor([0.25]))
    np.testing.assert_allclose(b.log_prob(ember.tensor([1.0])).numpy(), [math.log(0.25)],
                               rtol=1e-5)
    np.testing.assert_allclose(b.entropy().numpy(),
                               [-(0.25 * math.log(0.25) + 0.75 * math.log(0.75))], rtol=1e-5)
    ember.manual_seed(1)
    assert abs(float(Bernoulli(0.3).sample((5000,)).mean()) - 0.3) < 0.03
    u = Uniform(ember.tensor(1.0), ember.tensor(3.0))
    assert float(u.log_prob(ember.tensor(2.0))) == pytest.approx(-math.log(2.0))
    assert float(u.log_prob(ember.tensor(4.0))) == -math.inf
    s = u.sample((1000,))
    assert float(s.min()) >= 1.0 and float(s.max()) < 3.0


def test_kl_divergence_of_closed_forms():
    p, q = Categorical(ember.tensor([0.5, 0.5])), Categorical(ember.tensor([0.25, 0.75]))
    want = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert float(kl_divergence(p, q)) == pytest.approx(want, rel=1e-5)
    n1, n2 = Normal(0.0, 1.0), Normal(1.0, 2.0)
    want = math.log(2.0) + (1 + 1) / (2 * 4) - 0.5
    assert float(kl_divergence(n1, n2)) == pytest.approx(want, rel=1e-5)
    with pytest.raises(NotImplementedError):
        kl_divergence(n1, p)


def test_bad_parameters_are_value_errors():
    with pytest.raises(ValueError, match="exactly one of probs or logits"):
        Categorical()
    with pytest.raises(ValueError, match="non-negative"):
        Categorical(ember.tensor([0.5, -0.1]))
    with pytest.raises(ValueError, match="scale must be positive"):
        Normal(0.0, 0.0)
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        Bernoulli(1.5)
