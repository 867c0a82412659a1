"""torch.special: the special functions under their SciPy-style names. Each is the core op of the
same meaning (ember.erfc, ember.digamma...), so values, dtypes and gradients are those ops'."""

import ember

erf = ember.erf
erfc = ember.erfc
erfinv = ember.erfinv
expit = ember.sigmoid
logit = ember.logit
digamma = ember.digamma
psi = ember.digamma
polygamma = ember.polygamma
gammaln = ember.lgamma
log1p = ember.log1p
expm1 = ember.expm1
exp2 = ember.exp2
sinc = ember.sinc
round = ember.round
xlogy = ember.xlogy
logsumexp = ember.logsumexp
softmax = ember.softmax
log_softmax = ember.log_softmax

__all__ = [
    "digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p",
    "log_softmax", "logit", "logsumexp", "polygamma", "psi", "round", "sinc", "softmax", "xlogy",
]
