// ember::nn: modules, layers, recurrent and attention layers, containers, losses and
// initialisers.
#pragma once

#include "ember/nn/container.h"
#include "ember/nn/ddp.h"
#include "ember/nn/fuse.h"
#include "ember/nn/init.h"
#include "ember/nn/layers.h"
#include "ember/nn/loss.h"
#include "ember/nn/module.h"
#include "ember/nn/reparam.h"
#include "ember/nn/rnn.h"
#include "ember/nn/transformer.h"
