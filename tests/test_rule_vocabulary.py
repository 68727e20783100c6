"""Every word of a rule file is checked against its registry at load time (hostile rule files, one per vocabulary).

Before the registries, `fix: {when: {nmae: ...}}` loaded cleanly and then silently dropped the rule's findings at
scan time; now each mistyped key is one `file: json.path: reason` line, the rule is skipped, and `rules`, `scan` and
`fix` exit 2.
"""

from __future__ import annotations

import pytest

from cudamigrate.knowledge.load import load_rules

from .helpers import run_cli

HEAD = "id: CM9200\nname: vocab\nfamily: test\nsummary: s\nseverity: info\nmessage: m\nreferences: [test]\n"
CALL = "match: {call: {names: {cudaMemsetAsync: [ptr, value, count, stream]}}}\n"
FIX = "fix: {applicability: safe, edits: [{replace: arg.stream, with: cudaStreamPerThread}]}\n"
SOURCE = b"#include <cuda_runtime.h>\nvoid f(void *d) {\n  cudaMemsetAsync(d, 0, 16, 0);\n  cudaThreadSynchronize();\n}\n"

# (rule body after HEAD, expected "json.path: reason" of the one error line)
CASES = {
    "where condition": (
        CALL + "where: {nmae: cudaMemsetAsync}\n",
        "where.nmae: unknown condition 'nmae' (did you mean 'name'?)"),
    "fix.when condition": (
        CALL + "fix: {applicability: safe, when: {nmae: cudaMemsetAsync}, edits: [{replace: arg.stream, with: x}]}\n",
        "fix.when.nmae: unknown condition 'nmae' (did you mean 'name'?)"),
    "nested all/any/not": (
        CALL + "where: {all: [{argc: 4}, {any: [{not: {argc_mn: 2}}]}]}\n",
        "where.all[1].any[0].not.argc_mn: unknown condition 'argc_mn' (did you mean 'argc_min'?)"),
    "condition value": (
        CALL + "where: {inside: loopp}\n",
        "where.inside: must be one of loop, kernel, device_function, host_function, main, macro_body, function, "
        "got 'loopp' (did you mean 'loop'?)"),
    "rule option": (
        CALL + "options: {stream: cudaStreamPerThread}\nwhere: {option: {strem: cudaStreamPerThread}}\n",
        "where.option.strem: unknown option 'strem' (did you mean 'stream'?) (the rule's `options:` declare: stream)"),
    "argument test without arg": (
        CALL + "where: {is: null_stream}\n",
        "where.is: `is` tests an argument: give `arg: NAME|INDEX` in the same mapping"),
    "argument test value": (
        CALL + "where: {arg: stream, is: nul_stream}\n",
        "where.is: must be one of null_stream, null, literal, identifier, address_of, zero, got 'nul_stream' "
        "(did you mean 'null_stream'?)"),
    "semantic condition": (
        CALL + "where: {semantic: {callee_is_apii: true}}\n",
        "where.semantic.callee_is_apii: unknown semantic condition 'callee_is_apii' (did you mean 'callee_is_api'?) "
        "(allowed: arg_evaluates_null, arg_evaluates_null_stream, receiver_type, callee_is_api, default)"),
    "edit operation": (
        CALL + "fix: {applicability: safe, edits: [{replce: arg.stream, with: x}]}\n",
        "fix.edits[0].replce: unknown edit key 'replce' (did you mean 'replace'?) (allowed: replace, append_arg, "
        "insert_arg, delete_arg, delete, insert_before, insert_after, with, when)"),
    "edit target": (
        CALL + "fix: {applicability: safe, edits: [{replace: nmae, with: x}]}\n",
        "fix.edits[0].replace: unknown edit target 'nmae' (did you mean 'name'?)"),
    "edit when": (
        CALL + "fix: {applicability: safe, edits: [{replace: name, with: x, when: {argcc: 4}}]}\n",
        "fix.edits[0].when.argcc: unknown condition 'argcc' (did you mean 'argc'?)"),
    "edit without with": (
        CALL + "fix: {applicability: safe, edits: [{replace: name}]}\n",
        "fix.edits[0].with: `replace` needs `with`"),
    "fix key": (
        CALL + "fix: {applicability: safe, whn: {argc: 4}, edits: [{replace: name, with: x}]}\n",
        "fix.whn: unknown key 'whn' (did you mean 'when'?) (allowed: applicability, title, when, edits, builtin, "
        "introduced_in, compat_macro)"),
    "matcher kind": (
        "match: {cal: {names: [cudaMemsetAsync]}}\n",
        "match.cal: unknown matcher kind 'cal' (did you mean 'call'?)"),
    "matcher spec key": (
        "match: {call: {nmes: [cudaMemsetAsync]}}\n",
        "match.call.nmes: unknown key 'nmes' (did you mean 'names'?) (allowed: names, adl, callee_identity)"),
    "builtin matcher": (
        "match: {builtin: {name: version_gaurd, keywords: [CUDART_VERSION]}}\n",
        "match.builtin: unknown builtin matcher 'version_gaurd' (did you mean 'version_guard'?)"),
    "builtin matcher key": (
        "match: {builtin: {name: namespace_use, namespces: [cooperative_groups::experimental]}}\n",
        "match.builtin.namespces: unknown key 'namespces' (did you mean 'namespaces'?) (allowed: name, keywords, "
        "namespaces)"),
    "cost key": (
        CALL + "cost: {impct: performance}\n",
        "cost.impct: unknown cost key 'impct' (did you mean 'impact'?)"),
    "cost.adjust condition": (
        CALL + "cost: {adjust: [{when: {insde: loop}, multiply: 2, reason: in a loop}]}\n",
        "cost.adjust[0].when.insde: unknown condition 'insde' (did you mean 'inside'?)"),
    "cost.adjust key": (
        CALL + "cost: {adjust: [{when: {inside: loop}, multipy: 2}]}\n",
        "cost.adjust[0].multipy: unknown key 'multipy' (did you mean 'multiply'?) (allowed: when, multiply, reason)"),
    "cost.impact_when condition value": (
        CALL + "cost: {impact_when: [{when: {lang: cpp}, impact: deprecated}]}\n",
        "cost.impact_when[0].when.lang: must be c or cxx, got 'cpp'"),
}


def _write(tmp_path, body: str):
    d = tmp_path / "rules"
    d.mkdir(exist_ok=True)
    path = d / "CM9200-vocab.yaml"
    path.write_text(HEAD + body)
    return d, path


@pytest.mark.parametrize("name", list(CASES))
def test_unknown_word_is_one_line_naming_file_and_json_path(tmp_path, name):
    body, want = CASES[name]
    d, path = _write(tmp_path, body)
    rs = load_rules([d])
    assert not rs.rules
    assert rs.errors == [f"{path}: {want}"]


def test_the_same_rule_without_the_typo_loads(tmp_path):
    """The hostile files differ from valid ones only in the typo (the tests above cannot pass by rejecting all)."""
    fixed = [
        CALL + "where: {name: cudaMemsetAsync}\n",
        CALL + "where: {all: [{argc: 4}, {any: [{not: {argc_min: 2}}]}]}\n",
        CALL + "where: {arg: stream, is: null_stream, semantic: {callee_is_api: true}}\n",
        CALL + "options: {stream: cudaStreamPerThread}\nwhere: {option: {stream: cudaStreamPerThread}}\n",
        CALL + "fix: {applicability: safe, when: {name: cudaMemsetAsync}, edits: [{replace: name, with: x, when: {argc: 4}}]}\n",
        "match: {builtin: {name: namespace_use, namespaces: [cooperative_groups::experimental]}}\n",
        CALL + "cost: {impact: performance, adjust: [{when: {inside: loop}, multiply: 2}],"
               " impact_when: [{when: {lang: cxx}, impact: deprecated}]}\n",
    ]
    for body in fixed:
        d, _ = _write(tmp_path, body)
        rs = load_rules([d])
        assert not rs.errors and [r.id for r in rs.rules] == ["CM9200"], (body, rs.errors)


def test_fix_when_typo_no_longer_drops_findings_silently(tmp_path):
    """The defect this guards against: the rule loaded, then its findings vanished at scan time."""
    d, path = _write(tmp_path, CASES["fix.when condition"][0])
    src = tmp_path / "src" / "a.cu"
    src.parent.mkdir()
    src.write_bytes(SOURCE)
    line = f"{path}: {CASES['fix.when condition'][1]}"
    r = run_cli("scan", "--no-builtin-rules", "--rules-dir", d, src)
    assert r.exit_code == 2 and line in r.output, r.output


@pytest.mark.parametrize("command", ["rules", "scan", "fix"])
def test_commands_exit_2_with_the_one_line_error(tmp_path, command):
    d, path = _write(tmp_path, CASES["edit target"][0])
    src = tmp_path / "src" / "a.cu"
    src.parent.mkdir()
    src.write_bytes(SOURCE)
    args = [command, "--rules-dir", d] + ([] if command == "rules" else [src])
    r = run_cli(*args)
    line = f"{path}: {CASES['edit target'][1]}"
    assert r.exit_code == 2, r.output
    assert [ln for ln in r.output.splitlines() if "CM9200-vocab.yaml" in ln] == [f"cudamigrate: {line}"], r.output
    if command == "fix":
        # the other rules still ran: CM501's safe fix was written
        assert src.read_bytes() == SOURCE.replace(b"cudaThreadSynchronize", b"cudaDeviceSynchronize")


def test_shipped_rules_use_only_registered_words():
    rs = load_rules()
    assert rs.rules and not rs.errors, rs.errors
