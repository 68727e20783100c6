"""Writing a fixed file back: crash-safe, compare-and-swap, and respectful of what the file is.

Why each step:

* Crash safety: the new bytes go to a temporary `.<name>.<random>.cudamigrate` in the same directory,
  are fsync'ed and renamed over the original, so `kill -9` at any moment leaves the old or the new file,
  never half of one. The temporary only exists while its writer holds the file's lock (below), so a
  temporary whose file is not locked was left by a killed run: `clean_stale` removes those (only names
  of that exact shape, next to an existing file, only while holding that file's lock).
* Compare-and-swap: between our read and our write someone (an editor, another `fix`) may have changed
  the file. Under an exclusive `flock` on the file we check that its inode, size, mtime and content hash
  are still what we read, and re-check the stat right before the rename; otherwise the file is left
  alone and reported `changed during fix, skipped`. Two concurrent `fix` runs therefore never lose an
  update: the second one to reach a file sees the first one's write and skips it.
* What the file is: a symlink is resolved and its target rewritten (the link stays a link) only when the
  target lies inside the paths the user named (`roots`): a link in the tree pointing outside it is reported
  and not rewritten (`fix --write-outside-links` allows it), since directory links are not followed either
  and the owner of that file never asked for it to change; the mode, extended attributes (SELinux labels,
  macOS quarantine, user.* tags), owner and group are kept (a file we cannot give back its owner is not rewritten); a read-only file
  (no write bit) is reported, not rewritten; a file with several hard links is not rewritten, since a
  rename would split it from its other names and an in-place write is not crash-safe.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import stat
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

SUFFIX = ".cudamigrate"
_TEMP = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]{6,}" + re.escape(SUFFIX) + r"$")


class WriteRefused(Exception):
    """The file was not rewritten, for the reason in str() (one line, no path)."""


@dataclass(frozen=True)
class Snapshot:
    """What we read: enough to notice any change before we overwrite."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    digest: str

    @classmethod
    def of(cls, st: os.stat_result, data: bytes) -> "Snapshot":
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, hashlib.sha256(data).hexdigest())

    def same_stat(self, st: os.stat_result) -> bool:
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (self.dev, self.ino, self.size, self.mtime_ns)


def _is_current(fd: int, path: str) -> bool:
    """Whether the locked descriptor is still the file at `path` (another `fix` may have renamed a new
    file over it while we waited for the lock: that lock then protects nothing)."""
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@contextmanager
def locked(path: str) -> Iterator[int]:
    """An exclusive advisory lock on the file itself, held by every `fix` while it checks and replaces it;
    re-taken when the file was replaced while we waited, so the lock is always on the current file."""
    for _ in range(100):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        if _is_current(fd, path):
            break
        os.close(fd)
    else:
        raise WriteRefused("replaced again and again while waiting for its lock, skipped")
    try:
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks: list[bytes] = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def fsync_dir(d: str) -> None:
    """Make the renames in directory `d` durable (once per directory and run, not per file: cheap)."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def inside_roots(real: str, roots: Sequence[str]) -> bool:
    """Whether the resolved path `real` is one of `roots` or lies under one (roots resolved too)."""
    for r in roots:
        rr = os.path.realpath(r)
        if real == rr or real.startswith(rr.rstrip(os.sep) + os.sep):
            return True
    return False


def copy_xattrs(src_fd: int, dst_fd: int) -> None:
    """Copy the extended attributes of the file open as `src_fd` to `dst_fd` (a rename would drop them).
    One that cannot be set (a security.* attribute without the privilege) makes the write refused rather than
    silently losing it."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(src_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return
        raise
    for n in names:
        try:
            os.setxattr(dst_fd, n, os.getxattr(src_fd, n))
        except OSError as exc:
            raise WriteRefused(f"cannot keep its extended attribute {n} ({exc.strerror or exc}), not rewritten") from None


def write_checked(path: Path, data: bytes, snap: Snapshot, roots: Sequence[str] | None = None) -> str:
    """Replace the file at `path` (its symlink target) by `data` if it is still what `snap` recorded;
    return the directory written (for one `fsync_dir` per directory at the end of the run). `roots`: the
    paths the user named; a file whose resolved path lies outside them (through a symlink) is not rewritten.

    Raises WriteRefused (not rewritten, reason given) or OSError (could not write; nothing changed)."""
    real = os.path.realpath(path)
    if roots is not None and not inside_roots(real, roots):
        raise WriteRefused(f"a symlink to {real}, outside the paths given, not rewritten "
                           "(fix --write-outside-links allows it)")
    st = os.stat(real)
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused("not a regular file any more, skipped")
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise WriteRefused(f"read-only (mode {stat.S_IMODE(st.st_mode):04o}), not rewritten")
    if st.st_nlink > 1:
        raise WriteRefused(f"has {st.st_nlink} hard links, not rewritten (a rename would split the links; "
                           "fix a copy, or use --diff)")
    euid = os.geteuid()
    if euid != 0 and st.st_uid != euid:
        raise WriteRefused(f"owned by uid {st.st_uid}: rewriting it would make it ours, not rewritten")
    directory, name = os.path.split(real)
    with locked(real) as lfd:
        _clean_stale_locked(directory, name)
        now = os.fstat(lfd)
        if not snap.same_stat(now) or hashlib.sha256(_read_all(lfd)).hexdigest() != snap.digest:
            raise WriteRefused("changed during fix, skipped")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=SUFFIX, dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                try:
                    os.fchown(fh.fileno(), now.st_uid, now.st_gid)
                except PermissionError:
                    raise WriteRefused(f"cannot keep its group (gid {now.st_gid}), not rewritten") from None
                os.fchmod(fh.fileno(), stat.S_IMODE(now.st_mode))
                copy_xattrs(lfd, fh.fileno())
                os.fsync(fh.fileno())
            try:
                last = os.stat(real)
            except FileNotFoundError:
                raise WriteRefused("deleted during fix, skipped") from None
            if not snap.same_stat(last):  # an editor that does not lock wrote it meanwhile
                raise WriteRefused("changed during fix, skipped")
            os.replace(tmp, real)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    return directory


def write_new(path: str, data: bytes) -> str:
    """Create the file `path` with `data` (a header a fix adds, fix/shared_helpers.py), crash-safe: a temporary
    fsync'ed and linked under the name, which fails when a file of that name appeared meanwhile (nothing is
    overwritten); return the directory written. Raises WriteRefused or OSError (nothing created)."""
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise WriteRefused("created by someone else during fix, not overwritten") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return directory


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _clean_stale_locked(directory: str, name: str) -> int:
    """Remove our temporaries of `name` in `directory`; the caller holds `name`'s lock, so they are stale."""
    n = 0
    try:
        entries = os.listdir(directory)
    except OSError:
        return 0
    prefix = f".{name}."
    for e in entries:
        if e.startswith(prefix) and e.endswith(SUFFIX):
            m = _TEMP.match(e)
            if m and m.group("name") == name:
                try:
                    if stat.S_ISREG(os.lstat(os.path.join(directory, e)).st_mode):
                        os.unlink(os.path.join(directory, e))
                        n += 1
                except OSError:
                    pass
    return n


def clean_stale(directory: str | Path) -> int:
    """Remove the temporaries a killed `fix` left in `directory`: only names `.<file>.<random>.cudamigrate`
    next to an existing regular `<file>`, and only when nobody holds that file's lock (a live `fix`
    holds it for as long as its temporary exists). Returns how many were removed."""
    directory = str(directory)
    try:
        entries = os.listdir(directory)
    except OSError:
        return 0
    removed = 0
    targets = {m.group("name") for e in entries if e.endswith(SUFFIX) and (m := _TEMP.match(e))}
    for name in sorted(targets):
        target = os.path.join(directory, name)
        try:
            if not stat.S_ISREG(os.lstat(target).st_mode):
                continue
            fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    continue  # a live fix is writing it
                raise
            if _is_current(fd, target):  # not a file that a live fix just replaced
                removed += _clean_stale_locked(directory, name)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed
