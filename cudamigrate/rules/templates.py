"""Message and edit templates: jinja2 in a sandbox, since rule files may come from anywhere.

This module is the light front: `TemplateError`, and `render`/`check_template`, which import jinja2
(`jinja_sandbox.py`) only when a template really has to be compiled, so that `--version`, `rules`,
`explain` and a scan whose findings are all plain text never pay for importing Jinja."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .schema import TemplateError as TemplateError  # raised here and by the sandbox
from .template_code import Precompiled, preload as preload  # the rule cache's compiled templates


def check_template(text: str) -> None:
    """Raise TemplateError when `text` is not a template the sandbox accepts (syntax, nested loops, macros)."""
    if "{" not in text:
        return  # every Jinja construct starts with `{` (no line statements): plain text is always valid
    from .jinja_sandbox import check_template as check

    check(text)


def precompile(texts: Iterable[str]) -> Precompiled:
    """The compiled code of each template among `texts` (those holding `{`), for the rule cache; a template
    the sandbox cannot compile is left out (its rule was refused; rendering would report it as before)."""
    texts = sorted({t for t in texts if "{" in t})
    if not texts:
        return {}
    from .jinja_sandbox import compiled_code

    out: Precompiled = {}
    for t in texts:
        try:
            out[t] = compiled_code(t)
        except Exception:  # noqa: BLE001 - only a speed-up: render compiles it (and reports what is wrong)
            continue
    return out


def render(text: str, ctx: dict[str, Any]) -> str:
    """Render a rule template; results are cached for equal inputs (20,000 identical findings render once)."""
    if "{" not in text:
        return text
    from .jinja_sandbox import render as render_jinja

    return render_jinja(text, ctx)
