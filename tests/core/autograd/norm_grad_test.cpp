#include "tests/core/autograd/gradcheck_cases.h"
