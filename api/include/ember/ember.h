// The one header users include: the core (<ember/tensor.h>: tensors, ops, autograd, plugins and
// devices) and the user library (nn, optim, data, io, models).
#pragma once

#include "ember/amp.h"
#include "ember/data.h"
#include "ember/io.h"
#include "ember/models.h"
#include "ember/nn.h"
#include "ember/optim.h"
#include "ember/tensor.h"
