"""Globs that cannot be compiled and the README's configuration example (issue 34): an inverted range `[z-a]`
was an uncaught re.error (exit 1, a traceback), and the README's own `[tool.cudamigrate.core.options]` was
refused as an unknown key."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamigrate.pipeline.discover import discover

from .helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
GOOD = b"int main() { cudaThreadSynchronize(); return 0; }\n"


@pytest.mark.parametrize("pattern,why", [("[z-a]", "bad character range z-a"), ("x\\", "Invalid git pattern")])
def test_an_exclude_glob_that_cannot_be_compiled_is_an_exit_2_line(tmp_path, pattern, why):
    (tmp_path / "good.cu").write_bytes(GOOD)
    (tmp_path / ".cudamigrate.toml").write_text(f"exclude = ['{pattern}']\n")
    r = run_cli("scan", str(tmp_path), cwd=tmp_path)
    lines = [ln for ln in r.output.splitlines() if why in ln]
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert str(tmp_path / ".cudamigrate.toml") in lines[0] and "`exclude` pattern" in lines[0]


@pytest.mark.parametrize("ignore_file", [".gitignore", ".cudamigrateignore"])
@pytest.mark.parametrize("pattern", ["[z-a]", "x\\"])
def test_an_ignore_file_pattern_that_cannot_be_compiled_matches_nothing_as_in_git(tmp_path, ignore_file, pattern):
    """git accepts `[z-a]` and matches nothing with it: so here, with one line naming the file and line; the
    file's other patterns still apply and the other files are scanned."""
    (tmp_path / ignore_file).write_text(f"{pattern}\nskipped.cu\n")
    (tmp_path / "a.cu").write_bytes(GOOD)
    (tmp_path / "skipped.cu").write_bytes(GOOD)
    errors: list[str] = []
    assert [p.name for p in discover([tmp_path], errors=errors)] == ["a.cu"]
    assert len(errors) == 1 and f"{ignore_file}:1: pattern" in errors[0] and "matches nothing" in errors[0], errors
    r = run_cli("scan", "a.cu", cwd=tmp_path)  # a named file looks up its directory's ignore files too
    assert r.exit_code == 1 and "CM501" in r.output and f"{ignore_file}:1: pattern" in r.output, r.output


def _readme_configuration() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Configuration\n"):]
    start = section.index("```toml\n") + len("```toml\n")
    return section[start:section.index("```", start)]


def test_the_readme_configuration_example_is_accepted_as_written(tmp_path):
    """The block under README's Configuration heading, written verbatim to pyproject.toml (its rules dir
    created): scan runs with it, no configuration error."""
    block = _readme_configuration()
    assert block.startswith("[tool.cudamigrate]\n")
    (tmp_path / "pyproject.toml").write_text(block)
    (tmp_path / "tools" / "cuda-rules").mkdir(parents=True)
    (tmp_path / "a.cu").write_bytes(GOOD)
    (tmp_path / "clean.cu").write_text("int main() { return 0; }\n")
    # the `baseline` key names a file: one recorded from a clean file, so a.cu's finding is new
    run_cli("scan", "--write-baseline", "cudamigrate-baseline.json", "clean.cu", cwd=tmp_path)
    assert (tmp_path / "cudamigrate-baseline.json").is_file()
    r = run_cli("scan", "--format", "json", "a.cu", cwd=tmp_path)
    assert r.exit_code == 1 and '"CM501"' in r.output, r.output
