"""`cudamigrate verify`: the user's own program, built and run before and after `fix`, outputs compared.

Why this shape:

* The user's tree is never touched: the project directory is copied twice into a temporary directory
  (`before/` and `after/`), `fix` runs on `after/` only, and the user's build and run commands (from
  `--build`/`--run` or the `build-command`/`run-command` configuration keys) run in each copy with the
  shell, as the user would run them (`make`, `ctest`, `./app`).
* When the original does not build with this toolkit (a build break is what the fix is for), the fixed
  program's output is compared with a reference the user supplies (`--reference`), recorded earlier with
  the old toolkit by `--record-reference`.
* Outputs are compared with the GPU selftest's comparison (selftest.compare_outputs): line by line, numbers
  within `--tolerance` when given, lines matching `--ignore` regexes (timings, device names) left out.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

IGNORED_NAMES = (".git", ".hg", ".svn", "__pycache__")


@dataclass
class Step:
    name: str
    ok: bool
    seconds: float
    output: str = ""
    rc: int = 0


@dataclass
class VerifyRun:
    """The outcome of one `cudamigrate verify`."""

    steps: list[Step] = field(default_factory=list)
    identical: bool | None = None
    detail: str = ""
    compared_with: str = ""  # "the original build" | "the reference FILE"
    error: str | None = None  # why no comparison could be made

    def to_json(self) -> dict[str, Any]:
        return {"identical": self.identical, "detail": self.detail, "compared_with": self.compared_with,
                "error": self.error, "steps": [{"name": s.name, "ok": s.ok, "rc": s.rc, "seconds": round(s.seconds, 3)}
                                               for s in self.steps]}


def copy_project(src: Path, dst: Path) -> None:
    """The project as it is (symlinks kept as symlinks; version-control directories left out)."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED_NAMES))


def shell(name: str, cmd: str, cwd: Path, timeout: float) -> Step:
    """Run `cmd` with the shell in `cwd`; stdout is the program's output, stderr is kept for the log."""
    from .procs import run_group_split

    t0 = time.perf_counter()
    rc, stdout, stderr = run_group_split(cmd, cwd, timeout)  # its own process group, killed whole on timeout
    if rc is None:
        return Step(name, False, time.perf_counter() - t0, f"timed out after {timeout:.0f} s", 124)
    out = stdout.decode("utf-8", "replace")
    if rc != 0:
        out += stderr.decode("utf-8", "replace")
    return Step(name, rc == 0, time.perf_counter() - t0, out, rc)


def last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def run_fix(project: Path, fix_args: list[str], timeout: float) -> Step:
    """`cudamigrate fix` on the copy, by this very interpreter and package."""
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "cudamigrate", "fix", "--exit-zero", *fix_args, str(project)]
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    from .procs import run_group_split

    rc, out, stderr = run_group_split(cmd, project, timeout, env)
    if rc is None:
        return Step("fix", False, time.perf_counter() - t0, f"timed out after {timeout:.0f} s", 124)
    err = (stderr + out).decode("utf-8", "replace")  # notes, then the remaining findings and summary
    return Step("fix", rc == 0, time.perf_counter() - t0, err, rc)


def build_and_run(tag: str, root: Path, build: str | None, run: str, timeout: float, out: VerifyRun) -> Step | None:
    """Build (when a build command is given) and run one copy; the run's step, or None when the build failed."""
    if build:
        b = shell(f"build {tag}", build, root, timeout)
        out.steps.append(b)
        if not b.ok:
            return None
    r = shell(f"run {tag}", run, root, timeout)
    out.steps.append(r)
    return r


def verify_program(project: Path, build: str | None, run: str, *, fix_args: list[str], reference: Path | None = None,
                   record: Path | None = None, tolerance: float | None = None, ignore: list[str] | None = None,
                   timeout: float = 600.0, keep: Path | None = None) -> VerifyRun:
    """Build and run `project` before and after `fix` (in copies) and compare; or, with `record`, build and run
    the original only and write its output to `record`."""
    from ..toolcheck.selftest import compare_outputs

    out = VerifyRun()
    work = Path(tempfile.mkdtemp(prefix="cudamigrate-verify-program-")) if keep is None else keep
    try:
        before_dir, after_dir = work / "before", work / "after"
        copy_project(project, before_dir)
        if record is not None or reference is None:
            r0 = build_and_run("before", before_dir, build, run, timeout, out)
            if record is not None:
                if r0 is None or not r0.ok:
                    out.error = f"the original did not {'build' if r0 is None else 'run'}: " \
                                f"{last_line(out.steps[-1].output)}"
                    return out
                record.write_text(r0.output, encoding="utf-8")
                out.compared_with = f"recorded into {record}"
                return out
        else:
            r0 = None
        copy_project(project, after_dir)
        f = run_fix(after_dir, fix_args, timeout)
        out.steps.append(f)
        if not f.ok:
            out.error = f"cudamigrate fix failed (exit {f.rc}): {last_line(f.output)}"
            return out
        if reference is not None:
            want, out.compared_with = reference.read_text(encoding="utf-8", errors="replace"), f"the reference {reference}"
        elif r0 is not None and r0.ok:
            want, out.compared_with = r0.output, "the original build"
        else:
            out.error = ("the original does not " + ("build" if r0 is None else "run") + " here: "
                         f"{last_line(out.steps[-2 if len(out.steps) > 1 else -1].output)}; give its expected output "
                         "with --reference FILE (record it with the old toolkit: --record-reference FILE)")
            return out
        r1 = build_and_run("after", after_dir, build, run, timeout, out)
        if r1 is None or not r1.ok:
            out.identical = False
            out.detail = f"the fixed program does not {'build' if r1 is None else 'run'}: {last_line(out.steps[-1].output)}"
            return out
        cmp = compare_outputs(r1.output, want, tolerance, ignore)
        out.identical, out.detail = cmp.identical, cmp.detail
        return out
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
