#include <gtest/gtest.h>

#include <ember/ember.h>
