from __future__ import annotations

from pathlib import Path

from cudamigrate.engine import Engine, Options
from cudamigrate.fix.apply import fix_bytes
from cudamigrate.fixtures import Case
from cudamigrate.rules.load import load_rules
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
                       options=case.options)
    else:
        opts = Options(**kw)
    return Engine(all_rules(), opts)


def fix_text(engine: Engine, path: Path, data: bytes, unsafe: bool = True,
             display_only: frozenset[str] = frozenset()) -> bytes:
    return fix_bytes(engine, path, data, str(path), unsafe=unsafe, display_only=display_only).fixed


def run_cli(*args, cwd=None):
    """Invoke the CLI in-process (click's runner), from `cwd` when given; exceptions propagate."""
    import os

    from click.testing import CliRunner

    from cudamigrate.cli import main

    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(map(str, args)), catch_exceptions=False)
    finally:
        os.chdir(old)
