#include "bind.h"
namespace ember::python {
void bind_profiler(nb::module_& m) { m.def_submodule("profiler"); }
}  // namespace ember::python
