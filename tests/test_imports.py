"""The package's import structure: every module imports on its own, and no module-level import cycle exists.

A cycle makes import order matter (a name is missing while its module is half-initialised) and layers
meaningless. Imports inside functions are allowed (lazy, for start-up time) and are not part of the graph;
imports under `if TYPE_CHECKING:` are not run and are not part of it either.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "cudamigrate"


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Import statements run when the module is imported: top level, and inside top-level try/if blocks,
    except `if TYPE_CHECKING:`."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" in ast.unparse(node.test):
                stack += node.orelse
            else:
                stack += node.body + node.orelse
        elif isinstance(node, ast.Try):
            stack += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps: set[str] = set()
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join(base + (node.module.split(".") if node.module else []))
                else:
                    mod = node.module or ""
                # `from . import x` imports the submodule x; `from .m import f` imports m
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            for t in targets:
                while t and t not in mods and "." in t:  # `import cudamigrate.a.b` of a name inside a.b
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name:
                    deps.add(t)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_level_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_check_sees_cycles():
    """The checker itself: a two-module cycle and a `from . import x` edge are found."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    graph = import_graph()
    assert "cudamigrate.match.migrations.texture" in graph["cudamigrate.match.kinds"]  # `from . import builtins, ..., texture`
    assert "cudamigrate.scan.engine" in graph["cudamigrate.pipeline.runner"]


def test_every_module_imports_on_its_own():
    """Each module imported first, in a fresh interpreter state (sys.modules cleared of the package between
    modules), so none depends on another having been imported before it."""
    names = sorted(n for n in modules() if not n.endswith("__main__"))  # __main__ runs the CLI when imported
    code = (
        "import importlib, sys, traceback\n"
        f"names = {names!r}\n"
        "bad = []\n"
        "for n in names:\n"
        "    for k in [k for k in sys.modules if k == 'cudamigrate' or k.startswith('cudamigrate.')]:\n"
        "        del sys.modules[k]\n"
        "    try:\n"
        "        importlib.import_module(n)\n"
        "    except Exception:\n"
        "        bad.append(n + ': ' + traceback.format_exc().strip().splitlines()[-1])\n"
        "print('\\n'.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
