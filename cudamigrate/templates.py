"""Message and edit templates: jinja2 in a sandbox, since rule files may come from anywhere."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment


class TemplateError(Exception):
    pass


@lru_cache(maxsize=1)
def _env() -> SandboxedEnvironment:
    env = SandboxedEnvironment(
        undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True, trim_blocks=False
    )
    return env


@lru_cache(maxsize=4096)
def _compile(text: str) -> jinja2.Template:
    return _env().from_string(text)


def check_template(text: str) -> None:
    try:
        _compile(text)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error: {exc.message} (line {exc.lineno})") from None


def render(text: str, ctx: dict[str, Any]) -> str:
    if "{" not in text:
        return text
    try:
        return _compile(text).render(**ctx)
    except jinja2.UndefinedError as exc:
        raise TemplateError(f"undefined in template: {exc.message}") from None
    except jinja2.TemplateError as exc:
        raise TemplateError(str(exc)) from None
    except Exception as exc:  # a rule's expression failed (e.g. str.index): report it, never crash the scan
        raise TemplateError(f"template failed: {type(exc).__name__}: {exc}") from None
