"""The fast paths find exactly what the slow ones did.

Findings on every fixture and example file, with every rule (opt-in ones too), are compared with the
same engine whose shortcuts are replaced by the straightforward versions: identifier nodes from an
`#any-of?` query (not from keyword positions), every keyword-selected rule run (no comment-blind
keywords, no name gates) and the macro-body query always run, every project header walked again at each
`#include` (no ppenv memo) and every `#if` evaluated again, headers' texture declarations parsed per including
file, the streams regexes run without their literal pre-test, and the tree walks that stand in for queries
(`parse/walk.py`) replaced by the queries. Plus the prefilter's building blocks on
the inputs that could fool them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tree_sitter as ts

import cudamigrate.scan.engine as engine_mod
import cudamigrate.match.migrations.deviceprop as deviceprop_mod
import cudamigrate.match.migrations.inline_ptx as inline_ptx_mod
import cudamigrate.match.matchers as matchers_mod
import cudamigrate.match.ppenv as ppenv_mod
import cudamigrate.match.precheck as precheck_mod
import cudamigrate.match.shadows as shadows_mod
import cudamigrate.match.streams as streams_mod
import cudamigrate.match.migrations.texture_refs as texture_mod  # the texture migration's reference finding
import cudamigrate.match.migrations.texture_uses as texture_uses_mod  # ... and its use analysis
import cudamigrate.parse.walk as walk_mod
from cudamigrate.scan.engine import Engine, Options
from cudamigrate.match.matchers import IDENTIFIER_TYPES
from cudamigrate.parse.treesitter import parse, query
from cudamigrate.scan.prefilter import NameGate, comment_spans, define_regions, name_words
from cudamigrate.read.project_index import ProjectIndex

from .helpers import ROOT, all_rules

EXTS = {".cu", ".cuh", ".c", ".h", ".cpp", ".hpp"}


def _query_nodes(ctx, words, types=IDENTIFIER_TYPES):
    """The former implementation: one `#any-of?` query per word set."""
    kws = sorted(set(words))
    if not kws:
        return
    alts = " ".join('"' + k + '"' for k in kws)
    q = query(" ".join(f"(({t}) @id (#any-of? @id {alts}))" for t in sorted(types)))
    for unit in ctx.units:
        for node in ts.QueryCursor(q).captures(unit.root).get("id", []):
            yield unit, node


def _uncached_header_declarations(ctx, inc, text):
    """The former texture path: every including file parses the header again."""
    refs, _ = texture_mod._declarations(parse(text).root_node, None)
    for r in refs:
        r.decl = r.declarator = None
        r.path = inc
    return refs


def _query_pair_matches(root, lasts, first_field, first_type=None):
    q = query(" ".join(f"({p.node_type} {first_field}: ({first_type or '_'}) @f {p.field}: ({p.child_type or '_'}) @l) @x"
                       for p in lasts))
    return [(c["x"][0], c["f"][0], c["l"][0]) for _, c in ts.QueryCursor(q).matches(root)]


def _query_kernel_launches(root):
    q = query("(call_expression function: (_) @fn (kernel_call_syntax) @cfg arguments: (argument_list) @args) @launch")
    return [(c["launch"][0], c["fn"][0], c["cfg"][0], c["args"][0]) for _, c in ts.QueryCursor(q).matches(root)]


def _slow(monkeypatch) -> None:
    monkeypatch.setattr(walk_mod, "field_matches", walk_mod.query_field_matches)
    monkeypatch.setattr(walk_mod, "kernel_launches", _query_kernel_launches)
    monkeypatch.setattr(walk_mod, "pair_matches", _query_pair_matches)
    monkeypatch.setattr(walk_mod, "named_pair_matches", lambda root, lasts, first, names: [
        m for m in _query_pair_matches(root, lasts, first) if m[2].text.decode() in set(names)])
    monkeypatch.setattr(walk_mod, "typed_nodes", lambda root, types: ts.QueryCursor(
        query(" ".join(f"({t}) @n" for t in sorted(types)))).captures(root).get("n", []))  # in the query's order
    monkeypatch.setattr(ppenv_mod._Walker, "memoise", False)  # every #include walked again
    monkeypatch.setattr(ppenv_mod, "decide", ppenv_mod._decide)  # every condition evaluated again
    monkeypatch.setattr(texture_mod, "_header_declarations", _uncached_header_declarations)
    monkeypatch.setattr(streams_mod, "_search_if", lambda rx, code, *words: rx.search(code))
    monkeypatch.setattr(precheck_mod, "possible", lambda cond, text: True)  # no rule dropped before parsing
    monkeypatch.setattr(precheck_mod, "builtin_possible", lambda name, text: True)
    streams_mod._header_facts.cache_clear()
    monkeypatch.setattr(engine_mod, "identifier_hits", lambda ctx, kws: _query_nodes(ctx, kws))
    monkeypatch.setattr(texture_uses_mod, "identifier_nodes", _query_nodes)
    monkeypatch.setattr(engine_mod.Engine, "_narrow", lambda self, candidates, *a: candidates)
    monkeypatch.setattr(engine_mod, "define_regions", lambda data: [data])
    monkeypatch.setattr(inline_ptx_mod, "may_hold", lambda text: True)  # every unit's strings walked


def _findings(files: list[Path]) -> str:
    rules = all_rules()
    eng = Engine(rules, Options(select=[r.id for r in rules]), project=ProjectIndex(files=files))
    out = []
    for p in files:
        res = eng.scan_path(p, str(p.relative_to(ROOT)))
        # (not `skipped`: that a file needs no parse at all is what the fast paths find out more often)
        out.append({"path": res.path, "errors": res.errors, "notes": res.notes,
                    "findings": [f.to_dict() for f in res.findings],
                    "unused": [s.line for s in res.suppressions.items if not s.used] if res.suppressions else []})
    return json.dumps(out, indent=1, sort_keys=True, default=str)


@pytest.mark.parametrize("tree", ["fixtures", "examples"])
def test_fast_paths_find_what_the_slow_paths_find(tree, monkeypatch):
    files = sorted(p for p in (ROOT / tree).rglob("*") if p.suffix in EXTS and p.is_file())
    assert len(files) > 5
    fast = _findings(files)
    _slow(monkeypatch)
    slow = _findings(files)
    assert fast == slow
    assert '"rule_id"' in fast  # the trees have findings: the comparison is not vacuous


# the queries the walks replaced, as they were written
_FORMER_QUERIES = [
    ("cudamigrate.match.context", "DEFINED_FUNCTION_PATTERNS", "d", None,
     "(function_definition declarator: (_) @d) (declaration declarator: (function_declarator) @d) "
     "(field_declaration declarator: (function_declarator) @d)"),
    ("cudamigrate.match.shadows", "DECL_PATTERNS", "d", "x",
     "(function_definition declarator: (_) @d) @x (declaration declarator: (_) @d) @x "
     "(field_declaration declarator: (_) @d) @x (type_definition declarator: (_) @d) @x "
     "(parameter_declaration declarator: (_) @d) @x"),
    ("cudamigrate.match.shadows", "MACRO_PATTERNS", "n", "x",
     "(preproc_def name: (_) @n) @x (preproc_function_def name: (_) @n) @x"),
    ("cudamigrate.match.context", "CALL_PATTERNS", "fn", "call", "(call_expression function: (_) @fn) @call"),
    ("cudamigrate.match.context", "DECL_TYPE_PATTERNS", "t", "decl",
     "(declaration type: (_) @t) @decl (parameter_declaration type: (_) @t) @decl "
     "(optional_parameter_declaration type: (_) @t) @decl (field_declaration type: (_) @t) @decl"),
    ("cudamigrate.match.matchers", "INCLUDE_PATTERNS", "path", "inc", "(preproc_include path: (_) @path) @inc"),
    ("cudamigrate.scan.regions", "IF_CONDITION_PATTERNS", "c", "if", "(preproc_if condition: (_) @c) @if"),
    ("cudamigrate.match.migrations.deviceprop", "FIELD_READS", "f", "fe", "(field_expression field: (field_identifier) @f) @fe"),
    ("cudamigrate.match.streams", "DECLARATION_PATTERNS", "t", "x",
     "(parameter_declaration type: (_) @t) @x (optional_parameter_declaration type: (_) @t) @x "
     "(field_declaration type: (_) @t) @x (declaration type: (_) @t) @x"),
]


def _corpus_roots():
    from cudamigrate.parse.treesitter import parse

    extra = [b"int f(), g(int), *h(void);\nstruct S { void m(); int a, b; };\n"
             b"auto l = [](cudaStream_t s, int k = 1) { int z; return k; };\n#define A 1\n#define B(x) x\n"
             b"template <class T> void t() { k<<<1, 2>>>(a); k2<<<g, b, 0, s>>>(); (*p)<<<1, 1>>>(); }\n"
             b"int broken( { x<<<1,>>>(; typedef int T1, *T2;\n"]
    datas = [p.read_bytes() for t in ("fixtures", "examples") for p in sorted((ROOT / t).rglob("*"))
             if p.suffix in EXTS and p.is_file()] + extra
    return [parse(d).root_node for d in datas]


def _spans(nodes):
    return [(n.type, n.start_byte, n.end_byte) for n in nodes]


def test_walks_find_what_the_former_queries_found():
    """Each walk (and each query that replaces it on large inputs) gives the matches of the query it replaced,
    in the same order (typed nodes: in document order, which a query's captures are not), on every fixture and
    example file (and on multi-declarator, lambda, launch and broken code)."""
    from cudamigrate.match.migrations.builtins import CONDITIONAL_TYPES, NAMESPACE_IDENTIFIER

    import importlib

    roots = _corpus_roots()
    seen = 0
    for mod, name, inner, outer, text in _FORMER_QUERIES:
        patterns = getattr(importlib.import_module(mod), name)
        q = query(text)
        for root in roots:
            want = [(i, c[inner][0], c[outer][0] if outer else None) for i, c in ts.QueryCursor(q).matches(root)]
            for impl in (walk_mod.walk_field_matches, walk_mod.query_field_matches):
                got = [(patterns.index(p), c, x if outer else None) for p, x, c in impl(root, patterns)]
                assert [(i, _spans([c]), _spans([x]) if x else None) for i, c, x in got] == \
                    [(i, _spans([c]), _spans([x]) if x else None) for i, c, x in want], (impl.__name__, text)
            seen += len(want)
    for types, text in [(CONDITIONAL_TYPES, "(preproc_if) @p (preproc_ifdef) @p"),
                        (NAMESPACE_IDENTIFIER, "(namespace_identifier) @p")]:
        q = query(text)
        for root in roots:
            want = sorted(_spans(ts.QueryCursor(q).captures(root).get("p", [])), key=lambda s: (s[1], -s[2]))
            assert _spans(walk_mod.walk_typed_nodes(root, types)) == want, text
            assert _spans(walk_mod.query_typed_nodes(root, types)) == want, text
            seen += len(want)
    from cudamigrate.match.migrations.texture_refs import reference_type_names, texture_templates
    from cudamigrate.parse.treesitter import MACRO_BODIES

    for fn, text, caps in [
        (texture_templates, '((template_type name: (type_identifier) @n arguments: (template_argument_list) @a) @t '
                            '(#any-of? @n "texture" "surface"))', ("t", "n", "a")),
        (lambda r: walk_mod.pair_matches(r, texture_mod.CALL_ARGS, "function"),
         "(call_expression function: (_) @fn arguments: (argument_list) @args) @call", ("call", "fn", "args")),
        (lambda r: walk_mod.pair_matches(r, matchers_mod.TYPED_DECLARATORS, "type"),
         "(declaration type: (_) @t declarator: (_) @d) (parameter_declaration type: (_) @t declarator: (_) @d) "
         "(field_declaration type: (_) @t declarator: (_) @d) @x", None),
        (lambda r: walk_mod.pair_matches(r, deviceprop_mod.FIELD_DECLARATORS, "type"),
         "(field_declaration type: (_) @t declarator: (_) @d) @x", ("x", "t", "d")),
        (lambda r: walk_mod.pair_matches(r, deviceprop_mod.FIELD_READS, "argument"),
         "(field_expression argument: (_) @r field: (field_identifier) @f) @x", ("x", "r", "f")),
        (lambda r: walk_mod.pair_matches(r, MACRO_BODIES, "name"),
         "(preproc_def name: (_) @name value: (preproc_arg) @body) @x "
         "(preproc_function_def name: (_) @name value: (preproc_arg) @body) @x", ("x", "name", "body")),
    ]:
        q = query(text)
        for root in roots:
            want = [tuple(_spans(c[k][0] for k in caps or ("t", "d"))) for _, c in ts.QueryCursor(q).matches(root)]
            assert [tuple(_spans(m[1 if caps is None else 0:])) for m in fn(root)] == want, text
            seen += len(want)
    names = ["clockRate", "computeMode", "x", "y", "data", "Rate", "a", "b", "p", "cudaStream_t"]  # one within another too
    q = query("(field_expression argument: (_) @r field: (field_identifier) @f) @x")
    for root in roots + [r.children[0] for r in roots if r.children]:  # subtrees too
        want = [tuple(_spans((c["x"][0], c["r"][0], c["f"][0]))) for _, c in ts.QueryCursor(q).matches(root)
                if c["f"][0].text.decode() in names]
        got = walk_mod.named_pair_matches(root, deviceprop_mod.FIELD_READS, "argument", names)
        assert [tuple(_spans(m)) for m in got] == want
        seen += len(want)
    q = query('((type_identifier) @t (#any-of? @t "textureReference" "surfaceReference"))')
    for root in roots:
        assert _spans(reference_type_names(root)) == sorted(_spans(ts.QueryCursor(q).captures(root).get("t", [])),
                                                            key=lambda s: (s[1], -s[2]))  # captures: not in order
    launches = 0
    for root in roots:
        want = _query_kernel_launches(root)
        assert [tuple(_spans(m)) for m in walk_mod.kernel_launches(root)] == [tuple(_spans(m)) for m in want]
        launches += len(want)
    assert seen > 100 and launches > 3  # not vacuous


def test_one_index_per_tree_gives_each_pattern_set_its_walk(monkeypatch):
    """field_matches on a tree root reads one index built for every pattern set in one walk: each set gets
    exactly what its own walk gives, in order, whichever sets were indexed first."""
    import importlib

    sets = [getattr(importlib.import_module(mod), name) for mod, name, *_ in _FORMER_QUERIES]
    sets += [texture_mod.CALL_ARGS, matchers_mod.TYPED_DECLARATORS, deviceprop_mod.FIELD_DECLARATORS,
             deviceprop_mod.FIELD_READS]
    roots = _corpus_roots()
    checked = 0
    for threshold in (10**12, 0):  # subtrees walked / queried (roots: the index)
        monkeypatch.setattr(walk_mod, "QUERY_AFTER_BYTES", threshold)
        monkeypatch.setattr(walk_mod, "_KEYS", {})
        monkeypatch.setattr(walk_mod, "_INDEXES", [])
        for order in (sets, sets[::-1]):  # keys met later extend an index already built
            for root in roots:
                for patterns in order:
                    want = [(patterns.index(p), _spans([x, c])) for p, x, c in walk_mod.walk_field_matches(root, patterns)]
                    got = [(patterns.index(p), _spans([x, c])) for p, x, c in walk_mod.field_matches(root, patterns)]
                    assert got == want, (threshold, patterns)
                    checked += len(want)
    assert checked > 1000


def test_field_matches_walks_small_inputs_and_queries_after_the_threshold(monkeypatch):
    from cudamigrate.match.shadows import DECL_PATTERNS
    from cudamigrate.parse.treesitter import parse

    root = parse(b"namespace n { int a, b; void f(int x) { int y; } }\n").root_node.children[0]  # a subtree
    calls = []
    monkeypatch.setattr(walk_mod, "_walked", {})
    monkeypatch.setattr(walk_mod, "QUERY_AFTER_BYTES", root.end_byte + 1)
    for impl in ("walk_field_matches", "query_field_matches"):
        real = getattr(walk_mod, impl)
        monkeypatch.setattr(walk_mod, impl, lambda r, p, real=real, impl=impl: calls.append(impl) or real(r, p))
    runs = [_spans(x for _, _, x in walk_mod.field_matches(root, DECL_PATTERNS)) for _ in range(3)]
    assert calls == ["walk_field_matches", "walk_field_matches", "query_field_matches"]
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) == 5


def _engine(*ids: str) -> Engine:
    return Engine(all_rules(), Options(select=list(ids)))


def test_comment_spans_skip_strings_chars_and_include_paths():
    data = (b'a // c1\nb "x//y" /* c2 */ 1\'000 // c3\n'
            b"L'/' x // c4\n#include <a//b.h>\nchar q = '\"'; // c5\n")
    assert [data[s:e] for s, e in comment_spans(data)] == [b"// c1", b"/* c2 */", b"// c3", b"// c4", b"// c5"]


def test_comment_spans_continue_lines_and_give_up_on_raw_strings():
    data = b"// one \\\n two\nx\n"
    assert [data[s:e] for s, e in comment_spans(data)] == [b"// one \\\n two"]
    assert comment_spans(b'auto s = R"(/* not a comment )"; // c\n') == []  # raw string: nothing is a comment
    assert comment_spans(b"x /* never closed\n cudaFoo();\n") == []


def test_keyword_words_equal_the_keyword_regex():
    """The word-set prefilter finds what one `\\b(trie of keywords|globs)\\b` regex finds, on every
    fixture and example file and on words glued to digits, `$` or non-ASCII bytes."""
    from cudamigrate.scan.prefilter import glob_regex, keyword_regex

    eng = Engine(all_rules(), Options(select=[r.id for r in all_rules()]))
    rx = keyword_regex([k for k in eng.by_keyword if "*" not in k], [glob_regex(k) for _, k in eng.glob_keywords])
    datas = [p.read_bytes() for t in ("fixtures", "examples") for p in sorted((ROOT / t).rglob("*"))
             if p.suffix in EXTS and p.is_file()]
    datas.append("x9cudaMalloc cudaMalloc9 $cudaMalloc écudaFree cudaFree_ AgentReduceX _cudaMalloc".encode())
    for d in datas:
        assert eng.prefilter.find(d) == {m.decode() for m in rx.findall(d)}


def test_define_regions_hold_continuation_lines():
    data = b"#define A(x) \\\n  cudaFoo(x)\nint y;\n  #  define B 1\n"
    assert define_regions(data) == [b"#define A(x) \\\n  cudaFoo(x)", b"#  define B 1"]


def test_name_words():
    assert name_words("thrust::cuda::par().on") == {"thrust", "cuda", "par", "on"}
    assert name_words("cub::Agent*") == {"cub"}
    assert name_words("thrust::async::*") == {"thrust", "async"}
    assert name_words("thrust::pair<int, float>") == {"thrust", "pair"}


def test_name_gate_needs_every_word_of_one_name():
    class R:
        id, kind = "X1", "call"
        spec = {"names": {"thrust::cuda::par.on": None, "other::on": None}}

        def keywords(self):
            return {"on"}

    g = NameGate.build([R()])
    assert g.gated("X1")
    assert not g.admits("X1", {"on", "thrust", "par"})
    assert g.admits("X1", {"on", "thrust", "cuda", "par"})
    assert g.admits("X1", {"on", "other"})
    from cudamigrate.scan.prefilter import words_of  # the gate words are whole words, comments included

    assert g.present(words_of(b"using namespace thrust; // cuda\nauto p = par.on(s); thrusty other_x\n")) == \
        {"thrust", "cuda", "par"}


def _rule_ids(eng: Engine, code: bytes, tmp_path: Path) -> list[str]:
    p = tmp_path / "a.cu"
    p.write_bytes(code)
    return [f.rule_id for f in eng.scan_path(p).findings]


def test_keyword_only_in_a_comment_skips_the_file(tmp_path):
    eng = Engine(all_rules(), Options())
    p = tmp_path / "a.cpp"
    p.write_bytes(b"// call cudaThreadSynchronize() here, and par.on(s)\nint main() { return 0; }\n")
    assert eng.scan_path(p).skipped
    p.write_bytes(b"// cudaThreadSynchronize\nint main() { cudaThreadSynchronize(); return 0; }\n")
    res = eng.scan_path(p)
    assert [(f.rule_id, f.line) for f in res.findings] == [("CM501", 2)]


GATED_RULE = """id: CM9902
name: gated
family: test
summary: A name in a nested namespace.
message: "`{{ written }}` is old"
severity: warning
references: [https://example.invalid/doc]
match:
  identifier:
    names: [outer_ns::inner_ns::old_api]
    roles: [call]
"""


@pytest.mark.parametrize("code,found", [
    ("void f() { outer_ns::inner_ns::old_api(1); }\n", True),
    ("using namespace outer_ns::inner_ns;\nvoid f() { old_api(1); }\n", True),
    ("namespace q = outer_ns::inner_ns;\nvoid f() { q::old_api(1); }\n", True),
    ("using outer_ns::inner_ns::old_api;\nvoid f() { old_api(1); }\n", True),
    ("using namespace outer_ns;\nvoid f() { inner_ns::old_api(1); }\n", True),
    ("// using namespace outer_ns::inner_ns;\nvoid f() { old_api(1); }\n", True),  # resolution reads comments too
    ("void f() { old_api(1); }\n", False),
    ("using namespace outer_ns;\nvoid f() { old_api(1); }\n", False),
    ("void f() { /* old_api(1); */ outer_ns::inner_ns::other(); }\n", False),
])
def test_name_gate_agrees_with_name_resolution(code, found, tmp_path, monkeypatch):
    """The gate words may come from a `using` or a namespace alias: the gate is never stricter than
    `FileContext.resolve`, and gives the slow path's answer."""
    from cudamigrate.knowledge.load import load_rules

    d = tmp_path / "rules"
    d.mkdir()
    (d / "CM9902-gated.yaml").write_text(GATED_RULE)
    rs = load_rules([d], use_cache=False)
    assert not rs.errors
    eng = Engine(rs.rules, Options(select=["CM9902"]))
    assert eng.name_gate.gated("CM9902")
    fast = _rule_ids(eng, code.encode(), tmp_path)
    assert fast == (["CM9902"] if found else [])
    _slow(monkeypatch)
    assert _rule_ids(Engine(rs.rules, Options(select=["CM9902"])), code.encode(), tmp_path) == fast


@pytest.mark.parametrize("code", [
    "std::thread t(f);", "std :: jthread t;", "auto r = std::async(f);", "pthread_create(&t, 0, f, 0);",
    "#pragma omp parallel for", "#  pragma  omp task", "cudaStreamPerThread", "x = CU_STREAM_PER_THREAD;",
    "my_thread(); omp_get_num_threads(); async_copy();", "PerThreadStream s;", "",
])
def test_streams_literal_pretest_equals_the_regex(code):
    """The streams facts test a literal before their regex; on these and on every fixture/example file the
    answer is the regex's own."""
    texts = [code]
    if not code:  # the empty case stands for the trees' files
        texts += [p.read_text("utf-8", "replace") for tree in ("fixtures", "examples")
                  for p in sorted((ROOT / tree).rglob("*")) if p.suffix in EXTS and p.is_file()]
    for text in texts:
        for rx, words in ((streams_mod._PER_THREAD, streams_mod._PER_THREAD_WORDS),
                          (streams_mod._THREADS, streams_mod._THREADS_WORDS)):
            fast, slow = streams_mod._search_if(rx, text, *words), rx.search(text)
            assert (fast and fast.span()) == (slow and slow.span()), text[:80]


def test_line_start_directives_match_the_anchored_patterns():
    """Each `#...` pattern searched with line_start_matches finds what its former `^[ \\t]*#...` re.M pattern
    found (same line starts, same groups), on every fixture and example file and on tricky lines."""
    import random
    import re

    import cudamigrate.match.language as language_mod
    import cudamigrate.read.project_index as project_mod
    from cudamigrate.core.linestart import line_start_matches

    former = [
        (rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', project_mod.LOCAL_INCLUDE),
        (rb'^[ \t]*#[ \t]*include[ \t]*<([^>\n]+)>', project_mod.ANGLE_INCLUDE),
        (rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])((?:[^\n\\]|\\\r?\n|\\(?!\r?\n))*)",
         project_mod._OBJECT_DEFINE),
        (rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', shadows_mod._ANY_INCLUDE),
        (rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', streams_mod._INCLUDE_RX),
        (rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', texture_mod.LOCAL_INCLUDE),
        (rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', language_mod._INCLUDE),
    ]
    datas = [p.read_bytes() for t in ("fixtures", "examples") for p in sorted((ROOT / t).rglob("*"))
             if p.suffix in EXTS and p.is_file()]
    datas += [b'x = 1; #define A \\\n#define B { f(); }\n', b'  #  include "a.h" // #include "b.h"\n\t#include <c.h>\n',
              b'#define C x \\\r\n y\r\n#define D\\\n', b'a # include "no.h"\n#include"yes.h"\n']
    rng = random.Random(5)
    alphabet = [b"#", b" ", b"\t", b"\n", b"\r", b"\\", b"include", b"define", b'"', b"<", b">", b"A_1", b"("]
    datas += [b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))) for _ in range(3000)]
    found = 0
    for text, rx in former:
        old = re.compile(text, re.M)
        for d in datas:
            want = [(m.start(), m.groups()) for m in old.finditer(d)]
            assert [(at, m.groups()) for at, m in line_start_matches(rx, d)] == want, (text, d[:120])
            found += len(want)
    assert found > 500


def test_macro_line_comments_blanked_line_by_line_as_by_the_former_file_pattern():
    """source._blank_macro_line_comments gives what the former re.M pattern, applied to the whole file until
    nothing changed, gave: on every fixture and example file with `/*` and continuations, and random text."""
    import random
    import re

    from cudamigrate.read.source import _blank_macro_line_comments

    former = re.compile(rb"^([^\"\n]*?)(/\*[^\n]*?\*/)(?=[^\n]*\\\r?$)", re.MULTILINE)

    def slow(data: bytes) -> bytes:
        prev = None
        while prev != data:
            prev, data = data, former.sub(lambda m: m.group(1) + b" " * len(m.group(2)), data)
        return data

    datas = [p.read_bytes() for t in ("fixtures", "examples") for p in sorted((ROOT / t).rglob("*"))
             if p.suffix in EXTS and p.is_file()]
    datas += [b'#define A(x) /* a */ x /* b */ \\\n  y /* c */\n', b'#define S "/*" /* not */ \\\r\nz\n']
    rng = random.Random(6)
    alphabet = [b"/*", b"*/", b"/", b"*", b"\\", b"\n", b"\r", b'"', b"a", b" "]
    datas += [b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 25))) for _ in range(5000)]
    changed = 0
    for d in datas:
        want = slow(d)
        assert _blank_macro_line_comments(d) == want, d[:120]
        changed += want != d
    assert changed > 100


def test_blocking_streams_decided_before_parsing_agree_with_the_full_analysis():
    """meets_blocking_before_parse says True/False only where the full analysis (text, declarations in the
    tree, included headers) says the same, on every fixture and example file; None where it needs the tree."""
    seen = {True: 0, False: 0, None: 0}
    for t in ("fixtures", "examples"):
        for p in sorted((ROOT / t).rglob("*")):
            if p.suffix not in EXTS or not p.is_file():
                continue
            data = p.read_bytes()
            early = streams_mod.meets_blocking_before_parse(data, p)
            full = bool(streams_mod.analyse(data, None, p.name) or streams_mod._header_reasons(data, p))
            seen[early] += 1
            assert early is None or early == full, p
    assert min(seen.values()) > 5, seen  # each answer met


def test_a_file_whose_only_rules_need_blocking_streams_is_not_parsed(tmp_path, monkeypatch):
    parsed: list[bytes] = []
    real = engine_mod.parse
    monkeypatch.setattr(engine_mod, "parse", lambda data: parsed.append(data) or real(data))
    eng = _engine("CM102")
    p = tmp_path / "a.cu"
    p.write_bytes(b"__global__ void k(float *d) {}\nvoid f(float *d) { k<<<1, 1>>>(d); }\n")
    assert eng.scan_path(p).skipped and not parsed  # one stream, nothing to serialize against: no parse
    p.write_bytes(b"#include <thread>\n__global__ void k(float *d) {}\n"
                  b"void f(float *d) { std::thread t([&] { k<<<1, 1>>>(d); }); t.join(); }\n")
    eng.scan_path(p)
    assert parsed  # host threads share the legacy stream: the launch rule runs


def test_prechecks_say_impossible_only_for_what_the_text_rules_out(tmp_path):
    from cudamigrate.match.precheck import FileText, possible

    host = FileText(b"void f() { cudaDeviceSynchronize(); }\n", tmp_path / "a.cu")
    dev = FileText(b"__device__ void g() { cudaDeviceSynchronize(); }\n", tmp_path / "b.cu")
    either = {"any": [{"inside": "kernel"}, {"inside": "device_function"}]}
    assert not possible(either, host) and possible(either, dev)
    assert not possible({"inside": "kernel"}, dev) and possible({"inside": ["kernel", "device_function"]}, dev)
    assert possible({"not": {"inside": "kernel"}}, host)  # a negation is never ruled out
    assert possible({"inside": "loop"}, host) and possible({"argc": 1}, host)  # no test: possible
    one_stream = {"all": [{"argc": 1}, {"meets_blocking_streams": True}]}
    assert not possible(one_stream, host) and possible({"meets_blocking_streams": False}, host)
    threads = FileText(b"#include <thread>\nvoid f() { std::thread t(g); }\n", tmp_path / "c.cu")
    assert possible(one_stream, threads) and not possible({"meets_blocking_streams": False}, threads)
    declared = FileText(b"void f(cudaStream_t s) { k<<<1, 1, 0, s>>>(); }\n", tmp_path / "d.cu")
    assert possible(one_stream, declared) and possible({"meets_blocking_streams": False}, declared)  # the tree tells
    assert possible({"any": []}, host) is False  # as `any: []` evaluates


def test_a_host_file_is_not_parsed_for_a_device_code_rule(tmp_path, monkeypatch):
    parsed: list[bytes] = []
    real = engine_mod.parse
    monkeypatch.setattr(engine_mod, "parse", lambda data: parsed.append(data) or real(data))
    eng = _engine("CM532")  # cudaDeviceSynchronize in device code (CDP1)
    p = tmp_path / "a.cu"
    p.write_bytes(b"int main() { cudaDeviceSynchronize(); return 0; }\n")
    assert eng.scan_path(p).skipped and not parsed
    p.write_bytes(b"__global__ void k() { cudaDeviceSynchronize(); }\n")
    assert [f.rule_id for f in eng.scan_path(p).findings] == ["CM532"] and parsed


def test_texture_reference_builtins_are_not_run_where_no_reference_can_be_declared(tmp_path, monkeypatch):
    """A file using texture objects (`tex2D<float>(obj, ...)`) with neither `texture` nor `surface` in it or its
    project headers is not parsed for CM601/CM602; a reference declared in an included header still is found."""
    parsed: list[bytes] = []
    real = engine_mod.parse
    monkeypatch.setattr(engine_mod, "parse", lambda data: parsed.append(data) or real(data))
    eng = _engine("CM601", "CM602")
    (tmp_path / "plain.h").write_text("#define N 4\n")
    a = tmp_path / "a.cu"
    a.write_text('#include "plain.h"\n__global__ void k(cudaTextureObject_t o, float *d) { d[0] = tex2D<float>(o, 0, 0); }\n')
    eng.project.files = [a]
    assert eng.scan_path(a).skipped and not parsed
    (tmp_path / "tex.h").write_text("texture<float, 2> texRef;\n")
    b = tmp_path / "b.cu"
    b.write_text('#include "tex.h"\n__global__ void k(float *d) { d[0] = tex2D(texRef, 0, 0); }\n')
    assert [f.rule_id for f in eng.scan_path(b).findings] == ["CM601"] and parsed


def test_reference_text_needs_a_template_or_a_marker(tmp_path):
    from cudamigrate.match.migrations.texture_refs import references_possible

    f = tmp_path / "a.cu"
    for text, want in [(b"// uses texture memory through objects\n", False), (b"cudaTextureObject_t t;\n", False),
                       (b"texture<float, 2> t;\n", True), (b"surface <void, 2> s;\n", True),
                       (b"texture /* 2D */ <float, 2> t;\n", True), (b"texture\n<float> t;\n", True),
                       (b"#define DECL(n) texture \\\n  <float, 2> n;\n", True), (b"glBindTexture(target, texture);\n", False),
                       (b"// cudamigrate CM601: t was texture<float, 2>\n", True)]:
        assert references_possible(text, f, ProjectIndex()) is want, text


def test_reference_api_text_needs_a_bind_a_reference_type_or_a_template_less_read():
    from cudamigrate.match.migrations.texture_refs import reference_api_possible

    for text, want in [(b"float v = tex2D<float>(obj, x, y);\n", False), (b"cudaCreateTextureObject(&o, &r, &t, 0);\n", False),
                       (b"float v = tex2D(ref, x, y);\n", True), (b"float v = tex1Dfetch /* legacy */ (ref, i);\n", True),
                       (b"cudaBindTexture(0, ref, d, n);\n", True), (b"const textureReference *r;\n", True),
                       (b"cudaGetTextureReference(&r, &tex);\n", True)]:
        assert reference_api_possible(text) is want, text


def _former_fresh_name(texts, candidates):
    """deviceprop._fresh_name as it was: the sets of every word of the texts, built once per file."""
    import re

    words = ({w for t in texts for w in re.findall(rb"\w+", t)}, {w for t in texts for w in re.findall(rb"(?<![.>\w])\w+", t)})

    def used(name, member_ok=True):
        return name.encode() in (words[1] if member_ok else words[0])

    for c in candidates:
        if not used(c):
            return c
    i = 2
    while used(f"{candidates[-1]}_{i}", False):
        i += 1
    return f"{candidates[-1]}_{i}"


def test_fresh_names_searched_per_candidate_equal_the_former_word_sets():
    """The hoisted local's name (deviceprop._fresh_name) is found by one search per candidate, not from the set
    of every word of the file and its headers: the same name for words used as members only (`.`, `->`), as
    whole words, inside longer words, with numbered clashes, at the start and end of a text."""
    import re
    from types import SimpleNamespace

    texts = [p.read_bytes() for t in ("fixtures", "examples") for p in sorted((ROOT / t).rglob("*.cu"))][:60]
    odd = b"clockRate = p.memoryClockRate + q->computeMode + q->onlyArrow + p.onlyDot; int v_2, v_3; x_2 y>z (w)\nend"
    words = sorted({w.decode() for t in texts for w in re.findall(rb"\w+", t)})
    candidates = words[::7] + ["clockRate", "memoryClockRate", "computeMode", "onlyArrow", "onlyDot", "v", "x", "z", "w",
                               "end", "absent_name"]
    for i, c in enumerate(candidates):
        ctx = SimpleNamespace(_dp_texts=[(Path(f"t{k}.cu"), t) for k, t in enumerate([odd] + texts[i % 5:][:11])])
        sub = [t for _, t in ctx._dp_texts]
        for cands in ([c], [c, "v"], ["absent_name", c]):
            assert deviceprop_mod._fresh_name(ctx, cands) == _former_fresh_name(sub, cands), cands
    assert len(candidates) > 100


def test_declarations_of_one_name_equal_the_whole_index():
    """The declarations of one name found from the declarations that hold it (walk.holders:
    context.declarations_named, matchers._declarations_named) are the whole tree's index's entries for it, in
    its order, for every name of every fixture and example file (and multi-declarator, lambda, broken code)."""
    import re
    from types import SimpleNamespace

    from cudamigrate.match.context import declaration_index, declarations_named
    from cudamigrate.parse.treesitter import reset_parent_cache

    checked = found = 0
    for root in _corpus_roots():
        reset_parent_cache()
        index = declaration_index(root)
        unit = SimpleNamespace(root=root)
        full = matchers_mod._declarations(SimpleNamespace(), unit)
        ctx = SimpleNamespace()
        names = sorted({w.decode() for w in re.findall(rb"[A-Za-z_]\w*", root.text)})[::3]
        for name in names:
            got = declarations_named(root, name)
            if got is not None:
                assert [(d.id, t.id, o, f) for d, t, o, f in got] == \
                    [(d.id, t.id, o, f) for d, t, o, f in index.get(name, [])], name
                checked += 1
                found += bool(got)
            ctx.__dict__.pop("_decl_named", None)  # every name looked up alone, never from the whole index
            assert matchers_mod._declarations_named(ctx, unit, name) == full.get(name, []), name
    assert checked > 1000 and found > 150, (checked, found)


def test_calls_from_one_function_equal_the_files_calls_that_start_in_it():
    """filled_struct_field's getter calls before a read come from the calls of its function alone
    (deviceprop.calls_from), not from every call of the file (FileContext.calls): the same calls by name, in
    the same order, for every function of the corpus (nested lambdas, calls of calls, broken code too)."""
    from cudamigrate.match.context import FileContext
    from cudamigrate.match.migrations.deviceprop import calls_from
    from cudamigrate.parse.treesitter import Unit

    checked = 0
    datas = [p.read_bytes() for t in ("fixtures", "examples") for p in sorted((ROOT / t).rglob("*"))
             if p.suffix in EXTS and p.is_file()]
    datas.append(b"int f() { g(h(1))(2); [](){ k(); }(); ::cudaGetDeviceProperties(&p, 0); t<int>(x); }\n"
                 b"int broken( { q(1); int e() { r(2); }\n")
    for data in datas:
        unit = Unit(tree=parse(data), base=0)
        ctx = FileContext(source=None, units=[unit])  # type: ignore[arg-type]
        for fn in walk_mod.walk_typed_nodes(unit.root, frozenset({"function_definition"})):
            want: dict[str, list] = {}
            for name, calls in ctx.calls.items():
                inside = [c.id for u, c in calls if fn.start_byte <= c.start_byte < fn.end_byte]
                if inside:
                    want[name] = inside
            got = {name: [c.id for c in calls] for name, calls in calls_from(ctx, fn).items()}
            assert got == want
            checked += sum(map(len, want.values()))
    assert checked > 500


_QUERYLESS_EXTRA = [
    b"void f(NppiSize s) { nppiFoo_8u(a, s); x.nppiBar = 1; my_nppiX(); nppsY(); nppGetStream(); npp(); }\n"
    b"/* nppiInComment() */ const char *s = \"nppiInString\"; \n#define M nppiInMacro(1)\nint nppi; int npps_;\n"
    b"nppiA::nppsB(); auto l = [] { return nppiC(nppsD()); };\n",
    b"void g() { CHECK(cudaFree(p)); CHECK(/*c*/ cudaMalloc(&p, 4)); CHECK(cudaMemset(p, 0, 4) /*c*/);\n"
    b"  CHECK(cudaFoo(), 1); CHECK((cudaBar())); a.b(cudaBaz()); CHECK(ns::cudaQux()); CHECK(f()(1));\n"
    b"  CHECK(cudaOuter(cudaInner())); CHECK(); CHECK(x->cudaMember()); CHECK(tmpl<int>(1));\n"
    b"  asm(\"shfl.up.b32 %0, %1, 1, 0;\" : \"=r\"(x) : \"r\"(y)); const char *t = u8\"a\" \"b\" R\"(raw)\";\n"
    b"  CHECK(cudaBroken(; }\n",
]


def test_the_walks_of_builtins_find_what_their_former_queries_found():
    """NPP's identifiers (`^npp[is]`) found where the prefixes occur, a block's identifiers and the string
    literals of inline PTX walked, deviceprop's `W(cudaF(...))` calls read from the call index: the captures
    of the queries they replaced (which cost 10-20 ms each to compile in every worker process), in document
    order, on every fixture and example file, their subtrees and code written to tell them apart."""
    from cudamigrate.match.migrations.deviceprop import error_wrapped_calls
    from cudamigrate.match.migrations.npp import NPP_PREFIXES

    roots = _corpus_roots() + [parse(d).root_node for d in _QUERYLESS_EXTRA]
    roots += [c for r in roots for c in r.named_children[:3]]  # subtrees too (a function's body)
    npp = query('((identifier) @id (#match? @id "^npp[is]"))')
    wrapped = query("(call_expression function: (identifier) @w arguments: (argument_list . "
                    "(call_expression function: (_) @in) .)) @c")
    seen = {"npp": 0, "identifier": 0, "string_literal": 0, "wrapped": 0}
    for root in roots:
        want = sorted(_spans(ts.QueryCursor(npp).captures(root).get("id", [])), key=lambda s: (s[1], -s[2]))
        assert _spans(walk_mod.identifiers_starting(root, NPP_PREFIXES)) == want
        seen["npp"] += len(want)
        for t in ("identifier", "string_literal"):
            want = sorted(_spans(ts.QueryCursor(query(f"({t}) @n")).captures(root).get("n", [])),
                          key=lambda s: (s[1], -s[2]))
            assert _spans(walk_mod.typed_nodes(root, frozenset({t}))) == want, t
            seen[t] += len(want)
        want = sorted(tuple(_spans((c["c"][0], c["w"][0], c["in"][0]))) for _, c in ts.QueryCursor(wrapped).matches(root))
        assert sorted(tuple(_spans(m)) for m in error_wrapped_calls(root)) == want
        seen["wrapped"] += len(want)
    assert min(seen.values()) > 5, seen  # not vacuous


def test_npp_deviceprop_and_inline_ptx_builtins_compile_no_query(monkeypatch):
    """Their fixtures' findings come without compiling a tree-sitter query (10-20 ms each against the CUDA
    grammar, paid again in every worker of a parallel run that meets an NPP name, a property read or an
    `asm` string)."""
    from cudamigrate.parse import grammar

    compiled = []
    real = grammar.ts.Query

    def recording(lang, pattern):  # type: ignore[no-untyped-def]
        compiled.append(pattern)
        return real(lang, pattern)

    grammar.query.cache_clear()
    monkeypatch.setattr(grammar.ts, "Query", recording)
    files = sorted(p for d in ("npp/CM540-npp-non-ctx-removed", "npp/CM542-npp-buffer-size-size-t",
                               "removals/CM530-inline-ptx-warp-sync", "removals/CM503-deviceprop-removed-fields")
                   for p in (ROOT / "fixtures" / d).glob("before.*"))
    rules = [r for r in all_rules() if r.id in ("CM540", "CM542", "CM530", "CM503")]
    eng = Engine(rules, Options(select=[r.id for r in rules]), project=ProjectIndex(files=files))
    found = {f.rule_id for p in files for f in eng.scan_path(p).findings}
    grammar.query.cache_clear()  # the recording queries go with this test
    assert found == {"CM540", "CM542", "CM530", "CM503"} and len(files) == 4
    assert compiled == []


def test_inline_ptx_pre_test_never_skips_a_unit_whose_strings_hold_an_unsynced_op():
    from cudamigrate.match.migrations.inline_ptx import UNSYNCED, may_hold

    texts = [p.read_bytes() for t in ("fixtures", "examples") for p in sorted((ROOT / t).rglob("*"))
             if p.suffix in EXTS and p.is_file()]
    texts += [b'asm("shfl.up.b32 %0;")', b'asm("\xc3\xa9shfl.up")', b'asm("\xffvote.all.pred")', b"x.shfl.up",
              "asm(\"\u00e9 vote.ballot.b32\")".encode(), b'asm("%shfl.idx")', b"shfl.sync.up"]
    held = 0
    for text in texts:
        if UNSYNCED.search(text.decode("utf-8", "surrogateescape")):
            assert may_hold(text), text[:80]
            held += 1
    assert held > 5 and not may_hold(b"int main() { return 0; }")
