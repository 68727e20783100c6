"""`fix` writes: crash-safe, compare-and-swap, and respectful of modes, owners, links (issue 15, writes).

- `kill -9` at 20 seeded random moments of `fix` on a 300-file tree (half of them in its rewriting phase):
  every file is old or new, and the temporaries a killed run leaves are removed by the next run.
- a file changed between read and write is not overwritten (`changed during fix, skipped`), and two
  concurrent `fix` runs never lose an update: the fixes in the files are exactly those both runs report.
- read-only files and files with several hard links are reported, not rewritten; symlinks are resolved
  (the target fixed once, the link kept); mode and owner are kept.
"""

from __future__ import annotations

import importlib
import os
import random
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.fix.write import Snapshot, WriteRefused, clean_stale, write_checked

ROOT = Path(__file__).resolve().parent.parent
OLD = "void f{i}() {{ cudaThreadSynchronize(); }}\n"
NEW = "void f{i}() {{ cudaDeviceSynchronize(); }}\n"


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _leftovers(d: Path) -> list[Path]:
    return [p for p in d.rglob(".*") if p.name.endswith(".cudamigrate")]


def _reset(d: Path, n: int) -> None:
    for i in range(n):
        p = d / f"f{i:03d}.cu"
        if not p.exists() or p.read_text() != OLD.format(i=i):
            p.write_text(OLD.format(i=i))


def _fork_fix(d: Path) -> int:
    """`cudamigrate fix` in a forked child (imports already done, so kills land in the fix loop)."""
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            main.main(args=["fix", "--select", "CM501", "-j", "1", str(d)], standalone_mode=True)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os._exit(code)
    return pid


def _writes_start(d: Path, n: int, pid: int, limit: float = 120.0) -> float:
    """The moment the first or last file of the tree is replaced (its inode changes), the child ends, or `limit`
    seconds pass (where there is no waitid to ask whether it ended: macOS)."""
    watched = [d / "f000.cu", d / f"f{n - 1:03d}.cu"]
    inodes = [p.stat().st_ino for p in watched]
    deadline = time.monotonic() + limit
    while [p.stat().st_ino for p in watched] == inodes and not _ended(pid) and time.monotonic() < deadline:
        time.sleep(0.0005)
    return time.monotonic()


def _ended(pid: int) -> bool:
    """Whether the child has exited, without reaping it (waitid with WNOWAIT leaves it for waitpid)."""
    if not hasattr(os, "waitid"):
        return False
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_9_at_random_moments_leaves_old_or_new_and_no_leftovers(tmp_path):
    from cudamigrate.knowledge.load import load_rules

    load_rules()  # warm the template cache the forked children inherit: kills land in the fix loop
    importlib.import_module("cudamigrate.cli.fix")  # the CLI imports a command's module on first use: not in the children
    n = 300
    d = tmp_path / "tree"
    d.mkdir()
    _reset(d, n)
    t0 = time.monotonic()
    pid = _fork_fix(d)
    writes_from = _writes_start(d, n, pid) - t0
    assert os.waitpid(pid, 0)[1] == 0
    full = time.monotonic() - t0
    writing = max(full - writes_from, 0.001)
    assert all((d / f"f{i:03d}.cu").read_text() == NEW.format(i=i) for i in range(n))
    rng = random.Random(15)
    killed_mid_run = killed_mid_write = 0
    # A loaded machine makes one run's length vary: runs are killed until 20 kills landed mid-run (at most 60
    # tries); a run that ended before its kill shortens the window the next kills are drawn from. Every other
    # kill is drawn from the whole run, the others from the moment this run's first rename is seen on: the
    # rewriting phase is a small part of a run, so uniform draws alone rarely hit it on a slow machine.
    for attempt in range(60):
        if killed_mid_run >= 20:
            break
        _reset(d, n)  # temporaries left by the previous kill stay: the next run must clean them
        t0 = time.monotonic()
        pid = _fork_fix(d)
        if attempt % 2:
            _writes_start(d, n, pid)
            time.sleep(rng.uniform(0, writing))
        else:
            time.sleep(rng.uniform(0, full))
        os.kill(pid, signal.SIGKILL)
        status = os.waitpid(pid, 0)[1]
        killed_mid_run += os.WIFSIGNALED(status)
        if not os.WIFSIGNALED(status):
            elapsed = time.monotonic() - t0
            full = min(full, elapsed) * 0.8
            writing = min(writing, full) * 0.8
        fixed = 0
        for i in range(n):
            text = (d / f"f{i:03d}.cu").read_text()
            assert text in (OLD.format(i=i), NEW.format(i=i)), f"f{i:03d}.cu half-written: {text!r}"
            fixed += text == NEW.format(i=i)
        killed_mid_write += 0 < fixed < n
    assert killed_mid_run >= 10  # the kills really landed during runs
    assert killed_mid_write >= 5  # ... and often while the files were being rewritten
    pid = _fork_fix(d)  # a run to completion cleans what the killed runs left
    assert os.waitpid(pid, 0)[1] == 0
    assert _leftovers(d) == []
    assert all((d / f"f{i:03d}.cu").read_text() == NEW.format(i=i) for i in range(n))


def test_stale_temporaries_are_cleaned_only_when_ours_and_stale(tmp_path):
    (tmp_path / "a.cu").write_text("x\n")
    stale = tmp_path / ".a.cu.k3j_x9.cudamigrate"
    stale.write_text("partial")
    orphan = tmp_path / ".gone.cu.abcdef.cudamigrate"  # no such file next to it: not provably ours
    orphan.write_text("?")
    other = tmp_path / ".a.cu.swp"
    other.write_text("editor")
    # a live writer holds a.cu's lock: its temporary must survive
    import fcntl

    fd = os.open(tmp_path / "a.cu", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert clean_stale(tmp_path) == 0 and stale.exists()
    finally:
        os.close(fd)
    assert clean_stale(tmp_path) == 1
    assert not stale.exists() and orphan.exists() and other.exists()


def test_file_changed_between_read_and_write_is_not_overwritten(tmp_path, monkeypatch):
    import cudamigrate.fix.apply as apply_mod

    p = tmp_path / "a.cu"
    p.write_text(OLD.format(i=0))
    real = apply_mod.fix_bytes

    def editor_saves_meanwhile(engine, path, data, display, **kw):
        res = real(engine, path, data, display, **kw)
        p.write_text("// edited by someone else\n" + OLD.format(i=0))
        return res

    monkeypatch.setattr(apply_mod, "fix_bytes", editor_saves_meanwhile)
    r = run("fix", "--select", "CM501", str(p))
    assert p.read_text() == "// edited by someone else\n" + OLD.format(i=0)
    assert "a.cu: changed during fix, skipped" in r.output
    assert "Fixed 0 finding(s) in 0 file(s)" in r.output and r.exit_code == 1


def test_same_size_same_mtime_change_is_caught_by_the_hash(tmp_path):
    p = tmp_path / "a.cu"
    p.write_bytes(b"aaaa\n")
    st = os.stat(p)
    snap = Snapshot.of(st, b"aaaa\n")
    p.write_bytes(b"bbbb\n")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(WriteRefused, match="changed during fix"):
        write_checked(p, b"new\n", snap)
    assert p.read_bytes() == b"bbbb\n"


def test_two_concurrent_fix_runs_never_lose_an_update(tmp_path):
    n = 150
    d = tmp_path / "tree"
    d.mkdir()
    for i in range(n):
        (d / f"f{i:03d}.cu").write_text(
            f"void f{i}(double *p) {{ cudaThreadSynchronize(); cudaSetDoubleForDevice(p); }}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "cudamigrate", "fix", "-j", "1"]
    a = subprocess.Popen(cmd + ["--select", "CM522", str(d)], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    b = subprocess.Popen(cmd + ["--select", "CM501", str(d)], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    outs = [p.communicate(timeout=120) for p in (a, b)]
    reported = [int(re.search(r"Fixed (\d+) finding", out).group(1)) for out, _ in outs]
    present_a = sum(1 - (d / f"f{i:03d}.cu").read_text().count("cudaSetDoubleForDevice") for i in range(n))
    present_b = sum((d / f"f{i:03d}.cu").read_text().count("cudaDeviceSynchronize") for i in range(n))
    assert (present_a, present_b) == tuple(reported), outs
    skipped = sum(err.count("changed during fix, skipped") for _, err in outs)
    assert present_a + present_b + skipped == 2 * n  # every file: fixed by each run, or reported skipped
    assert _leftovers(d) == []


def test_read_only_file_is_reported_not_rewritten(tmp_path):
    p = tmp_path / "ro.cu"
    p.write_text(OLD.format(i=0))
    os.chmod(p, 0o444)
    try:
        r = run("fix", "--select", "CM501", str(p))
        assert p.read_text() == OLD.format(i=0)
        assert "ro.cu: read-only (mode 0444), not rewritten" in r.output
        assert "Fixed 0 finding(s) in 0 file(s); 1 remaining; 1 file(s) not written" in r.output
        assert r.exit_code == 1
    finally:
        os.chmod(p, 0o644)


def test_hard_linked_file_is_not_split(tmp_path):
    p = tmp_path / "a.cu"
    p.write_text(OLD.format(i=0))
    os.link(p, tmp_path / "other-name.txt")
    r = run("fix", "--select", "CM501", str(p))
    assert "has 2 hard links, not rewritten" in r.output
    assert os.stat(p).st_nlink == 2 and p.read_text() == OLD.format(i=0)


def test_symlink_target_fixed_once_and_link_kept(tmp_path):
    real = tmp_path / "real.cu"
    real.write_text(OLD.format(i=0))
    (tmp_path / "link.cu").symlink_to("real.cu")
    r = run("fix", "--select", "CM501", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "link.cu").is_symlink() and os.readlink(tmp_path / "link.cu") == "real.cu"
    assert real.read_text() == NEW.format(i=0)
    assert "Fixed 1 finding(s) in 1 file(s)" in r.output


def test_symlink_out_of_the_tree_is_reported_not_rewritten(tmp_path):
    """A file link in the named tree pointing outside it: its target belongs to someone who never asked for
    a fix (directory links are not followed either). Reported and left alone unless --write-outside-links."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    target = outside / "shared.cu"
    target.write_text(OLD.format(i=0))
    (tree / "link.cu").symlink_to(target)
    r = run("fix", "--select", "CM501", str(tree))
    assert r.exit_code != 0 and "outside the paths given, not rewritten" in r.output, r.output
    assert target.read_text() == OLD.format(i=0)
    r = run("fix", "--select", "CM501", "--write-outside-links", str(tree))
    assert r.exit_code == 0, r.output
    assert target.read_text() == NEW.format(i=0) and (tree / "link.cu").is_symlink()


def test_extended_attributes_are_kept(tmp_path):
    p = tmp_path / "a.cu"
    p.write_text(OLD.format(i=0))
    try:
        os.setxattr(p, "user.cudamigrate-test", b"label")
    except OSError as exc:  # a filesystem without user xattrs: nothing to keep
        pytest.skip(f"no user xattrs here: {exc}")
    r = run("fix", "--select", "CM501", str(p))
    assert r.exit_code == 0, r.output
    assert p.read_text() == NEW.format(i=0)
    assert os.getxattr(p, "user.cudamigrate-test") == b"label"


def test_mode_and_owner_are_kept(tmp_path):
    p = tmp_path / "a.cu"
    p.write_text(OLD.format(i=0))
    os.chmod(p, 0o751)
    if os.geteuid() == 0:
        os.chown(p, 65534, 65534)  # nobody: root's rewrite must not make it root's
    before = os.stat(p)
    r = run("fix", "--select", "CM501", str(p))
    assert r.exit_code == 0, r.output
    after = os.stat(p)
    assert p.read_text() == NEW.format(i=0)
    assert stat.S_IMODE(after.st_mode) == 0o751
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)


def test_lock_follows_a_file_replaced_while_waiting(tmp_path):
    """A `fix` waiting for the lock while another renames a new file over the path must end up holding the
    lock of the new file, not of the old inode (which would protect nothing)."""
    import fcntl
    import threading

    from cudamigrate.fix.write import locked

    p = tmp_path / "a.cu"
    p.write_text("0")
    fd = os.open(p, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    got: dict[str, int] = {}

    def waiter():
        with locked(str(p)) as lfd:
            got["ino"] = os.fstat(lfd).st_ino

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)
    (tmp_path / "new").write_text("1")
    os.replace(tmp_path / "new", p)
    os.close(fd)
    t.join(10)
    assert got["ino"] == os.stat(p).st_ino
