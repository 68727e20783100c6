"""Whether the commands of a compile database may be run.

Why: a `compile_commands.json` is a list of programs to execute. One the user named (`--compile-commands`) or
told us to trust (`--trust-compile-commands`, CUDAMIGRATE_TRUST_COMPILE_COMMANDS=1) is theirs. One that was
only *found* (committed in a cloned repository's build/, say) is the repository's: clangd never executes such
commands unless `--query-driver` allows the compiler. So a found database's command runs only when its compiler
resolves to a known compiler driver (nvcc, gcc, clang, ... behind ccache/sccache at most) outside the project
tree, and none of its flags makes that driver load or run code named by the command (`-ccbin`,
`--compiler-bindir`, `-B`, plugins, gcc specs and wrappers). The answer is a reason, for the message that says
why the units were skipped and how to trust the database.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Iterable

_DRIVER = re.compile(r"^(?:[\w.-]+-)?(?:nvcc|gcc|g\+\+|cc|c\+\+|clang|clang\+\+|icpx|icx|nvc\+\+|nvc|hipcc)"
                     r"(?:-\d+(?:\.\d+)*)?(?:\.exe)?$")
_LAUNCHERS = {"ccache", "sccache", "distcc"}
# flags whose program or directory is run from: fine when it lies outside the project (CMake's -ccbin=/usr/bin/c++)
_FROM_PATH = ("-ccbin", "--compiler-bindir", "-B")
# flags that make the driver load or run other code wherever it lies (also inside -Xcompiler/-Xclang values)
_LOADERS = ("-fplugin", "-fpass-plugin", "-specs", "--specs", "-wrapper", "-load", "-run", "--run", "-run-args",
            "--run-args")


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _resolve(exe: str, directory: str) -> str | None:
    if "/" in exe:
        p = os.path.realpath(os.path.join(directory, exe))
        return p if os.path.isfile(p) else None
    found = shutil.which(exe)
    return os.path.realpath(found) if found else None


def refusal(argv: tuple[str, ...], directory: str, roots: Iterable[str]) -> str | None:
    """Why this command of a found database must not run (None: it may): a compiler that is no known driver or
    lies inside the project (`roots`, real paths), or a flag that makes the driver run or load other code."""
    roots = [os.path.realpath(r) for r in roots]
    args = list(argv)
    while args and os.path.basename(args[0]) in _LAUNCHERS and len(args) > 1:
        args = args[1:]
    if not args:
        return "it names no compiler"
    exe = _resolve(args[0], directory)
    if exe is None:
        return f"its compiler {args[0]} is not found"
    if _inside(exe, roots):
        return f"its compiler {args[0]} is inside the project"
    if not _DRIVER.match(os.path.basename(args[0])) or not _DRIVER.match(os.path.basename(exe)):
        return f"its compiler {args[0]} is not a known compiler driver (nvcc, gcc, g++, clang, ...)"
    for i, a in enumerate(args[1:], 1):
        for piece in a.split(","):
            if piece.lstrip("-") and any(piece == f or piece.startswith(f + "=") or
                                         (piece.startswith(f) and f == "-fplugin") for f in _LOADERS):
                return f"its flag {a} makes the compiler load or run other code"
        for fl in _FROM_PATH:
            if a == fl or a.startswith(fl + "=") or (fl == "-B" and a.startswith("-B") and len(a) > 2):
                value = a[len(fl):].lstrip("=") or (args[i + 1] if i + 1 < len(args) else "")
                where = os.path.realpath(os.path.join(directory, value)) if value else ""
                if not value or _inside(where, roots):
                    return f"its flag {fl} {value} runs the host compiler from inside the project"
                break
    return None
