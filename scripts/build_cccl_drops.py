#!/usr/bin/env python3
"""Build `cudamigrate/data/cccl_drops.json.gz`: the thrust/cub names a public CCCL header stopped reaching between two
releases (CM585's data).

    python scripts/build_cccl_drops.py --fetch   # download the pinned nvidia-cuda-cccl wheels' headers, then build
    python scripts/build_cccl_drops.py           # (re)write the data file from the fetched headers
    python scripts/build_cccl_drops.py --check   # exit 1 if the data file differs from what the headers give

Why: CCCL 13.3 (the CUDA 13.3 toolkit's) stopped including `<thrust/tuple.h>` from `<thrust/iterator/zip_iterator.h>`
and other headers, so code that names `thrust::make_tuple` having included only those stops compiling with
`namespace "thrust" has no member "make_tuple"`. Such drops are not deprecations, no header says so: they are
read off the include graphs of two releases' headers. The headers come from NVIDIA's nvidia-cuda-cccl wheels, one
per CUDA release, the version NVIDIA's `cuda-toolkit` metapackage of that release pins (RELEASES; 13.2: the newest
13.2 wheel, 13.2.86, where cuda-toolkit 13.2.1 pins 13.2.75).

Method (conservative: when in doubt, a name counts as still reached, so no finding)
-------------------------------------------------------------------------------
* A header's includes: every `#include <...>` / `#include "..."` line outside comments, resolved against the
  CCCL include root (and, quoted, the header's own directory first); an include that names no CCCL file (a
  standard header) is ignored. An include in a branch that is never compiled (`#if 0`, the `#else` of `#if 1`)
  is not reached; every other `#if` counts as reached, in both releases: the conditions are CCCL's configuration
  macros (dialect, host compiler, `_CCCL_HAS_...`), which this script does not decide. Counting them in the new
  release can only hide a drop; in the old one it could claim a drop for an include that was not live with
  nvcc's configuration, but the name then still comes only from the declaring header, which the fix includes:
  the fix is never wrong, the finding may be one that compiled before.
* A header's closure: the header and everything its includes reach, transitively.
* Names a file declares: identifiers introduced directly at the scope of namespace `thrust` or `cub` (opened by
  `THRUST_NAMESPACE_BEGIN`, `CUB_NAMESPACE_BEGIN` or `namespace thrust {` / `namespace cub {`, inline
  namespaces transparent): `using ::x::NAME;`, `using NAME = ...`, `class/struct/union/enum NAME`, and an
  identifier followed by `(` or `=` (function and variable declarations). Inside class and function bodies and
  nested namespaces (`thrust::detail`) nothing counts. `using namespace X;` at that scope declares everything
  (`*`): no drop is claimed for a header whose new closure has one. Macro-like names (all caps) and keywords are
  left out. This over-approximates what a closure declares, which can only hide drops.
* A drop, for a release pair (old, new) and a public header H present in both (thrust/ and cub/ outside
  `detail/`): a public thrust/cub header D whose own text declares N in the new release, that H's old closure
  holds and its new closure does not, where no file of H's new closure declares N. Recorded as (H, N, D...).
* `reached_by`: for each dropped name and each release from the first drop on, the public headers whose closure
  declares it, so that CM585 knows a file that includes one of them still has the name.

Output (sorted, deterministic): `releases` (CUDA release -> nvidia-cuda-cccl version), `drops` (one entry per
release pair and name: the headers that dropped it, the headers that declare it in the new release, with the
line of the declaration), `reached_by`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "cudamigrate" / "data" / "cccl_drops.json.gz"
CACHE = Path.home() / ".cache" / "cudamigrate" / "cccl-headers"
# CUDA release -> nvidia-cuda-cccl version (cuda-toolkit's Requires-Dist pin of that release)
RELEASES: tuple[tuple[str, str], ...] = (
    ("13.0", "13.0.85"), ("13.1", "13.1.115"), ("13.2", "13.2.86"), ("13.3", "13.3.3.4.1"),
    ("13.4", "13.3.4.3.1"), ("13.5", "13.3.5.0.6"),
)
NAMESPACES = {"THRUST_NAMESPACE_BEGIN": "thrust", "CUB_NAMESPACE_BEGIN": "cub"}
ENDS = {"THRUST_NAMESPACE_END": "thrust", "CUB_NAMESPACE_END": "cub"}
KEYWORDS = frozenset(
    "alignas alignof auto bool char class const constexpr consteval constinit decltype default delete do double "
    "else enum explicit extern false float for friend if inline int long mutable namespace noexcept nullptr "
    "operator private protected public requires return short signed sizeof static static_assert static_cast "
    "struct switch template this throw true typedef typename union unsigned using virtual void volatile while "
    "reinterpret_cast const_cast dynamic_cast".split())
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_TOKEN = re.compile(r"[A-Za-z_]\w*|::|[{}();=<>,:]|\S")
_MACRO_LIKE = re.compile(r"_*[A-Z][A-Z0-9_]*")


@dataclass
class Tree:
    """One release's CCCL include root, read lazily."""

    root: Path
    _text: dict[str, str] = field(default_factory=dict)
    _includes: dict[str, list[str]] = field(default_factory=dict)

    def text(self, rel: str) -> str:
        if rel not in self._text:
            raw = (self.root / rel).read_text(encoding="utf-8", errors="replace")
            self._text[rel] = strip_comments(raw)
        return self._text[rel]

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())


_COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip_comments(text: str) -> str:
    """Comments blanked (newlines kept, so line numbers stay); string and char literals kept as written."""
    def blank(m: re.Match[str]) -> str:
        t = m.group(0)
        return t if t[0] in "\"'" else re.sub(r"[^\n]", " ", t)
    return _COMMENT_OR_LITERAL.sub(blank, text)


_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.M)


def _dead_lines(text: str) -> set[int]:
    """0-based lines in a branch never compiled: `#if 0`, the `#else`/`#elif` after `#if 1`, the `#else` of
    `#if 0` live. The only conditions decided here; every other branch counts as live."""
    dead: set[int] = set()
    stack: list[tuple[bool, str]] = []  # (this branch is dead, an earlier branch was taken: "yes"/"no"/"maybe")
    start = 0
    for m in _DIRECTIVE.finditer(text):
        line = text.count("\n", 0, m.start())
        if any(d for d, _ in stack):
            dead.update(range(start, line))
        kind, cond = m.group(1), m.group(2).split("//")[0].strip()
        if kind == "if":
            stack.append((True, "no") if cond == "0" else (False, "yes") if cond == "1" else (False, "maybe"))
        elif kind in ("ifdef", "ifndef"):
            stack.append((False, "maybe"))
        elif kind == "elif" and stack:
            taken = stack[-1][1]
            stack[-1] = (True, "yes") if taken == "yes" else (True, taken) if cond == "0" else (False, "maybe")
        elif kind == "else" and stack:
            taken = stack[-1][1]
            stack[-1] = (taken == "yes", "yes")
        elif kind == "endif" and stack:
            stack.pop()
        start = line + 1
    return dead


def includes(tree: Tree, rel: str) -> list[str]:
    """The CCCL files `rel` includes (every include line, whatever `#if` it sits under)."""
    if rel in tree._includes:
        return tree._includes[rel]
    out: list[str] = []
    here = str(Path(rel).parent)
    text = tree.text(rel)
    dead = _dead_lines(text) if "#" in text else set()
    for m in _INCLUDE.finditer(text):
        if text.count("\n", 0, m.start()) in dead:
            continue
        name = m.group(2).strip()
        cands = ([str(Path(here) / name)] if m.group(1) == '"' else []) + [name]
        for c in cands:
            norm = str(Path(c))
            if (tree.root / norm).is_file():
                out.append(norm)
                break
    tree._includes[rel] = out
    return out


def closure(tree: Tree, rel: str) -> frozenset[str]:
    seen, todo = {rel}, [rel]
    while todo:
        for inc in includes(tree, todo.pop()):
            if inc not in seen:
                seen.add(inc)
                todo.append(inc)
    return frozenset(seen)


def declared(text: str) -> dict[str, int]:
    """`ns::NAME` -> the line of its first declaration at namespace scope of thrust or cub (see the module doc);
    `ns::*` for a `using namespace` there."""
    if not re.search(r"\b(?:THRUST_NAMESPACE_BEGIN|CUB_NAMESPACE_BEGIN|namespace\s+(?:thrust|cub)\b)", text):
        return {}  # the fast way out for most of cuda/std
    body = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.M)
    body = re.sub(r'"(?:\\.|[^"\\\n])*"' + r"|'(?:\\.|[^'\\\n])*'", '""', body)  # literals hold no declarations
    stack: list[tuple[str, tuple[str, ...]]] = []  # ("macro"|"ns"|"inline"|"brace", the namespaces it opens)
    out: dict[str, int] = {}
    toks: list[tuple[str, int]] = []
    line, last = 1, 0
    for m in _TOKEN.finditer(body):
        line += body.count("\n", last, m.start())
        last = m.start()
        toks.append((m.group(0), line))
    i = 0

    def scope() -> str | None:
        if any(kind == "brace" for kind, _ in stack):
            return None
        named = [n for kind, names in stack if kind != "inline" for n in names]
        return named[0] if named in (["thrust"], ["cub"]) else None

    def add(name: str, line: int) -> None:
        ns = scope()
        if ns and name not in KEYWORDS and (name == "*" or not _MACRO_LIKE.fullmatch(name)):
            out.setdefault(f"{ns}::{name}", line)

    def skip(j: int, open_: str, close: str) -> int:
        """The index after the bracket that closes toks[j] (an `open_`); parentheses nest inside `<>` too."""
        depth = 0
        while j < len(toks):
            tok = toks[j][0]
            if tok in (open_, "("):
                depth += 1
            elif tok in (close, ")"):
                depth -= 1
                if depth == 0:
                    return j + 1
            elif tok in ("{", ";") and open_ == "<":
                return j  # a `<` that was a comparison
            j += 1
        return j

    while i < len(toks):
        t, line = toks[i]
        nxt = toks[i + 1][0] if i + 1 < len(toks) else ""
        if t == "template" and nxt == "<":
            i = skip(i + 1, "<", ">")  # template parameters declare nothing at namespace scope
            continue
        if t == "(":
            i = skip(i, "(", ")")  # nor do function parameters
            continue
        if t in NAMESPACES:
            stack.append(("macro", (NAMESPACES[t],)))
        elif t in ENDS:
            while stack and stack.pop() != ("macro", (ENDS[t],)):
                pass
        elif t == "namespace":
            j = i + 1
            parts = []
            while j < len(toks) and toks[j][0] not in ("{", ";", "="):
                if toks[j][0] != "::":
                    parts.append(toks[j][0])
                j += 1
            if j < len(toks) and toks[j][0] == "{":
                inline = i > 0 and toks[i - 1][0] == "inline"
                stack.append(("inline", ()) if inline else ("ns", tuple(parts) or ("<anonymous>",)))
                i = j + 1
                continue
        elif t == "{":
            stack.append(("brace", ()))
        elif t == "}":
            if stack and stack[-1][0] != "macro":
                stack.pop()
        elif t == "using" and scope():
            j = i + 1
            if j < len(toks) and toks[j][0] == "namespace":
                add("*", line)
            else:  # `using NAME [attributes] = ...;` declares its first name, `using a::b::NAME;` its last
                first, last, alias = toks[j][0], "", False
                while j < len(toks) and toks[j][0] != ";":
                    alias = alias or toks[j][0] == "="
                    if not alias and re.fullmatch(r"[A-Za-z_]\w*", toks[j][0]) and toks[j][0] != "typename":
                        last = toks[j][0]
                    j += 1
                name = first if alias else last
                if re.fullmatch(r"[A-Za-z_]\w*", name):
                    add(name, line)
                i = j
                continue
        elif t in ("class", "struct", "union", "enum") and re.fullmatch(r"[A-Za-z_]\w*", nxt) and scope():
            k = i + 1
            while k < len(toks) and (toks[k][0] in ("class", "struct") or _MACRO_LIKE.fullmatch(toks[k][0])):
                k += 1  # `enum class NAME`, attribute macros: `struct CCCL_DEPRECATED_BECAUSE("...") NAME`
                if k < len(toks) and toks[k][0] == "(":
                    k = skip(k, "(", ")")
            name = toks[k][0] if k < len(toks) else ""
            after = toks[k + 1][0] if k + 1 < len(toks) else ""
            if after in ("{", ";", ":", "<", "final"):
                add(name, line)
        elif nxt in ("(", "=") and re.fullmatch(r"[A-Za-z_]\w*", t) and \
                (i == 0 or toks[i - 1][0] not in ("::", ".", "->")) and scope():
            add(t, line)
        i += 1
    return out


def public(rel: str) -> bool:
    parts = Path(rel).parts
    return parts[0] in ("thrust", "cub") and "detail" not in parts and rel.endswith((".h", ".cuh"))


@dataclass
class Release:
    cuda: str
    tree: Tree

    @cache  # noqa: B019 (one run of the script: the releases live as long as it does)
    def closure(self, rel: str) -> frozenset[str]:
        return closure(self.tree, rel)

    @cache  # noqa: B019 (one run of the script: the releases live as long as it does)
    def names(self, rel: str) -> dict[str, int]:
        return declared(self.tree.text(rel))

    @cache  # noqa: B019 (one run of the script: the releases live as long as it does)
    def closure_names(self, rel: str) -> frozenset[str]:
        return frozenset(n for f in self.closure(rel) for n in self.names(f))

    def __hash__(self) -> int:
        return hash(self.cuda)


def drops(old: Release, new: Release, only: str = "") -> dict[str, dict[str, object]]:
    """name -> {"headers": [H...], "declared_in": {D: line}} for the pair; `only`: the headers H under that
    prefix (a test checks a part of the shipped file in a second or two)."""
    old_pub = {f for f in old.tree.files() if public(f)}
    new_pub = sorted(f for f in new.tree.files() if public(f) and f in old_pub)
    out: dict[str, dict[str, object]] = {}
    for h in new_pub:
        if not h.startswith(only):
            continue
        oc, nc = old.closure(h), new.closure(h)
        lost = [d for d in sorted(oc - nc) if public(d) and d in new_pub]
        if not lost:
            continue
        have = set(new.closure_names(h))
        had = old.closure_names(h)
        for ns in ("thrust", "cub"):
            if f"{ns}::*" in have:
                have |= {n for d in lost for n in new.names(d) if n.startswith(ns + "::")}
        for d in lost:
            for name, line in new.names(d).items():
                if name.endswith("::*") or name in have or name not in had:
                    continue
                e = out.setdefault(name, {"headers": set(), "declared_in": {}})
                e["headers"].add(h)  # type: ignore[union-attr]
                e["declared_in"][d] = line  # type: ignore[index]
    return out


def build(trees: dict[str, Path], releases: tuple[tuple[str, str], ...] | None = None) -> dict[str, object]:
    """The data file's content from one include root per CUDA release. Headers are written as indices into
    `headers`, and names that the same headers reach share one `reached_by` entry: the file stays small."""
    releases = RELEASES if releases is None else releases
    rels = [Release(cuda, Tree(trees[cuda])) for cuda, _ in releases]
    headers = sorted({f for r in rels for f in r.tree.files() if public(f)})
    index = {h: i for i, h in enumerate(headers)}
    entries = []
    dropped: dict[str, str] = {}  # name -> the first release it was dropped in
    for old, new in zip(rels, rels[1:], strict=False):
        for name, e in sorted(drops(old, new).items()):
            entries.append({"from": old.cuda, "to": new.cuda, "name": name,
                            "headers": [index[h] for h in sorted(e["headers"])],  # type: ignore[call-overload]
                            "declared_in": [f"{d}:{ln}" for d, ln in sorted(e["declared_in"].items())]})  # type: ignore[union-attr]
            dropped.setdefault(name, new.cuda)
    reached: dict[str, list[dict[str, list]]] = {}
    for r in rels:
        pubs = [f for f in r.tree.files() if public(f)]
        groups: dict[tuple[int, ...], list[str]] = {}
        for name, first in sorted(dropped.items()):
            if r.cuda >= first:
                wild = name.split("::")[0] + "::*"  # a `using namespace` there may bring it
                hs = tuple(index[f] for f in sorted(pubs) if {name, wild} & r.closure_names(f))
                groups.setdefault(hs, []).append(name)
        if groups:
            reached[r.cuda] = sorted(({"names": n, "headers": list(h)} for h, n in groups.items()),
                                     key=lambda g: g["names"])
    return {"releases": {cuda: cccl for cuda, cccl in releases}, "headers": headers, "drops": entries,
            "reached_by": reached}


def render(doc: dict[str, object]) -> bytes:
    """gzip of sorted JSON, one entry a line, with no timestamp: the same headers give the same bytes."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    text = text.replace('},{"declared_in"', '},\n{"declared_in"').replace('},{"headers"', '},\n{"headers"')
    return gzip.compress((text + "\n").encode(), mtime=0)


def cached_trees(cache: Path = CACHE) -> dict[str, Path] | None:
    """CUDA release -> its CCCL include root in the cache, or None when one is missing."""
    out = {}
    for cuda, cccl in RELEASES:
        d = cache / cccl
        if not (d / "thrust" / "version.h").is_file():
            return None
        out[cuda] = d
    return out


def fetch(cache: Path = CACHE) -> None:
    """Download each pinned nvidia-cuda-cccl wheel and keep its include/cccl under cache/<version>."""
    for _, cccl in RELEASES:
        dest = cache / cccl
        if (dest / "thrust" / "version.h").is_file():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                            f"nvidia-cuda-cccl=={cccl}"], check=True)
            whl = next(Path(tmp).glob("*.whl"))
            with zipfile.ZipFile(whl) as z:
                for info in z.infolist():
                    parts = info.filename.split("/")
                    if "cccl" in parts and not info.is_dir():
                        rel = "/".join(parts[parts.index("cccl") + 1:])
                        out = dest / rel
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_bytes(z.read(info))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--fetch", action="store_true", help="download the pinned wheels' headers into the cache first")
    ap.add_argument("--check", action="store_true", help="exit 1 if the data file is not what the headers give")
    ap.add_argument("--cache", type=Path, default=CACHE, help="CCCL include roots, one per nvidia-cuda-cccl version")
    ap.add_argument("--out", type=Path, default=DATA)
    a = ap.parse_args(argv)
    if a.fetch:
        fetch(a.cache)
    trees = cached_trees(a.cache)
    if trees is None:
        print(f"build_cccl_drops: headers missing under {a.cache} (run with --fetch)", file=sys.stderr)
        return 2
    data = render(build(trees))
    if a.check:
        same = a.out.is_file() and gzip.decompress(a.out.read_bytes()) == gzip.decompress(data)
        print(f"{a.out}: {'up to date' if same else 'differs from what the headers give'}")
        return 0 if same else 1
    a.out.write_bytes(data)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
