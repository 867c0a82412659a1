"""torch.distributions: probability distributions to sample from and score samples by, with
autograd through their parameters (the score-function estimator of REINFORCE through
``log_prob``, the reparameterized one through ``rsample``)."""

import math
from numbers import Number
from typing import Any, Optional, Sequence, Tuple

import ember

__all__ = ["Distribution", "Categorical", "Bernoulli", "Normal", "Uniform", "kl_divergence"]

# Note [Distributions in Python]: a distribution is a few formulas over ops Ember already has
# (softmax, gather, multinomial, randn); PyTorch keeps them in Python for the same reason, and a
# C++ program samples with those ops directly. Parameters are broadcast to one batch shape at
# construction; a sample has shape sample_shape + batch_shape + event_shape.


def _as_tensor(v: Any, like: Optional[ember.Tensor] = None) -> ember.Tensor:
    if isinstance(v, ember.Tensor):
        return v
    dtype = like.dtype if like is not None else ember.get_default_dtype()
    device = like.device if like is not None else None
    return ember.tensor(v, dtype=dtype, device=device)


def _broadcast(*values: Any) -> Tuple[ember.Tensor, ...]:
    like = next((v for v in values if isinstance(v, ember.Tensor)), None)
    tensors = [_as_tensor(v, like) for v in values]
    return tuple(ember.broadcast_tensors(*tensors))


def _extended(sample_shape: Sequence[int], shape: Sequence[int]) -> Tuple[int, ...]:
    return tuple(sample_shape) + tuple(shape)


class Distribution:
    """The interface every distribution has: shapes, sampling, scoring."""

    has_rsample = False

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = (),
                 validate_args: Optional[bool] = None) -> None:
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)

    @property
    def batch_shape(self) -> "ember.Size":
        """The shape over which parameters vary."""
        return self._batch_shape

    @property
    def event_shape(self) -> "ember.Size":
        """The shape of one sample."""
        return self._event_shape

    def sample(self, sample_shape: Sequence[int] = ()) -> ember.Tensor:
        """Draws samples without gradient."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> ember.Tensor:
        """Draws samples whose gradient flows to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler")

    def sample_n(self, n: int) -> ember.Tensor:
        """n samples (the old spelling of sample((n,)))."""
        return self.sample((n,))

    def log_prob(self, value: ember.Tensor) -> ember.Tensor:
        """The log density or mass of value."""
        raise NotImplementedError

    def entropy(self) -> ember.Tensor:
        """The entropy, per batch element."""
        raise NotImplementedError

    def perplexity(self) -> ember.Tensor:
        """exp(entropy)."""
        return self.entropy().exp()

    @property
    def stddev(self) -> ember.Tensor:
        """The standard deviation."""
        return self.variance.sqrt()

    def _check_sample(self, value: ember.Tensor) -> ember.Tensor:
        if not isinstance(value, ember.Tensor):
            raise TypeError(f"[{type(self).__name__}.log_prob] the value must be a Tensor, got "
                            f"{type(value).__name__}")
        return value

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Categorical(Distribution):
    """Draws an index in [0, K) with the given probabilities (or logits) over the last dim."""

    def __init__(self, probs: Optional[ember.Tensor] = None, logits: Optional[ember.Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("[Categorical] exactly one of probs or logits must be given")
        given = probs if probs is not None else logits
        if not isinstance(given, ember.Tensor) or given.dim() < 1:
            raise ValueError("[Categorical] probs or logits must be a tensor of at least one dim "
                             "(the categories are its last dim)")
        if probs is not None:
            if validate_args is not False and bool((probs < 0).any()):
                raise ValueError("[Categorical] probs must be non-negative")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(min=ember.finfo(probs.dtype).tiny).log()
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.softmax(-1)
        self._num_events = given.shape[-1]
        super().__init__(given.shape[:-1])

    @property
    def param_shape(self) -> "ember.Size":
        """The shape of probs and logits."""
        return self.probs.shape

    @property
    def mean(self) -> ember.Tensor:
        """Undefined for categories: nan."""
        return ember.full(self.batch_shape, math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> ember.Tensor:
        """The most probable category."""
        return self.probs.argmax(-1)

    @property
    def variance(self) -> ember.Tensor:
        """Undefined for categories: nan."""
        return self.mean

    def sample(self, sample_shape: Sequence[int] = ()) -> ember.Tensor:
        n = math.prod(sample_shape)
        with ember.no_grad():
            flat = self.probs.reshape(-1, self._num_events)
            draws = ember.multinomial(flat, max(n, 1), replacement=True)  # (batch, n)
            draws = draws[:, :n].t().contiguous()
        return draws.reshape(_extended(sample_shape, self.batch_shape))

    def log_prob(self, value: ember.Tensor) -> ember.Tensor:
        value = self._check_sample(value).long()
        value, logits = value.unsqueeze(-1), self.logits
        shape = ember.broadcast_tensors(value, logits[..., :1])[0].shape
        value = value.expand(shape)
        logits = logits.expand(shape[:-1] + (self._num_events,))
        return logits.gather(-1, value).squeeze(-1)

    def entropy(self) -> ember.Tensor:
        min_real = ember.finfo(self.logits.dtype).min
        return -(self.logits.clamp(min=min_real) * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> ember.Tensor:
        """Every category, shaped to broadcast against the batch."""
        values = ember.arange(self._num_events, device=self.probs.device)
        values = values.view((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values

    def __repr__(self) -> str:
        return f"Categorical(probs: {tuple(self.probs.shape)})"


class Bernoulli(Distribution):
    """Draws 1 with probability probs (or sigmoid(logits)), else 0."""

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("[Bernoulli] exactly one of probs or logits must be given")
        if probs is not None:
            (self.probs,) = _broadcast(probs)
            if validate_args is not False and bool(((self.probs < 0) | (self.probs > 1)).any()):
                raise ValueError("[Bernoulli] probs must lie in [0, 1]")
            p = self.probs.clamp(ember.finfo(self.probs.dtype).eps,
                                 1 - ember.finfo(self.probs.dtype).eps)
            self.logits = p.log() - (-p).log1p()
        else:
            (self.logits,) = _broadcast(logits)
            self.probs = self.logits.sigmoid()
        super().__init__(self.probs.shape)

    @property
    def mean(self) -> ember.Tensor:
        """probs."""
        return self.probs

    @property
    def mode(self) -> ember.Tensor:
        """1 where probs >= 0.5."""
        return (self.probs >= 0.5).to(self.probs.dtype)

    @property
    def variance(self) -> ember.Tensor:
        """probs (1 - probs)."""
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> ember.Tensor:
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(_extended(sample_shape, self.batch_shape)))

    def log_prob(self, value: ember.Tensor) -> ember.Tensor:
        logits, value = _broadcast(self.logits, self._check_sample(value).to(self.logits.dtype))
        return -ember.nn.functional.binary_cross_entropy_with_logits(logits, value,
                                                                     reduction="none")

    def entropy(self) -> ember.Tensor:
        return ember.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                                    reduction="none")


class Normal(Distribution):
    """The Gaussian with mean loc and standard deviation scale."""

    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = _broadcast(loc, scale)
        if validate_args is not False and bool((self.scale <= 0).any()):
            raise ValueError("[Normal] scale must be positive")
        super().__init__(self.loc.shape)

    @property
    def mean(self) -> ember.Tensor:
        """loc."""
        return self.loc

    @property
    def mode(self) -> ember.Tensor:
        """loc."""
        return self.loc

    @property
    def stddev(self) -> ember.Tensor:
        """scale."""
        return self.scale

    @property
    def variance(self) -> ember.Tensor:
        """scale squared."""
        return self.scale.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> ember.Tensor:
        shape = _extended(sample_shape, self.batch_shape)
        eps = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: ember.Tensor) -> ember.Tensor:
        value = self._check_sample(value)
        var = self.scale.pow(2)
        return -((value - self.loc).pow(2)) / (2 * var) - self.scale.log() - \
            math.log(math.sqrt(2 * math.pi))

    def cdf(self, value: ember.Tensor) -> ember.Tensor:
        """P(X <= value)."""
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value: ember.Tensor) -> ember.Tensor:
        """The value below which the given probability lies."""
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> ember.Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """Uniform on [low, high)."""

    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: Optional[bool] = None) -> None:
        self.low, self.high = _broadcast(low, high)
        if validate_args is not False and bool((self.low >= self.high).any()):
            raise ValueError("[Uniform] low must be below high")
        super().__init__(self.low.shape)

    @property
    def mean(self) -> ember.Tensor:
        """The midpoint."""
        return (self.high + self.low) / 2

    @property
    def variance(self) -> ember.Tensor:
        """(high - low)^2 / 12."""
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Sequence[int] = ()) -> ember.Tensor:
        shape = _extended(sample_shape, self.batch_shape)
        u = ember.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: ember.Tensor) -> ember.Tensor:
        value = self._check_sample(value)
        inside = (value >= self.low) & (value < self.high)
        return ember.where(inside, -(self.high - self.low).log(),
                           ember.full_like(value, -math.inf))

    def cdf(self, value: ember.Tensor) -> ember.Tensor:
        """P(X <= value)."""
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def entropy(self) -> ember.Tensor:
        return (self.high - self.low).log()


def kl_divergence(p: Distribution, q: Distribution) -> ember.Tensor:
    """KL(p || q) for two distributions of the same family."""
    if isinstance(p, Categorical) and isinstance(q, Categorical):
        t = p.probs * (p.logits - q.logits)
        return ember.where(p.probs == 0, ember.zeros_like(t), t).sum(-1)
    if isinstance(p, Normal) and isinstance(q, Normal):
        var_ratio = (p.scale / q.scale).pow(2)
        t1 = ((p.loc - q.loc) / q.scale).pow(2)
        return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())
    if isinstance(p, Bernoulli) and isinstance(q, Bernoulli):
        f = ember.nn.functional.binary_cross_entropy_with_logits
        return f(q.logits, p.probs, reduction="none") - f(p.logits, p.probs, reduction="none")
    raise NotImplementedError(f"[kl_divergence] no formula for {type(p).__name__} and "
                              f"{type(q).__name__}")
