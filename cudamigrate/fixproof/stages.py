"""How far a compile got, and whether a fix that leaves a unit failing still moved it forward.

Why: nvcc stops at the first stage that fails (the host preprocessor, the EDG front end, cicc, ptxas, the
link). A legacy unit that stops in the front end on a removed API has never reached ptxas: once the fix
removes that error, ptxas may reject inline PTX it now sees for the first time (`shfl.up.b32` without `.sync`,
reported as manual by CM530). That error was there all along, only hidden; blaming the fix for it and rolling
edits back leaves a header half migrated and breaks units that built. So a unit that failed before in an
earlier stage and fails after in a later one has *progressed* and is no worse, unless an error after lies on a
line the fix changed (then the fix caused it). The stage is read from the diagnostic's form: a missing header or
`#error` is the preprocessor, an EDG or gcc error with a file and line the front end, a `ptxas` line ptxas, an
`nvlink`/`ld` line the link.
"""

from __future__ import annotations

import difflib
import re
from typing import Callable, Collection, Mapping, Protocol, Sequence


class _Located(Protocol):
    @property
    def file(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def stage(self) -> int: ...


class CompileResult(Protocol):
    """What a stage is read from (compile_check.CompileResult, which imports this module: a protocol, not an
    import, keeps the type graph free of cycles)."""

    @property
    def ok(self) -> bool: ...

    @property
    def errors(self) -> Sequence[_Located]: ...

    @property
    def changed(self) -> Mapping[str, Collection[int]]: ...

DRIVER, PREPROCESS, FRONT_END, CICC, PTXAS, LINK = range(6)
NAMES = {DRIVER: "driver", PREPROCESS: "preprocessor", FRONT_END: "front end", CICC: "cicc", PTXAS: "ptxas",
         LINK: "link"}
_PREPROCESS = re.compile(r"No such file or directory|cannot open (?:source|include) file|^#error\b|"
                         r"#error directive", re.I)
_TOOLS = {"ptxas": PTXAS, "nvlink": LINK, "fatbinary": LINK, "ld": LINK, "cicc": CICC, "nvcc": DRIVER}


def classify(file: str, message: str, tool: str = "") -> int:
    """The stage that reported an error: `tool` when the line named one (ptxas, nvlink, nvcc ...), else read
    from the message (errors with a file are the preprocessor's or the front end's)."""
    if tool:
        return _TOOLS.get(tool, DRIVER)
    if _PREPROCESS.search(message):
        return PREPROCESS
    if file:
        return FRONT_END
    if "Ptx assembly" in message or "ptxas" in message:
        return PTXAS
    if "undefined reference" in message or "nvlink" in message:
        return LINK
    return DRIVER


def stage(res: CompileResult) -> int:
    """How far a failed compile got: the latest stage among its errors (DRIVER without any)."""
    return max((d.stage for d in res.errors), default=DRIVER)


def progressed(before: CompileResult, after: CompileResult) -> bool:
    """Both failed, `after` in a later stage than `before` (a driver failure, such as a compiler that does not
    run, is no stage), and no error of `after` lies on a line the edits changed (`after.changed`)."""
    if before.ok or after.ok or not before.errors or not after.errors:
        return False
    s0 = stage(before)
    if s0 == DRIVER or stage(after) <= s0:
        return False
    return not any(d.line in after.changed.get(d.file, ()) for d in after.errors)


def changed_lines(changes: dict[str, bytes], original: Callable[[str], bytes]) -> dict[str, frozenset[int]]:
    """For each edited file (real path -> new bytes), the 1-based lines of the new bytes that the edits wrote
    (replaced or inserted), plus the lines around a deletion: where an error caused by the fix would be."""
    out: dict[str, frozenset[int]] = {}
    for path, new in changes.items():
        a, b = original(path).splitlines(), new.splitlines()
        lines: set[int] = set()
        for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            lines.update(range(j1 + 1, j2 + 1) if j2 > j1 else (j1, j1 + 1))
        out[path] = frozenset(lines)
    return out
