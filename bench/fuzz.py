"""Seeded mutational fuzzing of scan and fix over the fixtures and the example app.

    python bench/fuzz.py --n 10000 [--seed 1] [--jobs N] [--save DIR]

Each input is a fixture or example source mutated 1-4 times (byte flips, truncation, insertion of
`( ) { } <<< >>> #if #endif " ' /* \\ NUL`, invalid UTF-8, CRLF/BOM, deep nesting, splices of two files).
Properties checked on every input x (all rules selected, unsafe fixes on):
  scan-raised        scan(x) raised
  fix-raised         fix(x) raised
  not-idempotent     fix(fix(x)) != fix(x)
  more-errors        fix(x) has more tree-sitter ERROR/MISSING nodes than x
  outside-edits      a one-pass fix changed bytes outside its findings' edits
  unexpected-write   fix(x) != x although no finding of x has a fix
Prints the counts and the wall time; with --save, each failing input is written to DIR for a fixture.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import traceback
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp")
TOKENS = [b"(", b")", b"{", b"}", b"<<<", b">>>", b"#if 0\n", b"#endif\n", b"#if X\n", b'"', b"'", b"/*", b"*/",
          b"\\", b"\\\n", b"\x00", b";", b",", b"::", b"&", b"*", b"\n#define M(x) ", b"// cudamigrate: ignore\n",
          b"/* cudamigrate: ignore[CM101] */", b"using namespace thrust;\n", b"cudaThreadSynchronize()",
          b"cudaMemcpyAsync(", b"cub::WARP_ANY(", b"texture<float, 2> t;", b"cublasCreate(&(h));"]
KINDS = ["flip", "truncate", "token", "utf8", "crlf", "bom", "nest", "splice", "delete", "dup"]


def corpus() -> list[bytes]:
    out = []
    for base in (ROOT / "fixtures", ROOT / "examples"):
        for p in sorted(base.rglob("*")):
            if p.suffix in SUFFIXES and p.is_file() and p.stat().st_size <= 64 * 1024:
                out.append(p.read_bytes())
    return out


def mutate(rnd: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    for _ in range(rnd.randint(1, 4)):
        kind = rnd.choice(KINDS)
        n = len(data)
        pos = rnd.randint(0, n)
        if kind == "flip" and n:
            i = rnd.randrange(n)
            data = data[:i] + bytes([data[i] ^ (1 << rnd.randrange(8))]) + data[i + 1 :]
        elif kind == "truncate":
            data = data[:pos]
        elif kind == "token":
            data = data[:pos] + rnd.choice(TOKENS) + data[pos:]
        elif kind == "utf8":
            data = data[:pos] + rnd.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80"]) + data[pos:]
        elif kind == "crlf":
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        elif kind == "bom":
            data = b"\xef\xbb\xbf" + data
        elif kind == "nest":
            depth = rnd.choice([5, 50, 300])
            call = rnd.choice([b"cudaThreadSynchronize() + f", b"cudaMemsetAsync", b"g", b""])
            data = data[:pos] + b"int z_ = " + call + b"(" * depth + b"0" + b")" * depth + b";\n" + data[pos:]
        elif kind == "splice":
            other = rnd.choice(seeds)
            j = rnd.randint(0, len(other))
            data = data[:pos] + other[j : j + rnd.randint(1, 400)] + data[pos:]
        elif kind == "delete" and n:
            data = data[:pos] + data[pos + rnd.randint(1, 64) :]
        elif kind == "dup" and n:
            data = data[:pos] + data[pos : pos + rnd.randint(1, 200)] * 2 + data[pos + 200 :]
    return data


_ENGINE = None
_SEEDS: list[bytes] = []


def _init() -> None:
    global _ENGINE, _SEEDS
    from cudamigrate.scan.engine import Engine, Options
    from cudamigrate.knowledge.load import load_rules

    rules = load_rules([ROOT / "rules"]).rules
    _ENGINE = Engine(rules, Options(select=["ALL"], extend_select=[r.id for r in rules]))
    _SEEDS = corpus()


def _outside_edits_ok(data: bytes, res) -> bool:
    """A one-pass fix equals the input with exactly its applied findings' edits."""
    from cudamigrate.findings.model import Edit
    from cudamigrate.fix.apply import _normalize_newlines, apply_edits

    if res.passes != 1:
        return True
    nl = b"\r\n" if b"\r\n" in data[:65536] else b"\n"
    groups = [[Edit(e.start, e.end, _normalize_newlines(e.text, nl)) for e in f.fix.edits] for f in res.applied]
    out, applied = apply_edits(data, groups)
    return out == res.fixed and len(applied) == len(groups)


def check(data: bytes) -> list[str]:
    """The properties that `data` violates."""
    from cudamigrate.fix.apply import fix_bytes, fixable
    from cudamigrate.parse.treesitter import count_errors, parse

    eng = _ENGINE
    path = Path("fuzz.cu")
    bad = []
    try:
        scan = eng.scan_bytes(path, data, "fuzz.cu")
    except Exception:
        return ["scan-raised:" + traceback.format_exc(limit=-3).replace("\n", " | ")]
    try:
        res = fix_bytes(eng, path, data, "fuzz.cu", unsafe=True)
        again = fix_bytes(eng, path, res.fixed, "fuzz.cu", unsafe=True)
    except Exception:
        return ["fix-raised:" + traceback.format_exc(limit=-3).replace("\n", " | ")]
    if again.fixed != res.fixed:
        bad.append("not-idempotent")
    if res.fixed != data:
        strip = (lambda b: b"   " + b[3:] if b.startswith(b"\xef\xbb\xbf") else b)
        if count_errors(parse(strip(res.fixed))) > count_errors(parse(strip(data))):
            bad.append("more-errors")
        if not any(fixable(f, True) for f in scan.findings):
            bad.append("unexpected-write")
        if not _outside_edits_ok(data, res):
            bad.append("outside-edits")
    return bad


def _one(job: tuple[int, int]) -> tuple[int, list[str], bytes]:
    seed, i = job
    rnd = random.Random(seed * 1_000_003 + i)
    base = rnd.choice(_SEEDS)
    data = mutate(rnd, base, _SEEDS)
    return i, check(data), data


def campaign(n: int, seed: int = 1, jobs: int = 1, save: Path | None = None) -> tuple[Counter, list]:
    counts: Counter = Counter()
    failures = []
    work = [(seed, i) for i in range(n)]
    if jobs <= 1:
        if _ENGINE is None:
            _init()
        results = map(_one, work)
    else:
        pool = Pool(jobs, initializer=_init)
        results = pool.imap_unordered(_one, work, chunksize=8)
    for i, bad, data in results:
        counts["inputs"] += 1
        for b in bad:
            key = b.split(":", 1)[0]
            counts[key] += 1
            failures.append((i, b, data))
            if save is not None:
                save.mkdir(parents=True, exist_ok=True)
                (save / f"{key}-{seed}-{i}.cu").write_bytes(data)
    if jobs > 1:
        pool.close()
        pool.join()
    return counts, failures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--save", type=Path)
    a = ap.parse_args()
    t0 = time.monotonic()
    counts, failures = campaign(a.n, a.seed, a.jobs, a.save)
    dt = time.monotonic() - t0
    props = ["scan-raised", "fix-raised", "not-idempotent", "more-errors", "outside-edits", "unexpected-write"]
    print(f"inputs {counts['inputs']}  seed {a.seed}  jobs {a.jobs}  wall {dt:.1f} s")
    for p in props:
        print(f"  {p:17s} {counts[p]}")
    for i, b, _ in failures[:20]:
        print(f"  input {i}: {b[:300]}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
