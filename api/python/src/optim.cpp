#include "bind.h"
namespace ember::python {
void bind_optim(nb::module_& m) { m.def_submodule("optim"); }
}  // namespace ember::python
