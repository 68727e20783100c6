"""The consistency group of a finding: the symbol a rule's fix renames or replaces, scoped by the program that
uses it, so that the fix stage applies a group's edits in every file of the run or in none (fix/consistency.py).
Apart from scan/engine.py because the scoping asks the run's include graph (read/project_index.py `program`)."""

from __future__ import annotations

from typing import Any

from ..findings.model import PROGRAM_SCOPE, SCOPE
from ..match.context import FileContext
from ..rules.schema import Rule
from ..rules.templates import render


def consistency_group(r: Rule, tctx: dict[str, Any], ctx: FileContext | None = None) -> str:
    """`family:symbol` for a rule with `consistency:` (a template naming the symbol the fix renames or
    replaces, e.g. `double4` for both `double4` and `make_double4`), else "": the fix stage applies a group's
    edits in every file of the run or in none (fix/consistency.py). A symbol the template does not scope
    (`symbol@scope`, as a texture reference's declaring file) is scoped by the file's program in the run
    (`@program:` its first file, read/project_index.py `program`, joined through the headers that spell the
    symbol): CUDA's `double4` renamed in one program is not held back by a use another program cannot rewrite."""
    spec = r.consistency
    if not spec:
        return ""
    symbol = " ".join(render(str(spec), tctx).split())
    if not symbol:
        return ""
    proj = ctx.project if ctx is not None else None
    if SCOPE not in symbol and proj is not None and proj.files:
        program = proj.program(ctx.source.path, symbol) if ctx is not None else None
        if program is not None:
            symbol = f"{symbol}{SCOPE}{PROGRAM_SCOPE}{program}"
    return f"{r.family}:{symbol}"
