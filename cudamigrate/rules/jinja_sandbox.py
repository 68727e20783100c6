"""The jinja2 sandbox behind `templates.render` and `templates.check_template` (imported only when a
template holding `{` is compiled or checked: see templates.py)."""

from __future__ import annotations

import functools
import marshal
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox
from jinja2.sandbox import SandboxedEnvironment

from .schema import TemplateError
from .template_code import precompiled


MAX_RANGE = 10_000  # items a template's range() may produce
MAX_SIZE = 100_000  # characters of a string/list a template may build, and of its output
MAX_INT = 10**9  # magnitude of numbers a template may compute
MAX_LOOP_DEPTH = 1  # {% for %} inside {% for %} is refused: loops over source text would multiply


class BoundedSandbox(SandboxedEnvironment):
    """The jinja2 sandbox (no attribute access to Python internals) with bounded work: a small range(),
    no lipsum(), and arithmetic and repetition that cannot build huge numbers or strings."""

    intercepted_binops = frozenset(["*", "**", "+", "%", "//"])

    def call_binop(self, context, operator, left, right):
        if operator == "**" and isinstance(right, (int, float)) and abs(right) > 64:
            raise jinja2.sandbox.SecurityError("exponent too large")
        if operator == "%" and isinstance(left, str):
            raise jinja2.sandbox.SecurityError("string formatting with % is not allowed in rule templates")
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_SIZE:
                    raise jinja2.sandbox.SecurityError("repetition too large")
        out = super().call_binop(context, operator, left, right)
        if isinstance(out, (int, float)) and not isinstance(out, bool) and abs(out) > MAX_INT:
            raise jinja2.sandbox.SecurityError("number too large")
        if isinstance(out, (str, list, tuple)) and len(out) > MAX_SIZE:
            raise jinja2.sandbox.SecurityError("value too large")
        return out

    def call(__self, __context, __obj, *args, **kwargs):
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_SIZE:
                raise jinja2.sandbox.SecurityError(f"argument {a} too large")  # center(10**9), wordwrap, ...
        return super().call(__context, __obj, *args, **kwargs)


def _bounded_filter(f):
    """Filters are called directly, not through the sandbox's call(): `center(10**9)` must be refused too."""
    skip = 2 if hasattr(f, "jinja_pass_arg") else 1  # the value filtered (after the context, if passed)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        for a in list(args[skip:]) + list(kwargs.values()):
            if isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_SIZE:
                raise jinja2.sandbox.SecurityError(f"filter argument {a} too large")
        return f(*args, **kwargs)

    return wrapper


def _range(*args: int) -> range:
    r = range(*args)
    if len(r) > MAX_RANGE:
        raise jinja2.sandbox.SecurityError(f"range() of more than {MAX_RANGE} items")
    return r


@lru_cache(maxsize=1)
def _env() -> SandboxedEnvironment:
    env = BoundedSandbox(
        undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True, trim_blocks=False
    )
    env.globals["range"] = _range
    env.filters = {k: _bounded_filter(f) for k, f in env.filters.items()}
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    return env


def _loop_depth(node: jinja2.nodes.Node, depth: int = 0) -> int:
    here = depth + 1 if isinstance(node, jinja2.nodes.For) else depth
    return max([here] + [_loop_depth(c, here) for c in node.iter_child_nodes()])


@lru_cache(maxsize=4096)
def _code(text: str) -> Any:
    """Jinja's compiled code of `text`: from the rule cache's (templates.preload), else compiled here."""
    got = precompiled(text)
    return marshal.loads(got[0]) if got is not None else _env().compile(text)


@lru_cache(maxsize=4096)
def _compile(text: str) -> jinja2.Template:
    env = _env()  # as Environment.from_string builds it, from the code
    return env.template_class.from_code(env, _code(text), env.make_globals(None), None)


def compiled_code(text: str) -> tuple[bytes, tuple[str, ...]]:
    """What the rule cache keeps of a template (templates.precompile): its code, marshalled (the cache's key
    holds the Python and Jinja versions), and the variables it reads."""
    return marshal.dumps(_code(text)), _names(text)


def check_template(text: str) -> None:
    try:
        _compile(text)
        ast = _env().parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error: {exc.message} (line {exc.lineno})") from None
    if _loop_depth(ast) > MAX_LOOP_DEPTH:
        raise TemplateError("nested {% for %} loops are not allowed in rule templates")
    if any(True for _ in ast.find_all((jinja2.nodes.Macro, jinja2.nodes.CallBlock))):
        raise TemplateError("{% macro %} and {% call %} are not allowed in rule templates")


_BY_IDENTITY = ("data",)  # the rule's data: keyed by the object itself (held by the cache), never copied
_FREEZE_BUDGET = 2_000
_RESULTS: dict[tuple, tuple[str, list]] = {}


@lru_cache(maxsize=4096)
def _names(text: str) -> tuple[str, ...]:
    got = precompiled(text)
    if got is not None:
        return got[1]
    return tuple(sorted(jinja2.meta.find_undeclared_variables(_env().parse(text))))


def _freeze(v: Any, budget: list[int]) -> Any:
    """An exact, hashable copy of a small value; raises _TooBig past the budget or for other types."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if v is None or isinstance(v, (bool, int, float)):
        return (type(v).__name__, v)
    if isinstance(v, str):
        budget[0] -= len(v) // 16
        if budget[0] < 0:
            raise _TooBig
        return v
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_freeze(x, budget) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple((_freeze(k, budget), _freeze(x, budget)) for k, x in v.items()))
    raise _TooBig


class _TooBig(Exception):
    pass


def _cache_key(text: str, ctx: dict[str, Any]) -> tuple | None:
    """Equal keys mean equal renders: the template and the exact values of the variables it reads (rule-level
    `data` by identity, the object being kept alive by the cache). None: not worth caching."""
    key: list = [text]
    refs: list = []
    budget = [_FREEZE_BUDGET]
    try:
        for name in _names(text):
            if name not in ctx:
                key.append((name, "<undefined>"))
            elif name in _BY_IDENTITY:
                key.append((name, id(ctx[name])))
                refs.append(ctx[name])
            else:
                key.append((name, _freeze(ctx[name], budget)))
    except (_TooBig, jinja2.TemplateError):
        return None
    return tuple(key), refs


def render(text: str, ctx: dict[str, Any]) -> str:
    """Render a rule template (one holding `{`); results are cached for equal inputs."""
    got = _cache_key(text, ctx)
    if got is not None:
        hit = _RESULTS.get(got[0])
        if hit is not None:
            return hit[0]
    out = _render(text, ctx)
    if got is not None:
        if len(_RESULTS) >= 8192:
            _RESULTS.clear()
        _RESULTS[got[0]] = (out, got[1])
    return out


def _render(text: str, ctx: dict[str, Any]) -> str:
    try:
        out = _compile(text).render(**ctx)
        if len(out) > MAX_SIZE:
            raise TemplateError(f"template output longer than {MAX_SIZE} characters")
        return out
    except TemplateError:
        raise
    except jinja2.sandbox.SecurityError as exc:
        raise TemplateError(f"template refused: {exc}") from None
    except jinja2.UndefinedError as exc:
        raise TemplateError(f"undefined in template: {exc.message}") from None
    except jinja2.TemplateError as exc:
        raise TemplateError(str(exc)) from None
    except Exception as exc:  # a rule's expression failed (e.g. str.index): report it, never crash the scan
        raise TemplateError(f"template failed: {type(exc).__name__}: {exc}") from None
