"""Read chosen members of a remote wheel with HTTP range requests, without downloading the wheel.

Why: the inventory scripts need only the `include/` headers of NVIDIA's library wheels, a few MB out of
300-700 MB each (cuBLAS, cuSPARSE, NPP, ...; over 10 GB for every release with wheels). A wheel is a zip:
its end-of-central-directory record and central directory sit at the end of the file and give every member's
offset, so a client that can ask for byte ranges fetches the tail, reads the directory, then asks for the
spans that hold the wanted members (pip's own `pip._internal.network.lazy_wheel` does the same for a wheel's
METADATA). The standard library's zipfile does the parsing, decompression and CRC checks; this module only
gives it a seekable file whose bytes come from range requests, and fetches each run of wanted members in one
request. No new dependency: pip's lazy_wheel is internal API, and the range logic is a page of code.

    fetch = http_fetch(url)            # or any (start, end) -> bytes, e.g. a slice of bytes in a test
    with RangeFile(fetch) as f:
        names = extract(f, lambda n: "/include/" in n, dest)
    f.fetched                          # bytes downloaded
"""

from __future__ import annotations

import io
import json
import re
import urllib.parse
import urllib.request
import zipfile
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Fetch = Callable[[int, int], bytes]  # (start, end exclusive) -> exactly those bytes
TAIL = 64 * 1024  # the EOCD record (22 bytes + a comment of up to 64 KiB) lies in the last 64 KiB + 22
MIN_READ = 16 * 1024  # a read outside a prefetched span fetches at least this much (zipfile reads in small steps)
GAP = 256 * 1024  # two wanted members closer than this are fetched in one request with the bytes between


class RangeError(OSError):
    """The server did not answer a range request with the bytes asked for (no 206, wrong length)."""


def http_fetch(url: str, timeout: float = 60.0) -> tuple[Fetch, int]:
    """A fetch function over HTTP range requests and the file's size (from the first answer's Content-Range).

    A server that ignores Range answers 200 with the whole file: that is refused (RangeError), never read."""

    def get(header: str) -> tuple[bytes, str]:
        req = urllib.request.Request(url, headers={"Range": header, "Accept-Encoding": "identity"})
        with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - the index's https URLs
            if r.status != 206:
                raise RangeError(f"{url}: answered {r.status} to Range {header} (no range support)")
            return r.read(), r.headers.get("Content-Range", "")

    _, cr = get("bytes=0-0")
    m = re.fullmatch(r"bytes \d+-\d+/(\d+)", cr.strip())
    if not m:
        raise RangeError(f"{url}: Content-Range {cr!r} gives no size")
    size = int(m.group(1))

    def fetch(start: int, end: int) -> bytes:
        data, _ = get(f"bytes={start}-{end - 1}")
        if len(data) != end - start:
            raise RangeError(f"{url}: asked bytes {start}-{end - 1}, got {len(data)}")
        return data

    return fetch, size


class RangeFile(io.RawIOBase):
    """A read-only, seekable file of `size` bytes whose contents come from `fetch` on first read, kept in
    memory by span. `fetched` counts the bytes fetched, `requests` the fetches made."""

    def __init__(self, fetch: Fetch, size: int) -> None:
        super().__init__()
        self._fetch, self._size, self._pos = fetch, size, 0
        self._starts: list[int] = []  # sorted, non-overlapping spans: starts[i] -> data[i]
        self._data: list[bytes] = []
        self.fetched = 0
        self.requests = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _have(self, start: int, end: int) -> bytes | None:
        i = bisect_right(self._starts, start) - 1
        if i >= 0 and self._starts[i] + len(self._data[i]) >= end:
            off = start - self._starts[i]
            return self._data[i][off:off + end - start]
        return None

    def prefetch(self, start: int, end: int) -> None:
        """Fetch [start, end) in one request unless held already (a span that overlaps held ones is merged)."""
        start, end = max(0, start), min(self._size, end)
        if start >= end or self._have(start, end) is not None:
            return
        data = self._fetch(start, end)
        if len(data) != end - start:
            raise RangeError(f"fetch({start}, {end}) returned {len(data)} bytes")
        self.fetched += len(data)
        self.requests += 1
        # merge with every held span it touches, so a later read spanning both is one lookup
        lo, hi, parts = start, end, []
        keep_s, keep_d = [], []
        for s, d in zip(self._starts, self._data, strict=True):
            if s + len(d) < start or s > end:
                keep_s.append(s)
                keep_d.append(d)
            else:
                parts.append((s, d))
        if parts:
            lo, hi = min(lo, *(s for s, _ in parts)), max(hi, *(s + len(d) for s, d in parts))
            buf = bytearray(hi - lo)
            for s, d in parts:
                buf[s - lo:s - lo + len(d)] = d
            buf[start - lo:end - lo] = data
            data = bytes(buf)
        i = bisect_right(keep_s, lo)
        keep_s.insert(i, lo)
        keep_d.insert(i, data)
        self._starts, self._data = keep_s, keep_d

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        n = min(len(b), self._size - self._pos)
        if n <= 0:
            return 0
        got = self._have(self._pos, self._pos + n)
        if got is None:
            self.prefetch(self._pos, max(self._pos + n, self._pos + MIN_READ))
            got = self._have(self._pos, self._pos + n)
            assert got is not None
        b[:n] = got
        self._pos += n
        return n


def member_spans(infos: list[zipfile.ZipInfo], wanted: list[zipfile.ZipInfo], directory_start: int,
                 gap: int = GAP) -> list[tuple[int, int]]:
    """The byte spans holding the wanted members (local header, name, extra, data), neighbours closer than
    `gap` joined: one request per run. A member ends where the next one (by offset) starts."""
    offsets = sorted({i.header_offset for i in infos}) + [directory_start]
    spans: list[tuple[int, int]] = []
    for off in sorted({w.header_offset for w in wanted}):
        end = offsets[bisect_right(offsets, off)]
        if spans and off - spans[-1][1] <= gap:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((off, end))
    return spans


def extract(f: RangeFile, want: Callable[[str], bool], dest: Path) -> list[str]:
    """Extract the members whose name `want` accepts into dest (zipfile's checks: CRC, sizes, safe paths);
    returns their names, sorted."""
    f.prefetch(f.seek(0, io.SEEK_END) - TAIL - 22, f.tell())
    f.seek(0)
    with zipfile.ZipFile(f) as z:
        infos = z.infolist()
        wanted = [i for i in infos if want(i.filename) and not i.is_dir()]
        for s, e in member_spans(infos, wanted, z.start_dir):
            f.prefetch(s, e)
        for i in wanted:
            z.extract(i, dest)
    return sorted(i.filename for i in wanted)


# --------------------------------------------------------------------------------------------- the index

INDEX = "https://pypi.org/pypi/{name}/json"


@dataclass(frozen=True)
class WheelFile:
    """One wheel file of a release on the package index."""
    filename: str
    url: str  # absolute
    size: int


def pick_wheel(doc: dict, json_url: str, version: str, platform: str = "") -> WheelFile:
    """The wheel of `version` for `platform` (a tag fragment such as win_amd64; default Linux x86_64, the
    first manylinux tag by name) from the index's JSON document. The JSON API gives relative file URLs:
    they are resolved against the JSON document's own URL."""
    files = [f for f in doc.get("releases", {}).get(version, []) if f["filename"].endswith(".whl")]
    if platform:
        ok = [f for f in files if platform in f["filename"]]
    else:
        ok = [f for f in files if "x86_64" in f["filename"] and "linux" in f["filename"]]
    if not ok:
        raise LookupError(f"{doc.get('info', {}).get('name', '?')}=={version}: no wheel for "
                          f"{platform or 'linux x86_64'} among {[f['filename'] for f in files]}")
    f = sorted(ok, key=lambda f: f["filename"])[0]
    return WheelFile(f["filename"], urllib.parse.urljoin(json_url, f["url"]), int(f.get("size") or 0))


def index_document(name: str, timeout: float = 60.0) -> tuple[dict, str]:
    """The index's JSON document of a distribution and its URL (one request)."""
    url = INDEX.format(name=name)
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - the index's https URL
        return json.loads(r.read().decode("utf-8")), url
