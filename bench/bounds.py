"""Work per file stays bounded on pathological inputs: prints figures, asserts nothing.

    python bench/bounds.py [--depth 5000] [--calls 4000] [--findings 20000] [--quick]

Cases (issue 15's targets in brackets):
  nesting   one statement with API calls nested DEPTH deep, scanned          [< 5 s at 5,000]
  long-line a 100 KB line holding CALLS API calls, scanned; JSON report size  [< 5 s, bounded memory]
  fix-many  FINDINGS safe findings in one file, fixed                         [< 10 s at 20,000]
  legacy-many  CALLS legacy-stream cudaMemcpyAsync(..., 0) in one function next to a created stream
                                                                                [< 2 s for 100 KB, issue 24]
  nest-calls   CALLS legacy-stream calls inside 5 x CALLS nested parentheses   [< 2 s for 100 KB, issue 24]
  fuzz-slow    the slowest inputs bench/fuzz.py saved (--fuzz-dir), scanned    [< 2 s each]
  handles      CALLS x `cublasHandle_t h; cublasCreate(&h);` in one function  [< 2 s CPU at 100 KB, every
               pair's CM210 and CM212 reported (issue 34: 250 pairs took 11.9 s, 500 lost 866 of 1,000)]
  paste-defs   CALLS token-pasting macros, each defined twice under an undecided `#ifdef` (hip##fn / cuda##fn),
               and one use                                                    [< 2 s; the reason for each blocked
               macro read the text before each definition, and the prefilter the file once per macro: 15.7 s CPU at
               2,000 before, 0.47 s after]
  repeat:F     every rule family F: for each fixture before.cu of the family, the body of its function with
               the most `// expect:` lines repeated in that one function up to --repeat-kb (the construct each
               rule looks for, N times in one scope: handles, streams, textures, guards, graph calls, NPP,
               Thrust...); one line per fixture, its CPU time and findings   [< 2 s CPU at 100 KB, issue 34]
Each case runs in a fresh process so that its peak memory (max RSS) is its own; `time` is wall time, `cpu`
the process's CPU time (the figure to compare on a loaded machine).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# a created stream: legacy-stream rules report only where the legacy stream meets another blocking stream
STREAM = "cudaStream_t s_; cudaStreamCreate(&s_); cudaMemsetAsync(p_, 0, 4, s_);"


def nesting(depth: int) -> bytes:
    inner = "p"
    for _ in range(depth):
        inner = f"cudaMemsetAsync({inner}, 0, n, 0)"
    return f"void f(void* p, int n) {{\n  {STREAM}\n  {inner};\n}}\n".encode()


def nesting_mixed(depth: int) -> bytes:
    inner = "0"
    for i in range(depth):
        inner = f"cudaThreadSynchronize() + __any(({inner}))" if i % 2 else f"max(__shfl({inner}, 1), 2)"
    return f"__global__ void k(int n) {{\n  int x = {inner};\n}}\n".encode()


def long_line(calls: int) -> bytes:
    body = " ".join(f"cudaMemcpyAsync(d{i % 10}, h, n, cudaMemcpyHostToDevice, 0);" for i in range(calls))
    return f"void f(float* d0, float* h, int n) {{ {STREAM} {body} }}\n".encode()


def legacy_many(calls: int) -> bytes:
    """Thousands of legacy-stream calls in one function, with another stream in use (CM101's stream analysis)."""
    body = "".join(f"  cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, 0);\n" for _ in range(calls))
    return f"void f(float* d, float* h, int n, void* p_) {{\n  {STREAM}\n{body}}}\n".encode()


def nest_calls(calls: int) -> bytes:
    """Many calls inside deep nesting: one comma expression of CALLS calls wrapped in 5 x CALLS parentheses."""
    inner = ", ".join("cudaMemsetAsync(q_, 0, n, 0)" for _ in range(calls))
    depth = 5 * calls
    return (f"void f(void* p_, void* q_, int n) {{\n  {STREAM}\n  int x = (int)" + "(" * depth + inner + ")" * depth
            + ";\n}\n").encode()


def handles(calls: int) -> bytes:
    """CALLS cuBLAS handles created and never destroyed in one function: 2 x CALLS findings (CM210, CM212)."""
    body = "".join("  cublasHandle_t h; cublasCreate(&h);\n" for _ in range(calls))
    return f"#include <cublas_v2.h>\nvoid f() {{\n{body}}}\n".encode()


def paste_defs(calls: int) -> bytes:
    """CALLS pasting macros whose two definitions an undecided `#ifdef` chooses between, and a use of one."""
    defs = "".join(f"#ifdef USE_HIP{i}\n#define GPU{i}(fn) hip##fn\n#else\n#define GPU{i}(fn) cuda##fn\n#endif\n"
                   for i in range(calls))
    return f"#include <cuda_runtime.h>\n{defs}void f() {{ GPU{calls // 2}(ThreadSynchronize)(); }}\n".encode()


def repeated_scope(data: bytes, kb: int) -> bytes:
    """`data` (a fixture) with the body of its function holding the most `// expect:` lines (else the largest)
    repeated inside that function until the file reaches `kb` KB: the constructs a rule looks for, many times
    in one scope. The fixture's other text (includes, types, globals, other functions) is kept once."""
    from cudamigrate.parse.treesitter import parse

    root = parse(data).root_node
    best, score = None, (-1, -1)
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            body = n.child_by_field_name("body")
            if body is not None and body.end_byte - body.start_byte > 2:
                sc = (data[body.start_byte:body.end_byte].count(b"// expect:"), body.end_byte - body.start_byte)
                if sc > score:
                    best, score = body, sc
            continue
        stack.extend(n.children)
    if best is None:
        return data
    inner = data[best.start_byte + 1:best.end_byte - 1].rstrip(b" ") + b"\n"
    copies = max(1, (kb * 1000 - len(data)) // len(inner))
    return data[:best.start_byte + 1] + inner * copies + data[best.end_byte - 1:]


def family_fixtures(family: str) -> list[Path]:
    """Every fixture before file of a rule family (fixtures/<family>/<case>/before.cu, .cpp, .c), in name order."""
    return sorted((ROOT / "fixtures" / family).glob("*/before.*"))


def _repeat_child(family: str, kb: int) -> None:
    """One process per family: rules load once, then each fixture's repeated shape is scanned and timed."""
    sys.path.insert(0, str(ROOT))
    from cudamigrate.scan.engine import Engine, Options
    from cudamigrate.knowledge.load import load_rules

    eng = Engine(load_rules([ROOT / "rules"]).rules, Options())
    for before in family_fixtures(family):
        data = repeated_scope(before.read_bytes(), kb)
        c0 = time.process_time()
        res = eng.scan_bytes(Path("bench" + before.suffix), data, "bench" + before.suffix)
        cpu = time.process_time() - c0
        over = " OVER 2 s" if cpu >= 2 else ""
        print(f"repeat:{family:9s} {before.parent.name[:44]:44s} input={len(data) / 1e3:.0f}KB "
              f"findings={len(res.findings):<5d} cpu={cpu:5.2f}s errors={len(res.errors)}{over}", flush=True)


def fix_many(findings: int) -> bytes:
    return ("void f() {\n" + "".join("  cudaThreadSynchronize();\n" for _ in range(findings)) + "}\n").encode()


def _child(case: str, size: int) -> None:
    sys.path.insert(0, str(ROOT))
    from cudamigrate.scan.engine import Engine, Options
    from cudamigrate.fix.apply import fix_bytes
    from cudamigrate.knowledge.load import load_rules

    rules = load_rules([ROOT / "rules"]).rules
    eng = Engine(rules, Options())
    if case.startswith("file:"):
        data = Path(case[5:]).read_bytes()
    else:
        data = {"nesting": nesting, "nesting-mixed": nesting_mixed, "long-line": long_line, "fix-many": fix_many,
                "legacy-many": legacy_many, "nest-calls": nest_calls, "handles": handles,
                "paste-defs": paste_defs}[case](size)
    path = Path(f"bench.{'cu'}")
    t0 = time.perf_counter()
    c0 = time.process_time()
    extra = ""
    if case == "fix-many":
        res = fix_bytes(eng, path, data, "bench.cu")
        n, errors = len(res.applied), res.errors
        extra = f" passes={res.passes} remaining={len(res.remaining)}"
    else:
        res = eng.scan_bytes(path, data, "bench.cu")
        n, errors = len(res.findings), res.errors
        out = json.dumps([f.to_dict() for f in res.findings])
        extra = f" json={len(out) / 1e6:.1f}MB"
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{case[-28:]:14s} size={size:<6d} input={len(data) / 1e3:.0f}KB findings={n:<6d} time={dt:6.2f}s cpu={cpu:6.2f}s "
          f"maxrss={rss:.0f}MB{extra} errors={len(errors)}{' ' + errors[0][:100] if errors else ''}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=5000)
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--findings", type=int, default=20000)
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    ap.add_argument("--fuzz-dir", type=Path, help="also scan every .cu bench/fuzz.py --save wrote here")
    ap.add_argument("--only", help="run only the cases whose name starts with this")
    ap.add_argument("--repeat-kb", type=int, default=100, help="size of each repeat:FAMILY shape (KB)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        if a.child[0].startswith("repeat:"):
            _repeat_child(a.child[0][7:], int(a.child[1]))
        else:
            _child(a.child[0], int(a.child[1]))
        return
    plan = []
    for d in ([100, 200] if a.quick else [500, 1000, 2000, a.depth]):
        plan += [("nesting", d), ("nesting-mixed", d)]
    for c in ([200] if a.quick else [1000, a.calls]):
        plan.append(("long-line", c))
    for f in ([500] if a.quick else [2000, 8000, a.findings]):
        plan.append(("fix-many", f))
    # 100 KB of each: 1,800 legacy-stream calls in one function; 2,500 calls inside 12,500 parentheses
    for c in ([200] if a.quick else [400, 1800]):
        plan.append(("legacy-many", c))
    for c in ([100] if a.quick else [400, 2500]):
        plan.append(("nest-calls", c))
    # 500 handle pairs (the count) and 100 KB of them (2,700)
    for c in ([100] if a.quick else [500, 2700]):
        plan.append(("handles", c))
    for c in ([200] if a.quick else [500, 2000]):
        plan.append(("paste-defs", c))
    families = sorted(d.name for d in (ROOT / "fixtures").iterdir() if d.is_dir() and family_fixtures(d.name))
    plan += [(f"repeat:{f}", 10 if a.quick else a.repeat_kb) for f in families]
    if a.fuzz_dir:
        plan += [(f"file:{p}", p.stat().st_size) for p in sorted(a.fuzz_dir.glob("*.cu"))]
    if a.only:
        plan = [(c, s) for c, s in plan if c.startswith(a.only)]
    for case, size in plan:
        subprocess.run([sys.executable, __file__, "--child", case, str(size)], check=False)


if __name__ == "__main__":
    main()
