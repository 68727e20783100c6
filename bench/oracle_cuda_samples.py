"""Oracle harness: NVIDIA's own migration of cuda-samples v11.8 -> v13.0 judges `cudamigrate fix`.

    python bench/oracle_cuda_samples.py /work/oracle/v11.8 /work/oracle/v13.0 \
        [--out docs/oracle-cuda-samples.md] [--json FILE] [--jobs 2] [--cache DIR] [--work DIR]

Why: fixtures are code we wrote; cuda-samples is code we did not, and NVIDIA migrated it by hand. The
v13.0 tree shows what a correct migration looks like and NVIDIA's diff shows which API sites needed it.

What it does (the checkouts are only read; their code is never committed):
1. copies v11.8 to a work dir, runs `cudamigrate scan --format json` on the copy (findings, default
   selection), then `cudamigrate fix --unsafe-fixes` on it, and scans v13.0 (already migrated: every
   build-break finding there is a false build break);
2. compiles every `Samples/**/*.cu|*.cpp` of v11.8 before and after the fix with nvcc 13.0
   (`-std=c++17 -arch=sm_90 -c`, include dirs: the sample's dir, `Common/`, the 13.0-matched wheel headers
   `<venv>/site-packages/nvidia/*/include`), and compiles NVIDIA's v13.0 counterpart of every file that
   still fails after the fix;
3. pairs v11.8/v13.0 files by (sample directory name, basename) (the tree was reorganised in 12.9),
   normalises both with clang-format and v13.0's `.clang-format`, diffs them, and keeps the hunks whose
   removed lines hold a CUDA API element (identifier, or call with its argument count) that changes: the
   API-migration sites. For each site: did the tool flag it (a finding on that v11.8 statement), and how
   does its fix compare with NVIDIA's text (match / api-match / differs: judge / missing);
4. samples (seeded, stable under changes of the finding set) default findings on v11.8 lines NVIDIA left
   unchanged, for a precision judgement kept in `bench/oracle_judgements.tsv`;
5. writes markdown tables (`--out`) and, with `--json`, the same data for machines.

Compile cost control: results are cached in `--cache` under a key made of the compile flags, the nvcc
version and the content (and tree-relative path) of the file and of every header it includes from its own
directory, its sample directory and `Common/` (found by scanning `#include` lines). A file that `fix` did
not change, and whose included headers it did not change, therefore has the same key before and after: it
is compiled once and its result is the same on both sides. Toolkit and wheel headers are not hashed (the
nvcc version is); clear the cache after upgrading wheels. Each compile has a timeout (`--timeout`).

Requirements (checked before anything starts, `requirements()`; each missing one is a line saying how to get
it, exit 2): `clang-format` on PATH (normalises both trees before diffing), `nvcc` 13.0 on PATH (unless
--no-compile), and the 13.0-matched library wheels (CUDA 13.0 Update 1) in the venv for their headers
(`nvidia/cu13/include`: cublas_v2.h, cufft.h, nvrtc.h, cusparse.h, cusolverDn.h, curand.h, npp.h):
    pip install --no-deps nvidia-cublas==13.0.2.14 nvidia-cufft==12.0.0.61 nvidia-cuda-nvrtc==13.0.88 \
        nvidia-cusparse==12.6.3.3 nvidia-cusolver==12.0.4.66 nvidia-curand==10.4.0.35 nvidia-npp==13.0.1.2

`--gpu-prepare DIR` additionally writes, for the GPU-differential run (`bench/oracle_gpu.sh`), the
before/after/v13.0 source of the programs listed in `GPU_PROGRAMS` plus the Common headers into DIR
(`--gpu-prepare-only` stops there); `--gpu-results logs.tar.gz` renders that run's table. GPU round trip:
    python bench/oracle_cuda_samples.py V11 V13 --work W --gpu-prepare .oracle/gpu --gpu-prepare-only
    (device, carry .oracle)  bash .oracle/gpu/oracle_gpu.sh .oracle/gpu $OUT
    python bench/oracle_cuda_samples.py V11 V13 --work W --reuse --gpu-results <returned logs.tar.gz>
"""

from __future__ import annotations

import argparse
import bisect
import collections
import concurrent.futures as cf
import dataclasses
import difflib
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

V118_COMMIT = "81992093d2b8c33cab22dbf6852c070c330f1715"
V130_COMMIT = "3f1c50965017932fc81e6d94a3fc9e04c105b312"
NVCC_FLAGS = ["-std=c++17", "-arch=sm_90", "-c"]
COMPILE_EXTS = (".cu", ".cpp")
SOURCE_EXTS = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl")
SAMPLE_SEED = 20261203
SAMPLE_SIZE = 50
JUDGEMENTS = Path(__file__).with_name("oracle_judgements.tsv")

# Programs for the GPU-differential run: (sample path under Samples/, extra nvcc link flags). Chosen for
# building with nothing but the toolkit, needing no display, data download or library beyond CUDA's own,
# and ending in a self-check or a deterministic printout.
GPU_PROGRAMS: list[tuple[str, str]] = [
    ("0_Introduction/vectorAdd", ""),
    ("0_Introduction/matrixMul", ""),
    ("0_Introduction/simpleStreams", ""),
    ("0_Introduction/asyncAPI", ""),
    ("0_Introduction/simpleAtomicIntrinsics", ""),
    ("0_Introduction/simpleOccupancy", ""),
    ("0_Introduction/simpleZeroCopy", ""),
    ("0_Introduction/simpleCallback", ""),
    ("0_Introduction/simpleMultiGPU", ""),
    ("0_Introduction/simpleTemplates", ""),
    ("0_Introduction/clock", ""),
    ("0_Introduction/simpleCubemapTexture", ""),
    ("0_Introduction/simpleLayeredTexture", ""),
    ("0_Introduction/simpleSurfaceWrite", ""),
    ("0_Introduction/simplePitchLinearTexture", ""),
    ("0_Introduction/UnifiedMemoryStreams", "-Xcompiler -fopenmp -lcublas"),
    ("0_Introduction/matrixMulDynlinkJIT", "-ldl"),
    ("0_Introduction/matrixMulDrv", "-lcuda"),
    ("0_Introduction/vectorAddDrv", "-lcuda"),
    ("1_Utilities/deviceQuery", ""),
    ("1_Utilities/deviceQueryDrv", "-lcuda"),
    ("2_Concepts_and_Techniques/streamOrderedAllocation", ""),
    ("2_Concepts_and_Techniques/reduction", ""),
    ("2_Concepts_and_Techniques/threadFenceReduction", ""),
    ("2_Concepts_and_Techniques/eigenvalues", ""),
    ("3_CUDA_Features/simpleCudaGraphs", ""),
    ("3_CUDA_Features/graphMemoryNodes", ""),
    ("3_CUDA_Features/graphMemoryFootprint", ""),
    ("3_CUDA_Features/cudaTensorCoreGemm", ""),
    ("3_CUDA_Features/globalToShmemAsyncCopy", ""),
    ("3_CUDA_Features/cdpSimplePrint", "-rdc=true -lcudadevrt"),
    ("6_Performance/UnifiedMemoryPerf", ""),
    ("6_Performance/alignedTypes", ""),
    ("6_Performance/transpose", ""),
]

_INCLUDE_RE = re.compile(rb'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
API_TOKEN_RE = re.compile(
    r"\b(?:thrust::\w+|cub::\w+|(?:cuda|cublas|cufft|cusparse|cusolver|curand|nvrtc|npp)\w*|cu[A-Z]\w*"
    r"|(?:CU|CUDA|CUBLAS|CUFFT|CUSPARSE|CUSOLVER|CURAND|NVRTC|NPP)_\w+)"
)
_STRING_OR_COMMENT_RE = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//[^\n]*|/\*.*?\*/', re.S)


# ----------------------------------------------------------------------------------------------- pairing
def pair_key(relpath: str) -> tuple[str, str] | None:
    """(sample directory name, basename) for a file under Samples/<category>/<sample>/..., or
    ("Common", path inside Common) for shared headers; None for anything else. Category folders were
    renamed and samples moved between them in v12.9, so the category is not part of the key."""
    parts = relpath.replace("\\", "/").split("/")
    if len(parts) >= 4 and parts[0] == "Samples":
        return (parts[2], parts[-1])
    if len(parts) >= 2 and parts[0] == "Common":
        return ("Common", "/".join(parts[1:]))
    return None


def pair_files(old: list[str], new: list[str]) -> dict[str, str]:
    """Map v11.8 relpaths to their v13.0 counterparts. When a key is ambiguous, the candidate with the
    longest common path suffix wins (ties: no pairing, rather than a wrong one)."""
    by_key: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for p in new:
        k = pair_key(p)
        if k:
            by_key[k].append(p)
    out: dict[str, str] = {}
    for p in old:
        k = pair_key(p)
        cands = by_key.get(k, []) if k else []
        if len(cands) == 1:
            out[p] = cands[0]
        elif cands:
            def suffix(c: str) -> int:
                a, b = p.split("/")[::-1], c.split("/")[::-1]
                n = 0
                while n < min(len(a), len(b)) and a[n] == b[n]:
                    n += 1
                return n
            ranked = sorted(cands, key=suffix, reverse=True)
            if suffix(ranked[0]) > suffix(ranked[1]):
                out[p] = ranked[0]
    return out


# --------------------------------------------------------------------------------------- normalisation
@dataclasses.dataclass
class Normalised:
    """clang-format output of a file, with the map from original 1-based lines to formatted ones."""
    lines: list[str]
    line_map: list[int]  # line_map[orig_line - 1] = formatted 1-based line


def apply_replacements(data: bytes, reps: list[tuple[int, int, bytes]]) -> Normalised:
    """Apply clang-format's byte replacements and keep where each original line starts."""
    reps = sorted(reps)
    out = bytearray()
    pos = 0
    new_off_of: list[int] = []  # new offset of each original line start
    line_starts = [0] + [i + 1 for i, c in enumerate(data) if c == 10]
    li = 0
    for off, length, text in reps:
        while li < len(line_starts) and line_starts[li] < off:
            new_off_of.append(len(out) + line_starts[li] - pos)
            li += 1
        out += data[pos:off]
        start_new = len(out)
        while li < len(line_starts) and line_starts[li] < off + length:
            new_off_of.append(start_new + min(line_starts[li] - off, len(text)))
            li += 1
        out += text
        pos = off + length
    while li < len(line_starts):
        new_off_of.append(len(out) + line_starts[li] - pos)
        li += 1
    out += data[pos:]
    text_out = bytes(out)
    nl = [i for i, c in enumerate(text_out) if c == 10]
    line_map = [bisect.bisect_left(nl, o) + 1 for o in new_off_of]
    return Normalised(text_out.decode("utf-8", "replace").splitlines(), line_map)


def parse_replacements_xml(xml: bytes) -> list[tuple[int, int, bytes]]:
    root = ET.fromstring(xml)
    return [(int(r.get("offset")), int(r.get("length")), (r.text or "").encode("utf-8"))
            for r in root.iter("replacement")]


def normalise(path: Path, style_file: Path) -> Normalised:
    data = path.read_bytes()
    try:
        xml = subprocess.run(["clang-format", f"--style=file:{style_file}", "--output-replacements-xml",
                              f"--assume-filename={path.name if path.suffix != '.cu' else path.stem + '.cpp'}"],
                             input=data, capture_output=True, timeout=60, check=True).stdout
        return apply_replacements(data, parse_replacements_xml(xml))
    except (subprocess.SubprocessError, ET.ParseError, ValueError):
        lines = data.decode("utf-8", "replace").splitlines()
        return Normalised(lines, list(range(1, len(lines) + 2)))


# ---------------------------------------------------------------------------------- API-migration hunks
def strip_strings_and_comments(text: str) -> str:
    return _STRING_OR_COMMENT_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


LOCAL_NAMES: set[str] = set()  # API-shaped names the samples declare as their own variables (set by main)
_DECLARED_RE = re.compile(
    r"\b(?!return\b|case\b|else\b|throw\b|sizeof\b|delete\b|goto\b|new\b)[A-Za-z_][\w:<>]*[\s*&]+("
    + API_TOKEN_RE.pattern[2:] + r")\s*(?=[;=,)\[])")


def local_api_shaped_names(sources: list[Path], headers: list[Path]) -> set[str]:
    """Names that look like CUDA API (`cudaParams`, `cudaVerMajor`, `cusparseHandle`) but that the samples
    declare as variables or parameters, less every name the toolkit headers use. Removed APIs (absent
    from the 13.0 headers) still count as API: the samples never declare them."""
    declared: set[str] = set()
    for f in sources:
        try:
            text = strip_strings_and_comments(f.read_text(errors="replace"))
        except OSError:
            continue
        declared.update(m.group(1) for m in _DECLARED_RE.finditer(text))
    in_headers: set[str] = set()
    for d in headers:
        for h in d.rglob("*"):
            if h.is_file() and h.suffix in (".h", ".hpp", ".cuh", ".inl"):
                try:
                    in_headers.update(m.group(0) for m in API_TOKEN_RE.finditer(h.read_text(errors="replace")))
                except OSError:
                    pass
    return {n for n in declared if n not in in_headers and n[0].islower() and not n.endswith("_t")}


def api_elements(lines: list[str]) -> list[tuple[int, str, int | None]]:
    """(line index, token, argument count or None) for every CUDA API token outside strings, comments and
    #include lines, except the samples' own variables of API-like name (LOCAL_NAMES).
    The argument count makes signature changes (same name, new parameters) visible; None when the token
    is not called or the call runs past the given lines."""
    text = strip_strings_and_comments("\n".join(lines))
    text = re.sub(r"^[ \t]*#[ \t]*include[^\n]*", lambda m: " " * len(m.group(0)), text, flags=re.M)
    line_of = []
    for i, ln in enumerate(text.split("\n")):
        line_of.extend([i] * (len(ln) + 1))
    out = []
    for m in API_TOKEN_RE.finditer(text):
        if m.group(0) in LOCAL_NAMES:
            continue
        j = m.end()
        while j < len(text) and text[j] in " \t\n":
            j += 1
        arity: int | None = None
        if j < len(text) and text[j] == "(":
            depth, commas, k, nonempty = 0, 0, j, False
            while k < len(text):
                c = text[k]
                if c in "([{":
                    depth += 1
                elif c in ")]}":
                    depth -= 1
                    if depth == 0:
                        break
                elif c == "," and depth == 1:
                    commas += 1
                elif depth >= 1 and not c.isspace():
                    nonempty = True
                k += 1
            if k < len(text):
                arity = commas + 1 if (nonempty or commas) else 0
        out.append((line_of[m.start()], m.group(0), arity))
    return out


@dataclasses.dataclass
class Site:
    """One v11.8 line (normalised) that NVIDIA changed and that holds a changed CUDA API element."""
    old_path: str
    new_path: str
    norm_line: int           # 1-based, in the normalised v11.8 file
    hunk: tuple[int, int]    # normalised v11.8 lines [a, b) of the hunk
    removed: list[str]       # NVIDIA's removed lines (the whole hunk)
    added: list[str]         # NVIDIA's added lines (the whole hunk)
    changed: list[str]       # API elements removed by NVIDIA on this line, e.g. "cuCtxCreate/3"
    kind: str = "replaced"   # replaced | deleted (no API element on the hunk's added side)


def _fmt(el: tuple[str, int | None]) -> str:
    return el[0] if el[1] is None else f"{el[0]}/{el[1]}"


def migration_sites(old_path: str, new_path: str, a: list[str], b: list[str]) -> tuple[list[Site], list[tuple[int, int]]]:
    """The API-migration sites of a normalised diff, and all of its changed v11.8 line ranges.

    An API element (token, argument count) is migrated on a line when NVIDIA's hunk removes more of it than
    it adds AND the whole v13.0 file holds fewer of it than the v11.8 file: code merely moved or reordered
    within the file is not a migration. A hunk that brings in an API the v11.8 file never used (`+name`)
    is a site on its first removed line (removed struct fields are not API tokens themselves). A hunk with no API element on its added side is a deletion
    (`kind` = deleted: NVIDIA removed the code, e.g. CDP1 limits, or a whole helper); otherwise `replaced`."""
    sm = difflib.SequenceMatcher(None, [x.strip() for x in a], [x.strip() for x in b], autojunk=False)
    # elements are read from the whole files (a call's argument count needs the whole call), then
    # attributed to the line where their token starts
    els_a, els_b = api_elements(a), api_elements(b)
    count_a = collections.Counter((t, ar) for _, t, ar in els_a)
    count_b = collections.Counter((t, ar) for _, t, ar in els_b)
    file_gone = count_a - count_b
    names_a = {t for _, t, _ in els_a}
    by_line_a: dict[int, list[tuple[str, int | None]]] = collections.defaultdict(list)
    by_line_b: dict[int, list[tuple[str, int | None]]] = collections.defaultdict(list)
    for li, t, ar in els_a:
        by_line_a[li].append((t, ar))
    for li, t, ar in els_b:
        by_line_b[li].append((t, ar))
    sites: list[Site] = []
    changed_ranges: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            changed_ranges.append((i1 + 1, i2 + 1))
        if tag == "insert":
            continue
        rem = [(li, el) for li in range(i1, i2) for el in by_line_a.get(li, [])]
        added = [el for lj in range(j1, j2) for el in by_line_b.get(lj, [])]
        gone = collections.Counter(el for _, el in rem) - collections.Counter(added)
        budget = {el: min(n, file_gone[el]) for el, n in gone.items() if file_gone[el] > 0}
        per_line: dict[int, list[str]] = collections.defaultdict(list)
        for li, el in rem:
            if budget.get(el, 0) > 0:
                budget[el] -= 1
                per_line[li - i1].append(_fmt(el))
        # an API the v11.8 file never used, brought in to replace removed code (e.g. a removed
        # cudaDeviceProp field read through cudaDeviceGetAttribute): a site on the hunk's first line
        new_api = sorted({_fmt(el) for el in added
                          if el[1] is not None and el[0] not in names_a and count_b[el] > count_a[el]})
        if new_api and not per_line:
            per_line[0].extend("+" + x for x in new_api)
        kind = "replaced" if added else "deleted"
        for li, els in sorted(per_line.items()):
            sites.append(Site(old_path, new_path, i1 + li + 1, (i1 + 1, i2 + 1), a[i1:i2], b[j1:j2],
                              sorted(set(els)), kind))
    return sites, changed_ranges


@dataclasses.dataclass
class ApiFacts:
    """What the 13.0 toolkit and NVIDIA's v13.0 tree say about an API element, to tell an API migration (the old
    form is gone, deprecated or no longer used that way anywhere by NVIDIA) from a refactor NVIDIA chose."""
    header_tokens: set[str]              # API-shaped tokens in the 13.0 toolkit and wheel headers
    deprecated: set[str]                 # enumerators whose line says "deprecated"; declarations under a DEPRECATED marker
    v13_elements: collections.Counter    # (token, argument count) over every v13.0 source file
    devprop_fields: set[str]             # the 13.0 `struct cudaDeviceProp` fields


def api_facts(header_dirs: list[Path], v13_sources: list[Path]) -> ApiFacts:
    tokens: set[str] = set()
    deprecated: set[str] = set()
    fields: set[str] = set()
    for d in header_dirs:
        for h in sorted(d.rglob("*")):
            if not (h.is_file() and h.suffix in (".h", ".hpp", ".cuh", ".inl")):
                continue
            try:
                text = h.read_text(errors="replace")
            except OSError:
                continue
            tokens.update(m.group(0) for m in API_TOKEN_RE.finditer(text))
            lines = text.splitlines()
            for i, ln in enumerate(lines):
                code = ln.split("//")[0].split("/*")[0]
                if code.lstrip().startswith("*"):
                    continue  # documentation prose: a name mentioned there is not declared there
                # an enumerator whose own line says it is deprecated (`X = 15, /**< ... Deprecated ... */`)
                m = re.match(r"\s*(\w+)\s*(?:=[^,]*)?,", code)
                if m and API_TOKEN_RE.fullmatch(m.group(1)) and "deprecat" in ln.lower():
                    deprecated.add(m.group(1))
                # a declaration (function, type) with a DEPRECATED marker on its line or the 3 lines before
                decl = [x.group(1) for x in re.finditer(r"\b(\w+)\s*(?:\(|;|\{|$)", code) if API_TOKEN_RE.fullmatch(x.group(1))]
                if decl and any(re.search(r"DEPRECATED|deprecated\s*\(", prev.split("//")[0])
                                for prev in lines[max(0, i - 3):i + 1]):
                    deprecated.update(decl)
            if h.name == "driver_types.h":
                m = re.search(r"struct\s+__device_builtin__\s+cudaDeviceProp\s*\{(.*?)\n\};", text, re.S)
                if m:
                    body = strip_strings_and_comments(m.group(1))
                    fields.update(re.findall(r"(\w+)\s*(?:\[[^\]]*\]\s*)*;", body))
    v13: collections.Counter = collections.Counter()
    for f in v13_sources:
        try:
            v13.update((t, ar) for _, t, ar in api_elements(f.read_text(errors="replace").splitlines()))
        except OSError:
            continue
    return ApiFacts(tokens, deprecated, v13, fields)


_ELEMENT_RE = re.compile(r"^(\+?)([^/]+)(?:/(\d+))?$")


def api_migration(site: Site, facts: ApiFacts, old_lines: list[str]) -> tuple[bool, str]:
    """Is the site an API migration, and why (or why not)?

    An element NVIDIA removed counts when the 13.0 headers no longer have it, mark it deprecated, or NVIDIA's
    v13.0 tree no longer uses it in that form (name and argument count) anywhere; an element that is still
    declared, not deprecated and still used that way elsewhere in v13.0 was changed by choice (a refactor, dead
    code deleted), not because the API changed. A `+name` site (an API brought in, none removed) counts when its
    hunk read a field that the 13.0 `cudaDeviceProp` no longer has (the new call replaces that read); otherwise
    it is set-up code around calls that are sites of their own (the `NppStreamContext` of the NPP `_Ctx` calls)."""
    if any(c.startswith("+") for c in site.changed):
        props = set(re.findall(r"\b(?:struct\s+)?cudaDeviceProp\s*[*&]?\s*(\w+)", "\n".join(old_lines)))
        reads = re.findall(r"\b(\w+)\s*(?:\.|->)\s*(\w+)", strip_strings_and_comments("\n".join(site.removed)))
        gone = sorted({f for r, f in reads if r in props and f not in facts.devprop_fields})
        if gone:
            return True, "replaces a read of cudaDeviceProp field(s) removed in 13.0: " + ", ".join(gone)
        return False, "NVIDIA added " + ", ".join(c[1:] for c in site.changed) + " without removing an API use here"
    kept: list[str] = []
    for c in site.changed:
        m = _ELEMENT_RE.match(c)
        name, arity = m.group(2), (int(m.group(3)) if m.group(3) else None)
        if name not in facts.header_tokens:
            return True, f"{c}: not in the 13.0 headers"
        if name in facts.deprecated:
            return True, f"{c}: marked deprecated in the 13.0 headers"
        n = facts.v13_elements[(name, arity)]
        if not n:
            return True, f"{c}: NVIDIA's v13.0 tree no longer uses it in this form"
        kept.append(f"{c} ({n} uses in v13.0)")
    return False, "still declared, not deprecated, and used the same way in NVIDIA's v13.0 tree: " + ", ".join(kept)


def statement_span(lines: list[str], line: int) -> tuple[int, int]:
    """1-based inclusive span of the statement around `line` in formatted code: back to the line after
    one ending in ; { } or a preprocessor line, forward to a line ending in ; { }."""
    def ends(s: str) -> bool:
        s = strip_strings_and_comments(s).rstrip()
        return not s or s.endswith((";", "{", "}")) or s.lstrip().startswith("#")
    lo = line
    while lo > 1 and not ends(lines[lo - 2]) and line - lo < 12:
        lo -= 1
    hi = line
    while hi < len(lines) and not ends(lines[hi - 1]) and hi - line < 12:
        hi += 1
    return lo, hi


def squash(lines: list[str]) -> str:
    return re.sub(r"\s+", "", strip_strings_and_comments("\n".join(lines)))


def site_span(site: Site, lines: list[str]) -> tuple[int, int]:
    """Lines whose findings count for the site: its statement, or the whole hunk for a `+name` site."""
    if any(c.startswith("+") for c in site.changed):
        return site.hunk[0], site.hunk[1] - 1
    return statement_span(lines, site.norm_line)


def lines_deleted_by_fix(finding: dict, data: bytes) -> set[int]:
    """1-based lines of the scanned file that the finding's fix deletes: whole lines inside an edit's range that
    a line diff against the edit's replacement text marks deleted (CM410 dropping a dead `#else` branch, even
    where that branch repeats the live one's lines). A site there is counted as handled by that finding, though
    no finding sits on its line: the tool reports nothing in branches dead for the target, and its fix removes
    them."""
    out: set[int] = set()
    for e in (finding.get("fix") or {}).get("edits", []):
        start, end = e["start"], e["end"]
        first = data.count(b"\n", 0, start) + 1
        lines: list[tuple[int, str]] = []  # (line number, text) of the whole lines inside [start, end)
        pos, ln = data.rfind(b"\n", 0, start) + 1, first
        while pos < end:
            nl = data.find(b"\n", pos)
            stop = len(data) if nl < 0 else nl
            if pos >= start and stop <= end:
                lines.append((ln, data[pos:stop].decode("utf-8", "replace").strip()))
            pos, ln = stop + 1, ln + 1
        kept = [x.strip() for x in e.get("text", "").splitlines()]
        sm = difflib.SequenceMatcher(None, [t for _, t in lines], kept, autojunk=False)
        for tag, i1, i2, _, _ in sm.get_opcodes():
            if tag == "delete":
                out |= {lines[i][0] for i in range(i1, i2) if lines[i][1]}
    return out


def classify_fix(site: Site, orig: list[str], fixed: list[str], flagged: bool) -> tuple[str, list[str]]:
    """Compare the tool's rewrite of the site's statement with NVIDIA's hunk.
    match: same text; api-match: same API elements (name, argument count) as NVIDIA's new lines;
    differs: the tool rewrote it otherwise (judge); missing: flagged, not rewritten; not-flagged."""
    lo, hi = site_span(site, orig)
    sm = difflib.SequenceMatcher(None, [x.strip() for x in orig], [x.strip() for x in fixed], autojunk=False)
    tool_lines: list[str] = []
    touched = False
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" or i2 < lo or i1 + 1 > hi and not (tag == "insert" and lo <= i1 + 1 <= hi + 1):
            continue
        touched = True
        tool_lines.extend(fixed[j1:j2])
    if not touched:
        return ("missing" if flagged else "not-flagged"), []
    if squash(tool_lines) and squash(tool_lines) in squash(site.added) or squash(site.added) in squash(tool_lines) and squash(site.added):
        return "match", tool_lines
    tool_api = {(t, ar) for _, t, ar in api_elements(tool_lines)}
    nv_api = {(t, ar) for _, t, ar in api_elements(site.added)}
    old_api = {(t, ar) for _, t, ar in api_elements(orig[lo - 1:hi])}
    new_tool, new_nv = tool_api - old_api, nv_api - old_api
    if new_tool and new_tool <= nv_api or (not new_nv and not new_tool):
        return "api-match", tool_lines
    return "differs", tool_lines


# ------------------------------------------------------------------------------------------ requirements
WHEEL_HEADERS = {"cublas_v2.h": "nvidia-cublas==13.0.2.14", "cufft.h": "nvidia-cufft==12.0.0.61",
                 "nvrtc.h": "nvidia-cuda-nvrtc==13.0.88", "cusparse.h": "nvidia-cusparse==12.6.3.3",
                 "cusolverDn.h": "nvidia-cusolver==12.0.4.66", "curand.h": "nvidia-curand==10.4.0.35",
                 "npp.h": "nvidia-npp==13.0.1.2"}


def requirements(compile_: bool = True, which=shutil.which, includes=None) -> list[str]:
    """One line per missing requirement, saying how to get it (empty: all there). Checked before the run starts,
    so a missing tool is a message, not a traceback half way through."""
    missing = []
    if which("clang-format") is None:
        missing.append("clang-format not on PATH (it normalises both trees before diffing): install it, e.g. "
                       "`apt-get install clang-format` or `pip install clang-format`")
    if compile_ and which("nvcc") is None:
        missing.append("nvcc not on PATH (compiles before/after): install the CUDA 13.0 toolkit, or pass --no-compile")
    dirs = [Path(d) for d in (wheel_includes() if includes is None else includes)]
    for header, wheel in WHEEL_HEADERS.items():
        if not any((d / header).is_file() for d in dirs):
            missing.append(f"{header} not in the venv's nvidia/*/include: pip install --no-deps {wheel}")
    return missing


# ------------------------------------------------------------------------------------------ compiling
def wheel_includes() -> list[str]:
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    return sorted(glob.glob(str(site / "nvidia" / "*" / "include")))


def sample_dir_of(root: Path, rel: str) -> Path:
    parts = rel.split("/")
    return root.joinpath(*parts[:3]) if parts[0] == "Samples" and len(parts) >= 4 else (root / rel).parent


def local_closure(src: Path, search: list[Path], root: Path) -> list[Path]:
    """The file and every header it includes, transitively, that resolves inside `root`."""
    seen: dict[Path, None] = {}
    todo = [src]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen[f] = None
        try:
            data = f.read_bytes()
        except OSError:
            continue
        for m in _INCLUDE_RE.finditer(data):
            name = m.group(1).decode("latin-1")
            for d in [f.parent, *search]:
                cand = (d / name).resolve()
                if cand.is_file() and root.resolve() in cand.parents:
                    todo.append(cand)
                    break
    return sorted(seen)


@dataclasses.dataclass
class CompileResult:
    ok: bool
    error: str        # first nvcc error line ('' when ok)
    seconds: float
    cached: bool = False


def first_error(out: str) -> str:
    for ln in out.splitlines():
        if re.search(r"\berror\b", ln, re.I):
            return ln.strip()[:300]
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return (lines[0].strip()[:300] if lines else "nvcc failed")


class Compiler:
    def __init__(self, cache: Path, timeout: int, nvcc_version: str, includes: list[str]):
        self.cache, self.timeout, self.includes = cache, timeout, includes
        self.salt = json.dumps([NVCC_FLAGS, nvcc_version, includes])
        cache.mkdir(parents=True, exist_ok=True)

    def key(self, root: Path, rel: str) -> str:
        src = root / rel
        search = [sample_dir_of(root, rel), root / "Common"]
        h = hashlib.sha256(self.salt.encode())
        rroot = root.resolve()
        for f in local_closure(src.resolve(), [s.resolve() for s in search], rroot):
            h.update(str(f.relative_to(rroot)).encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()

    def compile(self, root: Path, rel: str, deadline: float | None = None) -> CompileResult:
        key = self.key(root, rel)
        hit = self.cache / f"{key}.json"
        if hit.is_file():
            return CompileResult(**{**json.loads(hit.read_text()), "cached": True})
        if deadline is not None and time.time() > deadline:
            return CompileResult(None, "not compiled (--budget-minutes reached)", 0.0)  # type: ignore[arg-type]
        src = root / rel
        with tempfile.TemporaryDirectory(prefix="oracle-obj-") as tmp:
            cmd = ["nvcc", *NVCC_FLAGS, f"-I{sample_dir_of(root, rel)}", f"-I{root / 'Common'}",
                   *[f"-I{i}" for i in self.includes], str(src), "-o", str(Path(tmp) / "x.o")]
            t0 = time.time()
            try:
                p = subprocess.run(cmd, cwd=src.parent, capture_output=True, text=True, errors="replace",
                                   timeout=self.timeout)
                res = CompileResult(p.returncode == 0, "" if p.returncode == 0 else first_error(p.stdout + p.stderr),
                                    round(time.time() - t0, 1))
            except subprocess.TimeoutExpired:
                res = CompileResult(False, f"timeout after {self.timeout}s", float(self.timeout))
        d = dataclasses.asdict(res)
        d.pop("cached")
        hit.write_text(json.dumps(d))
        return res

    def many(self, jobs: list[tuple[Path, str]], workers: int, label: str,
             deadline: float | None = None) -> dict[tuple[Path, str], CompileResult]:
        """Compile in the given order (most informative first) with a small pool; past the deadline only
        cached results are returned, the rest are `ok=None` (not compiled)."""
        out: dict[tuple[Path, str], CompileResult] = {}
        t0 = time.time()
        with cf.ThreadPoolExecutor(workers) as pool:
            futs = {pool.submit(self.compile, r, rel, deadline): (r, rel) for r, rel in jobs}
            for n, f in enumerate(cf.as_completed(futs), 1):
                out[futs[f]] = f.result()
                if n % 50 == 0 or n == len(futs):
                    print(f"  {label}: {n}/{len(futs)} compiled ({time.time() - t0:.0f}s)", file=sys.stderr)
        return out


# ----------------------------------------------------------------------------------------- the run
def rel_files(root: Path, exts: tuple[str, ...], under: str = "") -> list[str]:
    base = root / under if under else root
    return sorted(str(p.relative_to(root)).replace(os.sep, "/") for p in base.rglob("*")
                  if p.is_file() and p.suffix in exts)


def run_tool(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudamigrate", *args], cwd=cwd, capture_output=True,
                          text=True, errors="replace")


def scan_json(tree: Path, name: str, work: Path) -> list[dict]:
    out = work / f"scan-{name}.json"
    p = run_tool(["scan", name, "--format", "json", "--exit-zero", "-o", str(out)], cwd=tree.parent)
    if not out.is_file():
        raise SystemExit(f"scan of {tree} failed: {p.stderr[-2000:]}")
    return load_scan(out)


def load_scan(out: Path) -> list[dict]:
    findings = json.loads(out.read_text())["findings"]
    for f in findings:
        f["relpath"] = f["path"].split("/", 1)[1]
    return findings


def finding_key(f: dict) -> str:
    return f"{f['rule']}|{f['relpath']}|{f['line']}|{f['column']}"


def stable_sample(keys: list[str], n: int, seed: int) -> list[str]:
    """The n keys with the smallest seeded hash: reproducible, and when the pool shrinks (findings the
    tool stops reporting) the remaining members of the sample stay in it."""
    return sorted(keys, key=lambda k: hashlib.sha256(f"{seed}:{k}".encode()).hexdigest())[:n]


def load_judgements(path: Path) -> dict[str, tuple[str, str]]:
    out = {}
    if path.is_file():
        for ln in path.read_text().splitlines():
            if ln.strip() and not ln.startswith("#"):
                k, v, why = (ln.split("\t") + ["", ""])[:3]
                out[k] = (v, why)
    return out


def md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ").strip()


def code(s: str, limit: int = 160) -> str:
    s = re.sub(r"\s+", " ", s).strip()
    if len(s) > limit:
        s = s[:limit] + "…"
    return "`" + s.replace("`", "'").replace("|", "\\|") + "`" if s else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("v118", type=Path)
    ap.add_argument("v130", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/oracle-cuda-samples.md"))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cudamigrate-oracle")
    ap.add_argument("--work", type=Path, help="work dir (default: a temp dir, removed at the end)")
    ap.add_argument("--gpu-prepare", type=Path, help="write GPU-differential sources into this dir")
    ap.add_argument("--gpu-prepare-only", action="store_true", help="stop after --gpu-prepare (no compile, no diff)")
    ap.add_argument("--gpu-results", type=Path, help="results.tsv from bench/oracle_gpu.sh to put in the doc")
    ap.add_argument("--seed", type=int, default=SAMPLE_SEED)
    ap.add_argument("--budget-minutes", type=float, default=0,
                    help="stop starting new compiles after this many minutes (0: no limit); the rest are "
                         "reported as not compiled, and a re-run continues from the cache")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the --work dir's fixed copy and scans from an earlier run (re-render only)")
    ap.add_argument("--no-compile", action="store_true",
                    help="skip nvcc (fast: migration sites and the precision sample only)")
    a = ap.parse_args(argv)
    missing = requirements(compile_=not a.no_compile and not a.gpu_prepare_only)
    if missing:
        for m in missing:
            print(f"oracle_cuda_samples: missing requirement: {m}", file=sys.stderr)
        return 2
    t_start = time.time()
    v11, v13 = a.v118.resolve(), a.v130.resolve()
    work = a.work.resolve() if a.work else Path(tempfile.mkdtemp(prefix="cudamigrate-oracle-"))
    fixed = work / "v11fixed"
    if a.reuse and a.work and (work / "fix.log").is_file():
        findings11, findings13 = (load_scan(work / f"scan-{n}.json") for n in ("v11fixed", "v13"))
        fix_lines = (work / "fix.log").read_text().splitlines()
    else:
        if fixed.exists():
            shutil.rmtree(fixed)
        shutil.copytree(v11, fixed, symlinks=True)
        print("scanning v11.8, fixing, scanning v13.0 ...", file=sys.stderr)
        findings11 = scan_json(fixed, "v11fixed", work)
        p = run_tool(["fix", "--unsafe-fixes", "v11fixed"], cwd=work)
        fix_lines = (p.stdout + p.stderr).splitlines()
        (work / "fix.log").write_text("\n".join(fix_lines))
        v13copy = work / "v13"
        if not v13copy.exists():
            shutil.copytree(v13, v13copy, symlinks=True)
        findings13 = scan_json(v13copy, "v13", work)
    if a.gpu_prepare:
        prepare_gpu(a.gpu_prepare, v11, fixed, v13, pair_files(rel_files(v11, SOURCE_EXTS), rel_files(v13, SOURCE_EXTS)))
        if a.gpu_prepare_only:
            print(f"GPU sources written to {a.gpu_prepare}", file=sys.stderr)
            return 0
    fix_summary = next((ln for ln in reversed(fix_lines) if ln.startswith("Fixed ")), "")
    # errors and notes are the `cudamigrate: ...` lines; `fix` also lists the remaining findings (indented)
    fix_errors = [ln for ln in fix_lines if ln.startswith("cudamigrate:") and "invalid UTF-8" not in ln][:20]
    t_tool = time.time() - t_start

    # --- compile before/after
    nvcc_version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    comp = Compiler(a.cache.resolve(), a.timeout, nvcc_version, wheel_includes())
    units = rel_files(v11, COMPILE_EXTS, "Samples")
    changed = {r for r in rel_files(v11, SOURCE_EXTS) if (v11 / r).read_bytes() != (fixed / r).read_bytes()}
    print(f"{len(units)} units; fix changed {len(changed)} files; compiling ...", file=sys.stderr)
    # order: units fix changed itself, then units whose included headers it changed, then the rest;
    # each unit's before and after side by side, so a run cut short by --budget-minutes is still useful
    closure_changed = {r for r in units if comp.key(v11, r) != comp.key(fixed, r)}
    ordered = sorted(units, key=lambda r: (r not in changed, r not in closure_changed, r))
    jobs = [j for r in ordered for j in ((v11, r), (fixed, r))]
    deadline = t_start + 60 * a.budget_minutes if a.budget_minutes else None
    res = comp.many(jobs if not a.no_compile else [], a.jobs, "v11.8 before/after", deadline)
    unknown = CompileResult(None, "not compiled (--no-compile)", 0.0)  # type: ignore[arg-type]
    before = {r: res.get((v11, r), unknown) for r in units}
    after = {r: res.get((fixed, r), unknown) for r in units}
    regressions = [r for r in units if before[r].ok is True and after[r].ok is False]
    fixed_ok = [r for r in units if before[r].ok is False and after[r].ok is True]
    still_fail = [r for r in units if after[r].ok is False]
    pairs = pair_files(rel_files(v11, SOURCE_EXTS), rel_files(v13, SOURCE_EXTS))
    # few files: compiled even past the budget
    res13 = comp.many([(v13, pairs[r]) for r in still_fail if r in pairs], a.jobs, "v13.0 counterparts")
    nv_ok_we_fail = [(r, pairs[r], after[r].error) for r in still_fail
                     if r in pairs and res13[(v13, pairs[r])].ok is True]
    t_compile = time.time() - t_start - t_tool

    # --- false build breaks on v13.0
    bb13 = [f for f in findings13 if f.get("cost", {}).get("impact") == "build-break"]

    # --- NVIDIA's migration sites
    global LOCAL_NAMES
    toolkit_inc = [p for p in (Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include",) if p.is_dir()]
    LOCAL_NAMES = local_api_shaped_names([v11 / r for r in rel_files(v11, SOURCE_EXTS)]
                                         + [v13 / r for r in rel_files(v13, SOURCE_EXTS)],
                                         toolkit_inc + [Path(p) for p in wheel_includes()])
    facts = api_facts(toolkit_inc + [Path(p) for p in wheel_includes()], [v13 / r for r in rel_files(v13, SOURCE_EXTS)])
    style = v13 / ".clang-format"
    by_file: dict[str, list[dict]] = collections.defaultdict(list)
    for f in findings11:
        by_file[f["relpath"]].append(f)
    sites: list[Site] = []
    site_rows = []
    unchanged_findings: list[dict] = []
    unpaired_findings = 0
    norm_jobs = sorted(pairs.items())

    def analyse(item: tuple[str, str]):
        old, new = item
        if (v11 / old).read_bytes() == (v13 / new).read_bytes():
            lines = (v11 / old).read_bytes().decode("utf-8", "replace").splitlines()
            return old, new, [], [], None, Normalised(lines, list(range(1, len(lines) + 2)))
        n_old, n_new = normalise(v11 / old, style), normalise(v13 / new, style)
        if n_old.lines == n_new.lines and old not in by_file:
            return old, new, [], [], None, n_old
        ss, ranges = migration_sites(old, new, n_old.lines, n_new.lines)
        n_fix = normalise(fixed / old, style) if old in changed and ss else None
        return old, new, ss, ranges, n_fix, n_old

    with cf.ThreadPoolExecutor(a.jobs) as pool:
        analysed = list(pool.map(analyse, norm_jobs))
    for old, new, ss, ranges, n_fix, n_old in analysed:
        fl = by_file.get(old, [])

        def norm_span(f: dict) -> tuple[int, int]:
            lm = n_old.line_map
            lo = lm[min(f["line"], len(lm)) - 1]
            hi = lm[min(f.get("end_line", f["line"]), len(lm)) - 1]
            return lo, max(lo, hi)
        deleted: dict[int, set[str]] = collections.defaultdict(set)  # normalised line -> rules whose fix deletes it
        if ss:
            raw = (v11 / old).read_bytes()
            for f in fl:
                for ln in lines_deleted_by_fix(f, raw):
                    deleted[n_old.line_map[min(ln, len(n_old.line_map)) - 1]].add(f["rule"])
        for s in ss:
            lo, hi = site_span(s, n_old.lines)
            hits = [f for f in fl if norm_span(f)[0] <= hi and norm_span(f)[1] >= lo]
            removed_by = sorted(deleted.get(s.norm_line, set()) - {f["rule"] for f in hits}) if not hits else []
            verdict, tool_lines = classify_fix(s, n_old.lines, n_fix.lines if n_fix else n_old.lines,
                                               bool(hits or removed_by))
            is_api, api_why = api_migration(s, facts, n_old.lines)
            sites.append(s)
            site_rows.append({
                "file": old, "v13_file": new, "norm_line": s.norm_line, "changed": s.changed, "kind": s.kind,
                "api_migration": is_api, "api_why": api_why,
                "flagged": bool(hits or removed_by), "rules": sorted({f["rule"] for f in hits}),
                "deleted_by_fix_of": removed_by,
                "orig_lines": [f["line"] for f in hits],
                "verdict": verdict, "tool": "\n".join(x.strip() for x in tool_lines),
                "old": n_old.lines[s.norm_line - 1].strip(),
                "nvidia": "\n".join(x.strip() for x in s.added),
                "fixed_compiles": after[old].ok if old in after else None,
            })
        for f in fl:
            lo, hi = norm_span(f)
            if not any(r0 <= hi and r1 - 1 >= lo for r0, r1 in ranges):
                unchanged_findings.append(f)
    unpaired_findings = sum(len(v) for k, v in by_file.items() if k not in pairs)
    t_total = time.time() - t_start

    # --- precision sample
    judgements = load_judgements(JUDGEMENTS)
    pool_keys = {finding_key(f): f for f in unchanged_findings}
    sample = [pool_keys[k] for k in stable_sample(sorted(pool_keys), SAMPLE_SIZE, a.seed)]
    sample.sort(key=lambda f: (f["relpath"], f["line"], f["rule"]))
    judged = [(f, *judgements.get(finding_key(f), ("?", ""))) for f in sample]

    n_flagged = sum(r["flagged"] for r in site_rows)
    verdicts = collections.Counter(r["verdict"] for r in site_rows)
    summary = {
        "v11.8_commit": V118_COMMIT, "v13.0_commit": V130_COMMIT,
        "command": "python bench/oracle_cuda_samples.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "nvcc": nvcc_version if not a.no_compile else "nvcc not run (--no-compile)", "units": len(units), "files_changed_by_fix": len(changed),
        "fix_summary": fix_summary, "fix_errors": fix_errors,
        "compiled_before": sum(r.ok is True for r in before.values()),
        "compiled_after": sum(r.ok is True for r in after.values()),
        "units_changed_by_fix": len([r for r in units if r in changed]),
        "units_with_changed_headers_only": len([r for r in units if r in closure_changed and r not in changed]),
        "not_compiled": sum(r.ok is None for r in [*before.values(), *after.values()]),
        "regressions": len(regressions), "fixed": len(fixed_ok),
        "nvidia_compiles_fixed_fails": len(nv_ok_we_fail),
        "findings_v11.8": len(findings11), "findings_v11.8_unchanged_lines": len(unchanged_findings),
        "findings_v11.8_unpaired_files": unpaired_findings,
        "findings_v13.0": len(findings13), "build_break_findings_v13.0": len(bb13),
        "changed_sites": len(site_rows), "changed_sites_flagged": n_flagged,
        "migration_sites": sum(r["api_migration"] for r in site_rows),
        "migration_sites_flagged": sum(r["api_migration"] and r["flagged"] for r in site_rows),
        "site_verdicts": dict(verdicts),
        "migration_site_verdicts": dict(collections.Counter(r["verdict"] for r in site_rows if r["api_migration"])),
        "migration_sites_replaced": sum(r["kind"] == "replaced" and r["api_migration"] for r in site_rows),
        "migration_sites_replaced_flagged": sum(r["kind"] == "replaced" and r["api_migration"] and r["flagged"]
                                                for r in site_rows),
        "sample_judged_true": sum(1 for _, v, _ in judged if v == "TP"),
        "sample_judged_false": sum(1 for _, v, _ in judged if v == "FP"),
        "sample_unjudged": sum(1 for _, v, _ in judged if v not in ("TP", "FP")),
        "seconds": {"tool": round(t_tool), "compile": round(t_compile), "total": round(t_total)},
    }
    data = {
        "summary": summary,
        "regressions": [{"file": r, "error": after[r].error} for r in regressions],
        "fixed": fixed_ok,
        "nvidia_compiles_fixed_fails": [{"file": r, "v13_file": n, "error": e} for r, n, e in nv_ok_we_fail],
        "build_breaks_v13.0": [{"file": f["relpath"], "line": f["line"], "rule": f["rule"], "snippet": f.get("snippet", "")}
                               for f in bb13],
        "sites": site_rows,
        "sample": [{"key": finding_key(f), "rule": f["rule"], "file": f["relpath"], "line": f["line"],
                    "snippet": f.get("snippet", ""), "message": f["message"], "verdict": v, "reason": why}
                   for f, v, why in judged],
        # the whole pool the sample is drawn from, so that a judge can see which findings enter next
        "pool": [{"key": k, "rule": f["rule"], "snippet": f.get("snippet", "")} for k, f in sorted(pool_keys.items())],
        "compile_failures_after": [{"file": r, "error": after[r].error, "v13_file": pairs.get(r),
                                    "v13_compiles": res13[(v13, pairs[r])].ok if r in pairs else None,
                                    "compiled_before": before[r].ok}
                                   for r in still_fail],
    }
    if a.json:
        a.json.write_text(json.dumps(data, indent=1))
    gpu_rows = read_gpu_results(a.gpu_results) if a.gpu_results else None
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(render_markdown(data, gpu_rows))
    print(json.dumps(summary, indent=1))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


# ------------------------------------------------------------------------------------------- GPU prep
def prepare_gpu(dest: Path, v11: Path, fixed: Path, v13: Path, pairs: dict[str, str]) -> None:
    """Copy, per program, the v11.8 original, the fixed copy and NVIDIA's v13.0 sample dir, plus both
    Common trees' headers, into dest (to be carried to the device; never committed)."""
    if dest.exists():
        shutil.rmtree(dest)
    v13_dirs = {}
    for old, new in pairs.items():
        parts = old.split("/")
        if parts[0] == "Samples" and len(parts) >= 4:
            v13_dirs.setdefault("/".join(parts[1:3]), "/".join(new.split("/")[:3]))
    ignore = shutil.ignore_patterns("*.sln", "*.vcxproj", "*.filters", "*.o", "doc", "*.md", "Makefile",
                                    "NsightEclipse.xml", "CMakeLists.txt")
    lines = []
    for prog, link in GPU_PROGRAMS:
        for side, root in (("before", v11), ("after", fixed)):
            src = root / "Samples" / prog
            if src.is_dir():
                shutil.copytree(src, dest / side / prog, ignore=ignore)
        nv = v13_dirs.get(prog)
        if nv and (v13 / nv).is_dir():
            shutil.copytree(v13 / nv, dest / "v13" / prog, ignore=ignore)
        lines.append(f"{prog}\t{link}")
    for side, root in (("before", v11), ("after", fixed), ("v13", v13)):
        shutil.copytree(root / "Common", dest / side / "Common",
                        ignore=shutil.ignore_patterns("lib", "data", "GL", "*.cpp", "*.sln"))
    (dest / "programs.tsv").write_text("\n".join(lines) + "\n")
    shutil.copy(Path(__file__).with_name("oracle_gpu.sh"), dest / "oracle_gpu.sh")


_VARYING = re.compile(r"time|throughput|bandwidth|/s\b|flop|msec|\bms\b|\bsec\b|usec|elapsed|performance|clock"
                      r"|cycles|iterations|Mpix|rate|speedup|Size\s*=", re.I)
_NUMBER = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")
_FAIL = re.compile(r"Result = FAIL|FAILED|Test failed|CUDA error at|\b[1-9]\d* Failures|mismatch|Error!|aborting", re.I)
_PASS = re.compile(r"Result = PASS|PASSED|Test passed|\b0 Failures|returned OK|Test completed", re.I)


def mask_output(text: str) -> list[str]:
    """A run's output with what legitimately varies masked: the binary's own name and path, addresses, and
    the numbers on lines about time, bandwidth, throughput or clocks (and lines that are only numbers)."""
    out = []
    for ln in text.splitlines():
        ln = re.sub(r"\S*prog_(before|after|v13)\b", "PROG", ln)
        ln = re.sub(r"/\S*/(before|after|v13)/", "/SIDE/", ln)
        ln = re.sub(r"0x[0-9a-fA-F]+", "0xADDR", ln)
        if _VARYING.search(ln) or re.fullmatch(r"[\s\d.eE+-]+", ln):
            ln = _NUMBER.sub("N", ln)
        out.append(" ".join(ln.split()))
    return out


def self_check(text: str, rc: str) -> str:
    if rc != "0" or _FAIL.search(text):
        return f"FAIL (rc {rc})"
    return "PASS" if _PASS.search(text) else "ran"


def read_gpu_results(path: Path) -> list[list[str]]:
    """Table rows from bench/oracle_gpu.sh's logs (a .tar.gz or its extracted _logs dir): built before /
    after / v13, self-check before and after, and whether the masked output after `fix` equals the
    reference's (before, or v13 where before did not build). When the reference's two runs differ, the
    program's output varies run to run and only the self-checks are compared."""
    if path.is_file():
        import tarfile
        tmp = Path(tempfile.mkdtemp(prefix="oracle-gpu-"))
        with tarfile.open(path) as t:
            t.extractall(tmp, filter="data")
        path = tmp / "_logs"
    elif (path / "_logs").is_dir():
        path = path / "_logs"

    def get(tag: str, name: str) -> tuple[str, str] | None:
        raw, rc = path / f"{tag}__{name}.raw", path / f"{tag}__{name}.rc"
        if not raw.is_file():
            return None
        return raw.read_text(errors="replace"), (rc.read_text().strip() if rc.is_file() else "?")

    rows = []
    for prog, _ in GPU_PROGRAMS:
        name = prog.split("/")[-1]
        built = {side: (path / f"{side}__{name}.built").is_file() for side in ("before", "after", "v13")}
        if not (path / f"after__{name}.build").is_file():
            continue
        ref = "before" if built["before"] else "v13" if built["v13"] else None
        runs = {t: get(t, name) for t in ("before", "after", "v13", "ref2")}
        chk = {t: self_check(*r) if r else "-" for t, r in runs.items()}
        same = "-"
        if runs["after"] and ref and runs[ref]:
            a, r = runs["after"], runs[ref]
            if mask_output(a[0]) == mask_output(r[0]) and a[1] == r[1]:
                same = f"yes (vs {ref})"
            elif runs["ref2"] and mask_output(r[0]) != mask_output(runs["ref2"][0]):
                same = (f"varies run to run; self-check {'same' if chk['after'] == chk[ref] else '**differs**'} "
                        f"(vs {ref})")
            else:
                same = f"**no** (vs {ref})"
        rows.append([prog, *("yes" if built[s] else "no" for s in ("before", "after", "v13")),
                     chk["before"] if built["before"] else f"v13: {chk['v13']}", chk["after"], same])
    return rows


# ------------------------------------------------------------------------------------------- markdown
def flagged_cell(r: dict) -> str:
    """`yes CM540`, `**no**`, or `yes (fix of CM410 deletes it)` for a site in a dead branch."""
    cell = " ".join(["yes" if r["flagged"] else "**no**", *r["rules"]])
    deleted = r.get("deleted_by_fix_of") or []
    return cell + (f" (fix of {' '.join(deleted)} deletes it)" if deleted else "")


def render_markdown(d: dict, gpu_rows: list[list[str]] | None) -> str:
    s = d["summary"]
    o = ["# Oracle: NVIDIA's cuda-samples v11.8 → v13.0 migration", "",
         "Generated by `bench/oracle_cuda_samples.py` (see its docstring and the README). Inputs: "
         f"cuda-samples v11.8 `{s['v11.8_commit']}` and v13.0 `{s['v13.0_commit']}`; {s['nvcc']}; "
         "compile flags `nvcc -std=c++17 -arch=sm_90 -c` with the sample's dir, `Common/` and the 13.0-matched "
         "wheel headers.", "", f"Command: `{s['command']}`", "",
         f"Run time: {s['seconds']['total']} s (tool {s['seconds']['tool']} s, compiles "
         f"{s['seconds']['compile']} s; cached compiles are reused across runs).", "",
         "## Headline", "", "| measure | value |", "| --- | --- |"]
    rows = [
        ("translation units (`Samples/**/*.cu, *.cpp`)", s["units"]),
        ("files changed by `fix --unsafe-fixes`", s["files_changed_by_fix"]),
        ("`fix` summary", md_escape(s["fix_summary"])),
        ("units `fix` changed / units only whose included headers it changed",
         f"{s['units_changed_by_fix']} / {s['units_with_changed_headers_only']}"),
        ("compiles not run (time budget; before+after sides)", s["not_compiled"]),
        ("compile with nvcc 13.0 before `fix`", s["compiled_before"]),
        ("compile after `fix`", s["compiled_after"]),
        ("**regressions** (compiled before, fail after)", s["regressions"]),
        ("fixed (failed before, compile after)", s["fixed"]),
        ("NVIDIA's v13.0 counterpart compiles, fixed v11.8 does not", s["nvidia_compiles_fixed_fails"]),
        ("findings on v11.8 (default selection)", s["findings_v11.8"]),
        ("… on lines NVIDIA left unchanged (paired files)", s["findings_v11.8_unchanged_lines"]),
        ("… in files with no v13.0 counterpart", s["findings_v11.8_unpaired_files"]),
        ("findings on v13.0", s["findings_v13.0"]),
        ("**build-break findings on v13.0** (all false)", s["build_break_findings_v13.0"]),
        ("lines NVIDIA changed that hold a changed CUDA API element (sites) / flagged",
         f"{s['changed_sites']} / {s['changed_sites_flagged']}"),
        ("**NVIDIA API-migration sites** (the old form is gone, deprecated or no longer used by NVIDIA)",
         s["migration_sites"]),
        ("… flagged by the tool", s["migration_sites_flagged"]),
        ("… of which NVIDIA replaced (not deleted) the code: sites / flagged",
         f"{s['migration_sites_replaced']} / {s['migration_sites_replaced_flagged']}"),
        ("… fix verdicts", ", ".join(f"{k}: {v}" for k, v in sorted(s["migration_site_verdicts"].items()))),
        (f"precision sample ({len(d['sample'])} default findings on unchanged lines"
         f"{'' if len(d['sample']) >= SAMPLE_SIZE else f': the whole pool, fewer than {SAMPLE_SIZE}'}): true / false / unjudged",
         f"{s['sample_judged_true']} / {s['sample_judged_false']} / {s['sample_unjudged']}"),
    ]
    o += [f"| {k} | {v} |" for k, v in rows]
    if s["fix_errors"]:
        o += ["", "`fix` stderr (first lines, encoding notes left out):", ""] + [f"- {code(e, 300)}" for e in s["fix_errors"]]
    o += ["", "## Regressions (compiled before `fix`, fail after)", ""]
    o += ["| file | first nvcc error after fix |", "| --- | --- |"] + \
         [f"| `{r['file']}` | {code(r['error'], 300)} |" for r in d["regressions"]] if d["regressions"] else ["None."]
    o += ["", "## Fixed (failed before, compile after)", ""] + ([f"- `{r}`" for r in d["fixed"]] or ["None."])
    o += ["", "## NVIDIA's v13.0 counterpart compiles, the fixed v11.8 file does not", ""]
    o += ["| v11.8 file | first nvcc error after fix |", "| --- | --- |"] + \
         [f"| `{r['file']}` | {code(r['error'], 300)} |" for r in d["nvidia_compiles_fixed_fails"]] \
        if d["nvidia_compiles_fixed_fails"] else ["None."]
    other = [r for r in d["compile_failures_after"] if not r["v13_compiles"]]
    def v13_state(r: dict) -> str:
        return {True: "compiles", False: "fails too", None: "not compiled"}[r["v13_compiles"]] \
            if r["v13_file"] else "no counterpart"
    o += ["", f"Other files failing after `fix` ({len(other)}; state of NVIDIA's v13.0 counterpart with these flags): "
          + ", ".join(f"`{r['file'].split('/')[-1]}` ({v13_state(r)})" for r in other)]
    o += ["", "## Build-break findings on the v13.0 tree (each is a false build break)", ""]
    o += ["| file:line | rule | snippet |", "| --- | --- | --- |"] + \
         [f"| `{r['file']}:{r['line']}` | {r['rule']} | {code(r['snippet'])} |" for r in d["build_breaks_v13.0"]] \
        if d["build_breaks_v13.0"] else ["None."]
    o += ["", "## NVIDIA's API-migration sites", "",
          "A site is a v11.8 line (after clang-format with v13.0's style) in a hunk of NVIDIA's diff whose removed "
          "lines hold a CUDA API element — identifier, or call with its argument count — that the added lines "
          "do not. *flagged*: a tool finding overlaps the site's statement, or the site is in a branch that a "
          "finding's fix deletes (noted `fix deletes it`: the tool reports nothing in `#if` branches dead for the "
          "target, CM410 flags the guard and its fix drops the branch). Verdict: `match` (the tool's "
          "rewrite contains NVIDIA's new text, or the reverse, whitespace-insensitive), `api-match` (the API "
          "elements the tool introduced are among NVIDIA's), `differs` (judge: tool and NVIDIA side by side), "
          "`missing` (flagged, not rewritten), `not-flagged`.", "",
          "*API migration* (`api`): whether the change was forced by the API (`bench/oracle_cuda_samples.py` "
          "`api_migration`). A removed element counts when the 13.0 toolkit and wheel headers no longer have it, "
          "mark it deprecated (an enumerator whose line says so, a declaration with a `DEPRECATED` marker on its line or "
          "the three before), or NVIDIA's v13.0 "
          "tree no longer uses it in that form (name and argument count) anywhere. An element that is still "
          "declared, not deprecated and used the same way elsewhere in v13.0 was changed by NVIDIA's choice — dead "
          "code deleted (boxFilter's unused buffer), a sample restructured (streamOrderedAllocationIPC's handle "
          "types, the matrix descriptors conjugateGradientPrecond no longer needs once csrsv2 is gone, the "
          "`cufftResult status` of a removed license check) — and is listed as `no` with the reason. A `+name` "
          "site (an API brought in, none removed) counts when its hunk read a field the 13.0 `cudaDeviceProp` "
          "no longer has; otherwise it is set-up code around calls that are sites of their own (the "
          "`NppStreamContext` filled for the NPP `_Ctx` calls). Sites in files with no v13.0 counterpart (whole "
          "samples NVIDIA deleted) are not sites: nothing is paired.", "",
          "| # | v11.8 file:line (normalised) | changed | api | kind | flagged (rules) | verdict | v11.8 line | tool | NVIDIA |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for i, r in enumerate(d["sites"], 1):
        o.append(f"| {i} | `{r['file']}:{r['norm_line']}` | {', '.join(r['changed'])} | "
                 f"{'yes' if r['api_migration'] else 'no'}: {md_escape(r['api_why'])} | {r['kind']} | "
                 f"{flagged_cell(r)} | {r['verdict']} | {code(r['old'])} | "
                 f"{code(r['tool']) if r['verdict'] not in ('not-flagged', 'missing') else ''} | "
                 f"{code(r['nvidia']) if r['verdict'] in ('differs', 'not-flagged', 'missing') else ''} |")
    o += ["", "## Precision sample: default findings on lines NVIDIA left unchanged", "",
          (f"The pool has {len(d['sample'])} findings, fewer than {SAMPLE_SIZE}: all are listed. " if len(d["sample"]) < SAMPLE_SIZE else "")
          + f"{SAMPLE_SIZE} findings chosen by seeded hash (seed {SAMPLE_SEED}; a finding keeps its place while the "
          "pool shrinks). Verdicts come from `bench/oracle_judgements.tsv` (key, TP/FP, reason); `?` = not yet "
          "judged: add a line there and re-run.", "",
          "| # | rule | file:line | snippet | verdict | reason |", "| --- | --- | --- | --- | --- | --- |"]
    for i, r in enumerate(d["sample"], 1):
        o.append(f"| {i} | {r['rule']} | `{r['file']}:{r['line']}` | {code(r['snippet'], 100)} | "
                 f"{r['verdict']} | {md_escape(r['reason'])} |")
    if gpu_rows is not None:
        o += ["", "## GPU differential (H200)", "",
              "Built and run by `bench/oracle_gpu.sh` on the device: the v11.8 original (`before`), the copy after "
              "`fix --unsafe-fixes` (`after`) and NVIDIA's v13.0 sample (`v13`, the reference where the original no "
              "longer builds). Outputs (stdout+stderr, exit status) are compared after masking the binary's path, "
              "addresses and the numbers on lines about time, bandwidth, throughput or clocks. The reference runs "
              "twice: where its own two outputs differ, only the self-checks are compared.", "",
              "| program | built before | built after | built v13 | self-check before (or v13) | self-check after "
              "| output identical |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
        o += [f"| {' | '.join(r)} |" for r in gpu_rows]
    return "\n".join(o) + "\n"


if __name__ == "__main__":
    sys.exit(main())
