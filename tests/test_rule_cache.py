"""The compiled rule cache (cudamigrate/knowledge/rule_cache.py) and the lazy start-up it allows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cudamigrate.knowledge import rule_cache as cache
from cudamigrate.knowledge.load import load_rules, load_rules_uncached

from .helpers import ROOT

RULE = """id: CM9901
name: test-rule
family: test
summary: {summary}
message: "`{{{{ name }}}}` is old"
severity: warning
references: [https://example.invalid/doc]
match:
  identifier:
    names: [foo_api]
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(d))
    monkeypatch.delenv(cache.NO_CACHE_ENV, raising=False)
    return d


def _rules_dir(tmp_path: Path, summary: str = "first") -> Path:
    d = tmp_path / "rules"
    d.mkdir(exist_ok=True)
    (d / "CM9901-test.yaml").write_text(RULE.format(summary=summary))
    return d


def _summaries(rs) -> list[str]:
    return [r.summary for r in rs.rules]


def test_cache_is_written_once_and_serves_equal_rules(cache_dir, tmp_path):
    d = _rules_dir(tmp_path)
    first = load_rules([d])
    assert not first.errors and _summaries(first) == ["first"]
    files = list(cache_dir.glob("rules-*.pickle"))
    assert len(files) == 1
    mtime = files[0].stat().st_mtime_ns
    again = load_rules([d])
    assert again.rules == first.rules and again.errors == first.errors
    assert files[0].stat().st_mtime_ns == mtime  # read, not rebuilt


def test_builtin_rules_from_the_cache_equal_a_fresh_load(cache_dir):
    load_rules()
    cached = load_rules()
    fresh = load_rules_uncached()
    assert [r.id for r in cached.rules] == [r.id for r in fresh.rules]
    assert cached.rules == fresh.rules and cached.errors == fresh.errors


def test_an_edited_rule_file_is_never_served_stale(cache_dir, tmp_path):
    d = _rules_dir(tmp_path, "first")
    assert _summaries(load_rules([d])) == ["first"]
    _rules_dir(tmp_path, "second")
    assert _summaries(load_rules([d])) == ["second"]
    (d / "CM9902-broken.yaml").write_text("id: [")
    rs = load_rules([d])
    assert _summaries(rs) == ["second"] and len(rs.errors) == 1 and "CM9902-broken.yaml" in rs.errors[0]


@pytest.mark.parametrize("damage", [b"", b"garbage", b"cudamigrate-rules-v1\n" + b"0" * 64 + b"\x80\x05trunc"])
def test_an_unreadable_cache_file_is_rebuilt_silently(cache_dir, tmp_path, damage):
    d = _rules_dir(tmp_path)
    load_rules([d])
    (path,) = cache_dir.glob("rules-*.pickle")
    path.write_bytes(damage)
    assert _summaries(load_rules([d])) == ["first"]
    assert path.read_bytes().startswith(b"cudamigrate-rules-v1\n")  # written again, whole


def test_no_cache_neither_reads_nor_writes(cache_dir, tmp_path, monkeypatch):
    d = _rules_dir(tmp_path)
    assert _summaries(load_rules([d], use_cache=False)) == ["first"]
    assert not cache_dir.exists()
    monkeypatch.setenv(cache.NO_CACHE_ENV, "1")
    load_rules([d])
    assert not cache_dir.exists()


def test_a_read_only_cache_directory_only_costs_speed(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "file-not-dir"))
    (tmp_path / "file-not-dir").write_text("x")
    assert _summaries(load_rules([_rules_dir(tmp_path)])) == ["first"]


def test_concurrent_builds_leave_one_whole_file(cache_dir, tmp_path):
    d = _rules_dir(tmp_path)
    out: list = []
    threads = [threading.Thread(target=lambda: out.append(_summaries(load_rules([d])))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [["first"]] * 6
    assert len(list(cache_dir.glob("rules-*.pickle"))) == 1
    assert not list(cache_dir.glob(".rules-*"))  # no temporary left behind


HEAVY = ("tree_sitter", "tree_sitter_cuda", "clang", "jinja2")


@pytest.mark.parametrize("args", [["--version"], ["rules"], ["rules", "--format", "json"], ["explain", "CM501"]])
def test_light_commands_import_neither_tree_sitter_libclang_nor_jinja(args, cache_dir):
    code = ("import sys\nfrom cudamigrate.cli.main import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            f"print('HEAVY=' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})), file=sys.stderr)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{cache.CACHE_DIR_ENV: str(cache_dir)})
    subprocess.run([sys.executable, "-c", code, "rules"], env=env, capture_output=True, check=True)  # warm the cache
    p = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    assert p.stdout.strip(), p.stderr
    heavy = [ln for ln in p.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert heavy == ["HEAVY="], p.stderr


def test_a_tree_sitter_scan_imports_neither_yaml_nor_semantic_mode(cache_dir, tmp_path):
    """A `--no-semantic` scan with the rules cached: no YAML (the release inventory's exclusions were imported with
    the releases' versions, 35 ms of a 0.2 s one-file scan), nothing of libclang's modules (semantic mode's facts
    and compile database search), also where a compile database's -D/-U flags decide a branch (read/unit_defines.py)."""
    src = tmp_path / "a.cu"
    src.write_text("#ifdef USE_HIP\n#define api(fn) (hip##fn)\n#else\n#define api(fn) (cuda##fn)\n#endif\n"
                   "void f() { cudaThreadSynchronize(); api(ThreadExit()); }\n")
    (tmp_path / "compile_commands.json").write_text(json.dumps([{"directory": str(tmp_path), "file": "a.cu",
                                                                 "command": "nvcc -UUSE_HIP -c a.cu"}]))
    code = ("import sys\nfrom cudamigrate.cli.main import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('LOADED=' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'yaml' or "
            "m.startswith('cudamigrate.parse.clang'))), file=sys.stderr)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{cache.CACHE_DIR_ENV: str(cache_dir)})
    subprocess.run([sys.executable, "-c", code, "rules"], env=env, capture_output=True, check=True)  # warm the cache
    p = subprocess.run([sys.executable, "-c", code, "scan", "--no-semantic", "--format", "json", str(src)],
                       env=env, capture_output=True, text=True)
    assert [bool(f.get("fix")) for f in json.loads(p.stdout)["findings"]] == [True, True], p.stderr  # -U: decided
    assert [ln for ln in p.stderr.splitlines() if ln.startswith("LOADED=")] == ["LOADED="], p.stderr


@pytest.mark.parametrize("args", [["--version"], ["scan", "--no-semantic", "--format", "json", "SRC"]])
def test_a_command_imports_no_other_commands_module(args, cache_dir, tmp_path):
    """The group imports a command's module when the command is asked for (cli/app.py: LazyGroup): `--version`
    imports none, a scan only its own, not fix's, doctor's, calibrate's... (~25 ms of a one-file scan here)."""
    from cudamigrate.cli.app import COMMAND_MODULES

    src = tmp_path / "a.cu"
    src.write_text("void f() { cudaThreadSynchronize(); }\n")
    code = ("import sys\nfrom cudamigrate.entry.command import console\nsys.argv = ['cudamigrate'] + sys.argv[1:]\n"
            "try:\n    console()\nexcept SystemExit:\n    pass\n"
            "print('CLI=' + ','.join(sorted(m for m in sys.modules if m.startswith('cudamigrate.cli.'))), file=sys.stderr)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{cache.CACHE_DIR_ENV: str(cache_dir)})
    p = subprocess.run([sys.executable, "-c", code, *[str(src) if a == "SRC" else a for a in args]], env=env,
                       capture_output=True, text=True)
    assert p.stdout.strip(), p.stderr
    loaded = {m.rsplit(".", 1)[1] for ln in p.stderr.splitlines() if ln.startswith("CLI=") for m in ln[4:].split(",") if m}
    others = set(COMMAND_MODULES.values()) - {COMMAND_MODULES.get(args[0], "")}
    assert loaded and not loaded & others, loaded


def test_every_command_is_listed_and_runs_its_help(cache_dir):
    from click.testing import CliRunner

    from cudamigrate.cli.app import COMMAND_MODULES
    from cudamigrate.entry.command import main

    listed = CliRunner().invoke(main, ["--help"]).output
    for name in [*COMMAND_MODULES, "server"]:
        assert f"  {name} " in listed
        got = CliRunner().invoke(main, [name, "--help"])
        assert got.exit_code == 0 and "Usage:" in got.output, (name, got.output)


def test_timings_show_wall_and_cpu_per_phase(tmp_path, cache_dir):
    src = tmp_path / "a.cu"
    src.write_text("int main() { cudaThreadSynchronize(); return 0; }\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{cache.CACHE_DIR_ENV: str(cache_dir)})
    p = subprocess.run([sys.executable, "-m", "cudamigrate", "scan", "--no-semantic", "--format", "json", "--timings",
                        str(src)], env=env, capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["findings"]
    line = next(ln for ln in p.stderr.splitlines() if "timings:" in ln)
    assert "scan " in line and " wall " in line and " cpu" in line and "total " in line


def _fresh_template_state(monkeypatch) -> None:
    """What a new process has: no template compiled, none preloaded, no render remembered."""
    from cudamigrate.rules import jinja_sandbox, template_code

    monkeypatch.setattr(template_code, "_PRECOMPILED", {})
    monkeypatch.setattr(jinja_sandbox, "_RESULTS", {})
    for f in (jinja_sandbox._code, jinja_sandbox._compile, jinja_sandbox._names):
        f.cache_clear()


def test_a_cached_rule_set_renders_its_templates_without_compiling_them(cache_dir, tmp_path, monkeypatch):
    """The rule cache keeps Jinja's compiled code of the rules' templates: a process that loads the rules
    from it renders them without Jinja's lexer, parser or code generator (1-5 ms a template, paid again in
    every worker of a parallel run and in every one-file run)."""
    from cudamigrate.rules import jinja_sandbox, templates

    d = _rules_dir(tmp_path)
    load_rules([d])  # builds the cache
    _fresh_template_state(monkeypatch)
    rs = load_rules([d])  # from the cache, as a later process loads it
    assert list(rs.templates) == ["`{{ name }}` is old"]

    def refused(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("a template was compiled")

    env = jinja_sandbox._env()
    for name in ("compile", "parse", "_parse", "from_string"):
        monkeypatch.setattr(env, name, refused)
    assert templates.render(rs.rules[0].message, {"name": "foo_api"}) == "`foo_api` is old"
    jinja_sandbox._code.cache_clear()  # the code objects the test made go with it
    jinja_sandbox._compile.cache_clear()


def test_precompiled_templates_render_as_freshly_compiled_ones(monkeypatch):
    from cudamigrate.rules import jinja_sandbox, templates

    texts = ["{% if a %}A={{ a|upper }}{% endif %} {{ b.c }} {{ n * 2 }}{% for x in xs %}[{{ loop.index }}:{{ x }}]{% endfor %}",
             "plain `{{ name }}`\n", "{{ missing }}"]
    ctxs = [{"a": "yes", "b": {"c": "d"}, "n": 21, "xs": ["p", "q"]}, {"name": "cudaFoo"}, {}]

    def renders() -> list[str]:
        out = []
        for t, c in zip(texts, ctxs):
            try:
                out.append(templates.render(t, c))
            except templates.TemplateError as exc:
                out.append(f"error: {exc}")
        return out

    _fresh_template_state(monkeypatch)
    fresh = renders()
    code = templates.precompile(texts)
    assert sorted(code) == sorted(texts)
    _fresh_template_state(monkeypatch)
    templates.preload(code)
    got = renders()
    assert got == fresh and fresh[0] == "A=YES d 42[1:p][2:q]" and fresh[2].startswith("error: undefined")
    jinja_sandbox._code.cache_clear()
    jinja_sandbox._compile.cache_clear()
