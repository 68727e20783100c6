"""A tri-state evaluator for `#if` expressions (True, False, or None = depends on unknown macros)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+)[uUlL]*|(?P<id>[A-Za-z_]\w*)|(?P<op>\|\||&&|==|!=|>=|<=|<<|>>|[-+*/%<>!()?:~&|^]))"
)

Val = int | None


class PPError(Exception):
    pass


def tokenize(text: str) -> list[tuple[str, str]]:
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S).replace("\\\n", " ")
    out = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise PPError(f"cannot read {text[pos:pos + 10]!r}")
        pos = m.end()
        if m.group("num"):
            out.append(("num", m.group("num")))
        elif m.group("id"):
            out.append(("id", m.group("id")))
        elif m.group("op"):
            out.append(("op", m.group("op")))
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


@lru_cache(maxsize=4096)
def cached_tokens(text: str) -> tuple[tuple[str, str], ...]:
    return tuple(tokenize(text))


BINARY = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
    "<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}


class Evaluator:
    """`lookup(name)` returns an int, or None when the macro's value is unknown; `defined(name)` likewise."""

    def __init__(self, lookup: Callable[[str], Val], defined: Callable[[str], bool | None]):
        self.lookup = lookup
        self.defined = defined

    def eval(self, text: str) -> Val:
        self.toks = cached_tokens(text)  # evaluated for many toolkit versions: tokenize once
        self.i = 0
        v = self._ternary()
        if self.i != len(self.toks):
            raise PPError("trailing tokens")
        return v

    def _peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _take(self) -> tuple[str, str]:
        t = self._peek()
        if t is None:
            raise PPError("unexpected end")
        self.i += 1
        return t

    def _ternary(self) -> Val:
        c = self._binary(1)
        t = self._peek()
        if t == ("op", "?"):
            self._take()
            a = self._ternary()
            if self._take() != ("op", ":"):
                raise PPError("expected ':'")
            b = self._ternary()
            if c is None:
                return a if a == b else None
            return a if c else b
        return c

    def _binary(self, prec: int) -> Val:
        left = self._unary()
        while True:
            t = self._peek()
            if t is None or t[0] != "op" or t[1] not in BINARY or BINARY[t[1]] < prec:
                return left
            op = t[1]
            self._take()
            right = self._binary(BINARY[op] + 1)
            left = self._apply(op, left, right)

    @staticmethod
    def _apply(op: str, a: Val, b: Val) -> Val:
        if op == "||":
            if a or b:
                return 1
            return None if a is None or b is None else 0
        if op == "&&":
            if a == 0 or b == 0:
                return 0
            return None if a is None or b is None else 1
        if a is None or b is None:
            return None
        if op in ("/", "%") and b == 0:
            return None
        return int({
            "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: a == b, "!=": lambda: a != b,
            "<": lambda: a < b, ">": lambda: a > b, "<=": lambda: a <= b, ">=": lambda: a >= b,
            "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
            "*": lambda: a * b, "/": lambda: int(a / b), "%": lambda: a % b,
        }[op]())

    def _unary(self) -> Val:
        kind, val = self._take()
        if kind == "op":
            if val == "(":
                v = self._ternary()
                if self._take() != ("op", ")"):
                    raise PPError("expected ')'")
                return v
            if val == "!":
                v = self._unary()
                return None if v is None else int(not v)
            if val == "-":
                v = self._unary()
                return None if v is None else -v
            if val == "+":
                return self._unary()
            if val == "~":
                v = self._unary()
                return None if v is None else ~v
            raise PPError(f"unexpected {val!r}")
        if kind == "num":
            return int(val, 16) if val.lower().startswith("0x") else int(val, 8) if len(val) > 1 and val[0] == "0" else int(val)
        if val == "defined":
            paren = self._peek() == ("op", "(")
            if paren:
                self._take()
            k, name = self._take()
            if paren and self._take() != ("op", ")"):
                raise PPError("expected ')'")
            d = self.defined(name)
            return None if d is None else int(d)
        if val in ("true", "false"):
            return None  # C++ keywords in #if are unusual; do not guess
        if self._peek() == ("op", "("):
            return None  # function-like macro: unknown
        return self.lookup(val)
