#include "bind.h"
namespace ember::python {
void bind_io(nb::module_& m) { m.def_submodule("io"); }
}  // namespace ember::python
