#include "bind.h"
namespace ember::python {
void bind_amp(nb::module_& m) { m.def_submodule("amp"); }
}  // namespace ember::python
