"""The progress line: on a terminal only, cleared at the end; never in redirected output."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from types import SimpleNamespace

from cudamigrate.cli.progress import Progress

RESULT = SimpleNamespace(findings=[1, 2])


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_writes_to_a_terminal_and_clears(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    s = Tty()
    p = Progress(3, min_files=1, stream=s, interval=0)
    for _ in range(3):
        p.update(RESULT)
    out = s.getvalue()
    assert "3/3 files, 6 findings" in out and out.startswith("\r[")
    p.close()
    assert s.getvalue().endswith("\r") and s.getvalue()[len(out):].strip() == ""


def test_silent_when_not_a_terminal_or_small_or_dumb(monkeypatch):
    s = io.StringIO()
    p = Progress(500, stream=s, interval=0)
    p.update(RESULT)
    p.close()
    assert s.getvalue() == "" and p.findings == 2
    t = Tty()
    Progress(10, stream=t).update(RESULT)  # under min_files
    monkeypatch.setenv("TERM", "dumb")
    Progress(500, stream=t, interval=0).update(RESULT)
    assert t.getvalue() == ""


def _tree(tmp_path, n=220):
    for i in range(n):
        (tmp_path / f"f{i}.cu").write_text("int main() { return 0; }\n")
    (tmp_path / "x.cu").write_text("#include <cuda_runtime.h>\nvoid f(int *d, cudaStream_t s){ cudaMemsetAsync(d, 0, 4); }\n")


def test_cli_progress_on_a_pty_and_not_in_a_pipe(tmp_path):
    _tree(tmp_path)
    env = dict(os.environ, TERM="xterm", COLUMNS="100")
    cmd = [sys.executable, "-m", "cudamigrate", "scan", str(tmp_path), "--jobs", "1", "--format", "json"]
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read()
    proc.wait(timeout=60)
    os.close(master)
    err = b"".join(chunks).decode()
    assert "221/221 files" in err and "1 findings" in err
    assert b"files," not in out  # stdout (a pipe) carries only the report
    p = subprocess.run(cmd, capture_output=True, env=env, timeout=120)
    assert p.stderr == b"" and p.returncode == 1
