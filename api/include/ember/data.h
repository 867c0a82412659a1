// ember::data: datasets, samplers, a threaded DataLoader and the (Fashion-)MNIST reader.
#pragma once

#include "ember/data/dataloader.h"
#include "ember/data/dataset.h"
#include "ember/data/mnist.h"
#include "ember/data/sampler.h"
