// ember::optim: optimizers (SGD, Adam, AdamW, RMSprop, Adadelta, Adagrad, LBFGS), LR schedulers and
// gradient clipping.
#pragma once

#include "ember/optim/adadelta.h"
#include "ember/optim/adam.h"
#include "ember/optim/adam_variants.h"
#include "ember/optim/clip_grad.h"
#include "ember/optim/lbfgs.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/sgd.h"
