// Data-parallel training across processes: process groups, collectives and their stores
// (ember::distributed); nn::DistributedDataParallel is in <ember/nn.h>.
#pragma once

#include "ember/distributed/process_group.h"
#include "ember/distributed/store.h"
