"""Running the user's compiler and programs so that nothing outlives the run.

Why: a compile is nvcc and its children (cicc, ptxas, the host compiler). Killed by itself on a timeout, nvcc
leaves them running; and `fix` killed (Ctrl-C, SIGTERM from a CI runner) left every compile of the pool running
and their temporary overlays behind. Each command here runs in its own process group (a new session), which is
killed as a whole on a timeout, and every group still running is killed when the run is interrupted
(`interruptible`: SIGTERM/SIGHUP become an exit whose cleanups run; a stop flag keeps queued compiles from
starting). Temporary directories are the callers' (`finally`), so they go on every exit path that runs Python;
those of a run killed with SIGKILL carry its pid and are removed by the next run (`remove_stale_temps`).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from typing import Any, Iterator

_LOCK = threading.Lock()
_RUNNING: set[subprocess.Popen] = set()
_STOP = threading.Event()


class Stopped(Exception):
    """The run is being interrupted: no new command starts."""


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_group(argv: list[str], cwd: str, timeout: float, env: dict[str, str] | None = None) -> tuple[int | None, bytes]:
    """Run a command in its own process group, stdout and stderr together: (exit code, output), or (None,
    output so far) when it ran past `timeout` seconds (its whole group is killed). OSError when it cannot start;
    Stopped when the run is being interrupted."""
    rc, out, _ = run_group_split(argv, cwd, timeout, env, merge=True)
    return rc, out


def run_group_split(argv: list[str] | str, cwd: str | os.PathLike[str], timeout: float,
                    env: dict[str, str] | None = None, merge: bool = False) -> tuple[int | None, bytes, bytes]:
    """Like run_group, with stdout and stderr apart (unless `merge`); a string is run by the shell."""
    with _LOCK:
        if _STOP.is_set():
            raise Stopped()
        p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT if merge else subprocess.PIPE, stdin=subprocess.DEVNULL,
                             start_new_session=True, env=env, shell=isinstance(argv, str))
        _RUNNING.add(p)
    try:
        try:
            out, err = p.communicate(timeout=timeout)
            return p.returncode, out, err or b""
        except subprocess.TimeoutExpired:
            _kill_group(p)
            out, err = p.communicate()
            return None, out, err or b""
    finally:
        _kill_group(p)  # the command's children that outlived it (a host compiler nvcc left behind)
        with _LOCK:
            _RUNNING.discard(p)


_TEMP = re.compile(r"^cudamigrate-(?:verify|obj)-(\d+)-")


def temp_prefix(kind: str) -> str:
    """The prefix of a compile's temporary directory: it names this process, so that a later run can remove what a
    run killed with SIGKILL (which runs no cleanup) left behind, and nothing of a run still alive."""
    return f"cudamigrate-{kind}-{os.getpid()}-"


def remove_stale_temps(root: str | None = None) -> int:
    """Remove the compile directories of cudamigrate processes that no longer exist; how many were removed."""
    root = root or tempfile.gettempdir()
    removed = 0
    try:
        entries = os.listdir(root)
    except OSError:
        return 0
    for e in entries:
        m = _TEMP.match(e)
        if m is None or _alive(int(m.group(1))):
            continue
        shutil.rmtree(os.path.join(root, e), ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def kill_all() -> None:
    """Stop starting commands and kill every group still running."""
    with _LOCK:
        _STOP.set()
        running = list(_RUNNING)
    for p in running:
        _kill_group(p)


@contextmanager
def interruptible() -> Iterator[None]:
    """While inside: SIGTERM and SIGHUP exit through Python (128 + signal), so `finally` blocks run; on any exit
    by an exception (Ctrl-C included) every running command group is killed. Signal handlers are only set from
    the main thread."""
    _STOP.clear()
    old: dict[signal.Signals, Any] = {}

    def handler(signum: int, _frame: object) -> None:
        kill_all()
        raise SystemExit(128 + signum)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            old[sig] = signal.signal(sig, handler)
    try:
        yield
    except BaseException:
        kill_all()
        raise
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
