"""A scan never passes silently (cudamigrate/inputs.py): missing paths, empty directories, excluded files."""

from __future__ import annotations

import json

from cudamigrate.pipeline.inputs import EXIT_INPUT

from .helpers import run_cli

GOOD = b"int main() { cudaThreadSynchronize(); return 0; }\n"


def _lines(r) -> list[str]:
    return [ln for ln in r.output.splitlines() if ln.startswith("cudamigrate:")]


def test_nonexistent_path_is_one_line_and_the_input_exit_code(tmp_path):
    missing = tmp_path / "nope" / "x.cu"
    r = run_cli("scan", missing)
    assert r.exit_code == EXIT_INPUT == 3
    assert _lines(r) == [f"cudamigrate: error: {missing}: no such file or directory"], r.output
    assert "No findings" not in r.output


def test_empty_directory_is_one_line_and_the_input_exit_code(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not source\n")
    r = run_cli("scan", "empty", cwd=tmp_path)
    assert r.exit_code == EXIT_INPUT
    assert len(_lines(r)) == 1 and _lines(r)[0].startswith("cudamigrate: error: empty: no source file found (looked for .c "), r.output


def test_missing_path_beside_a_good_one_still_scans_the_good_one(tmp_path):
    (tmp_path / "good.cu").write_bytes(GOOD)
    r = run_cli("scan", "good.cu", "gone.cu", cwd=tmp_path)
    assert "good.cu:1:" in r.output and r.exit_code == EXIT_INPUT
    assert _lines(r) == ["cudamigrate: error: gone.cu: no such file or directory"], r.output


def test_directory_whose_files_are_all_excluded_names_the_setting(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["gen/"]\n')
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "a.cu").write_bytes(GOOD)
    r = run_cli("scan", "gen", cwd=tmp_path)
    assert r.exit_code == EXIT_INPUT
    assert _lines(r) == [f"cudamigrate: error: gen: no source file found: every one is excluded by `exclude` in "
                         f"{tmp_path / '.cudamigrate.toml'}"], r.output


def test_directory_excluded_by_an_ignore_file_names_it(tmp_path):
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / ".gitignore").write_text("*.cu\n")
    (tmp_path / "gen" / "a.cu").write_bytes(GOOD)
    r = run_cli("scan", "gen", cwd=tmp_path)
    assert r.exit_code == EXIT_INPUT and "excluded by a .gitignore/.cudamigrateignore" in r.output, r.output


def test_excluded_named_file_gets_a_note_beside_other_files(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["skip.cu"]\n')
    (tmp_path / "skip.cu").write_bytes(GOOD)
    (tmp_path / "good.cu").write_bytes(GOOD)
    r = run_cli("scan", "good.cu", "skip.cu", cwd=tmp_path)
    assert _lines(r) == [f"cudamigrate: note: skip.cu: excluded by `exclude` in {tmp_path / '.cudamigrate.toml'}"]
    assert r.exit_code == 1 and "good.cu:1:" in r.output  # findings in good.cu: the note changes nothing else


def test_only_named_file_excluded_is_an_input_error(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["skip.cu"]\n')
    (tmp_path / "skip.cu").write_bytes(GOOD)
    r = run_cli("scan", "skip.cu", cwd=tmp_path)
    assert r.exit_code == EXIT_INPUT
    assert _lines(r) == [f"cudamigrate: error: skip.cu: excluded by `exclude` in {tmp_path / '.cudamigrate.toml'}; "
                         "no file left to scan"], r.output


def test_show_files_lists_what_would_be_scanned(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["skip.cu"]\n')
    for n in ("b.cu", "a.cu", "skip.cu"):
        (tmp_path / n).write_bytes(GOOD)
    r = run_cli("scan", "--show-files", ".", cwd=tmp_path)
    assert r.exit_code == 0 and r.output.splitlines() == ["a.cu", "b.cu"], r.output


def test_show_settings_names_the_configuration_and_resolved_values(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('target-cuda = "12.4"\nignore = ["CM1"]\n')
    (tmp_path / "a.cu").write_bytes(GOOD)
    r = run_cli("scan", "--show-settings", "--from", "11.8", ".", cwd=tmp_path)
    got = dict(ln.split(" = ", 1) for ln in r.output.splitlines())
    assert r.exit_code == 0
    assert got["configuration"] == str(tmp_path / ".cudamigrate.toml")
    assert (got["target-cuda"], got["from-cuda"], got["ignore"], got["files"]) == ("12.4", "11.8", "[CM1]", "1")


def test_html_report_without_output_goes_to_a_file_and_says_so(tmp_path):
    (tmp_path / "a.cu").write_bytes(GOOD)
    r = run_cli("scan", "--report", "html", "a.cu", cwd=tmp_path)
    assert "<html" not in r.output.lower()
    assert "writing the HTML report to cudamigrate-report.html" in r.output
    assert (tmp_path / "cudamigrate-report.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_json_report_of_a_missing_path_is_not_printed(tmp_path):
    r = run_cli("scan", "--format", "json", tmp_path / "gone")
    assert r.exit_code == EXIT_INPUT
    try:
        json.loads(r.output)
        printed_report = True
    except ValueError:
        printed_report = False
    assert not printed_report  # a gate that parses the JSON must not read "0 findings" into a failed read


def test_fix_and_plan_name_a_missing_path_too(tmp_path):
    for cmd in ("fix", "plan"):
        r = run_cli(cmd, tmp_path / "gone.cu")
        assert r.exit_code == EXIT_INPUT, (cmd, r.output)
        assert _lines(r) == [f"cudamigrate: error: {tmp_path / 'gone.cu'}: no such file or directory"], (cmd, r.output)
    (tmp_path / "empty").mkdir()
    assert run_cli("plan", "empty", cwd=tmp_path).exit_code == EXIT_INPUT


def _hook_entry(hook_id: str) -> list[str]:
    """The shipped pre-commit hook's command line, less the program name."""
    import shlex
    from pathlib import Path

    import yaml

    hooks = yaml.safe_load((Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text())
    entry = shlex.split(next(h["entry"] for h in hooks if h["id"] == hook_id))
    assert entry[0] == "cudamigrate"
    return entry[1:]


def test_hook_entry_passes_a_commit_of_only_excluded_files_and_a_plain_scan_notes_them(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["third_party/"]\n')
    (tmp_path / "third_party").mkdir()
    (tmp_path / "third_party" / "old.cu").write_bytes(GOOD)
    for hook in ("cudamigrate", "cudamigrate-fix"):
        r = run_cli(*_hook_entry(hook), "third_party/old.cu", cwd=tmp_path)
        assert r.exit_code == 0 and not _lines(r), (hook, r.output)
    assert (tmp_path / "third_party" / "old.cu").read_bytes() == GOOD  # excluded: the fix hook left it alone
    r = run_cli("scan", "third_party/old.cu", cwd=tmp_path)
    assert r.exit_code == EXIT_INPUT and _lines(r) == [
        f"cudamigrate: error: third_party/old.cu: excluded by `exclude` in {tmp_path / '.cudamigrate.toml'}; "
        "no file left to scan"], r.output


def test_force_exclude_still_scans_the_other_named_files_and_reports_missing_ones(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["skip.cu"]\n')
    (tmp_path / "skip.cu").write_bytes(GOOD)
    (tmp_path / "good.cu").write_bytes(GOOD)
    r = run_cli("scan", "--force-exclude", "good.cu", "skip.cu", cwd=tmp_path)
    assert r.exit_code == 1 and "good.cu:1:" in r.output and "skip.cu" not in r.output, r.output
    r = run_cli("scan", "--force-exclude", "skip.cu", "gone.cu", cwd=tmp_path)
    assert r.exit_code == EXIT_INPUT and _lines(r) == ["cudamigrate: error: gone.cu: no such file or directory"], r.output
