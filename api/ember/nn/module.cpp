#include "ember/nn/module.h"
