// Mixed precision: autocast scopes (<ember/amp/autocast.h>, in the core) and GradScaler.
#pragma once

#include "ember/amp/autocast.h"
#include "ember/amp/grad_scaler.h"
