"""docs/architecture.md kept true: no import cycle between modules, counting the imports inside functions too
(a lazy import is still a dependency), and every import from one package to another allowed by the page's
table (or listed among its exceptions). Also: the top level holds only packages, __init__.py and __main__.py,
and no module is over 600 lines unless the page says why.

Imports under `if TYPE_CHECKING:` are annotations only and are not counted.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .test_imports import cycles, modules

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "cudamigrate"
DOC = ROOT / "docs" / "architecture.md"


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those under `if TYPE_CHECKING:`."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack += node.orelse
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        stack += ast.iter_child_nodes(node)
    return out


def full_import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join(base + (node.module.split(".") if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            for t in targets:
                while t and t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name and t != "cudamigrate":  # the package itself: only __version__
                    deps.add(t)
        graph[name] = deps
    return graph


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PKG / parts[1]).is_dir()) else module


def _table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of the first table after `heading`, header and rule rows left out."""
    section = text.split(heading, 1)[1]
    rows, started = [], False
    for line in section.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set(cells[0]) <= set("-: "):
                rows.append(cells)
        elif started:
            break
    return rows[1:]


def allowed() -> tuple[dict[str, set[str] | None], set[tuple[str, str]]]:
    """package -> the packages it may import (None: every package), and the (module path, module path)
    exceptions, both read from docs/architecture.md."""
    text = DOC.read_text(encoding="utf-8")
    table: dict[str, set[str] | None] = {}
    for cells in _table_rows(text, "## Packages and who may import whom"):
        pkg = cells[0].strip("`/")
        may = cells[-1]
        table[pkg] = None if may == "every package" else set(re.findall(r"`(\w+)`", may))
    exceptions = {(a.strip("`"), b.strip("`")) for a, b, *_ in _table_rows(text, "Exceptions")}
    return table, exceptions


def _path(module: str) -> str:
    return str(modules()[module].relative_to(PKG))


def test_no_import_cycle_counting_imports_inside_functions():
    assert cycles(full_import_graph()) == []


def test_every_package_import_is_allowed_by_docs_architecture():
    table, exceptions = allowed()
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert set(table) == packages, "every package has a row in docs/architecture.md, and only packages do"
    bad = []
    for mod, deps in full_import_graph().items():
        src = _package(mod)
        for dep in deps:
            dst = _package(dep)
            if src == dst or src not in table or table[src] is None:
                continue
            if dst not in table[src] and (_path(mod), _path(dep)) not in exceptions:  # type: ignore[operator]
                bad.append(f"{mod} imports {dep}: {src}/ may not import {dst}/")
    assert bad == []


def test_the_table_is_a_layering():
    """Read top to bottom, a package may import only packages of the rows above it: no package-level cycle."""
    table, _ = allowed()
    order = list(table)
    for i, pkg in enumerate(order):
        may = table[pkg]
        if may is not None:
            assert may <= set(order[:i]), f"{pkg}/ may import a package of a lower row: {sorted(may - set(order[:i]))}"


def test_the_checks_see_violations():
    """The checker itself: a lazy import counts, and a package edge outside the table is found."""
    tree = ast.parse("def f():\n    from .b import x\nif TYPE_CHECKING:\n    from .c import y\n")
    assert [n.module for n in _imports(tree)] == ["b"]
    table, _ = allowed()
    assert "match" not in (table["read"] or set()) and "cli" not in (table["scan"] or set())


def test_top_level_holds_only_packages():
    stray = sorted(p.name for p in PKG.iterdir() if p.is_file() and p.name not in ("__init__.py", "__main__.py"))
    assert stray == []


def test_no_module_over_600_lines_without_a_reason():
    text = DOC.read_text(encoding="utf-8")
    explained = {cells[0].strip("`") for cells in _table_rows(text, "## Modules over 600 lines")}
    long = {str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if len(p.read_text(encoding="utf-8").splitlines()) > 600}
    assert long <= explained, sorted(long - explained)
    assert explained <= long, f"the page explains modules no longer over 600 lines: {sorted(explained - long)}"
