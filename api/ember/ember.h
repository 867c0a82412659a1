// The one header users include: tensors, ops, plugins and devices.
#pragma once

#include "core/autograd/engine.h"
#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/gradcheck.h"
#include "core/autograd/node.h"
#include "core/dispatch/op.h"
#include "core/ops/elementwise.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/linalg.h"
#include "core/ops/memory.h"
#include "core/ops/reduce.h"
#include "core/ops/softmax.h"
#include "core/plugin/loader.h"
#include "core/tensor/dlpack.h"
#include "core/tensor/tensor.h"
