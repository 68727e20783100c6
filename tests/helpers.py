from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cudamigrate.scan.engine import Engine, Options
from cudamigrate.fix.apply import fix_bytes
from cudamigrate.toolcheck.fixtures import Case
from cudamigrate.knowledge.load import load_rules
from cudamigrate.rules.schema import parse_version

ROOT = Path(__file__).resolve().parent.parent
_RULES = None


def all_rules():
    global _RULES
    if _RULES is None:
        rs = load_rules([ROOT / "rules"])
        assert not rs.errors, rs.errors
        _RULES = rs.rules
    return _RULES


def engine_for(case: Case | None = None, **kw) -> Engine:
    if case is not None:
        opts = Options(target=parse_version(case.target), select=case.rules, extend_select=case.rules or [],
                       options=case.options,
                       keep_compat=parse_version(case.keep_compat) if case.keep_compat else None)
    else:
        opts = Options(**kw)
    return Engine(all_rules(), opts)


def fix_text(engine: Engine, path: Path, data: bytes, unsafe: bool = True,
             display_only: frozenset[str] = frozenset()) -> bytes:
    return fix_bytes(engine, path, data, str(path), unsafe=unsafe, display_only=display_only).fixed


def scan_code(code: str, rules: list[str], name: str = "t.cu", **opts: Any) -> list:
    """The findings of `rules` (only those) in `code` read as the file `name`; engine errors fail the test.
    `opts` are engine Options (target=(12, 0), options={...})."""
    eng = engine_for(select=rules, extend_select=rules, **opts)
    res = eng.scan_bytes(Path(name), code.encode())
    assert not res.errors, res.errors
    return res.findings


def fix_code(code: str, rules: list[str], name: str = "t.cu", unsafe: bool = True, **opts: Any) -> str:
    """`cudamigrate fix` of `code` with `rules` only (unsafe fixes included unless `unsafe=False`)."""
    eng = engine_for(select=rules, extend_select=rules, **opts)
    return fix_text(eng, Path(name), code.encode(), unsafe=unsafe).decode()


def assert_findings(code: str, rules: list[str], expected: list[tuple[int, str]] | list[int], name: str = "t.cu",
                    **opts: Any) -> list:
    """Exactly these findings, as (line, rule id) pairs or just lines, in any order; returns them."""
    found = scan_code(code, rules, name, **opts)
    if expected and all(isinstance(x, int) for x in expected):
        got: Counter = Counter(f.line for f in found)
    else:
        got = Counter((f.line, f.rule_id) for f in found)
    want = Counter(expected)
    assert got == want, f"unexpected: {dict(got - want)}; missing: {dict(want - got)}"
    return found


def assert_fix(code: str, rules: list[str], expected: str, name: str = "t.cu", unsafe: bool = True,
               **opts: Any) -> None:
    """`fix(code) == expected`, and fixing `expected` again changes nothing (the fix converges)."""
    fixed = fix_code(code, rules, name, unsafe=unsafe, **opts)
    assert fixed == expected
    assert fix_code(fixed, rules, name, unsafe=unsafe, **opts) == fixed, "fixing the result again changes it"


def run_cli(*args, cwd=None):
    """Invoke the CLI in-process (click's runner), from `cwd` when given; exceptions propagate."""
    import os

    from click.testing import CliRunner

    from cudamigrate.cli.main import main

    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(map(str, args)), catch_exceptions=False)
    finally:
        os.chdir(old)
