// Softmax and log-softmax along one dim.
#pragma once

#include "ember/tensor/tensor.h"

namespace ember {

/** exp(x - max) / sum(exp(x - max)) along `dim`. */
EMBER_API Tensor softmax(const Tensor& x, int64_t dim);
/** x - max - log(sum(exp(x - max))) along `dim`. */
EMBER_API Tensor log_softmax(const Tensor& x, int64_t dim);
/** softmax(-x, dim) (F.softmin). */
EMBER_API Tensor softmin(const Tensor& x, int64_t dim);

}  // namespace ember
