#!/usr/bin/env python3
"""Writes the nanobind registrations of the ops described in ops.sig (one row per op).

Usage: gen_bindings.py ops.sig out.inc

The rows' format is described at the top of ops.sig; Note [Bindings from one table] in
api/python/src/ops.cpp says why. The output is C++ included inside bind_ops(), where `b` (a
Binder), `m` (the ember module), `f` (ember._C.functional) and `cls` (ember.Tensor) are in scope.
"""
import re
import sys

# Python type of a parameter -> (C++ type of the lambda's parameter, conversion to the local the
# expression reads, or None when the parameter is read as it is).
TYPES = {
    "Tensor": ("const Tensor&", None),
    "Tensor!": ("Tensor&", None),
    "Tensor?": ("std::optional<Tensor>", "opt({})"),
    "Tensor[]": ("const std::vector<Tensor>&", None),
    "Tensor?[]": ("const std::vector<std::optional<Tensor>>&", "opt_tensors({})"),
    "Tensor...": ("nb::args", 'tensors_from_args({}, "{op}")'),
    "Number": ("PyScalar", "Scalar({})"),
    "Number?": ("std::optional<PyScalar>", "opt_scalar({})"),
    "Tensor|Number": ("const Operand&", None),
    "int": ("int64_t", None),
    "int?": ("std::optional<int64_t>", None),
    "int[]": ("const Ints&", "IntList({})"),
    "int[]?": ("const std::optional<Ints>&", "dims_of({})"),
    "int...": ("nb::args", 'sizes_from_args({}, "{op}")'),
    "float": ("double", None),
    "float?": ("std::optional<double>", None),
    "float[2]?": ("const std::optional<std::vector<double>>&", 'range_of({}, "{op}")'),
    "bool": ("bool", None),
    "bool?": ("std::optional<bool>", None),
    "str": ("const std::string&", None),
    "str?": ("const std::optional<std::string>&", "opt_view({})"),
    "dtype": ("DType", None),
    "dtype?": ("std::optional<DType>", None),
    "device?": ("std::optional<Device>", None),
    "Generator?": ("Generator*", None),
    "memory_format": ("MemoryFormat", None),
    "any": ("nb::handle", None),
    # A size per spatial dim, given as an int or a sequence (PyTorch's int[N]): one value for
    # N = 1, N values otherwise.
    "int[1]": ("const Ints&", 'single({}, "{op}", "{name}")'),
    "int[1]?": ("const std::optional<Ints>&",
                '{0} && {0}->size() ? std::optional(single(*{0}, "{op}", "{name}")) : std::nullopt'),
    "int[2]": ("const Ints&", "pair({}, 2)"),
    "int[2]?": ("const std::optional<Ints>&", "{0} ? pair(*{0}, 2) : Shape()"),
    "int[3]": ("const Ints&", "pair({}, 3)"),
    "int[3]?": ("const std::optional<Ints>&", "{0} ? pair(*{0}, 3) : Shape()"),
    # An adaptive pooling's output size: None entries keep the input's size there.
    "int?[2]": ("nb::handle", "adaptive_size(input, {}, 2)"),
    "int?[3]": ("nb::handle", "adaptive_size(input, {}, 3)"),
}
# Types whose parameter takes None without being std::optional (pointers, Tensor?'s default).
NONE_TYPES = ("Tensor?", "Generator?")
# The stub's spelling of the types nanobind cannot name itself (*args).
STUB = {"Tensor...": "ember.Tensor | collections.abc.Sequence[ember.Tensor]",
        "int...": "int | collections.abc.Sequence[int]"}
# ... and of the parameters that may follow them.
STUB_PARAM = {"str?": "str | None", "int": "int", "bool": "bool", "dtype?": "ember.dtype | None"}

ROW = re.compile(r"^(?P<variants>[fmF_~o]+)\s+(?P<names>[\w|]+)\((?P<params>.*?)\)"
                 r"(?:\s*->\s*(?P<ret>[^=|]+?))?(?:\s*=\s*(?P<expr>[^|]+?))?\s*\|\s*(?P<doc>.*)$")


class Param:
    def __init__(self, text, op):
        m = re.match(r"^(\S+)\s+(\w+)(?:\s*=\s*(.+))?$", text.strip())
        if not m:
            raise SystemExit(f"[gen_bindings] {op}: cannot read parameter '{text}'")
        self.type, self.name, self.default = m.group(1), m.group(2), m.group(3)
        if self.type not in TYPES:
            raise SystemExit(f"[gen_bindings] {op}: unknown type '{self.type}'")
        self.cxx, self.convert = TYPES[self.type]
        self.py = self.name + "_py" if self.convert else self.name

    def arg(self):
        """The nanobind annotation: "name"_a, with its default."""
        if self.default is None:  # a Tensor? without a default still takes None
            return f'"{self.name}"_a' + (".none()" if self.type in NONE_TYPES else "")
        d = self.default
        if d == "None":
            value = "nb::none()"
            if self.type in NONE_TYPES:  # a pointer that takes None
                return f'"{self.name}"_a.none() = {value}'
        elif d in ("True", "False"):
            value = d.lower()
        elif d.startswith("'"):
            value = '"' + d.strip("'") + '"'
        else:
            value = d
        return f'"{self.name}"_a = {value}'


def dispatch(expr, operands):
    """expr with each Tensor|Number parameter read as a tensor or as a number."""
    if not operands:
        return expr
    p, rest = operands[0], operands[1:]
    as_tensor = re.sub(rf"\b{p}\b", f"*{p}.tensor", expr)
    as_number = re.sub(rf"\b{p}\b", f"{p}.scalar", expr)
    return f"({p}.tensor ? {dispatch(as_tensor, rest)} : {dispatch(as_number, rest)})"


def lambda_of(op, params, expr, ret, inplace):
    """The C++ lambda of one registration."""
    decl = ", ".join(f"{p.cxx} {p.py}" for p in params)
    lines = []
    for p in params:
        if p.convert:
            lines.append(f"const auto {p.name} = {p.convert.format(p.py, op=op, name=p.name)};")
    body = dispatch(expr, [p.name for p in params if p.type == "Tensor|Number"])
    for p in params:  # a PyTorch parameter Ember has no use for (sort's stable)
        if not re.search(rf"\b{p.name}\b", body + " ".join(lines)):
            lines.insert(0, f"static_cast<void>({p.py});")
    if ret and ret.startswith("("):  # a named tuple of ember.return_types
        tuple_name = ret.rsplit(")", 1)[1].strip()
        lines.append("std::tuple<Tensor, Tensor> r;")
        lines.append(f"{{ GilRelease release; r = {body}; }}")
        lines.append(f'return values_indices(std::move(r), "{tuple_name}");')
        result = "nb::object"
    else:
        lines.append("GilRelease release;")
        lines.append(f"return {body};")
        result = "Tensor&" if inplace else {"bool": "bool", "float": "double", "int": "int64_t",
                                            "dtype": "DType",
                                            "Tensor[]": "std::vector<Tensor>"}.get(ret, "Tensor")
    return f"[]({decl}) -> {result} {{ " + " ".join(lines) + " }"


def inplace_expr(expr, name):
    """The call of the in-place kernel: name(...) -> name_(...), input.name(...) -> input.name_(...)."""
    out, n = re.subn(rf"^(input\.)?{name}\(", lambda m: (m.group(1) or "") + name + "_(", expr)
    if n != 1:
        raise SystemExit(f"[gen_bindings] {name}: the in-place form needs an expression calling {name}")
    return out


def stub_signature(name, params, is_method, ret):
    """The stub's line of a function taking *args, which nanobind cannot spell."""
    args = ["self"] if is_method else []
    for p in params[1:] if is_method else params:
        if p.type in STUB:
            args.append(f"*{p.name}: {STUB[p.type]}")
        else:
            spelled = STUB_PARAM[p.type] + (f" = {p.default}" if p.default else "")
            args.append(f"{p.name}: {spelled}")
    returns = "tuple[ember.Tensor, ...]" if ret == "Tensor[]" else "ember.Tensor"
    return f'nb::sig("def {name}({", ".join(args)}) -> {returns}")'


def generate(rows):
    out = ["// Generated by api/python/gen_bindings.py from api/python/ops.sig: do not edit."]
    for lineno, row in rows:
        m = ROW.match(row)
        if not m:
            raise SystemExit(f"[gen_bindings] ops.sig:{lineno}: cannot read row '{row}'")
        names = m.group("names").split("|")
        op = names[0]
        texts = [t.strip() for t in m.group("params").split(",") if t.strip()]
        params, annotations = [], []
        for t in texts:
            if t == "*":
                annotations.append("nb::kw_only()")
                continue
            p = Param(t, op)
            params.append(p)
            annotations.append(p.arg())
        ret = (m.group("ret") or "Tensor").strip()
        expr = (m.group("expr") or f"{op}({', '.join(p.name for p in params)})").strip()
        doc = m.group("doc").strip().replace("\\", "\\\\").replace('"', '\\"')
        variants = m.group("variants")
        takes_input = bool(params) and params[0].name == "input" and params[0].type.startswith("Tensor")
        if any(v in variants for v in "m_~o") and not takes_input:
            raise SystemExit(f"[gen_bindings] ops.sig:{lineno}: a method needs 'Tensor input' first")
        varargs = any(p.type in STUB for p in params)
        fn = lambda_of(op, params, expr, ret, inplace=False)
        out.append(f"{{  // ops.sig:{lineno}")
        out.append(f"  auto fn = {fn};")
        rest = annotations[1:] if takes_input else annotations
        for name in names:
            if "m" in variants:
                extra = [stub_signature(name, params, True, ret)] if varargs else []
                out.append(f'  cls.def("{name}", fn, {", ".join(rest + extra + [chr(34) + doc + chr(34)])});')
            if "o" in variants:  # an operator: NotImplemented when the operand does not convert
                out.append(f'  cls.def("{name}", fn, nb::is_operator(), "{doc}");')
            for module, letter in (("m", "f"), ("f", "F")):
                if letter in variants:
                    first = ['"input"_a'] if takes_input else []
                    extra = [stub_signature(name, params, False, ret)] if varargs else []
                    out.append(f'  {module}.def("{name}", fn, {", ".join(first + rest + extra + [chr(34) + doc + chr(34)])});')
        if "_" in variants:
            self_params = [Param("Tensor! input", op)] + params[1:]
            fn_ = lambda_of(op, self_params, inplace_expr(expr, op), "Tensor", inplace=True)
            out.append(f"  auto fn_ = {fn_};")
            for name in names:
                out.append(f'  cls.def("{name}_", fn_, '
                           f'{", ".join(rest + [chr(34) + "In place: " + doc + chr(34)])});')
        if "~" in variants:
            for name in names:
                out.append(f'  inplace_forms.push_back("{name}");')
        out.append("}")
    return "\n".join(out) + "\n"


def read_rows(path):
    rows, current = [], None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            text = line.rstrip("\n")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            if text.startswith(" ") and current is not None:  # a continuation line
                current[1] += " " + text.strip()
                continue
            current = [lineno, text.strip()]
            rows.append(current)
    return [(n, r) for n, r in rows]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: gen_bindings.py ops.sig out.inc")
    text = generate(read_rows(sys.argv[1]))
    try:
        with open(sys.argv[2], encoding="utf-8") as f:
            if f.read() == text:
                sys.exit(0)
    except FileNotFoundError:
        pass
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(text)
