"""Inline PTX (`asm("...")`) that uses warp instructions without `.sync`.

ptxas rejects `shfl.{up,down,bfly,idx}` and `vote.{all,any,uni,ballot}` without `.sync` for sm_70 and
newer from PTX ISA 6.4 on ("Instruction 'shfl' without '.sync' is not supported on .target sm_70 and
higher from PTX ISA version 6.4"). nvcc emits inline asm into its own PTX (ISA 9.0 for nvcc 13.0), and
13.0 has no target below sm_75, so such a file no longer builds. Only the assembler template of an `asm`
statement is PTX: strings elsewhere (printf text, a PTX module loaded at run time with its own `.version`)
are not matched, and neither are branches that `#if __CUDA_ARCH__ ...` makes dead for every supported arch.
"""

from __future__ import annotations

import re
from typing import Any

import tree_sitter as ts

from ...parse.walk import typed_nodes
from ...rules.schema import Rule
from ...core.registry import Registry
from .builtin_registry import BuiltinFn, builtin_schema
from ..context import FileContext, node_text
from ..matchers import Match
from ..ppexpr import Evaluator, PPError

# `shfl.down.b32`, `vote.ballot.b32`, `vote.all.pred`; not `shfl.sync.*`/`vote.sync.*`
UNSYNCED = re.compile(r"(?<![\w.$%])(?P<op>shfl|vote)\.(?P<mode>up|down|bfly|idx|all|any|uni|ballot)(?P<rest>(?:\.\w+)*)")

# __CUDA_ARCH__ values nvcc 13.0 can compile device code for (sm_75 is the oldest, nvcc --list-gpu-arch)
ARCHS = (750, 800, 860, 870, 880, 890, 900, 1000, 1030, 1100, 1200, 1210)  # nvcc 13.0 --list-gpu-arch

SYNC_FORM = {
    "shfl": "shfl.sync.{mode}{rest} d, a, b, c, membermask;",
    "vote": "vote.sync.{mode}{rest} d, a, membermask;",
}
INTRINSIC = {"up": "__shfl_up_sync", "down": "__shfl_down_sync", "bfly": "__shfl_xor_sync", "idx": "__shfl_sync",
             "all": "__all_sync", "any": "__any_sync", "uni": "__uni_sync", "ballot": "__ballot_sync"}


def _is_asm_template(node: ts.Node) -> bool:
    """The assembler template of `asm(...)`: a string (or a piece of concatenated strings) directly in the
    statement, not an operand constraint such as `"=r"`."""
    p = node.parent
    if p is not None and p.type == "concatenated_string":
        p = p.parent
    return p is not None and p.type == "gnu_asm_expression"


def _arch_value(cond: str) -> list[bool] | None:
    """The condition's value for every supported __CUDA_ARCH__, or None when other macros decide it."""
    if "__CUDA_ARCH__" not in cond:
        return None
    out = []
    for arch in ARCHS:
        def lookup(n: str, a: int = arch) -> int | None:
            return a if n == "__CUDA_ARCH__" else None

        ev = Evaluator(lookup, lambda n: True if n == "__CUDA_ARCH__" else None)
        try:
            v = ev.eval(cond)
        except PPError:
            return None
        if v is None:
            return None
        out.append(bool(v))
    return out


def dead_for_every_arch(node: ts.Node) -> bool:
    """In `#if __CUDA_ARCH__ < 700` (false for every arch nvcc 13.0 builds), or the `#else` of a condition that
    is true for every one of them."""
    cur = node
    while cur.parent is not None:
        p = cur.parent
        if p.type in ("preproc_if", "preproc_elif"):
            cond, alt = p.child_by_field_name("condition"), p.child_by_field_name("alternative")
            if cond is not None and cur.start_byte >= cond.end_byte and (alt is None or cur.start_byte < alt.start_byte):
                vals = _arch_value(node_text(cond))
                if vals is not None and not any(vals):
                    return True
        elif p.type == "preproc_else" and p.parent is not None and p.parent.type in ("preproc_if", "preproc_elif"):
            cond = p.parent.child_by_field_name("condition")
            vals = _arch_value(node_text(cond)) if cond is not None else None
            if vals is not None and all(vals):
                return True
        cur = p
    return False


# UNSYNCED over bytes, where `\w` is ASCII only: it finds at least every place UNSYNCED finds in decoded text (a
# character before a match that is no word character of the text is no ASCII word byte either)
UNSYNCED_BYTES = re.compile(UNSYNCED.pattern.encode())


def may_hold(text: bytes) -> bool:
    """Whether a string literal of `text` can hold an unsynced warp instruction (a literal's matches are matches
    of the whole text: one opens with its quote or a prefix letter, never with `shfl`/`vote`)."""
    return UNSYNCED_BYTES.search(text) is not None


STRING_LITERAL = frozenset({"string_literal"})  # walked, not queried: a query costs 10-20 ms to compile per process
BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py


@BUILTINS.register("inline_ptx_unsynced_warp_op", builtin_schema(), doc=(
    "`shfl`/`vote` without `.sync` in `asm` templates (`cudamigrate/match/migrations/inline_ptx.py`)."))
def inline_ptx_unsynced_warp_op(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    out: list[Match] = []
    for unit in ctx.units:
        if not may_hold(unit.root.text or b""):
            continue  # no string literal of the unit can hold one: its strings are not walked
        for node in typed_nodes(unit.root, STRING_LITERAL):
            if not _is_asm_template(node):
                continue
            text = (node.text or b"").decode("utf-8", "surrogateescape")
            hits = list(UNSYNCED.finditer(text))
            if not hits or dead_for_every_arch(node):
                continue
            s, _ = unit.abs(node)
            for mo in hits:
                start = s + len(text[: mo.start()].encode("utf-8", "surrogateescape"))
                end = start + len(mo.group(0).encode("utf-8", "surrogateescape"))
                op, mode, rest = mo.group("op"), mo.group("mode"), mo.group("rest")
                m = Match(rule=rule, unit=unit, node=node, name=mo.group(0), written=mo.group(0), range=(start, end))
                m.vars.update({"instruction": mo.group(0), "op": op, "mode": mode,
                               "sync_form": SYNC_FORM[op].format(mode=mode, rest=rest), "intrinsic": INTRINSIC[mode]})
                out.append(m)
    return out
