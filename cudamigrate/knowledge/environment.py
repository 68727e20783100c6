"""The Python packages that loading the rules imports, asked once: present, and in which versions.

Validating a rule imports the matchers' registries (tree-sitter and its CUDA grammar), YAML and, for a
template, Jinja. When one of them is missing every rule would fail alike, so the loader reports it as one
environment error instead of one "invalid rule" line per rule file (and never caches that answer: see
rule_cache.py). Where and how each is installed is part of the rule cache's key, so that installing, upgrading
or removing one of them is a new key, never a stale rule set.
"""

from __future__ import annotations

import importlib.util
import os

# import name -> distribution name on PyPI (as pyproject.toml's dependencies spell it)
RULE_LOADING_PACKAGES: dict[str, str] = {
    "yaml": "PyYAML",
    "jinja2": "jinja2",
    "tree_sitter": "tree-sitter",
    "tree_sitter_cuda": "tree-sitter-cuda",
}


def missing_dependency() -> str | None:
    """One line naming the first package rule loading needs that is not installed, with the command that
    installs it; None when all are. Found, not imported (0.1 ms: `rules`, `explain` and a scan whose
    templates are plain text never import Jinja)."""
    for module, dist in RULE_LOADING_PACKAGES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return (f"cannot load the rules: the Python package {dist!r} is not installed (no module named "
                    f"{module!r}); install it (`pip install {dist}`, or reinstall cudamigrate)")
    return None


def installed_stamp() -> str:
    """Where each package rule loading imports is installed, with its module file's size and mtime (`-` when
    not installed), for the rule cache's key: installing, upgrading or removing one rewrites that file. (Its
    version from the distribution metadata would cost ~30 ms at every start, against ~0.4 ms for this.)"""
    out = []
    for module in RULE_LOADING_PACKAGES:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        try:
            st = os.stat(origin) if origin else None
        except OSError:
            st = None
        out.append(f"{module}={origin}:{st.st_size}:{st.st_mtime_ns}" if st else f"{module}=-")
    return ";".join(out)
