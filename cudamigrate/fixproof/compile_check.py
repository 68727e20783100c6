"""Compiling one translation unit of the user's project as it is and as `fix` would leave it.

Why each piece:

* The command: the unit's entry in compile_commands.json when the project has one (loaded by
  parse/clang.py's `load_compile_db`), else `nvcc -c` with the include directories the project's own
  `#include`s point at (found next to the includer, under the run's files, or in an `include`/`inc`/`Common`
  directory of an ancestor) and the NVIDIA wheels' include directory. Outputs go to a temporary directory;
  dependency-file flags are dropped, so a compile never writes in the user's tree.
* The edited bytes are compiled in an overlay, never in the user's files (they are written only later, by
  fix/write.py's atomic write, and only when the user asked for it). The overlay is a temporary directory that
  mirrors the file system from `/`: along the path of every edited file each directory is a real directory
  whose other entries are symlinks to the originals, and the edited files are real files with the new bytes.
  Every absolute path of the command is moved under the overlay, so `#include "x.h"`, `-I` directories and
  relative paths resolve exactly as in the real tree, with the edited files in place of the originals.
* Diagnostics are compared as (file, message) pairs without line numbers (edits move lines); a unit is worse
  after the edits when it compiled before and fails after, or when it fails with an error not there before.
* Results are cached by content (command, compiler, the unit's bytes and those of the project headers it
  reaches, as compiled), so running `fix` again does not compile again what did not change.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .procs import run_group, temp_prefix
from .stages import FRONT_END, classify, progressed

SOURCE_SUFFIXES = frozenset({".cu", ".cpp", ".cc", ".cxx", ".c", ".c++"})
CUDA_SUFFIXES = frozenset({".cu", ".cuh"})
COMPILE_TIMEOUT = 600.0
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_INCLUDE_HOMES = ("", "include", "inc", "Common", "common", "common/inc")
_ANCESTORS = 4  # how far up from a file an include directory is looked for


@dataclass(frozen=True)
class UnitCommand:
    """How one unit is compiled: argv (the compiler first, the unit's file among the arguments, no output or
    dependency-file flags) run in `directory`. `synthesized`: made by cudamigrate, not the compile database."""

    file: str  # real path
    directory: str
    argv: tuple[str, ...]
    synthesized: bool = False


@dataclass(frozen=True)
class Diagnostic:
    file: str  # real path, '' when the compiler named none
    line: int
    message: str
    stage: int = field(default=FRONT_END, compare=False)  # fixproof/stages.py: which stage reported it

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the error across edits: the file and the message, not the line."""
        return self.file, re.sub(r"\bline \d+", "line N", self.message)

    def text(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file else ""
        return f"{where}error: {self.message}"


@dataclass
class CompileResult:
    ok: bool
    errors: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False
    tail: str = ""  # the last lines of the compiler's output, when it failed without a parsable error
    changed: dict[str, frozenset[int]] = field(default_factory=dict)  # lines the edits compiled wrote, per file

    @property
    def first_error(self) -> str:
        if self.errors:
            return self.errors[0].text()
        return self.tail or "the compiler failed without a diagnostic"

    def to_json(self) -> dict:
        return {"ok": self.ok, "errors": [[d.file, d.line, d.message, d.stage] for d in self.errors], "tail": self.tail}

    @classmethod
    def from_json(cls, d: dict) -> "CompileResult":
        errors = [Diagnostic(str(e[0]), int(e[1]), str(e[2]), int(e[3]) if len(e) > 3 else classify(str(e[0]), str(e[2])))
                  for e in d["errors"]]
        return cls(bool(d["ok"]), errors, 0.0, True, str(d.get("tail", "")))


def new_errors(before: CompileResult, after: CompileResult) -> list[Diagnostic]:
    """Errors of `after` that `before` did not have (as many times as they are new)."""
    left = Counter(d.key for d in before.errors)
    out = []
    for d in after.errors:
        if left[d.key] > 0:
            left[d.key] -= 1
        else:
            out.append(d)
    return out


def worse(before: CompileResult, after: CompileResult) -> bool:
    """The edits made the unit worse: it compiled and fails now, or it fails with an error not there before,
    unless it got further than before with no error on a line the edits changed (fixproof/stages.py)."""
    if before.ok:
        return not after.ok
    if after.ok or progressed(before, after):
        return False
    if new_errors(before, after):
        return True
    return not after.errors and bool(before.errors)  # fails now without a diagnostic we can compare


# --------------------------------------------------------------------------- commands
def is_source(path: str) -> bool:
    return Path(path).suffix.lower() in SOURCE_SUFFIXES


def load_database(db_path: Path | None) -> dict[str, UnitCommand]:
    """compile_commands.json's entries by real path of their file (none without a database)."""
    if db_path is None:
        return {}
    from ..parse.clang import load_compile_db

    out: dict[str, UnitCommand] = {}
    for c in load_compile_db(db_path):
        out[os.path.realpath(c.file)] = UnitCommand(os.path.realpath(c.file), str(c.directory),
                                                     tuple(strip_outputs(list(c.argv))))
    return out


# Every flag that names or selects an output (added back, into a temporary directory) or writes a file beside
# the build (dependency files, nvcc's -time CSV, kept intermediates, traces, dumps): a compile never writes into
# the user's tree. Alone with the next argument, or `flag=value`.
_DROP_WITH_ARG = {"-o", "-MF", "-MT", "-MQ", "-MJ", "--output-file", "-odir", "--output-directory", "-keep-dir",
                  "--keep-dir", "--dependency-output", "-time", "--time", "-run-args", "--run-args"}
_DROP = {"-c", "-MD", "-MMD", "-MP", "-M", "-MM", "--generate-dependencies", "--generate-nonsystem-dependencies",
         "--generate-dependencies-with-compile", "--generate-nonsystem-dependencies-with-compile",
         "--compile", "-E", "--preprocess", "-S", "-fsyntax-only", "--dependency-drive-compilation",
         "-keep", "--keep", "-save-temps", "--save-temps", "-run", "--run", "-fsave-optimization-record"}
_DROP_GLUED = ("-MF", "-MJ", "-ftime-trace", "-save-temps=", "-fdump-", "-fsave-optimization-record=", "-Wp,-M",
               "-fprofile-generate", "-fprofile-instr-generate", "-fcoverage-data-file")
_HOST_WRITES = re.compile(r"(?:^|,)(?:-M[DFJ]?|-MMD|-save-temps|-ftime-trace|-fdump-|-fsave-optimization-record)")


def strip_outputs(argv: list[str]) -> list[str]:
    """The command without what names or selects its outputs or writes other files (see above); host compiler
    options (-Xcompiler X) that write files go with their flag."""
    out: list[str] = []
    skip = False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a in _DROP_WITH_ARG:
            skip = True
            continue
        if a in _DROP or any(a.startswith(f + "=") for f in _DROP_WITH_ARG) or a.startswith(_DROP_GLUED):
            continue
        if a.startswith("-o") and len(a) > 2 and not a.startswith(("-opt", "-odir")):
            continue
        if a in ("-Xcompiler", "--compiler-options") and i + 1 < len(argv) and _HOST_WRITES.search(argv[i + 1]):
            skip = True
            continue
        if a.startswith(("-Xcompiler=", "--compiler-options=")) and _HOST_WRITES.search(a.split("=", 1)[1]):
            continue
        out.append(a)
    return out


def include_dirs(file: Path, data: bytes, run_files: Iterable[Path]) -> list[str]:
    """The directories the file's `#include`s resolve in: for each include name that is not next to the
    includer, the directory that makes `dir/name` a file of the run or a file in an include directory of an
    ancestor (include/, inc/, Common/ ...). Toolkit and system headers are found by the compiler itself."""
    by_name: dict[str, list[Path]] = {}
    for f in run_files:
        by_name.setdefault(f.name, []).append(f)
    out: list[str] = []
    here = file.parent
    for m in _INCLUDE.finditer(data):
        name = m.group(2).decode("utf-8", "replace").strip()
        if not name or (here / name).is_file():
            continue
        found = None
        for f in by_name.get(Path(name).name, []):
            s = str(f)
            if s.endswith("/" + name.lstrip("./")):
                found = s[: -len(name.lstrip("./"))].rstrip("/")
                break
        if found is None:
            found = _in_include_home(here, name)
        if found and found not in out:
            out.append(found)
    return out


def _in_include_home(here: Path, name: str) -> str | None:
    """The directory `d` that makes `d/name` a file, among the include homes (include/, inc/, Common/ ...) of
    `here` and its ancestors and their direct subdirectories (cuda-samples' Common/UtilNPP)."""
    for anc in [here, *list(here.parents)[:_ANCESTORS]]:
        for home in _INCLUDE_HOMES:
            d = anc / home if home else anc
            if (d / name).is_file():
                return str(d)
            if home and d.is_dir():
                for sub in _subdirs(d):
                    if (sub / name).is_file():
                        return str(sub)
    return None


def _subdirs(d: Path) -> list[Path]:
    try:
        return sorted(e for e in d.iterdir() if e.is_dir())
    except OSError:
        return []


def synthesize(file: Path, data: bytes, run_files: Iterable[Path], nvcc: str, flags: tuple[str, ...] = ()) -> UnitCommand:
    """`nvcc -c` for a unit the compile database does not know: C++17, the user's `flags` (-I/-D from the command
    line and configuration: fixproof/units.py's user_flags), the include directories the project's `#include`s
    need, the wheels' headers (cuBLAS, NVRTC, ...). A header is compiled as a CUDA unit of its own."""
    from ..toolcheck.build import wheel_root

    real = Path(os.path.realpath(file))
    argv = [nvcc, "-std=c++17"]
    if real.suffix.lower() not in SOURCE_SUFFIXES or real.suffix.lower() in CUDA_SUFFIXES:
        argv += ["-x", "cu"]
    argv += flags
    for d in include_dirs(real, data, run_files):
        argv.append(f"-I{d}")
    wheels = wheel_root()
    if wheels is not None:
        argv.append(f"-I{wheels / 'include'}")
    argv.append(str(real))
    return UnitCommand(str(real), str(real.parent), tuple(argv), synthesized=True)


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


# --------------------------------------------------------------------------- the overlay
def make_overlay(changes: dict[str, bytes], dirs: Iterable[str] = ()) -> str:
    """A temporary directory that mirrors `/` with `changes` (real path -> new bytes) in place (see the module
    docstring); the caller removes it. `dirs` (real paths) are mirrored as real directories too, with their
    ancestors: a `..` in an include is resolved by the kernel through the physical directory, so a directory
    an include starts from must not be a symlink into the original tree (the unit's, the -I directories, the
    directories of the headers it reaches)."""
    top = tempfile.mkdtemp(prefix=temp_prefix("verify"))
    real_dirs: set[str] = set()
    for p in [*(os.path.join(d, ".") for d in dirs), *changes]:
        d = os.path.dirname(p)
        while True:
            real_dirs.add(d)
            if d == "/":
                break
            d = os.path.dirname(d)
    for d in sorted(real_dirs, key=lambda x: (x.count("/"), x)):
        mirror = top + (d if d != "/" else "")
        os.makedirs(mirror, exist_ok=True)
        try:
            entries = os.listdir(d)
        except OSError:
            continue
        for e in entries:
            src = os.path.join(d, e)
            if src in real_dirs:
                continue
            if src in changes:
                with open(mirror + "/" + e, "wb") as fh:
                    fh.write(changes[src])
                continue
            try:
                os.symlink(src, mirror + "/" + e)
            except OSError:
                pass
    return top


def _under(top: str, path: str) -> str:
    return top + os.path.realpath(path)


_PATH_FLAGS = ("-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "--include-path=", "-L")


def overlay_argv(argv: tuple[str, ...], top: str) -> list[str]:
    """The command with every absolute path (alone or after a path flag) moved under the overlay."""
    out = [argv[0]]
    for a in argv[1:]:
        if a.startswith("/"):
            out.append(_under(top, a))
            continue
        for fl in _PATH_FLAGS:
            if a.startswith(fl) and a[len(fl):].startswith("/"):
                a = fl + _under(top, a[len(fl):])
                break
        out.append(a)
    return out


# --------------------------------------------------------------------------- diagnostics
_GCC = re.compile(r"^(?P<file>[^\s:(][^:\n]*?):(?P<line>\d+)(?::\d+)?:\s*(?:fatal\s+)?error:\s*(?P<msg>.*)$")
_EDG = re.compile(r"^(?P<file>[^\s(][^(\n]*?)\((?P<line>\d+)\):\s*(?:catastrophic\s+)?error(?:\s*#\d+-?D?)?:\s*(?P<msg>.*)$")
_TOOL = re.compile(r"^(?P<tool>nvcc|ptxas|nvlink|fatbinary)\s+(?:fatal|error)\s*:\s*(?P<msg>.*)$")
_PTXAS_AT = re.compile(r"^ptxas\s+\S+, line \d+; error\s*:\s*(?P<msg>.*)$")  # the temporary .ptx: no user file


def parse_errors(output: str, cwd: str, top: str | None = None) -> list[Diagnostic]:
    """The compiler's errors, in order, with the overlay's prefix removed from paths and messages."""
    out: list[Diagnostic] = []
    for raw in output.splitlines():
        line = raw.rstrip()
        if top:
            line = line.replace(top, "")
        m = _GCC.match(line) or _EDG.match(line)
        if m:
            f = m.group("file")
            path = os.path.realpath(os.path.join(cwd.replace(top, "") if top else cwd, f))
            msg = m.group("msg").strip()
            out.append(Diagnostic(path, int(m.group("line")), msg, classify(path, msg)))
            continue
        t = _TOOL.match(line)
        if t:
            out.append(Diagnostic("", 0, t.group("msg").strip(), classify("", t.group("msg"), t.group("tool"))))
            continue
        t = _PTXAS_AT.match(line)
        if t:
            out.append(Diagnostic("", 0, t.group("msg").strip(), classify("", t.group("msg"), "ptxas")))
    return out


# --------------------------------------------------------------------------- compiling
class CompileCache:
    """Compile results by content key, one small JSON file each under the cudamigrate cache directory."""

    def __init__(self, enabled: bool = True, root: Path | None = None):
        from ..pipeline.result_cache import cache_dir

        self.root = (root or cache_dir()) / "verify"
        self.enabled = enabled and not os.environ.get("CUDAMIGRATE_NO_CACHE")

    def get(self, key: str) -> CompileResult | None:
        if not self.enabled:
            return None
        try:
            return CompileResult.from_json(json.loads((self.root / key[:2] / f"{key}.json").read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, res: CompileResult) -> None:
        if not self.enabled:
            return
        d = self.root / key[:2]
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                json.dump(res.to_json(), fh)
            os.replace(tmp, d / f"{key}.json")
        except OSError:
            pass


def _compiler_id(exe: str) -> str:
    path = shutil.which(exe) or exe
    try:
        st = os.stat(path)
        return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return path


def content_key(cmd: UnitCommand, inputs: list[tuple[str, bytes]]) -> str:
    """The cache key of compiling `cmd` with these inputs (the unit and the project headers it reaches)."""
    h = hashlib.blake2b(digest_size=20)
    for part in (json.dumps([cmd.directory, list(cmd.argv)]), _compiler_id(cmd.argv[0]) if cmd.argv else ""):
        h.update(part.encode("utf-8", "surrogateescape") + b"\0")
    for p, data in sorted(inputs):
        h.update(p.encode("utf-8", "surrogateescape") + b"\0")
        h.update(hashlib.blake2b(data, digest_size=20).digest())
    return h.hexdigest()


def search_dirs(cmd: UnitCommand) -> list[str]:
    """The directories includes of the unit start from: its own, the command's, its -I directories."""
    out = [os.path.dirname(cmd.file), os.path.realpath(cmd.directory)]
    args = list(cmd.argv[1:])
    for i, a in enumerate(args):
        for fl in ("-I", "-isystem", "-iquote", "--include-path="):
            if a == fl.rstrip("=") and i + 1 < len(args):
                d = args[i + 1]
            elif a.startswith(fl) and len(a) > len(fl):
                d = a[len(fl):]
            else:
                continue
            out.append(os.path.realpath(os.path.join(cmd.directory, d)))
            break
    return [d for d in dict.fromkeys(out) if os.path.isdir(d)]


def _is_cuda_compile(argv: list[str]) -> bool:
    """nvcc compiling CUDA source (a .cu/.cuh file, or `-x cu`): a unit whose front end runs twice."""
    if not argv or "nvcc" not in Path(argv[0]).name:
        return False
    if any(a in ("-x", "--x") and b == "cu" for a, b in zip(argv, argv[1:], strict=False)) or "-xcu" in argv:
        return True
    return any(Path(a).suffix.lower() in CUDA_SUFFIXES for a in argv[1:] if not a.startswith("-"))


def _other_pass_errors(argv: list[str], cwd: str, top: str | None, out_dir: str, timeout: float,
                       seen: list[Diagnostic]) -> list[Diagnostic]:
    """The device front end's errors of a CUDA unit whose compile stopped in a front end. nvcc runs the EDG
    front end once for the host and once per device architecture, and stops at the first pass that fails: the
    removed warp intrinsics (`__shfl_down`) are undefined only where `__CUDA_ARCH__ >= 700`, so a file that also
    calls a removed host API stops in the host pass and its device-only errors are not printed. A fix of the host
    API lets the compiler reach them; without this second look they read as errors the fix caused (issue 30:
    the bundled example's `cudaThreadSynchronize` fix was rolled back for `__shfl_down`). `-ptx` runs the device
    passes alone; its errors are added to the result, so 'no worse' compares every pass the compiler has."""
    try:
        rc, raw = run_group([*argv, "-ptx", "-o", os.path.join(out_dir, "unit.ptx")], cwd, timeout)
    except OSError:
        return []
    if rc is None or rc == 0:
        return []
    known = {(d.file, d.line, d.message) for d in seen}
    return [d for d in parse_errors(raw.decode("utf-8", "replace"), cwd, top)
            if d.stage == FRONT_END and (d.file, d.line, d.message) not in known]


def compile_unit(cmd: UnitCommand, changes: dict[str, bytes] | None = None, dirs: Iterable[str] = (),
                 timeout: float = COMPILE_TIMEOUT) -> CompileResult:
    """Compile the unit as it is on disk (`changes` None) or with `changes` (real path -> bytes) in an overlay
    (`dirs`: more directories includes start from, see make_overlay); the object file goes to a temporary
    directory, removed after. The compiler runs in its own process group (fixproof/procs.py), killed as a whole
    after `timeout` seconds or when the run is interrupted."""

    t0 = time.perf_counter()
    top = make_overlay(changes, [*search_dirs(cmd), *dirs]) if changes else None
    out_dir = tempfile.mkdtemp(prefix=temp_prefix("obj"))
    try:
        argv = overlay_argv(cmd.argv, top) if top else list(cmd.argv)
        cwd = _under(top, cmd.directory) if top else cmd.directory
        argv += ["-c", "-o", os.path.join(out_dir, "unit.o")]
        rc: int | None = None
        try:
            rc, raw = run_group(argv, cwd, timeout)
            text, ok = raw.decode("utf-8", "replace"), rc == 0
            if rc is None:
                text, ok = f"nvcc fatal : the compile took longer than {timeout:g} s (killed)", False
        except OSError as exc:
            text, ok = f"nvcc fatal : cannot run {argv[0]}: {exc.strerror or exc}", False
        errors = [] if ok else parse_errors(text, cwd, top)
        if errors and rc is not None and all(d.stage == FRONT_END for d in errors) and _is_cuda_compile(argv):
            errors += _other_pass_errors(argv[:-3], cwd, top, out_dir, timeout, errors)
        tail = ""
        if not ok and not errors:
            lines = [ln for ln in (text.replace(top, "") if top else text).splitlines() if ln.strip()]
            tail = lines[-1] if lines else f"{Path(argv[0]).name} exited with an error"
        return CompileResult(ok, errors, time.perf_counter() - t0, False, tail)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
        if top:
            shutil.rmtree(top, ignore_errors=True)
