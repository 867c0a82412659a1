#include "bind.h"
namespace ember::python {
void bind_distributed(nb::module_& m) { m.def_submodule("distributed"); }
}  // namespace ember::python
