"""All or nothing per symbol (fix/consistency.py): the findings of a consistency group (a rule's `consistency:`
template, e.g. CM511's type or CM601's texture reference) are fixed in every file of the run or in none, and a
withheld group lists every use. Each project here was half-migrated (and so broken) before groups existed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cudamigrate.scan.engine import Engine, Options
from cudamigrate.fix.apply import fix_bytes
from cudamigrate.knowledge.load import load_rules
from cudamigrate.pipeline.runner import EngineSpec, fix_files

from .conftest import FIXTURES
from .helpers import run_cli

KEEP_COMPAT = FIXTURES / "projects" / "consistency-keep-compat"
HEADER_READS = FIXTURES / "texture" / "project-header-reads"
HEADER_READS_BLOCKED = FIXTURES / "texture" / "project-header-reads-blocked"


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def _tree(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_a_rename_one_file_cannot_write_is_withheld_in_every_file(tmp_path):
    proj = _copy(KEEP_COMPAT, tmp_path)
    before = _tree(proj)
    r = run_cli("fix", "--keep-compat", "12.0", "--select", "CM511", ".", cwd=proj)
    assert r.exit_code == 1, r.stderr  # findings remain
    assert _tree(proj) == before  # main.cu's statements are not renamed while the member stays double4
    note = next(ln for ln in r.stderr.splitlines() if "fix withheld" in ln)
    assert "`double4`" in note and "particle.h:7:3" in note.split("All")[0]  # the use that cannot be written
    for use in ("main.cu:5:3", "main.cu:5:15", "particle.h:7:3"):  # every use is listed
        assert use in note.split("All")[1], note
    assert "Fixed 0 finding(s) in 0 file(s); 3 remaining." in r.stdout


def test_without_keep_compat_the_whole_group_is_renamed(tmp_path):
    proj = _copy(KEEP_COMPAT, tmp_path)
    r = run_cli("fix", "--select", "CM511", ".", cwd=proj)
    assert r.exit_code == 0, r.stderr
    assert "double4_16a pos;" in (proj / "particle.h").read_text()
    assert "double4_16a v = make_double4_16a(1, 2, 3, 4);" in (proj / "main.cu").read_text()
    assert "fix withheld" not in r.stderr


@pytest.mark.nvcc
@pytest.mark.parametrize("keep_compat", [True, False])
def test_the_project_still_compiles_after_fix(tmp_path, keep_compat):
    proj = _copy(KEEP_COMPAT, tmp_path)
    run_cli("fix", *(["--keep-compat", "12.0"] if keep_compat else []), "--select", "CM511", ".", cwd=proj)
    res = subprocess.run(["nvcc", "-c", "-o", str(tmp_path / "main.o"), "main.cu"], cwd=proj, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr[-3000:]


def test_commit_per_rule_withholds_the_same_group(tmp_path, monkeypatch):
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    for k, v in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@example.com"), ("GIT_COMMITTER_NAME", "t"),
                 ("GIT_COMMITTER_EMAIL", "t@example.com")):
        monkeypatch.setenv(k, v)
    proj = _copy(KEEP_COMPAT, tmp_path)
    before = _tree(proj)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(proj), *args], check=True, capture_output=True)
    r = run_cli("fix", "--keep-compat", "12.0", "--select", "CM511", "--commit-per-rule", ".", cwd=proj)
    assert _tree(proj) == before and "fix withheld" in r.stderr, r.stderr


def test_texture_reads_in_an_included_header_migrate_with_the_declaration(tmp_path):
    """reads.cuh reads the reference that main.cu, its only includer, declares through textures.cuh: the read
    migrates with the declaration and the bind (before: a manual CM603 read and a migrated declaration)."""
    proj = _copy(HEADER_READS, tmp_path)
    r = run_cli("fix", "--unsafe-fixes", "--select", "CM601,CM602,CM603", ".", cwd=proj)
    assert r.exit_code == 0 and "fix withheld" not in r.stderr, r.stderr
    assert "tex2D<float>(texImg, x + 0.5f, y + 0.5f)" in (proj / "reads.cuh").read_text()
    assert "__constant__ cudaTextureObject_t texImg;" in (proj / "textures.cuh").read_text()
    if shutil.which("nvcc"):
        res = subprocess.run(["nvcc", "-c", "-o", str(tmp_path / "m.o"), "main.cu"], cwd=proj, capture_output=True,
                             text=True)
        assert res.returncode == 0, res.stderr[-3000:]


def test_a_texture_use_an_included_header_cannot_migrate_holds_back_the_declaration(tmp_path):
    proj = _copy(HEADER_READS_BLOCKED, tmp_path)
    before = _tree(proj)
    r = run_cli("fix", "--unsafe-fixes", "--select", "CM601,CM602,CM603", ".", cwd=proj)
    assert _tree(proj) == before, r.stderr  # textures.cuh keeps its texture<> while reads.cuh uses it
    note = next(ln for ln in r.stderr.splitlines() if "fix withheld" in ln)
    assert "`texImg`" in note and "reads.cuh:5:54" in note.split("All")[0]
    for use in ("main.cu:11:26", "reads.cuh:5:54", "textures.cuh:5:44"):
        assert use in note.split("All")[1], note


# a rule whose rewrite is valid as a statement and a syntax error inside an initializer: the syntax guard refuses
# it in one file only
BRACED = """id: CM9101
name: braced
family: test
summary: s
message: m
severity: info
match: {call: {names: [legacy_fn]}}
fix: {applicability: safe, edits: [{replace: node, with: '{ new_fn(); }'}]}
references: [test]
"""
STATEMENT = b"void f() {\n  legacy_fn();\n}\n"
INITIALIZER = b"int g() {\n  int x = legacy_fn();\n  return x;\n}\n"


def _braced(tmp_path: Path, group: bool, applicability: str = "safe") -> tuple[Engine, EngineSpec, list[Path]]:
    rd = tmp_path / "rules"
    rd.mkdir()
    rule = BRACED.replace("applicability: safe", f"applicability: {applicability}")
    (rd / "CM9101-braced.yaml").write_text(rule + ("consistency: '{{ name }}'\n" if group else ""))
    rs = load_rules([rd])
    assert not rs.errors, rs.errors
    files = [tmp_path / "a.cu", tmp_path / "b.cu"]
    files[0].write_bytes(STATEMENT)
    files[1].write_bytes(INITIALIZER)
    opts = Options(select=["CM9101"])
    return Engine(rs.rules, opts), EngineSpec([rd], opts), files


def test_a_fix_refused_in_one_file_is_not_applied_in_another(tmp_path):
    engine, spec, files = _braced(tmp_path, group=True)
    run = fix_files(engine, spec, files, unsafe=False)
    a, b = (o.result for o in run)
    assert a is not None and b is not None
    assert not a.changed and not b.changed  # the statement form alone would be a partial migration
    assert any("fix refused" in e for e in b.errors)
    assert len(run.withheld) == 1 and "b.cu:2:11" in run.withheld[0] and "a.cu:2:3" in run.withheld[0]


def test_a_refused_unsafe_fix_is_named_as_refused_not_as_needing_unsafe_fixes(tmp_path):
    """With --unsafe-fixes given, an unsafe use the syntax guard refused stays for that reason (issue 31: Parboil's
    rpes note said "needs --unsafe-fixes")."""
    engine, spec, files = _braced(tmp_path, group=True, applicability="unsafe")
    run = fix_files(engine, spec, files, unsafe=True)
    assert len(run.withheld) == 1, run.withheld
    stuck = run.withheld[0].split("All")[0]
    assert "b.cu:2:11 (its fix was refused: it would make a syntax error)" in stuck and "--unsafe-fixes" not in stuck


def test_without_a_group_each_finding_stands_alone(tmp_path):
    """The control: the same rule without `consistency:` fixes the statement and leaves the initializer."""
    engine, spec, files = _braced(tmp_path, group=False)
    a, b = (o.result for o in fix_files(engine, spec, files, unsafe=False))
    assert a is not None and b is not None
    assert a.changed and a.fixed == b"void f() {\n  { new_fn(); };\n}\n" and not b.changed


def test_one_file_groups_are_settled_by_fix_bytes(tmp_path):
    """Both forms in one file (the path `fix -`, fixtures and selftest take): neither is applied."""
    engine, _, _ = _braced(tmp_path, group=True)
    res = fix_bytes(engine, Path("t.cu"), STATEMENT + INITIALIZER, "t.cu")
    assert not res.changed and set(res.withheld.stuck) == {"test:legacy_fn"}


def _result(applied: list[str], remaining: list[str]):
    from types import SimpleNamespace

    def finding(group: str):
        return SimpleNamespace(group=group)
    return SimpleNamespace(applied=[finding(g) for g in applied], remaining=[finding(g) for g in remaining])


def test_scoped_groups_are_apart_and_an_unscoped_use_ties_every_scope():
    from cudamigrate.fix.consistency import broken, tied

    a, b, any_ = "texture:tex@/p/a.cu", "texture:tex@/p/x@y/b.cu", "texture:tex@*"  # a path may hold the separator
    assert tied(a, a) and tied(a, any_) and tied(any_, b)
    assert not tied(a, b) and not tied(a, "texture:tex") and not tied(a, "texture:tey@*")
    # `tex` of b.cu left manual does not hold back `tex` of a.cu
    assert broken([_result([a], []), _result([], [b])]) == set()
    # a use whose declaration is unknown holds back every scope of its name that was applied
    assert broken([_result([a], []), _result([b], []), _result([], [any_])]) == {a, b}
    assert broken([_result([a, "texture:tey@/p/a.cu"], [any_])]) == {a}
    # an applied unscoped use is held back by any scope left, and the unscoped groups are as before
    assert broken([_result([any_], [b])]) == {any_}
    assert broken([_result(["removals:double4"], ["removals:double4"])]) == {"removals:double4"}
    assert broken([_result(["removals:double4"], ["removals:double4@*"])]) == set()  # not a scoped group


INCLUDER_DECLARES = FIXTURES / "texture" / "project-includer-declares"


def test_a_header_reads_the_reference_its_includer_declares_above_the_include(tmp_path):
    """main.cu declares texD and then includes kernels.cuh, which reads it: the read migrates with the
    declaration, and the program builds (before: a manual CM603 read that withheld the whole reference)."""
    proj = _copy(INCLUDER_DECLARES, tmp_path)
    r = run_cli("fix", "--unsafe-fixes", "--no-verify", "--select", "CM601,CM602,CM603", ".", cwd=proj)
    assert r.exit_code == 0 and "fix withheld" not in r.stderr, r.stderr
    assert "tex2D<float>(texD, threadIdx.x + 0.5f, y + 0.5f)" in (proj / "kernels.cuh").read_text()
    assert "__constant__ cudaTextureObject_t texD;" in (proj / "main.cu").read_text()
    again = run_cli("fix", "--unsafe-fixes", "--no-verify", "--diff", "--select", "CM601,CM602,CM603", ".", cwd=proj)
    assert again.stdout == ""  # converged
    if shutil.which("nvcc"):
        res = subprocess.run(["nvcc", "-c", "-o", str(tmp_path / "m.o"), "main.cu"], cwd=proj, capture_output=True,
                             text=True)
        assert res.returncode == 0, res.stderr[-3000:]


@pytest.mark.parametrize("layout", ["declared-below", "two-includers"])
def test_a_header_whose_includers_do_not_agree_on_a_declaration_above_the_include_stays(tmp_path, layout):
    """Declared below the #include (the header cannot see it), or declared by two includers each (the header
    would read two references): the header's read stays manual and the reference is withheld in every file."""
    proj = _copy(INCLUDER_DECLARES, tmp_path)
    main = (proj / "main.cu").read_text()
    decl = "texture<float, 2, cudaReadModeElementType> texD;\n"
    if layout == "declared-below":
        main = main.replace(decl, "").replace('#include "kernels.cuh"\n', '#include "kernels.cuh"\n' + decl)
    else:
        (proj / "second.cu").write_text('#include <cuda_runtime.h>\n' + decl + '#include "kernels.cuh"\n')
    (proj / "main.cu").write_text(main)
    before = _tree(proj)
    r = run_cli("fix", "--unsafe-fixes", "--no-verify", "--select", "CM601,CM602,CM603", ".", cwd=proj)
    assert _tree(proj) == before, r.stderr
    assert "kernels.cuh:4:" in next(ln for ln in r.stderr.splitlines() if "fix withheld" in ln).split("All")[0]


@pytest.mark.gpu
def test_a_header_reading_its_includers_reference_runs_the_same_after_fix(tmp_path):
    """The migrated program reads row 1 of the 4x2 array through the header's read (skips without a GPU)."""
    from .conftest import gpu_available

    if shutil.which("nvcc") is None or not gpu_available():
        pytest.skip("needs nvcc and a GPU")
    proj = _copy(INCLUDER_DECLARES, tmp_path)
    assert run_cli("fix", "--unsafe-fixes", "--select", "CM601,CM602,CM603", ".", cwd=proj).exit_code == 0
    exe = tmp_path / "prog"
    res = subprocess.run(["nvcc", "-o", str(exe), "main.cu"], cwd=proj, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == (INCLUDER_DECLARES / "expected.txt").read_text()


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github", "html"])
def test_scan_shows_no_member_of_a_withheld_group_as_fixable(tmp_path, fmt):
    """Issue 31: `scan` marked main.cu's two uses auto-fixable ([*]) while `fix` withholds them (the member in
    particle.h cannot be wrapped in `#if`); the scan now decides with the fix's own `broken`."""
    out = tmp_path / f"report.{fmt}"
    r = run_cli("scan", "--no-cache", "--keep-compat", "12.0", "--select", "CM511", "--format", fmt, "-o", out,
                str(KEEP_COMPAT))
    assert r.exit_code == 1, r.stderr
    text = out.read_text()
    if fmt == "json":
        import json

        fs = json.loads(text)["findings"]
        assert [(f["line"], f["applicability"], f["fix"]) for f in fs] == [(5, "manual", None)] * 2 + [(7, "manual", None)]
        assert "1 use(s) cannot be rewritten (" in fs[0]["message"] and "particle.h:7:3)" in fs[0]["message"]
        assert "cannot be wrapped in `#if`" in fs[0]["context"]["fix_blocked"]
    elif fmt == "sarif":
        assert '"fixes"' not in text and '"applicability": "safe"' not in text
    elif fmt == "github":
        assert "[fix:" not in text and text.count("No automatic fix: `double4` is fixed in every file or in none") == 2
    elif fmt == "html":
        assert 'id="fixable-pct">0.0%<' in text and "safe 0 (0.0%)" in text
    else:
        assert "[*]" not in text and text.count("[ ]") == 3


def test_scan_without_keep_compat_still_shows_the_group_fixable(tmp_path):
    """The control: every use can be renamed, so every use stays safe, as `fix` renames them all."""
    import json

    r = run_cli("scan", "--no-cache", "--select", "CM511", "--format", "json", str(KEEP_COMPAT))
    assert [f["applicability"] for f in json.loads(r.stdout)["findings"]] == ["safe"] * 3


def _finding(path: str, app: str | None, group: str):
    from cudamigrate.findings.model import Cost, Edit, Finding, Fix

    fix = None if app is None else Fix(app, "t", [Edit(0, 1, "x")])
    return Finding("CM9", "n", "f", "info", path, 1, 1, 1, 2, 0, 1, "m.", "s", fix=fix,
                   cost=Cost("deprecated", 5.0, app or "manual", 1.0, 1.0, 5.0), group=group)


def test_a_group_only_unsafe_fixes_complete_shows_its_safe_members_unsafe():
    from cudamigrate.fix.consistency import as_scanned

    fs = [_finding("a.cu", "safe", "t:x"), _finding("b.cu", "unsafe", "t:x"), _finding("c.cu", "safe", "t:y")]
    got = as_scanned(fs)
    assert [f.applicability for f in got] == ["unsafe", "unsafe", "safe"]
    assert "Needs --unsafe-fixes: `x`" in got[0].message and got[0].cost is not None and got[0].cost.roi == 2.5
    assert got[1] is fs[1] and got[2] is fs[2]  # findings the groups do not change are the same objects


def test_scan_ties_an_unscoped_use_to_every_scope_as_fix_does():
    from cudamigrate.fix.consistency import as_scanned

    fs = [_finding("a.cu", "safe", "texture:tex@/p/a.cu"), _finding("b.cu", "safe", "texture:tex@/p/b.cu"),
          _finding("h.h", None, "texture:tex@*"), _finding("c.cu", "safe", "texture:tey@/p/c.cu")]
    assert [f.applicability for f in as_scanned(fs)] == ["manual", "manual", "manual", "safe"]
    assert [f.applicability for f in as_scanned(fs[:2] + fs[3:])] == ["safe"] * 3


def test_plan_does_not_offer_a_withheld_group_as_an_automatic_fix():
    r = run_cli("plan", "--no-cache", "--keep-compat", "12.0", "--select", "CM511", str(KEEP_COMPAT))
    assert "automatic fixes" not in r.stdout and "manual changes: 3 in 2 file(s), est. 3 min" in r.stdout, r.stdout


def test_the_editor_offers_no_fix_of_a_group_the_buffer_cannot_fix_whole(tmp_path):
    """The language server scans one buffer: the member cannot be wrapped in `#if` (keep-compat), so renaming the
    statement alone would not build; its diagnostic carries no fix (server/analysis.py), as `fix -` withholds it."""
    from cudamigrate.server.analysis import Engines, analyse_bytes, fix_actions

    (tmp_path / ".cudamigrate.toml").write_text('keep-compat = "12.0"\nselect = ["CM511"]\n')
    src = tmp_path / "main.cu"
    src.write_text("struct Particle {\n  double4 pos;\n};\n__global__ void k(Particle *p) {\n"
                   "  double4 v = make_double4(1, 2, 3, 4);\n  p[0].pos = v;\n}\n")
    got = analyse_bytes(Engines(), src, src.read_bytes())
    assert [(f.line, f.column, f.applicability) for f in got.findings] == [(2, 3, "manual"), (5, 3, "manual"),
                                                                         (5, 15, "manual")]
    assert not any(fix_actions(f) for f in got.findings)
