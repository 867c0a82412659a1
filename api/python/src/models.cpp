#include "bind.h"
namespace ember::python {
void bind_models(nb::module_& m) { m.def_submodule("models"); }
}  // namespace ember::python
