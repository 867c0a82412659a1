#include "bind.h"
namespace ember::python {
void bind_data(nb::module_& m) { m.def_submodule("data"); }
}  // namespace ember::python
