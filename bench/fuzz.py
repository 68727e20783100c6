"""Seeded mutational fuzzing of scan and fix over the fixtures and the example app.

    python bench/fuzz.py --n 10000 [--seed 1] [--jobs N] [--save DIR] [--mode mix|mutate|structure]

--mode mutate: each input is a fixture or example source mutated 1-4 times (byte flips, truncation, insertion of
`( ) { } <<< >>> #if #endif " ' /* \\ NUL`, invalid UTF-8, CRLF/BOM, deep nesting, splices of two files,
and, aimed at what rules read by name: invalid bytes and long runs of one character inside an identifier,
a type alias (`typedef`/`using`/namespace alias) or a string literal).
--mode structure: each input is built from pieces of the fixtures' and the example's syntax trees (file-scope
items: kernels and other functions, declarations such as texture references and handles, macros, types; and
statements of function bodies: calls, declarations, streams), a few of them or one repeated 3-120 times in one
scope (the repetition shapes of bench/bounds.py, kept small), wrapped in `#if 0/#else`, `#ifdef`, `#elif`,
a macro body with line continuations, nested scopes (blocks, if, for, do/while, switch, lambdas, namespaces,
extern "C"), with CRLF, lone CR, mixed line endings, form feeds, NEL and U+2028 bytes.
--mode mix (the default): input i is built by structure when i % 4 == 3, else mutated as in --mode mutate
(the same bytes as --mode mutate for that i).
Properties checked on every input x (all rules selected, unsafe fixes on):
  scan-raised        scan(x) raised
  fix-raised         fix(x) raised
  not-idempotent     fix(fix(x)) != fix(x)
  more-errors        fix(x) has more tree-sitter ERROR/MISSING nodes than x (each parsed as the scan parses it:
                     BOM and block comments on continued macro lines blanked)
  outside-edits      a one-pass fix changed bytes outside its findings' edits
  unexpected-write   fix(x) != x although no finding of x has a fix
  internal-error     scan(x) reported an internal error (a matcher raised) or ran out of its time budget
  lost-findings      x's findings scanned alone differ from its findings when scanned in a batch of --batch
                     inputs written to one directory (one engine, one project index)
  slow               scan(x) took more than --slow seconds (5) of CPU time
Prints the counts, the slowest scan and the wall time; with --save, each failing input is written to DIR.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import tempfile
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
KINDS = ["flip", "truncate", "token", "utf8", "crlf", "bom", "nest", "splice", "delete", "dup",
         "ident", "alias", "string"]
ODD = [b"\xff", b"\x8f", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc3\x28", b"\xf0\x9f\x98"]
IDENT = re.compile(rb"[A-Za-z_]\w{2,}")
STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')


def odd_piece(rnd: random.Random) -> bytes:
    """An invalid UTF-8 sequence, or a long run of one character (regex and scanner worst cases)."""
    if rnd.random() < 0.5:
        return rnd.choice(ODD)
    return rnd.choice([b"a", b"_", b"\xff", b"(", b" ", b"\\", b"%"]) * rnd.choice([60, 1000, 20000])


def _inside(rnd: random.Random, data: bytes, rx: re.Pattern[bytes], piece: bytes) -> bytes:
    """`piece` inserted strictly inside a random match of `rx` (a name, a string), or appended when none."""
    hits = list(rx.finditer(data[:200_000]))
    if not hits:
        return data + piece
    m = rnd.choice(hits)
    i = rnd.randint(m.start() + 1, max(m.start() + 1, m.end() - 1))
    return data[:i] + piece + data[i:]


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
        elif kind == "ident":
            data = _inside(rnd, data, IDENT, odd_piece(rnd))
        elif kind == "alias":
            name = b"Al" + odd_piece(rnd) + b"as"
            target = rnd.choice([b"thrust::device_vector<float>", b"cudaDeviceProp", b"int", b"Clocks", b"thr" + odd_piece(rnd)])
            alias = rnd.choice([b"typedef " + target + b" " + name + b";\n", b"using " + name + b" = " + target + b";\n",
                                b"namespace " + name + b" = thrust;\n", b"using namespace " + name + b";\n"])
            cut = data.rfind(b"\n", 0, pos) + 1
            data = data[:cut] + alias + data[cut:]
        elif kind == "string":
            data = _inside(rnd, data, STRING, odd_piece(rnd))
    return data


STMT_TYPES = {"expression_statement", "declaration", "if_statement", "for_statement", "while_statement",
              "return_statement", "compound_statement", "do_statement", "switch_statement"}
TOP_TYPES = {"function_definition", "declaration", "preproc_function_def", "preproc_def", "struct_specifier",
             "namespace_definition", "template_declaration", "type_definition", "alias_declaration",
             "namespace_alias_definition", "preproc_include", "class_specifier", "enum_specifier"}
PIECE_MAX = 1500  # bytes: a structure input stays a few KB
API = re.compile(rb"cu|nv|npp|thrust|<<<|tex|surf|__(?:shfl|any|all|ballot|sync)")


class Pieces:
    """The syntax pieces structure inputs are made of, cut once per worker from the seed corpus."""

    def __init__(self, seeds: list[bytes]) -> None:
        from cudamigrate.parse.treesitter import parse

        self.top: list[bytes] = []
        self.stmt: list[bytes] = []
        self.api_top: list[bytes] = []  # the pieces that name CUDA (most picks come from these)
        self.api_stmt: list[bytes] = []
        for data in seeds:
            root = parse(data).root_node
            for n in root.children:
                if n.type in TOP_TYPES and n.end_byte - n.start_byte <= PIECE_MAX:
                    self.top.append(data[n.start_byte:n.end_byte])
                if n.type == "function_definition":
                    body = n.child_by_field_name("body")
                    for s in body.named_children if body is not None else []:
                        if s.type in STMT_TYPES and s.end_byte - s.start_byte <= PIECE_MAX:
                            self.stmt.append(data[s.start_byte:s.end_byte])
        self.api_top = [p for p in self.top if API.search(p)]
        self.api_stmt = [p for p in self.stmt if API.search(p)]

    def pick(self, rnd: random.Random, top: bool) -> bytes:
        """A piece, 3 times in 4 one that names CUDA."""
        api = rnd.random() < 0.75
        return rnd.choice((self.api_top if api else self.top) if top else (self.api_stmt if api else self.stmt))


def wrap(rnd: random.Random, piece: bytes, other: bytes) -> bytes:
    """`piece` inside a preprocessor wrap (dead and live branches, a macro body), or as it is."""
    k = rnd.randrange(8)
    if k == 0:
        return b"#if 0\n" + piece + b"\n#else\n" + other + b"\n#endif\n"
    if k == 1:
        return b"#if 0\n" + other + b"\n#else\n" + piece + b"\n#endif\n"
    if k == 2:
        return b"#ifdef FZ_X\n" + piece + b"\n#endif\n"
    if k == 3:
        return b"#if defined(FZ_A) && FZ_B > 1\n" + other + b"\n#elif 1\n" + piece + b"\n#endif\n"
    if k == 4:  # a macro body: every line continued, then the macro used
        return b"#define FZ_M(a_) \\\n" + piece.replace(b"\n", b" \\\n") + b"\nFZ_M(0);\n"
    if k == 5:
        return b"#ifndef FZ_Y\n#define FZ_Y\n" + piece + b"\n#endif\n"
    return piece + b"\n"


SCOPES = [(b"{\n", b"}\n"), (b"if (n_ > 0) {\n", b"}\n"), (b"for (int i_ = 0; i_ < n_; ++i_) {\n", b"}\n"),
          (b"do {\n", b"} while (0);\n"), (b"switch (n_) {\ncase 0: {\n", b"}\n}\n"), (b"auto l_ = [&]() {\n", b"};\nl_();\n"),
          (b"while (n_--) {\n", b"}\n")]
FUNCS = [b"void fz_f(int n_)", b"__global__ void fz_k(float* p_, int n_)", b"static inline int fz_g(int n_, cudaStream_t s_)",
         b"template <typename T> __device__ T fz_t(T v_, int n_)", b"int main(int n_, char** argv)"]
FILE_SCOPES = [(b"namespace fz {\n", b"}  // namespace fz\n"), (b'extern "C" {\n', b"}\n"), (b"namespace {\n", b"}\n")]


def line_endings(rnd: random.Random, text: bytes) -> bytes:
    """`text` with odd line endings: CRLF, lone CR, mixed, form feeds, NEL (C2 85, lone 85) or U+2028 (E2 80 A8)."""
    k = rnd.randrange(7)
    if k == 0:
        return text.replace(b"\n", b"\r\n")
    if k == 1:
        return text.replace(b"\n", b"\r")
    lines = text.split(b"\n")
    if k == 2:
        return b"".join(ln + rnd.choice([b"\n", b"\r\n", b"\r"]) for ln in lines)
    if k == 3:
        odd = [b"\x0c", b"\xc2\x85", b"\xe2\x80\xa8", b"\x85", b"\x0b"]
        return b"\n".join(ln + rnd.choice(odd) if rnd.random() < 0.3 else ln for ln in lines)
    if k == 4:
        return b"\n".join(b"\x0c" + ln if rnd.random() < 0.2 else ln for ln in lines)
    return text


def structured(rnd: random.Random, pieces: Pieces) -> bytes:
    """An input built from syntax pieces: file-scope items and one function whose body holds statements (a few
    different ones, or one repeated N times in one scope), in preprocessor wraps and nested scopes."""
    def stmt() -> bytes:
        return pieces.pick(rnd, False)

    shape = rnd.randrange(4)
    if shape == 0:  # one statement N times in one scope
        one = stmt()
        n = max(3, min(rnd.choice([3, 10, 40, 120]), 6000 // (len(one) + 1)))
        body = (one + b"\n") * n
    else:
        body = b"".join(wrap(rnd, stmt(), stmt()) for _ in range(rnd.randint(1, 8)))
    for _ in range(rnd.choice([0, 0, 1, 2, 4])):
        o, c = rnd.choice(SCOPES)
        body = o + body + c
    func = rnd.choice(FUNCS) + b" {\n" + body + b"}\n"
    if shape == 1:  # one file-scope item (a kernel, a texture reference, a macro...) N times
        one = pieces.pick(rnd, True)
        items = [one + b"\n"] * max(2, min(rnd.choice([3, 10, 40]), 6000 // (len(one) + 1)))
    else:
        items = [wrap(rnd, pieces.pick(rnd, True), pieces.pick(rnd, True)) for _ in range(rnd.randint(0, 5))]
    items.insert(rnd.randint(0, len(items)), func)
    text = b"".join(items)
    if rnd.random() < 0.3:
        o, c = rnd.choice(FILE_SCOPES)
        text = o + text + c
    return line_endings(rnd, text)


_ENGINE = None
_SEEDS: list[bytes] = []
_PIECES: Pieces | None = None
MODES = ("mix", "mutate", "structure")


def _init() -> None:
    global _ENGINE, _SEEDS, _PIECES
    from cudamigrate.scan.engine import Engine, Options
    from cudamigrate.knowledge.load import load_rules

    rules = load_rules([ROOT / "rules"]).rules
    _ENGINE = Engine(rules, Options(select=["ALL"], extend_select=[r.id for r in rules]))
    _SEEDS = corpus()
    _PIECES = Pieces(_SEEDS)


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


SLOW_S: float | None = 5.0  # None: not checked (tests/test_fuzz.py: no test depends on time)


def _key(findings) -> list[tuple]:
    return sorted((f.rule_id, f.line, f.column, f.end_line, f.end_column, f.message) for f in findings)


def check(data: bytes) -> tuple[list[str], float, list[tuple]]:
    """The properties that `data` violates, its scan time, and its findings (for the batch comparison)."""
    try:
        return _check(data)
    except Exception:
        return ["check-raised:" + traceback.format_exc(limit=-3).replace("\n", " | ")], 0.0, []


def _check(data: bytes) -> tuple[list[str], float, list[tuple]]:
    from cudamigrate.fix.apply import fix_bytes, fixable
    from cudamigrate.fix.guard import parse_buffer
    from cudamigrate.parse.treesitter import count_errors, parse

    eng = _ENGINE
    path = Path("fuzz.cu")
    bad = []
    t0 = time.process_time()  # CPU time: on a shared machine wall time measures the neighbours
    try:
        scan = eng.scan_bytes(path, data, "fuzz.cu")
    except Exception:
        return ["scan-raised:" + traceback.format_exc(limit=-3).replace("\n", " | ")], time.process_time() - t0, []
    dt = time.process_time() - t0
    if scan.internal or any("internal error" in e or "time budget" in e for e in scan.errors):
        bad.append("internal-error:" + " | ".join(scan.errors)[:600])
    if SLOW_S is not None and dt > SLOW_S:
        bad.append(f"slow:{dt:.1f} s")
    found = _key(scan.findings)
    try:
        res = fix_bytes(eng, path, data, "fuzz.cu", unsafe=True)
        again = fix_bytes(eng, path, res.fixed, "fuzz.cu", unsafe=True)
    except Exception:
        return bad + ["fix-raised:" + traceback.format_exc(limit=-3).replace("\n", " | ")], dt, found
    if again.fixed != res.fixed:
        bad.append("not-idempotent")
    if res.fixed != data:
        # both as the scan parses them: tree-sitter ends a `#define` at a block comment on a continued line
        # (a compiler does not), so such comments are blanked (read.source.SourceFile.parse_bytes)
        if count_errors(parse(parse_buffer(res.fixed))) > count_errors(parse(parse_buffer(data))):
            bad.append("more-errors")
        if not any(fixable(f, True) for f in scan.findings):
            bad.append("unexpected-write")
        if not _outside_edits_ok(data, res):
            bad.append("outside-edits")
    return bad, dt, found


def batch_lost(items: list[tuple[int, bytes, list[tuple]]]) -> list[int]:
    """The inputs whose findings in a batch (all written to one directory, scanned by one engine with the
    batch's project index, as `cudamigrate scan DIR` does) differ from their findings scanned alone."""
    from cudamigrate.read.project_index import ProjectIndex
    from cudamigrate.pipeline.runner import FileJob, scan_file

    eng = _ENGINE
    lost = []
    with tempfile.TemporaryDirectory(prefix="cm-fuzz-") as d:
        paths = []
        for i, data, _ in items:
            p = Path(d) / f"fuzz{i}.cu"
            p.write_bytes(data)
            paths.append(p)
        run_eng = eng.with_run(project=ProjectIndex(files=list(paths)))
        for (i, _, alone), p in zip(items, paths):
            res = scan_file(run_eng, FileJob(str(p), "fuzz.cu"), None)
            # a message that cites a line of the file names it (`declared ... at fuzz8519.cu:5`): the same
            # finding as `fuzz.cu:5` alone
            got = [k[:5] + (k[5].replace(p.name, "fuzz.cu"),) for k in _key(res.findings)]
            if got != alone:
                lost.append(i)
    return lost


def make_input(seed: int, i: int, mode: str = "mutate") -> bytes:
    """Input i of a campaign: mutated, or built by structure (--mode mix: when i % 4 == 3)."""
    rnd = random.Random(seed * 1_000_003 + i)
    if mode == "structure" or (mode == "mix" and i % 4 == 3):
        assert _PIECES is not None
        return structured(rnd, _PIECES)
    base = rnd.choice(_SEEDS)
    return mutate(rnd, base, _SEEDS)


def _one(job: tuple[int, int], mode: str = "mutate") -> tuple[int, list[str], bytes, float, list[tuple]]:
    seed, i = job
    data = make_input(seed, i, mode)
    bad, dt, found = check(data)
    return i, bad, data, dt, found


def _batch(job: tuple[int, list[int], str]) -> list[tuple[int, list[str], bytes, float, list[tuple]]]:
    """One batch of inputs, checked one by one and then together (lost findings), in the worker that made them:
    the engine lives in the worker, and the batch comparison is as costly as a scan."""
    seed, ids, mode = job
    if _ENGINE is None:
        _init()
    done = [_one((seed, i), mode) for i in ids]
    lost = set(batch_lost([(i, data, found) for i, _, data, _, found in done]))
    return [(i, bad + (["lost-findings"] if i in lost else []), data, dt, found) for i, bad, data, dt, found in done]


def campaign(n: int, seed: int = 1, jobs: int = 1, save: Path | None = None, batch: int = 8,
             log: Path | None = None, mode: str = "mix") -> tuple[Counter, list]:
    counts: Counter = Counter()
    counts["max_ms"] = 0
    failures = []
    t0 = time.monotonic()

    def record(i: int, bad: list[str], data: bytes) -> None:
        for b in bad:
            key = b.split(":", 1)[0]
            counts[key] += 1
            failures.append((i, b, data))
            if save is not None:
                save.mkdir(parents=True, exist_ok=True)
                (save / f"{key}-{seed}-{i}.cu").write_bytes(data)
    work = [(seed, list(range(k, min(k + batch, n))), mode) for k in range(0, n, batch)]
    if jobs <= 1:
        results = map(_batch, work)
    else:
        pool = Pool(jobs, initializer=_init)
        results = pool.imap_unordered(_batch, work, chunksize=1)
    for group in results:
        for i, bad, data, dt, found in group:
            counts["inputs"] += 1
            counts["max_ms"] = max(counts["max_ms"], int(dt * 1000))
            record(i, bad, data)
            if log is not None and counts["inputs"] % 100 == 0:
                with log.open("a") as fh:
                    fh.write(f"{counts['inputs']} inputs  {time.monotonic() - t0:.0f} s  max scan {counts['max_ms']} ms  "
                             + "  ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k not in ("inputs", "max_ms"))
                             + "\n")
    if jobs > 1:
        pool.close()
        pool.join()
    return counts, failures


def main() -> None:
    global SLOW_S
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--save", type=Path)
    ap.add_argument("--batch", type=int, default=8, help="inputs per batch for the lost-findings check")
    ap.add_argument("--slow", type=float, default=5.0, help="seconds of scan above which an input counts as slow")
    ap.add_argument("--log", type=Path, help="append a progress line every 100 inputs")
    ap.add_argument("--mode", choices=MODES, default="mix",
                    help="mutate fixtures, build inputs by structure, or both (every 4th input by structure)")
    a = ap.parse_args()
    SLOW_S = a.slow
    t0 = time.monotonic()
    counts, failures = campaign(a.n, a.seed, a.jobs, a.save, a.batch, a.log, a.mode)
    dt = time.monotonic() - t0
    props = ["scan-raised", "fix-raised", "check-raised", "not-idempotent", "more-errors", "outside-edits",
             "unexpected-write", "internal-error", "lost-findings", "slow"]
    print(f"inputs {counts['inputs']}  mode {a.mode}  seed {a.seed}  jobs {a.jobs}  wall {dt:.1f} s  "
          f"slowest scan {counts['max_ms'] / 1000:.2f} s")
    for p in props:
        print(f"  {p:17s} {counts[p]}")
    for i, b, _ in failures[:20]:
        print(f"  input {i}: {b[:300]}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
