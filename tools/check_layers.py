#!/usr/bin/env python3
"""Checks that the core's folders include each other only downward (ARCHITECTURE.md, "Layers").

    tools/check_layers.py [CORE_DIR]     # default: core/ next to this script's parent
    tools/check_layers.py --self-test    # proves the check catches what it should

Every file under core/<layer>/ and core/include/ember/<layer>/ belongs to <layer>. A file may
include headers of its own layer and of the layers below it; an include of a layer above is an
error, and so is an include cycle between files. The users' umbrella <ember/tensor.h> may include
every layer, and no core source may include it. Includes of anything else (the plugin ABI and
SDK, <ember/version.h>, the standard library, third-party headers) are not layered.
"""

import os
import re
import sys
import tempfile

# Lowest first. A layer may include itself and anything to its left.
LAYERS = ["util", "tensor", "dispatch", "plugin", "autograd", "amp", "ops", "profiler"]
UMBRELLA = "include/ember/tensor.h"

# Includes that still point upward, each waiting for its inversion. The check fails on any upward
# include not listed here and on any entry that no longer occurs, so this list only shrinks.
KNOWN_INVERSIONS = {
}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]((?:ember|core)/[^">]+)[">]')
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cu", ".cuh", ".def", ".inc")


def layer_of_file(rel):
    """The layer of a file by its path relative to the core directory, or None."""
    parts = rel.split("/")
    if parts[:2] == ["include", "ember"]:
        parts = parts[2:]
    return parts[0] if len(parts) > 1 and parts[0] in LAYERS else None


def layer_of_include(path):
    """The layer an include names ("ember/ops/factory.h", "core/util/log.h"), or None."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[1] in LAYERS else None


def file_of_include(path):
    """The file an include names, relative to the core directory, or None outside the core."""
    parts = path.split("/")
    if parts[0] == "core":
        return "/".join(parts[1:])
    if parts[0] == "ember":
        return "include/" + path
    return None


def scan(core):
    """Every (file, line number, include) under `core`, files relative to it."""
    out = []
    for root, dirs, files in os.walk(core):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(SOURCE_EXT):
                continue
            full = os.path.join(root, name)
            rel = os.path.relpath(full, core).replace(os.sep, "/")
            with open(full, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m:
                        out.append((rel, number, m.group(1)))
    return out


def find_cycle(edges):
    """One include cycle among files as a list of files, or None."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def check(core, known=None):
    """The errors of the core at `core` as strings (none if it is layered)."""
    known = KNOWN_INVERSIONS if known is None else known
    order = " -> ".join(LAYERS)
    errors, seen_known, file_edges = [], set(), []
    for rel, number, inc in scan(core):
        target = file_of_include(inc)
        if target and os.path.exists(os.path.join(core, target)):
            file_edges.append((rel, target))
        if rel == UMBRELLA:
            continue
        if inc == "ember/tensor.h":
            errors.append(f"core/{rel}:{number}: includes the users' umbrella <ember/tensor.h>; "
                          "include the headers of what it uses")
            continue
        src, dst = layer_of_file(rel), layer_of_include(inc)
        if src is None or dst is None or LAYERS.index(dst) <= LAYERS.index(src):
            continue
        if (rel, inc) in known:
            seen_known.add((rel, inc))
            continue
        errors.append(f"core/{rel}:{number}: {src} includes {inc} of {dst}, a layer above it "
                      f"(layers, lowest first: {order}); invert it: a hook the higher layer "
                      "installs, or move the code to the layer it belongs to")
    for rel, inc in sorted(set(known) - seen_known):
        errors.append(f"core/{rel}: no longer includes {inc}: remove it from KNOWN_INVERSIONS "
                      "in tools/check_layers.py")
    cycle = find_cycle(file_edges)
    if cycle:
        errors.append("include cycle: " + " -> ".join("core/" + f for f in cycle))
    return errors


def self_test():
    """Builds small trees and checks that each rule catches its case."""
    def tree(files):
        d = tempfile.mkdtemp()
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                f.write(text)
        return d

    good = tree({
        "include/ember/util/error.h": "#pragma once\n",
        "include/ember/tensor/tensor.h": '#include "ember/util/error.h"\n',
        "include/ember/ops/factory.h": '#include "ember/tensor/tensor.h"\n#include <vector>\n',
        "include/ember/tensor.h": '#include "ember/ops/factory.h"\n',
        "ops/factory.cpp": '#include "ember/ops/factory.h"\n#include "ember/plugin_abi.h"\n',
    })
    assert check(good, known={}) == [], check(good, known={})
    upward = tree({
        "include/ember/ops/factory.h": "#pragma once\n",
        "tensor/tensor.cpp": '#include "ember/ops/factory.h"\n',
    })
    errors = check(upward, known={})
    assert len(errors) == 1 and "core/tensor/tensor.cpp:1: tensor includes ember/ops/factory.h" \
        in errors[0], errors
    assert check(upward, known={("tensor/tensor.cpp", "ember/ops/factory.h")}) == []
    stale = check(good, known={("ops/factory.cpp", "ember/profiler/profiler.h")})
    assert len(stale) == 1 and "no longer includes" in stale[0], stale
    cyclic = tree({
        "include/ember/ops/a.h": '#include "ember/ops/b.h"\n',
        "include/ember/ops/b.h": '#include "ember/ops/a.h"\n',
    })
    errors = check(cyclic, known={})
    assert len(errors) == 1 and errors[0].startswith("include cycle: "), errors
    umbrella = tree({
        "include/ember/tensor.h": "#pragma once\n",
        "ops/x.cpp": '#include "ember/tensor.h"\n',
    })
    errors = check(umbrella, known={})
    assert len(errors) == 1 and "umbrella" in errors[0], errors
    print("check_layers self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    here = os.path.dirname(os.path.abspath(__file__))
    core = argv[1] if len(argv) > 1 else os.path.join(here, "..", "core")
    errors = check(core)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} layering error(s); ARCHITECTURE.md, \"Layers\", says what may "
              "include what")
        return 1
    print("core layers: every include goes downward (" + " -> ".join(LAYERS) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
