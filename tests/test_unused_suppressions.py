"""CM801 unused suppressions: what is judged, and fixes that remove exactly the stale comment."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamigrate.scan.engine import Engine, Options

from .helpers import all_rules, fix_text

HEAD = "#include <cuda_runtime.h>\nvoid f(float *d, float *h, size_t n, cudaStream_t s) {\n"
TAIL = "}\n"
P = Path("t.cu")


def engine(select=None, **kw):
    return Engine(all_rules(), Options(select=select, **kw))


def cm801(eng, text):
    res = eng.scan_bytes(P, text.encode())
    assert not res.errors, res.errors
    return [f for f in res.findings if f.rule_id == "CM801"]


@pytest.mark.parametrize("body,fixed", [
    # alone on its line: the whole line goes
    ("  // cudamigrate: ignore[CM101]\n  cudaMemsetAsync(d, 0, n, s);\n", "  cudaMemsetAsync(d, 0, n, s);\n"),
    ("\t/* cudamigrate: ignore[CM101] */\r\n  cudaMemsetAsync(d, 0, n, s);\n", "  cudaMemsetAsync(d, 0, n, s);\n"),
    # after code: the comment and the space before it
    ("  cudaMemsetAsync(d, 0, n, s);   // cudamigrate: ignore[CM101]\n", "  cudaMemsetAsync(d, 0, n, s);\n"),
    ("  cudaMemsetAsync(d, 0, n, s); /* cudamigrate: ignore[CM101] */ int x = 1; (void)x;\n",
     "  cudaMemsetAsync(d, 0, n, s); int x = 1; (void)x;\n"),
    # a comment that says more keeps its words
    ("  cudaMemsetAsync(d, 0, n, s);  // deliberate cudamigrate: ignore[CM101]\n", "  cudaMemsetAsync(d, 0, n, s);  // deliberate\n"),
    # a file-level suppression
    ("  // cudamigrate: ignore-file[CM102]\n  cudaMemsetAsync(d, 0, n, s);\n", "  cudaMemsetAsync(d, 0, n, s);\n"),
    # bare ignore, default selection
    ("  cudaMemsetAsync(d, 0, n, s);  // cudamigrate: ignore\n", "  cudaMemsetAsync(d, 0, n, s);\n"),
    # partly used: only the stale id goes
    ("  cudaMemsetAsync(d, 0, n);  // cudamigrate: ignore[CM102,CM101]\n", "  cudaMemsetAsync(d, 0, n);  // cudamigrate: ignore[CM101]\n"),
    # a comment between two tokens is a space to C: removed, it leaves one (`sizeofx` does not compile)
    ("  int x = 1;\n  size_t y = sizeof/* cudamigrate: ignore[CM101] */x;\n  (void)y;\n",
     "  int x = 1;\n  size_t y = sizeof x;\n  (void)y;\n"),
    ("  int x = 1;\n  size_t y = sizeof/* cudamigrate: ignore[CM101]\n  */x;\n  (void)y;\n",
     "  int x = 1;\n  size_t y = sizeof x;\n  (void)y;\n"),
])
def test_unused_suppression_is_flagged_and_removed(body, fixed):
    eng = engine()
    text = HEAD + body + TAIL
    found = cm801(eng, text)
    assert len(found) == 1, found
    f = found[0]
    assert f.applicability == "safe" and f.severity == "info" and f.family == "meta"
    assert "suppresses nothing" in f.message
    out = fix_text(eng, P, text.encode(), unsafe=False).decode()
    assert out == HEAD + fixed + TAIL
    assert cm801(eng, out) == []  # idempotent


def test_used_and_unjudgeable_suppressions_are_kept():
    text = HEAD + (
        "  cudaMemsetAsync(d, 0, n);  // cudamigrate: ignore[CM101]\n"       # used
        "  cudaDeviceSynchronize();\n"
        "  cudaDeviceSynchronize();  // cudamigrate: ignore[CM999]\n"        # not a rule this run checks
        "  cudaDeviceSynchronize();\n"
        "  // cudamigrate: ignore[CM801]\n"                                  # never judged itself
        "  cudaDeviceSynchronize();\n"
    ) + TAIL
    assert cm801(engine(), text) == []


def test_only_selected_rules_are_judged():
    text = HEAD + "  cudaDeviceSynchronize();  // cudamigrate: ignore[CM102]\n  cudaDeviceSynchronize();  // cudamigrate: ignore\n" + TAIL
    assert len(cm801(engine(), text)) == 2
    # CM102 not selected: its suppression may serve another run; a bare ignore is not judged under --select
    assert cm801(engine(select=["CM801", "CM101"]), text) == []
    # CM801 not selected: no findings at all, and the scan is unchanged
    res = engine(select=["CM101"]).scan_bytes(P, text.encode())
    assert res.findings == []


def test_suppressing_cm801_itself():
    text = HEAD + "  // cudamigrate: ignore[CM801]\n  cudaDeviceSynchronize();  // cudamigrate: ignore[CM101]\n" + TAIL
    assert cm801(engine(), text) == []


def test_fingerprints_distinguish_identical_directives():
    text = HEAD + "  // cudamigrate: ignore[CM101]\n  int a = 0;\n\n  // cudamigrate: ignore[CM101]\n  int b = a;\n  (void)b;\n" + TAIL
    found = cm801(engine(), text)
    assert len(found) == 2 and len({f.fingerprint for f in found}) == 2


def test_cli_fix_and_report(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from cudamigrate.cli.main import main

    src = tmp_path / "a.cu"
    src.write_text(HEAD + "  // cudamigrate: ignore[CM101]\n  cudaMemsetAsync(d, 0, n, s);\n" + TAIL)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["scan", "a.cu", "--select", "CM801,CM101", "--jobs", "1"])
    assert r.exit_code == 1 and "CM801" in r.output and "a.cu:3:" in r.output
    r = CliRunner().invoke(main, ["fix", "a.cu", "--select", "CM801,CM101", "--jobs", "1"])
    assert src.read_text() == HEAD + "  cudaMemsetAsync(d, 0, n, s);\n" + TAIL
