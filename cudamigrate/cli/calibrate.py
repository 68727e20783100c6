"""`cudamigrate calibrate`: measure the performance rules' costs on this GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .app import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, main
from .output import err as _err


@main.command()
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Calibration file to write (default: print it).")
@click.option("--bench-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Benchmark sources (default: the repository's bench/gpu/).")
@click.option("--merge", is_flag=True, help="Keep other GPUs' entries already in --out.")
@click.option("--arch", default="auto", show_default=True)
@click.option("--timeout", type=float, default=240, show_default=True, help="Seconds per benchmark.")
@click.option("--budget", type=float, default=None, help="Seconds for all benchmarks; the rest are skipped.")
def calibrate(out_file: Path | None, bench_dir: Path | None, merge: bool, arch: str, timeout: float,
              budget: float | None) -> None:
    """Measure the performance rules' costs on this GPU and write a calibration file."""
    import json

    from ..toolcheck import calibrate as cal
    from ..toolcheck.selftest import NO_GPU_LINE, detect_gpu

    info = detect_gpu()
    if info is None:
        click.echo(NO_GPU_LINE)
        sys.exit(EXIT_CLEAN)
    bench_dir = bench_dir or cal.default_bench_dir()
    if not bench_dir.is_dir():
        _err(f"no benchmarks at {bench_dir}: pass --bench-dir DIR (a source checkout's bench/gpu/)")
        sys.exit(EXIT_ERROR)
    doc, problems = cal.calibrate(info, bench_dir, arch=arch, timeout=timeout,
                                  log=lambda m: click.echo(m, err=True), budget=budget)
    for p in problems:
        _err(p)
    if not doc["gpus"][0]["rules"]:
        _err("no benchmark produced figures: no calibration written")
        sys.exit(EXIT_FINDINGS)
    if out_file is not None:
        doc = cal.merge_into(out_file, doc) if merge else doc
        out_file.parent.mkdir(parents=True, exist_ok=True)
        out_file.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {out_file}", err=True)
    else:
        click.echo(json.dumps(doc, indent=2))
    sys.exit(EXIT_FINDINGS if problems else EXIT_CLEAN)
