"""Calls spelled through a token-pasting macro: `cuda(ThreadSynchronize())` with `#define cuda(fn) check(cuda##fn)`.

Legacy code wraps every runtime call in an error-checking macro, and some wrappers paste the API's prefix onto
their argument (the CUDA Handbook's `cuda(fn)` and `cu(fn)`, `nvrtc##fn`, `cublas##fn`). The text of the file
never spells `cudaThreadSynchronize`, so no rule saw the call; the compiler sees it after expansion. This
module gives the matcher the view the compiler has, for exactly the part the source controls:

* `paste_macros(data)`: the function-like macros a file defines whose body pastes an identifier onto a
  parameter (`PREFIX ## param`), each with why rewriting its argument is not what its expansion needs, if it
  is not: the argument is also used unpasted, pasted onto two prefixes, or onto a suffix too (`cuda##fn##Async`);
  a stringized `#param` is fine (the message then names the new call, as the compiler's would);
* `paste_sites(tree, data, macros)`: each use of such a macro in the file's tree; `file_view` spells the uses
  whose macro name is at least as long as the prefix as the expansion's call at the same length
  (`cuda(ThreadSynchronize())` is parsed as `(cudaThreadSynchronize())`: every analysis, the texture
  migration's included, sees the call where it is, in its statement and function), and `pasted_unit` parses
  the others' pasted expression as a macro body is, the argument's bytes at their offsets in the file;
* `unpaste(start, end, text, paste)`: an edit made in that view as an edit of the file: it may only change
  the argument, and an edit that starts at the pasted identifier must keep the prefix (`cudaThreadSynchronize`
  -> `cudaDeviceSynchronize` becomes `ThreadSynchronize` -> `DeviceSynchronize`); anything else is a reason
  the fix is manual.

The macro's other tokens (the error check around the call) are not in the view: conditions ask whether a
match is in a macro (`inside: macro_body`), which is true of these calls (`FileContext.pastes`, `Unit.in_macro`
of a pasted unit), so "status ignored" rules keep trusting the macro's check. Macros are the project's own
(the file's and the project headers it reaches, which `read/project_index.py` collects); a definition the file
cannot see is not used. An edit of the view outside the macro's use (a declaration inserted before the
statement) is an edit of the file as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import tree_sitter as ts

from ..core.linestart import directive, line_start_matches
from .treesitter import MACRO_WRAP_PREFIX, MACRO_WRAP_SUFFIX, Paste, Unit, macro_units, parse

# `#define NAME(params) body`, body up to the end of the logical line
_FUNCTION_DEFINE = directive(rb"#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)\n]*)\)([^\n\\]*(?:\\(?:\r?\n)?[^\n\\]*)*)")
_COMMENT = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_CONT = re.compile(rb"\\\r?\n")
_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
_IDENT = re.compile(rb"[A-Za-z_]\w*")


@dataclass(frozen=True)
class PasteMacro:
    """A function-like macro that pastes `prefix` onto its parameter number `index`."""

    name: str
    index: int
    arity: int
    prefix: bytes
    blocked: str | None = None  # why rewriting the argument is not exactly what the expansion needs
    # the prefixes the macro's other definitions paste onto the same parameter (which one the compiler uses is not
    # decided here): `view` matches the use once per prefix, each manual (`blocked` is set)
    others: tuple[bytes, ...] = ()


def paste_macros(data: bytes) -> dict[str, PasteMacro]:
    """The token-pasting macros `data` defines, by name. A name defined twice (`#ifdef DEBUG` and `#else`)
    keeps one entry when both definitions paste the same prefix onto the same parameter; otherwise the entry
    is blocked (which definition the compiler uses is not decided here: `merged` of the live ones is)."""
    return merged(paste_definitions(data))


def paste_definitions(data: bytes) -> list[tuple[int, str, PasteMacro | None]]:
    """(start of its line, name, the macro or None) of each function-like `#define` of `data` whose name some
    definition of `data` makes a pasting macro, in order: None is a definition of that name that pastes nothing
    (it disagrees with the others)."""
    if b"##" not in data:
        return []
    out: list[tuple[int, str, PasteMacro | None]] = []
    for at, m in line_start_matches(_FUNCTION_DEFINE, data):
        name = m.group(1).decode("utf-8", "replace")
        out.append((at, name, _paste_macro(name, m.group(2), m.group(3))))
    pasting = {name for _, name, got in out if got is not None}
    return [d for d in out if d[1] in pasting]


def merged(definitions: list[tuple[int, str, PasteMacro | None]]) -> dict[str, PasteMacro]:
    """One entry per name of `definitions` (`paste_definitions`' rows), `merge`d in order."""
    seen: dict[str, PasteMacro | None] = {}
    for _, name, got in definitions:
        seen[name] = merge(seen[name], got) if name in seen else got
    return {name: got for name, got in seen.items() if got is not None}


def merge(a: PasteMacro | None, b: PasteMacro | None) -> PasteMacro | None:
    """Two definitions of one macro name (several files or `#if` branches): one view when they agree."""
    if a is None and b is None:
        return None
    if a is not None and b is not None and (a.index, a.arity, a.prefix) == (b.index, b.arity, b.prefix):
        return replace(a if a.blocked else b, others=_union(a.others, b.others))
    base = a if a is not None else b
    assert base is not None
    others: tuple[bytes, ...] = ()
    if a is not None and b is not None and (a.index, a.arity) == (b.index, b.arity):
        others = tuple(p for p in _union(a.others, (b.prefix,), b.others) if p != a.prefix)
    return PasteMacro(base.name, base.index, base.arity, base.prefix,
                      f"macro `{base.name}` has several definitions that expand its argument differently", others)


def _union(*groups: tuple[bytes, ...]) -> tuple[bytes, ...]:
    return tuple(dict.fromkeys(p for g in groups for p in g))


def _paste_macro(name: str, params: bytes, body: bytes) -> PasteMacro | None:
    names = [p.strip() for p in params.split(b",")]
    if not all(_IDENT.fullmatch(p) for p in names) or len(set(names)) != len(names):
        return None  # variadic or unusual parameter lists are left alone
    body = _COMMENT.sub(b" ", _CONT.sub(b" ", body))
    body = _STRING.sub(b'""', body)
    for i, p in enumerate(names):
        pasted = list(re.finditer(rb"(##\s*)?\b([A-Za-z_]\w*)\s*##\s*" + re.escape(p) + rb"\b(\s*##)?", body))
        pasted = [x for x in pasted if x.group(2) not in names]
        if not pasted:
            continue
        prefix = pasted[0].group(2)
        why = None
        if any(x.group(2) != prefix for x in pasted):
            why = f"macro `{name}` pastes different prefixes onto its argument"
        elif any(x.group(1) or x.group(3) for x in pasted):
            why = f"macro `{name}` pastes more tokens onto its argument than a prefix"
        else:
            rest = re.sub(rb"(##\s*)?\b[A-Za-z_]\w*\s*##\s*" + re.escape(p) + rb"\b(\s*##)?", b" ", body)
            bare = [x for x in re.finditer(rb"(##|#)?\s*\b" + re.escape(p) + rb"\b", rest) if x.group(1) != b"#"]
            if bare:
                why = f"macro `{name}` also uses its argument unpasted"
        return PasteMacro(name, i, len(names), prefix, why)
    return None


def paste_sites(tree: ts.Tree, data: bytes, macros: dict[str, PasteMacro]) -> list[Paste]:
    """Each use of a pasting macro in `tree` whose argument starts with an identifier, in document order."""
    out: list[Paste] = []
    if not macros:
        return out
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "call_expression":
            got = _paste_at(node, data, macros)
            if got is not None:
                out.append(got)
        if node.child_count:
            stack.extend(reversed(node.children))
    return out


def _paste_at(call: ts.Node, data: bytes, macros: dict[str, PasteMacro]) -> Paste | None:
    fn = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    if fn is None or args is None or fn.type != "identifier":
        return None
    macro = macros.get(data[fn.start_byte: fn.end_byte].decode("utf-8", "replace"))
    if macro is None:
        return None
    given = [c for c in args.named_children if c.type != "comment"]
    if len(given) != macro.arity:
        return None
    arg = given[macro.index]
    if not _IDENT.match(data[arg.start_byte: arg.end_byte]) or arg.start_byte < len(macro.prefix):
        return None  # `cuda((x))`: the paste would not make one identifier
    return Paste(macro.name, macro.prefix, (arg.start_byte, arg.end_byte), (call.start_byte, call.end_byte),
                 macro.blocked)


_HEAD = re.compile(rb"[A-Za-z_]\w*[ \t]*\([ \t]*")


def in_file_view(paste: Paste, data: bytes) -> bool:
    """Whether the file's own parse can show the expansion at the same length: `cuda(ThreadSynchronize())` read
    as `(cudaThreadSynchronize())` (the macro's name, at least as long as the prefix, gives the bytes)."""
    s0, a0 = paste.site[0], paste.arg[0]
    return _HEAD.fullmatch(data[s0:a0]) is not None and a0 - s0 >= 1 + len(paste.prefix)


def file_view(data: bytes, pastes: list[Paste]) -> bytes:
    """`data` with each use of `pastes` (all `in_file_view`) spelled as its expansion's call, same length:
    `(` and the prefix in place of the macro's name and `(`. Every other byte keeps its offset."""
    out = bytearray(data)
    for p in pastes:
        s0, a0 = p.site[0], p.arg[0]
        out[s0:a0] = b"(" + b" " * (a0 - s0 - 1 - len(p.prefix)) + p.prefix
    return bytes(out)


@dataclass
class View:
    """A file's parse with its token-pasting macro uses seen as their expansion (`view`)."""

    data: bytes  # the bytes parsed (same length as the file's)
    tree: ts.Tree
    pastes: list[Paste]  # uses the tree shows as their expansion's call
    units: list[Unit]  # pasted units of the other uses


def view(data: bytes, tree: ts.Tree, macros: dict[str, PasteMacro]) -> View:
    """The parse of `data` (`tree`) with the uses of `macros` seen as the compiler sees them: in the file's own
    parse when the macro's name leaves room (`file_view`), else in a pasted unit; as the call each other definition
    pastes (`PasteMacro.others`) in a pasted unit too. Whoever parses a project file
    the way the engine does calls this after `parse` (with `ProjectIndex.paste_macros(path, data)`)."""
    sites = paste_sites(tree, data, macros)
    inline = [p for p in sites if in_file_view(p, data)]
    units = [pasted_unit(p, data) for p in sites if not in_file_view(p, data)]
    # a macro whose definitions paste different prefixes under a condition not decided here: the use is also seen
    # as each other definition's call (`hip##fn` first, `cuda##fn` second: the CUDA call is still found, manual)
    units += [pasted_unit(replace(p, prefix=other), data) for p in sites for other in macros[p.macro].others
              if p.arg[0] >= len(other)]
    if inline:
        data = file_view(data, inline)
        tree = parse(data)
    return View(data, tree, inline, units)


def file_units(pbytes: bytes, tree: ts.Tree, macros: dict[str, PasteMacro], keywords: re.Pattern[bytes] | None
               ) -> tuple[View, list[Unit]]:
    """What a file is matched in, from its parse bytes and their parse (`tree`): the file's parse as `view` shows
    it (`macros`), the bodies of its `#define`s that mention `keywords` (none when None) and the pasted units, in
    that order. The engine scans a file this way, and matchers that parse another project file
    (texture_refs.other_context) call it so that they see that file as its scan does."""
    seen = view(pbytes, tree, macros) if macros else View(pbytes, tree, [], [])
    units = [Unit(tree=seen.tree, base=0)]
    if keywords is not None:
        units += macro_units(seen.tree, seen.data, keywords)
    return seen, units + seen.units


def pasted_unit(paste: Paste, data: bytes) -> Unit:
    """The expansion's call parsed as a macro body is, the argument's bytes at their offsets in the file, for a
    use the file's own parse cannot show (`C(Malloc(...))` for `#define C(fn) cuda##fn`)."""
    a0, a1 = paste.arg
    text = _CONT.sub(lambda m: b" " * (len(m.group(0)) - 1) + b"\n", data[a0:a1])
    buf = MACRO_WRAP_PREFIX + paste.prefix + text + MACRO_WRAP_SUFFIX
    return Unit(tree=parse(buf), base=a0 - len(paste.prefix) - len(MACRO_WRAP_PREFIX), in_macro=True,
                macro_name=paste.macro, paste=paste)


def spelled_through(paste: Paste) -> str:
    """The start of every reason a pasted call's fix is manual."""
    return f"the call is spelled through macro `{paste.macro}`, which pastes `{paste.prefix.decode()}` onto its argument"


def unpaste(start: int, end: int, text: str, paste: Paste, in_file: bool = False) -> tuple[int, int, str] | str | None:
    """An edit of the view as an edit of the file, or why it cannot be one: inside the macro's use it must lie
    in the argument, and one that starts inside the pasted prefix must write the prefix again. `in_file`: the
    view is the file's own parse (`file_view`), where an edit outside the use is the file's (None: it does not
    touch the use); in a pasted unit nothing outside the argument exists."""
    a0, a1 = paste.arg
    p0 = a0 - len(paste.prefix)
    if in_file and (end <= paste.site[0] or start >= paste.site[1]):
        return None
    if paste.blocked:
        return f"{spelled_through(paste)}, and {paste.blocked}"
    why = f"{spelled_through(paste)}; the rewrite changes more than the argument"
    if start < p0 or end > a1 or start > end or start == a0:
        # (at a0: inside the pasted identifier, after the prefix; no rewrite of the view edits there alone)
        return why
    if start < a0:
        kept = paste.prefix[start - p0:].decode()
        if end < a0:
            return why
        if not text.startswith(kept):
            return f"{spelled_through(paste)}; the new name does not start with it"
        return a0, end, text[len(kept):]
    return start, end, text


def pasted_words(data: bytes, macros: dict[str, PasteMacro]) -> set[bytes]:
    """The identifiers the uses of `macros` in `data` paste (`cudaThreadSynchronize` for
    `cuda(ThreadSynchronize())`), for the keyword prefilter: a superset (comments and strings included),
    from the text, of what `paste_sites` finds. Only a macro's first parameter is read here. One pass over the
    text for every macro (a pass per macro was quadratic: bench/bounds.py paste-defs)."""
    out: set[bytes] = set()
    firsts = {name.encode(): pm for name, pm in macros.items() if pm.index == 0}
    if not firsts:
        return out
    for m in _CALL_WORD.finditer(data):
        pm = firsts.get(m.group(1))
        if pm is not None:
            out.update(prefix + m.group(2) for prefix in (pm.prefix, *pm.others))
    return out


# `name(word` with nothing of an identifier, `.` or `->` before the name; the argument in a lookahead, so that the
# next match may start there (`A(B(C))`: both `A(B` and `B(C`)
_CALL_WORD = re.compile(rb"(?<![\w.>])([A-Za-z_]\w*)(?=\s*\(\s*([A-Za-z_]\w*))")
