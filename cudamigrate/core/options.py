"""The engine's options: every setting that changes findings.

Apart from `engine.py` (which re-exports it) so that what only needs the options (the result cache's
keys, the CLI's replay of an unchanged run) does not import tree-sitter, Jinja and the matchers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .per_file import PerFileIgnores


@dataclass
class Options:
    target: tuple[int, int] = (13, 0)
    from_version: tuple[int, int] | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)  # global template options (e.g. stream)
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    calibration: dict[str, Any] | None = None
    keep_compat: tuple[int, int] | None = None  # oldest toolkit the fixed code must still build with
    include_roots: tuple[str, ...] = ()  # the scanned paths: where `#include` finds the project's headers
    per_file_ignores: PerFileIgnores | None = None  # `per-file-ignores`: rules off in the files a glob matches
    # the project's compile_commands.json (absolute), when it has one: its units' -D/-U flags decide `#if` branches
    # (read/unit_defines.py); part of the result cache's run digest, so a database appearing or moving re-scans
    compile_db: str | None = None
    time_budget_s: float | None = 60.0  # per file and scan: a pathological file becomes an error, not a hang
