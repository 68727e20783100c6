"""When a file's stat proves its bytes unchanged, and the process-wide caches keyed by stats.

A stat is taken to prove equal bytes as git takes it (size, mtime, ctime, inode, device), but only when the file
had not changed within RACY_NS of being read: a second change in the same clock tick (FAT keeps 2-second times,
SMB and HFS+ 1-second ones, ext4 a scheduler tick) leaves the stat as it was. The result cache
(pipeline/result_cache.py) and the editor server's project index (read/project_index.py) apply that rule.

Modules that keep what they derived from a file for the whole process, keyed by its path and mtime (headers'
facts, directory listings), register a `clear` here. A CLI run is one process over files that do not change
under it; the editor server lives across saves and clears them all whenever it starts a new project index
(server/analysis.py), so a change its index notices, or a stamp it cannot trust, also reaches them."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

RACY_NS = 2_000_000_000  # a file changed this close to when it was looked at may change again unseen


def stat_sig(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What a file's bytes are taken to be unchanged by, as git does: size, mtime, ctime (which no tool can set
    back), inode and device."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def trusted(st: os.stat_result | tuple[int, ...], looked_ns: int) -> bool:
    """Whether an equal stat later proves equal bytes: not when the file changed within RACY_NS of `looked_ns`
    (when its bytes were read), since a second change in the same clock tick would leave the stat as it was."""
    sig = stat_sig(st) if isinstance(st, os.stat_result) else st
    return settled(sig[1], sig[2], looked_ns)


def settled(mtime_ns: int, ctime_ns: int, looked_ns: int | None = None) -> bool:
    """`trusted` for a file last changed at these times, looked at `looked_ns` (default: now)."""
    return max(mtime_ns, ctime_ns) < (time.time_ns() if looked_ns is None else looked_ns) - RACY_NS


_CLEARS: list[Callable[[], None]] = []


def file_cache(clear: Callable[[], None]) -> Callable[[], None]:
    """Register `clear` of a process-wide cache keyed by files' stats (usable as a decorator's companion:
    `file_cache(fn.cache_clear)`); returns it."""
    _CLEARS.append(clear)
    return clear


def clear_file_caches() -> None:
    """Forget every registered cache (a long-lived process whose files may have changed)."""
    for clear in _CLEARS:
        clear()
