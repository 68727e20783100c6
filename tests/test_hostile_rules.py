"""Rule files and configuration from a repository are data, never code: bounded work whatever they say."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from cudamigrate.core.config import ConfigError, load_config
from cudamigrate.scan.engine import Engine, Options
from cudamigrate.knowledge.load import load_rules
from cudamigrate.rules.safety import UnsafeRule, check_regex
from cudamigrate.read.source import SNIPPET_LIMIT

from .helpers import all_rules

HEAD = "id: CM9100\nname: hostile\nfamily: test\nsummary: s\nseverity: info\nreferences: [test]\n"


@pytest.fixture(autouse=True)
def _alarm():
    """A hang is a failure, not a stuck test run (a guard far above any loaded machine's time, never a figure)."""
    def boom(*_):
        raise TimeoutError("blocked")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(300)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _load(tmp_path, text: str):
    d = tmp_path / "rules"
    d.mkdir(exist_ok=True)
    (d / "CM9100-hostile.yaml").write_text(text)
    return load_rules([d]), None  # no timing: what is checked is the outcome


def test_yaml_alias_bomb_is_refused(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    prev = "a"
    for i in range(1, 9):
        bomb += f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{prev}"] * 10) + "]\n"
        prev = chr(97 + i)
    text = HEAD + "message: '{{ data }}'\nmatch: {call: {names: [cudaFree]}}\ndata:\n" + "".join(
        "  " + line + "\n" for line in bomb.splitlines())
    rs, dt = _load(tmp_path, text)
    assert not rs.rules and "aliases" in rs.errors[0], rs.errors


BACKTRACKERS = [r"(a|aa)*b", r"(a+)+$", r"(\w+\s?)*$", r"^(\(.*\))*$", r"(x+x+)+y", r"(a|a)*c"]


@pytest.mark.parametrize("pattern", BACKTRACKERS)
def test_backtracking_shapes_run_on_the_linear_engine(pattern):
    """Patterns that backtrack exponentially in Python's re are compiled by RE2, which has no backtracking
    (the property that bounds their time; bench figures in the README). One 100 KB search of each runs here."""
    from cudamigrate.core.rule_regex import engine_of, rule_regex

    check_regex(pattern)
    assert engine_of(pattern) == "re2"
    assert rule_regex(pattern).search("a" * 100_000) is None or pattern.endswith("$")


def test_rule_with_the_issue_regex_scans_a_100kb_string(tmp_path):
    """A rules-dir rule with `(a|aa)*b` over a 100 KB string literal: the scan completes with no error."""
    from cudamigrate.scan.engine import Engine, Options

    text = HEAD + "message: m\nmatch: {string: {regex: '(a|aa)*b', keywords: [s]}}\n"
    rs, _ = _load(tmp_path, text)
    assert rs.rules and not rs.errors, rs.errors
    code = b'const char *s = "' + b"a" * 100_000 + b'";\n'
    res = Engine(rs.rules, Options(select=[r.id for r in rs.rules])).scan_bytes(Path("s.cu"), code)
    assert not res.errors and not res.findings


@pytest.mark.parametrize("pattern,why", [
    (r"(?=x)(a|aa)*b", "lookaround"),
    (r"(?<!y)(\w+\s?)*$", "lookaround"),
    (r"(?=a)a*a*a*a*b", "lookaround"),  # polynomial backtracking in Python's re: minutes on 300 characters
    (r"\bcu(?!Lt)\w+(?<!_v2)\(", "lookaround"),  # single-character repeats only, accepted before
    ("a{0,65535}" * 6, "invalid repetition size"),
    ("(?=a)" + "a{0,65535}" * 6 + "b", "lookaround"),  # a minute on 100 characters in Python's re, accepted before
    (r"(a)\1", "backreferences"),
    (r"a++", "not supported by RE2"),
])
def test_patterns_the_linear_engine_cannot_run_are_refused_at_load(tmp_path, pattern, why):
    with pytest.raises(UnsafeRule):
        check_regex(pattern)
    text = HEAD + f"message: m\nmatch: {{call: {{names: [cudaFree]}}}}\nwhere: {{text_matches: '{pattern}'}}\n"
    rs, _ = _load(tmp_path, text)
    assert not rs.rules and "text_matches" in rs.errors[0] and why in rs.errors[0], rs.errors


def test_the_largest_repeats_re2_accepts_run_in_linear_time():
    """Six `a{0,1000}` (RE2's largest count) and a lookaround-free `a*a*a*a*b`: one 100 KB search each."""
    from cudamigrate.core.rule_regex import rule_regex

    for pattern in ("a{0,1000}" * 6 + "b", r"a*a*a*a*b"):
        check_regex(pattern)
        assert rule_regex(pattern).search("a" * 100_000) is None


def test_a_lookaround_rule_in_a_rules_dir_is_one_exit_2_line(tmp_path):
    """Reached through `rules-dirs` in the configuration: the run names the rule file and the reason, exit 2."""
    from .helpers import run_cli

    (tmp_path / "myrules").mkdir()
    (tmp_path / "myrules" / "CM9100-hostile.yaml").write_text(
        HEAD + "message: m\nmatch: {call: {names: [cudaFree]}}\nwhere: {text_matches: '(?=a)a*a*a*a*b'}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.cudamigrate]\nrules-dirs = ["myrules"]\n')
    (tmp_path / "a.cu").write_text("void f(void* p) { cudaFree(p); }\n")
    r = run_cli("scan", "a.cu", cwd=tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if "CM9100-hostile.yaml" in ln]
    assert r.exit_code == 2 and len(lines) == 1 and "lookaround" in lines[0], r.stderr


def test_shipped_regexes_pass_the_check():
    assert all_rules()  # helpers.all_rules asserts the shipped rules load without errors


@pytest.mark.parametrize("template", [
    "{{ lipsum(10**6) }}",
    "{% for i in range(10**7) %}x{% endfor %}",
    "{{ 'a' * 10**9 }}",
    "{{ 'x'|center(10**9) }}",
    "{{ 9**9**9 }}",
    "{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}",
])
def test_jinja_blowups_become_an_error_for_that_finding(tmp_path, template):
    text = HEAD + f"message: \"{template}\"\nmatch: {{call: {{names: [cudaFree]}}}}\n"
    rs, _ = _load(tmp_path, text)
    if rs.errors:
        return  # refused when loading
    eng = Engine(rs.rules, Options())
    res = eng.scan_bytes(Path("t.cu"), b"void f(void* p) { cudaFree(p); }\n")  # returns: the sandbox stopped it
    assert not res.findings and res.errors and "CM9100" in res.errors[0], res.errors


@pytest.mark.parametrize("template", ["{% for a in argv %}{% for b in argv %}{% endfor %}{% endfor %}",
                                      "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
                                      "{{ ''.__class__.__mro__ }}"])
def test_jinja_nested_loops_macros_and_internals_are_refused(tmp_path, template):
    text = HEAD + f"message: \"{template}\"\nmatch: {{call: {{names: [cudaFree]}}}}\n"
    rs, _ = _load(tmp_path, text)
    if not rs.errors:
        res = Engine(rs.rules, Options()).scan_bytes(Path("t.cu"), b"void f(void* p) { cudaFree(p); }\n")
        assert not res.findings and res.errors
    else:
        assert not rs.rules


def test_fifo_rule_file_and_config_do_not_block(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    os.mkfifo(d / "CM9100-fifo.yaml")
    rs = load_rules([d])
    assert not rs.rules and "not a regular file" in rs.errors[0]
    os.mkfifo(tmp_path / "cfg.toml")
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(tmp_path / "cfg.toml", section=None)


def test_per_file_time_budget_turns_a_slow_file_into_one_error():
    eng = Engine(all_rules(), Options(time_budget_s=1e-9))
    code = ("void f() {\n" + "  cudaThreadSynchronize();\n" * 200 + "}\n").encode()
    res = eng.scan_bytes(Path("slow.cu"), code, "slow.cu")
    assert not res.findings and len(res.errors) == 1 and res.errors[0].startswith("slow.cu: scan stopped")


def test_snippet_is_bounded_on_a_long_line():
    line = " ".join("cudaThreadSynchronize();" for _ in range(2000))
    res = Engine(all_rules(), Options()).scan_bytes(Path("long.cu"), f"void f() {{ {line} }}\n".encode())
    assert len(res.findings) == 2000
    assert all(len(f.snippet) <= SNIPPET_LIMIT + 2 and "cudaThreadSynchronize" in f.snippet for f in res.findings)
    assert len({f.fingerprint for f in res.findings}) == 2000


def test_render_cache_never_mixes_inputs():
    from cudamigrate.rules.templates import render

    data = {"x": {"rename": "A"}}
    t = "{{ name }}/{{ args.stream | default('-') }}/{{ data[name].rename if name in data else '?' }}/{{ 1 if flag else 0 }}"
    seen = {}
    for name in ("x", "y"):
        for args in ({}, {"stream": "s"}, {"stream": "t"}):
            for flag in (True, 1, False, 0, None):
                ctx = {"name": name, "args": args, "data": data, "flag": flag}
                seen[(name, str(args), repr(flag))] = render(t, ctx)
                assert render(t, dict(ctx)) == seen[(name, str(args), repr(flag))]
    assert seen[("x", "{'stream': 's'}", "True")] == "x/s/A/1"
    assert seen[("y", "{}", "None")] == "y/-/?/0"
    assert seen[("x", "{'stream': 't'}", "0")] == "x/t/A/0"


def test_a_file_past_its_budget_keeps_the_findings_already_made():
    """The budget's deadline has passed before the scan starts (set by the test, no clock involved); it is
    checked every 64 steps, so the scan stops part way through turning matches into findings: those made
    are kept, with an error line saying the rest of the file was not checked (before: all were dropped)."""
    eng = Engine(all_rules(), Options(time_budget_s=1e-9, select=["CM501"]))
    code = ("void f() {\n" + "  cudaThreadSynchronize();\n" * 40 + "}\n").encode()
    res = eng.scan_bytes(Path("slow.cu"), code, "slow.cu")
    assert 0 < len(res.findings) < 40, (len(res.findings), res.errors)
    assert len(res.errors) == 1 and "made before it are reported, the rest of the file was not checked" in res.errors[0]
