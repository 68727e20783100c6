"""docs/architecture.md kept true: no import cycle between modules, counting the imports inside functions too
(a lazy import is still a dependency), and every import from one package to another allowed by the page's
table (or listed among its exceptions). Also: the top level holds only packages, __init__.py and __main__.py,
and no module is over 600 lines unless the page says why; every module is named on the page; every file path
that the page, the README and the package's comments and docstrings name exists.

Imports under `if TYPE_CHECKING:` are annotations only and are not counted by the layering, but a cycle through
them is still a cycle (two modules that can only be read together), so the cycle check counts them too.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

from .test_imports import cycles, modules

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "cudamigrate"
DOC = ROOT / "docs" / "architecture.md"


def _imports(tree: ast.Module, type_only: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those under `if TYPE_CHECKING:` (unless `type_only`)."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack += node.orelse
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        stack += ast.iter_child_nodes(node)
    return out


def full_import_graph(type_only: bool = False) -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")), type_only):
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


def test_no_import_cycle_counting_type_only_imports():
    assert cycles(full_import_graph(type_only=True)) == []


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


def test_every_row_is_checked():
    """No row may import "every package": such a row is never checked, so a cycle between two top packages
    (say cli/ and server/) would pass."""
    table, _ = allowed()
    assert [pkg for pkg, may in table.items() if may is None] == []


def test_neither_front_end_imports_the_other():
    """cli/ and server/ are two front ends over workspace/: no import between them either way (type-only ones
    included), and no exception on the page allows one; only entry/ sees both."""
    table, exceptions = allowed()
    assert "server" not in (table["cli"] or set()) and "cli" not in (table["server"] or set())
    assert [e for e in exceptions if {e[0].split("/")[0], e[1].split("/")[0]} == {"cli", "server"}] == []
    crossing = [f"{m} imports {d}" for m, deps in full_import_graph(type_only=True).items() for d in deps
                if {_package(m), _package(d)} == {"cli", "server"}]
    assert crossing == []


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


def test_every_module_is_named_on_the_page():
    """Each module is named in its package's row (`name`) or by its path somewhere on the page."""
    text = DOC.read_text(encoding="utf-8")
    rows = {cells[0].strip("`/"): cells[1] for cells in _table_rows(text, "## Packages and who may import whom")}
    unnamed = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG)
        if p.name == "__init__.py" or len(rel.parts) == 1:
            continue
        if f"`{p.stem}`" not in rows.get(rel.parts[0], "") and str(rel) not in text:
            unnamed.append(str(rel))
    assert unnamed == []


_PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:py|md|sh|toml))\b")


def _prose(path: Path) -> list[tuple[int, str]]:
    """A Markdown file's lines, or a module's comments and docstrings (not its code), with line numbers."""
    if path.suffix == ".md":
        return list(enumerate(path.read_text(encoding="utf-8").splitlines(), 1))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU")[:3] in ('"""', "'''")):
            out += [(tok.start[0] + i, line) for i, line in enumerate(tok.string.splitlines())]
    return out


def stale_paths(root: Path = ROOT) -> list[str]:
    """`file:line: name` for each file name in the docs, the README and the package's comments and docstrings
    that names no file: a path (`a/b.py`) must exist from the root, `cudamigrate/`, `docs/` or the naming file's
    folder; a bare name (`b.py`) must be some tracked file's name. A segment in capitals (`DIR/x.sh`) is a
    placeholder."""
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    names = {Path(t).name for t in tracked}
    prose = [t for t in tracked if (t.endswith(".md") and not t.startswith(("fixtures/", "rules/", "tests/")))
             or t == "rules/README.md" or (t.startswith("cudamigrate/") and t.endswith(".py"))]
    bad = []
    for rel in prose:
        path = root / rel
        if not path.exists():
            continue
        for line_no, line in _prose(path):
            for m in _PATH.finditer(line):
                name = m.group(1)
                if any(part.isupper() for part in name.split("/")[:-1]):
                    continue
                if "/" in name:
                    ok = any((base / name).exists() for base in (root, root / "cudamigrate", root / "docs", path.parent))
                else:
                    ok = name in names
                if not ok:
                    bad.append(f"{rel}:{line_no}: {name}")
    return bad


def test_every_file_named_in_docs_and_comments_exists():
    assert stale_paths() == []


def test_the_path_check_sees_a_stale_name(tmp_path):
    """The checker itself, on a two-file repository: a moved module's old path is found, its new one is not."""
    (tmp_path / "cudamigrate" / "fix").mkdir(parents=True)
    (tmp_path / "cudamigrate" / "fix" / "write.py").write_text('"""Atomic writes (was cudamigrate/write.py)."""\n')
    (tmp_path / "README.md").write_text("See cudamigrate/fix/write.py and write.py, run `DIR/x.sh`.\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    assert stale_paths(tmp_path) == ["cudamigrate/fix/write.py:1: cudamigrate/write.py"]


def _module_of(name: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + (node.module.split(".") if node.module else []))


def private_uses(name: str, is_pkg: bool, tree: ast.Module, mods: set[str]) -> list[str]:
    """`line: module.name` for each private name (`_x`) of another package module that `name` imports
    (`from m import _x`) or reads through an imported module (`m._x`): a name used across modules is that
    module's interface, and should say so by its spelling."""
    out = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = _module_of(name, is_pkg, node)
            for a in node.names:
                if f"{mod}.{a.name}" in mods:
                    aliases[a.asname or a.name] = f"{mod}.{a.name}"
                elif mod in mods and mod != name and a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"{node.lineno}: {mod}.{a.name}")
        elif isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in mods})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and aliases[node.value.id] != name and node.attr.startswith("_") and not node.attr.startswith("__")):
            out.append(f"{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return out


def test_no_module_uses_a_private_name_of_another():
    mods = modules()
    bad = [f"{path.relative_to(ROOT)}:{hit}" for name, path in mods.items()
           for hit in private_uses(name, path.name == "__init__.py", ast.parse(path.read_text(encoding="utf-8")), set(mods))]
    assert bad == []
    probe = ast.parse("from .b import _x, y\nfrom . import b as bb\ndef f():\n    return bb._z\n")
    assert private_uses("p.a", False, probe, {"p", "p.a", "p.b"}) == ["1: p.b._x", "4: p.b._z"]
