"""`cudamigrate calibrate`: build and run bench/gpu/*.cu on this GPU and write a calibration file.

Each benchmark prints one JSON line: {"bench", "key", "rules": [ids], "unit", "bad_us", "good_us", "ratio",
"bad", "good", ...}. The calibration entry for this GPU records every benchmark under its calibration key
and under each rule id it backs (`rules` in the line, plus KEY_RULES below for rules written after the
benchmark). A rule without its id here can name the key itself: `cost: {calibration: cublas-handle-per-call}`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from . import build
from ..findings.measured import normalize_gpu, read_doc
from .gpu import GpuInfo, nvcc_version, resolve_arch, run_program

# calibration key -> rule ids it backs (in addition to the ids a benchmark prints itself)
KEY_RULES: dict[str, list[str]] = {
    "legacy-stream-async": ["CM101"],
    "legacy-stream-launch": ["CM102"],
    "thrust-implicit-sync": ["CM301", "CM302"],
    "thrust-blocking-in-loop": ["CM303"],
    "device-vector-element-access": ["CM304"],
    "device-vector-alloc-in-loop": ["CM305"],
    "cublas-handle-per-call": ["CM213", "CM214"],  # created in a loop / created+destroyed per function call
    "cublas-unbound-stream": ["CM211", "CM103"],   # never bound to a stream / bound to the legacy stream
}


def default_bench_dir() -> Path:
    return Path(__file__).resolve().parent.parent.parent / "bench" / "gpu"


def bench_sources(bench_dir: Path) -> list[Path]:
    return sorted(bench_dir.glob("*.cu"))


def bench_libs(src: Path) -> list[str]:
    return build.libs_from_includes(src.read_text(encoding="utf-8", errors="replace"))


def bench_command(src: Path, exe: Path, arch: str) -> list[str]:
    return build.nvcc_command(src, exe, link=True, libs=bench_libs(src), flags=["-O2"], arch=arch,
                              include_dirs=[src.parent])


def fmt_us(us: float) -> str:
    if us >= 1000:
        return f"{us / 1000:.3g} ms"
    if us >= 100:
        return f"{us:.0f} µs"
    if us >= 1:
        return f"{us:.3g} µs"
    return f"{us * 1000:.3g} ns"


def figure(line: dict[str, Any]) -> str:
    unit = str(line.get("unit", "per call"))
    return f"{fmt_us(float(line['bad_us']))} {unit} vs {fmt_us(float(line['good_us']))}"


def record(line: dict[str, Any], gpu: str) -> dict[str, Any]:
    bad, good = float(line["bad_us"]), float(line["good_us"])
    ratio = bad / good if good > 0 else None
    fig = figure(line)
    summ = f"measured on {gpu}: {fig}"
    if ratio is not None:
        summ += f" ({ratio:.1f}x)" if ratio >= 1.05 else " (no measurable difference)"
    rec = {
        "key": line.get("key"), "bench": line.get("bench"), "figure": fig, "summary": summ, "unit": line.get("unit"),
        "bad_us": bad, "good_us": good, "ratio": round(ratio, 3) if ratio is not None else None,
        "saving_us": round(bad - good, 3), "bad": line.get("bad"), "good": line.get("good"),
    }
    for k in ("bad_range_us", "good_range_us", "units_per_round", "repeats"):
        if k in line:
            rec[k] = line[k]
    return rec


def parse_line(stdout: str) -> dict[str, Any] | None:
    for ln in reversed(stdout.strip().splitlines()):
        ln = ln.strip()
        if ln.startswith("{"):
            try:
                d = json.loads(ln)
            except ValueError:
                continue
            if isinstance(d, dict) and "bad_us" in d and "good_us" in d and "key" in d:
                return d
    return None


def entry_from_lines(info: GpuInfo, lines: list[dict[str, Any]], cuda: str | None) -> dict[str, Any]:
    rules: dict[str, Any] = {}
    for line in lines:
        rec = record(line, info.name)
        key = str(line["key"])
        rules[key] = rec
        for rid in list(line.get("rules", []) or []) + KEY_RULES.get(key, []):
            rules[str(rid)] = dict(rec)
    return {
        "gpu": info.name, "driver": info.driver, "compute_cap": info.compute_cap, "cuda": cuda,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "benchmarks": [ln.get("bench") for ln in lines],
        "rules": rules,
    }


def calibrate(info: GpuInfo, bench_dir: Path, *, arch: str = "auto", timeout: float = 240, work: Path | None = None,
              log: Callable[[str], None] | None = None, budget: float | None = None) -> tuple[dict[str, Any], list[str]]:
    """Build all benchmarks in parallel, run them one at a time, return (calibration document, problems)."""
    log = log or (lambda s: None)
    deadline = None if budget is None else time.monotonic() + budget
    a = resolve_arch(arch, info)
    work = work or Path(tempfile.mkdtemp(prefix="cudamigrate-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    srcs = []
    for src in bench_sources(bench_dir):
        missing = [lib for lib in bench_libs(src) if not build.lib_available(lib)]
        if missing:
            problems.append(f"{src.name}: skipped, needs {', '.join(missing)} (not found)")
        else:
            srcs.append(src)
    log(f"building {len(srcs)} benchmark(s) for {a} ...")

    def one(src: Path) -> tuple[Path, Path, subprocess.CompletedProcess | None, str]:
        exe = work / src.stem
        cmd = bench_command(src, exe, a)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            return src, exe, p, " ".join(cmd)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return src, exe, None, f"{' '.join(cmd)}: {exc}"

    with ThreadPoolExecutor(max(2, os.cpu_count() or 2)) as pool:
        built = list(pool.map(one, srcs))
    lines = []
    for src, exe, p, cmd in built:
        if p is None or p.returncode != 0:
            problems.append(f"{src.name}: does not build: {cmd}\n{(p.stdout + p.stderr)[-3000:] if p else ''}")
            continue
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left < 5:
            problems.append(f"{src.name}: not run: time budget exhausted")
            continue
        log(f"running {src.name} ...")
        out = run_program(exe, timeout if left is None else min(timeout, left))
        line = parse_line(out.stdout)
        if out.rc != 0 or line is None:
            problems.append(f"{src.name}: run failed (exit {out.rc}): {out.stderr[-2000:]}")
            continue
        log(f"  {line['key']}: bad {line['bad_us']} µs, good {line['good_us']} µs ({line.get('unit')})")
        lines.append(line)
    entry = entry_from_lines(info, lines, nvcc_version())
    entry["gpu_info"] = asdict(info)
    return {"version": 1, "gpus": [entry]}, problems


def merge_into(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """Entries in `path` for other GPUs, plus the new ones (replacing the same GPU's old entry)."""
    old = read_doc(path) or {}
    new_names = {normalize_gpu(e["gpu"]) for e in doc["gpus"]}
    keep = [e for e in old.get("gpus", []) or [] if normalize_gpu(str(e.get("gpu", ""))) not in new_names]
    return {"version": 1, "gpus": keep + doc["gpus"]}
