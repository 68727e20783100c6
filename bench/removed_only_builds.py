"""How many translation units that fail only on removed CUDA APIs build after `cudamigrate fix --unsafe-fixes`.

    python bench/removed_only_builds.py TREE [-I REL ...] [--only PREFIX ...] [-j N] [--cache DIR] [--work DIR]
        [--json out.json] [--fix-args "..."]

Why: the user's question on a legacy code base is "does it build on CUDA 13.0 after the fix?". A unit that
also fails for reasons the tool cannot touch (a missing third-party header, an OpenGL include) says nothing
about the tool, so the units counted are those whose nvcc 13.0 errors are all CUDA API sites (the
classification of bench/compile_recall.py: an undefined CUDA name, a missing member of a CUDA type, a wrong
call of a CUDA API, a removed CUDA header). What it does:

1. compiles every `*.cu|*.cpp|*.c` unit of TREE (the flags of bench/compile_recall.py; `-I REL` adds
   `-I TREE/REL` to every unit, e.g. the Handbook's `chLib`) and keeps the units that fail only on CUDA sites;
2. copies TREE, runs `cudamigrate scan --no-semantic --format json` (the first scan), `cudamigrate fix
   --no-semantic --unsafe-fixes --no-verify` and scans again: the findings fixed plus those remaining must
   equal the first scan (printed, with the difference);
3. compiles those units in the fixed copy: how many build; for each that does not, its first error and the
   manual findings the second scan reports in the unit's file (the reason the tool gives), so a unit that
   fails without a finding saying why is visible.

Compiles are cached (`--cache`, the content key of bench/compile_recall.py). Needs nvcc 13.0 on PATH.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("compile_recall", _HERE / "compile_recall.py")
recall: Any = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["compile_recall"] = recall
_spec.loader.exec_module(recall)  # type: ignore[union-attr]


def tool(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudamigrate", *args], cwd=cwd, capture_output=True, text=True,
                          errors="replace")


def scan(tree: Path) -> list[dict]:
    p = tool(["scan", "--no-semantic", "--format", "json", "--exit-zero", "."], tree)
    return json.loads(p.stdout)["findings"]


def removed_only(output: str, root: Path, catalog: Any, inc: list[str]) -> tuple[bool, str]:
    """(every error is a CUDA API site, the first error's line)."""
    errors = [d for d in recall.parse_diagnostics(output) if "error" in d.severity]
    if not errors:
        return False, output.strip().splitlines()[-1] if output.strip() else "no diagnostics"
    for d in errors:
        if not recall.classify(d, d.source, catalog, inc).cuda:
            return False, d.message
    return True, errors[0].message


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("-I", dest="tree_include", action="append", default=[],
                    help="include dir: tree-relative, or absolute (a third-party header the tree needs, e.g. OpenCL's)")
    ap.add_argument("--only", action="append", default=[], help="compile only units under this tree path (repeatable)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cudamigrate-recall")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--fix-args", default="--unsafe-fixes --no-verify")
    a = ap.parse_args(argv)
    root = a.tree.resolve()
    work = a.work.resolve() if a.work else Path(tempfile.mkdtemp(prefix="removed-only-"))
    fixed = work / root.name
    if fixed.exists():
        shutil.rmtree(fixed)
    shutil.copytree(root, fixed, symlinks=True)
    first = scan(fixed)
    p = tool(["fix", "--no-semantic", *shlex.split(a.fix_args), "."], fixed)
    said = next((ln for ln in reversed((p.stdout + p.stderr).splitlines()) if re.match(r"(Fixed|Would fix) ", ln)), "")
    m = re.match(r"(?:Fixed|Would fix) (\d+) finding", said)
    n_fixed = int(m.group(1)) if m else 0
    second = scan(fixed)

    wheel_inc = recall.cuda_include_dirs([])
    units, flags, search, cwd = recall.plan_units(root, a.only, None, [], wheel_inc)
    for r in units:
        flags[r] += [f"-I{i}" if os.path.isabs(i) else f"-I{{ROOT}}/{i}" for i in a.tree_include]
        search[r] = list(search[r]) + [root / i for i in a.tree_include if not os.path.isabs(i)]
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    comp = recall.RecallCompiler(a.cache.resolve(), 300, nvcc, flags, search, cwd)
    before = comp.many([(root, r) for r in units], a.jobs, "original")
    catalog = recall.ApiCatalog.load()
    inc = recall.toolkit_include_dirs() + wheel_inc
    counted: dict[str, str] = {}
    for r in units:
        res = before[(root, r)]
        if res.ok is False:
            only, first_error = removed_only(res.output, root, catalog, inc)
            if only:
                counted[r] = first_error
    after = comp.many([(fixed, r) for r in counted], a.jobs, "fixed")
    built = [r for r in counted if after[(fixed, r)].ok]
    manual: dict[str, list[str]] = {}
    for f in second:
        rel = os.path.normpath(f["path"]) if not os.path.isabs(f["path"]) else os.path.relpath(f["path"], fixed)
        if f["applicability"] == "manual":
            manual.setdefault(rel, []).append(f"{rel}:{f['line']}: {f['rule']}: {f['message'][:160]}")
    failing = {}
    for r in counted:
        if not after[(fixed, r)].ok:
            errs = [d for d in recall.parse_diagnostics(after[(fixed, r)].output) if "error" in d.severity]
            where = os.path.relpath(errs[0].path, fixed) if errs and os.path.isabs(errs[0].path) else r
            failing[r] = {"first_error": f"{where}:{errs[0].line}: {errs[0].message}" if errs else
                          after[(fixed, r)].output[-300:],
                          "manual_findings": manual.get(r, []) + (manual.get(where, []) if where != r else [])}
    d = {"tree": str(a.tree), "nvcc": nvcc, "units": len(units),
         "compiled_before": sum(1 for r in units if before[(root, r)].ok),
         "removed_only": len(counted), "build_after_fix": len(built),
         "first_scan": len(first), "fixed": n_fixed, "remaining": len(second),
         "fixed_plus_remaining_minus_first": n_fixed + len(second) - len(first), "fix_line": said,
         "not_building": failing, "removed_only_units": sorted(counted)}
    print(f"{a.tree}: {len(units)} units, {d['compiled_before']} build as they are; {len(counted)} fail only on "
          f"CUDA API sites, {len(built)} of them build after fix "
          f"({100.0 * len(built) / len(counted) if counted else 0:.1f} %)")
    print(f"first scan {len(first)}, fixed {n_fixed}, remaining {len(second)}: "
          f"fixed + remaining - first = {d['fixed_plus_remaining_minus_first']}")
    for r, why in sorted(failing.items()):
        print(f"  not building: {r}: {why['first_error'][:200]}")
        for x in why["manual_findings"][:3]:
            print(f"      manual {x}")
        if not why["manual_findings"]:
            print("      (no manual finding of a removed API in this file)")
    if a.json:
        a.json.write_text(json.dumps(d, indent=1))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
