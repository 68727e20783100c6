"""scripts/lazy_wheel.py: a wheel's include/ members read through range requests, on zips made here (no network).

The release inventory reads the headers of 138 library wheels (20 GB) by fetching only their central
directories and header members; these tests check that what comes out is byte for byte what the zip holds,
that the large members in between are never fetched, and that the index's relative file URLs resolve."""

from __future__ import annotations

import io
import os
import sys
import zipfile
from pathlib import Path

import pytest

from .helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import lazy_wheel  # noqa: E402

HEADERS = {
    "nvidia/cublas/include/cublas_api.h": b"/* api */\n" + b"cublasStatus_t cublasSgemm_v2(void);\n" * 400,
    "nvidia/cublas/include/cublasLt.h": b"typedef int cublasLtHandle_t;\n" * 50,
    "nvidia/cublas/include/empty.h": b"",
}


def _wheel(stored_lib: int = 2_000_000, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A wheel-shaped zip: a big library before and after the headers (random bytes: incompressible)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        z.writestr("nvidia/__init__.py", b"")
        z.writestr("nvidia/cublas/lib/libcublasLt.so.13", os.urandom(stored_lib))
        z.writestr("nvidia/cublas/include/", b"")  # a directory entry
        for name, data in HEADERS.items():
            z.writestr(name, data)
        z.writestr("nvidia/cublas/lib/libcublas.so.13", os.urandom(stored_lib // 2))
        z.writestr("nvidia_cublas-13.0.dist-info/METADATA", b"Name: nvidia-cublas\n")
    return buf.getvalue()


class Server:
    """Serves byte ranges of `data`, counting requests, as an HTTP server answering Range would."""

    def __init__(self, data: bytes) -> None:
        self.data, self.calls = data, []

    def __call__(self, start: int, end: int) -> bytes:
        assert 0 <= start < end <= len(self.data), (start, end)
        self.calls.append((start, end))
        return self.data[start:end]


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_only_the_headers_and_the_directory_are_fetched_and_they_are_exact(tmp_path, compression):
    data = _wheel(compression=compression)
    server = Server(data)
    f = lazy_wheel.RangeFile(server, len(data))
    names = lazy_wheel.extract(f, lambda n: "/include/" in n, tmp_path)
    assert names == sorted(HEADERS)
    for name, content in HEADERS.items():
        assert (tmp_path / name).read_bytes() == content
    assert not (tmp_path / "nvidia/cublas/lib").exists()
    assert f.fetched == sum(e - s for s, e in server.calls)
    assert f.fetched < 200_000 < len(data)  # the 3 MB of libraries in the zip are never asked for
    assert f.requests == len(server.calls) <= 3  # the tail (directory), one run of headers, at most one more


def test_member_spans_join_neighbours_and_end_each_member_where_the_next_begins():
    data = _wheel()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
        wanted = [i for i in infos if "/include/" in i.filename and not i.is_dir()]
        spans = lazy_wheel.member_spans(infos, wanted, z.start_dir)
        lib_after = next(i for i in infos if i.filename.endswith("libcublas.so.13"))
    assert spans == [(wanted[0].header_offset, lib_after.header_offset)]  # one run, up to the next member
    far = lazy_wheel.member_spans(infos, [wanted[0], wanted[-1]], 10**9, gap=0)
    assert len(far) == 2  # not adjacent (a member between), no gap allowed: two requests


def test_a_read_past_what_was_prefetched_fetches_it_and_reads_are_exact():
    data = bytes(range(256)) * 1000
    server = Server(data)
    f = lazy_wheel.RangeFile(server, len(data))
    f.prefetch(1000, 2000)
    f.seek(1500)
    assert f.read(1000) == data[1500:2500]  # half held, half not: fetched, merged
    f.seek(-10, io.SEEK_END)
    assert f.read(100) == data[-10:]
    f.seek(0)
    assert f.read(5) == data[:5]
    assert f.read(0) == b""
    n = len(server.calls)
    f.seek(1200)
    assert f.read(1300) == data[1200:2500]  # held since the merge: no request
    assert len(server.calls) == n


def test_a_short_answer_is_an_error_not_a_silent_truncation():
    data = _wheel(stored_lib=1000)
    f = lazy_wheel.RangeFile(lambda s, e: data[s:e - 1], len(data))
    with pytest.raises(lazy_wheel.RangeError):
        lazy_wheel.extract(f, lambda n: "/include/" in n, Path("/nonexistent"))


def test_a_corrupted_member_fails_its_crc(tmp_path):
    data = bytearray(_wheel(stored_lib=1000, compression=zipfile.ZIP_STORED))
    at = data.index(b"typedef int cublasLtHandle_t;")
    data[at] ^= 0xFF
    f = lazy_wheel.RangeFile(Server(bytes(data)), len(data))
    with pytest.raises(zipfile.BadZipFile):
        lazy_wheel.extract(f, lambda n: n.endswith("cublasLt.h"), tmp_path)


def test_the_index_relative_url_is_resolved_against_the_json_url_and_the_platform_chosen():
    doc = {"info": {"name": "nvidia-cublas"}, "releases": {"13.0.2.14": [
        {"filename": "nvidia_cublas-13.0.2.14-py3-none-win_amd64.whl", "size": 5,
         "url": "../../packages/packages/aa/bb/nvidia_cublas-13.0.2.14-py3-none-win_amd64.whl"},
        {"filename": "nvidia_cublas-13.0.2.14-py3-none-manylinux_2_27_x86_64.whl", "size": 7,
         "url": "../../packages/packages/cc/dd/nvidia_cublas-13.0.2.14-py3-none-manylinux_2_27_x86_64.whl"},
        {"filename": "nvidia_cublas-13.0.2.14-py3-none-manylinux_2_27_aarch64.whl", "size": 6,
         "url": "https://files.example/nvidia_cublas-13.0.2.14-py3-none-manylinux_2_27_aarch64.whl"}]}}
    url = "https://pypi.org/pypi/nvidia-cublas/json"
    w = lazy_wheel.pick_wheel(doc, url, "13.0.2.14")
    assert w.url == "https://pypi.org/packages/packages/cc/dd/nvidia_cublas-13.0.2.14-py3-none-manylinux_2_27_x86_64.whl"
    assert w.size == 7
    assert lazy_wheel.pick_wheel(doc, url, "13.0.2.14", "win_amd64").filename.endswith("win_amd64.whl")
    with pytest.raises(LookupError):
        lazy_wheel.pick_wheel(doc, url, "13.0.0.19")
