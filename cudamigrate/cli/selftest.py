"""`cudamigrate selftest` and `cudamigrate test ID`: the fixture cases checked end to end."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .app import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, main
from .output import err as _err


@main.command()
@click.option("--gpu", is_flag=True, help="GPU stage: build the original and fixed programs with nvcc, run both, compare outputs.")
@click.option("--fixtures", "fixtures_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Fixture root (default: the repository's fixtures/).")
@click.option("--jobs", "-j", type=int, default=0, help="Parallel nvcc builds (default: CPUs).")
@click.option("--run-jobs", type=int, default=1, show_default=True, help="Programs run at once (1 keeps GPU timings fair).")
@click.option("--timeout", type=float, default=120, show_default=True, help="Seconds per program run.")
@click.option("--arch", default="auto", show_default=True, help="GPU architecture: auto (nvidia-smi compute_cap) or sm_XY.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write selftest.json and selftest.txt here.")
@click.option("--build-only", is_flag=True, help="With --gpu: build everything, run nothing (works without a GPU).")
@click.option("--budget", type=float, default=None, help="Seconds for the whole stage; what is left is reported as failed.")
@click.option("--record-expected", is_flag=True,
              help="Cases without their expected.txt record the fixed program's output (OUT/expected/) instead of failing.")
def selftest(gpu: bool, fixtures_dir: Path | None, jobs: int, run_jobs: int, timeout: float, arch: str,
             out_dir: Path | None, build_only: bool, budget: float | None, record_expected: bool) -> None:
    """Check every fixture case; with --gpu, run the original and fixed programs on the GPU."""
    from ..toolcheck import selftest as st

    fixtures_dir = fixtures_dir or st.default_fixtures_dir()
    if not fixtures_dir.is_dir():
        _err(f"no fixture cases found (looked next to the package, {fixtures_dir}, and for a cudamigrate checkout "
             "containing the current directory): selftest checks the cases of a source checkout "
             "(fixtures/<family>/<case>/); run it inside a checkout of cudamigrate or pass --fixtures DIR")
        sys.exit(EXIT_ERROR)
    if not gpu:
        fails, n = st.static_selftest(fixtures_dir)
        for f in fails:
            click.echo(f"FAIL {f}")
        click.echo(f"{n} fixture case(s): {'all good' if not fails else f'{len(fails)} failure(s)'}")
        sys.exit(EXIT_FINDINGS if fails else EXIT_CLEAN)
    info = None
    if not build_only:
        info = st.detect_gpu()
        if info is None:
            click.echo(st.NO_GPU_LINE)
            sys.exit(EXIT_CLEAN)
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="cudamigrate-gpu-"))  # builds stay out of --out (only results go there)
    report = st.run_gpu_stage(fixtures_dir, work=work, jobs=jobs, timeout=timeout, arch=arch, gpu=info,
                              build_only=build_only, run_jobs=run_jobs, log=lambda m: click.echo(m, err=True),
                              budget=budget, record_expected=record_expected)
    click.echo(st.table(report), nl=False)
    if out_dir is not None:
        j, _ = st.write_outputs(report, out_dir)
        click.echo(f"results: {j}", err=True)
    sys.exit(EXIT_CLEAN if report.ok else EXIT_FINDINGS)


@main.command("test")
@click.argument("rule_ids", nargs=-1)
@click.option("--update", is_flag=True, help="Rewrite each case's findings.txt (the pinned messages) first; review the diff.")
@click.option("--fixtures", "fixtures_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Fixture root (default: the repository's fixtures/).")
def test_cmd(rule_ids: tuple[str, ...], update: bool, fixtures_dir: Path | None) -> None:
    """Check the fixture cases of the given rules (all without ids): findings, messages, fix, idempotence, lookalikes.

    A rule's cases are those named after it (fixtures/<family>/<rule stem>[--variant]/) and those whose
    fixture.yaml selects it (`rules: [...]`). Semantic-mode cases are checked by tests/test_semantic.py."""
    from ..toolcheck import selftest as st

    fixtures_dir = fixtures_dir or st.default_fixtures_dir()
    if not fixtures_dir.is_dir():
        _err(f"{fixtures_dir}: no fixture cases (run inside a cudamigrate checkout or pass --fixtures DIR)")
        sys.exit(EXIT_ERROR)
    try:
        fails, notes, n = st.rule_tests(fixtures_dir, list(rule_ids), update=update)
    except ValueError as exc:
        _err(str(exc))
        sys.exit(EXIT_ERROR)
    for line in notes:
        click.echo(line, err=True)
    for f in fails:
        click.echo(f"FAIL {f}")
    click.echo(f"{n} fixture case(s): {'all good' if not fails else f'{len(fails)} failure(s)'}")
    sys.exit(EXIT_FINDINGS if fails else EXIT_CLEAN)
