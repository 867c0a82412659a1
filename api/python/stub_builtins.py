"""Makes nanobind's generated stubs type-check, then touches a marker file:

- int, float and bool in annotations become builtins.int, builtins.float and builtins.bool.
  Tensor has methods named int(), float() and bool() (as torch.Tensor does), so inside its class
  body a bare `int` names the method, not the type; PyTorch's stubs write builtins.int too.
- dtype and device in annotations become aliases defined at the end of the stub, for the same
  reason (Tensor.dtype and Tensor.device are properties).
- Tensor's __eq__ and __ne__ return tensors, as PyTorch's do; their stubs say so with the same
  `type: ignore[override]` PyTorch's carry.
- nn.Module's forward is declared as PyTorch declares it, `forward: Callable[..., Any]`, so that a
  subclass may define forward with any signature (and the layers' own forwards, which take
  other arguments, are not reported as incompatible overrides).

    python stub_builtins.py <marker> <stub.pyi>...
"""

import pathlib
import re
import sys

# A name in an annotation: after ': ', '-> ', '| ' or '[', or after ', ' unless it is a parameter's
# name there (followed by ':'); never a call.
ANNOTATION = re.compile(r"(: |> |\| |\[|, (?!\w+:))(int|float|bool|dtype|device)\b(?!\()")
ALIASES = {"dtype": "_DTypeAlias", "device": "_DeviceAlias"}


def fix(path: pathlib.Path) -> None:
    text = path.read_text()
    defines_aliases = "\nclass dtype:" in text and "\nclass device:" in text

    def replace(m: re.Match) -> str:
        name = m.group(2)
        if name in ALIASES:
            return m.group(0) if not defines_aliases else m.group(1) + ALIASES[name]
        return m.group(1) + "builtins." + name

    fixed = ANNOTATION.sub(replace, text)
    fixed = re.sub(r"(\n    def __(eq|ne)__\(self, [^\n]*\) -> Tensor:?[^\n]*)",
                   lambda m: m.group(1) + ("" if "type: ignore" in m.group(1) else "  # type: ignore[override]"),
                   fixed)
    fixed = re.sub(
        r"(\nclass Module:\n(?:.*\n)*?)    def forward\(self, input: [\w.]+\) -> [\w.]+:\n"
        r"        \"\"\"[^\n]*\"\"\"\n",
        lambda m: m.group(1) + "    forward: typing.Callable[..., typing.Any]\n",
        fixed, count=1)
    if "typing.Callable" in fixed and "\nimport typing\n" not in fixed:
        fixed = fixed.replace("\nimport builtins\n", "\nimport builtins\nimport typing\n", 1) \
            if "\nimport builtins\n" in fixed else "import typing\n" + fixed
    if fixed != text and "\nimport builtins\n" not in fixed:
        lines = fixed.split("\n")
        at = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
        lines.insert(at, "import builtins")
        fixed = "\n".join(lines)
    if defines_aliases:
        fixed = fixed.rstrip("\n") + "\n\n" + "".join(
            f"{alias} = {name}\n" for name, alias in ALIASES.items())
    path.write_text(fixed)


def main() -> None:
    marker, *stubs = sys.argv[1:]
    for stub in stubs:
        fix(pathlib.Path(stub))
    pathlib.Path(marker).touch()


if __name__ == "__main__":
    main()
