// The list of ops declared differentiable, so tests can prove each has a gradcheck case.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "ember/util/export.h"

namespace ember::autograd {

/** Names of every op whose file declared it differentiable, sorted. */
EMBER_API std::vector<std::string> differentiable_ops();

/** A static object per op file: `static DeclareDifferentiable d{"add", "sub"};`. */
struct EMBER_API DeclareDifferentiable {
  DeclareDifferentiable(std::initializer_list<const char*> names);
};

}  // namespace ember::autograd
