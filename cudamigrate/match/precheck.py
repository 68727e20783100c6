"""Which rules' `where:` conditions cannot hold anywhere in a file, decided before the file is parsed.

Most parsed files of a real tree end with no finding: a rule's keyword or construct is there (a kernel launch, a
`cudaDeviceSynchronize` call), but its `where:` rules the match out (the legacy stream meets no other blocking
stream; the call is not in device code). Some conditions have a cheap superset test on the file's text: when it
fails, no match of the file can satisfy the condition, the rule is dropped, and a file left without candidate
rules is not parsed at all. Each test may only say "impossible" when the condition is false for every match of
the file (`tests/test_speed_paths.py` checks the findings against scans without these tests).

- `meets_blocking_streams`: `streams.meets_blocking_before_parse` (the file's text and its headers; undecided
  when the file names a stream type, since a declaration may be the reason);
- `inside: kernel` / `inside: device_function`: the scope facts come from the `__global__`/`__device__` tokens
  of a function definition (`context.Scope`), which must appear in the file's text;
- the texture and surface reference builtins (`BUILTIN_PRECHECKS`): `texture_refs.references_possible` (a
  `texture<`/`surface<` or a migration marker in the file or a project header it reaches), and the reference
  API builtin (`texture_refs.reference_api_possible`: a bind, a reference type or a template-less read in the text).

A run with worker processes asks `prepare_shared` first (in the process they fork from): what a builtin's test
will ask of the run's project index for the files to scan (`BUILTIN_SHARED`: the include graph for the texture
builtins' includer test) is built once there, not again in every worker.

`all:`, lists and mappings are conjunctions, `any:` a disjunction; `not:` and every other condition count as
possible.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable

from . import streams
from .migrations import texture_includers, texture_refs


class FileText:
    """A file's bytes and path, with the facts the tests ask for computed once."""

    def __init__(self, data: bytes, path: Path, project: Any = None):
        self.data = data
        self.path = path
        self.project = project  # the run's ProjectIndex

    @cached_property
    def blocking(self) -> bool | None:
        return streams.meets_blocking_before_parse(self.data, self.path)


def _place_possible(place: Any, f: FileText) -> bool:
    if place == "kernel":
        return b"__global__" in f.data
    if place == "device_function":
        return b"__global__" in f.data or b"__device__" in f.data
    return True


def _blocking_possible(val: Any, f: FileText) -> bool:
    known = f.blocking
    return known is None or known == bool(val)


# condition -> (its value, the file) -> False when the condition holds for no match of the file
PRECHECKS: dict[str, Callable[[Any, FileText], bool]] = {
    "meets_blocking_streams": _blocking_possible,
    "inside": lambda val, f: any(_place_possible(p, f) for p in (val if isinstance(val, list) else [val])),
}


# builtin matcher -> (the file) -> False when it can report nothing for the file
BUILTIN_PRECHECKS: dict[str, Callable[[FileText], bool]] = {
    "texture_reference": lambda f: texture_refs.references_possible(f.data, f.path, f.project),
    "surface_reference": lambda f: texture_refs.references_possible(f.data, f.path, f.project),
    "texture_reference_api": lambda f: texture_refs.reference_api_possible(f.data),
}


# builtin matcher -> (the run's project index, the files about to be scanned) -> None: builds, in the process that
# worker processes are forked from, the per-run facts the builtin's precheck will ask of the index for those files,
# so that every worker inherits them instead of building them again (a cache filled early, never a different answer)
BUILTIN_SHARED: dict[str, Callable[[Any, list[Path]], None]] = {
    "texture_reference": texture_includers.prepare_includers,
    "surface_reference": texture_includers.prepare_includers,
}


def prepare_shared(builtins: Iterable[Any], project: Any, files: list[Path]) -> None:
    """What `BUILTIN_SHARED` builds for the run's selected builtins (each once), then the facts of the headers
    many of `files` share, where that built the include graph (`ProjectIndex.prepare_shared_headers`)."""
    for prepare in dict.fromkeys(BUILTIN_SHARED[b] for b in builtins if b in BUILTIN_SHARED):
        prepare(project, files)
    if project is not None:
        project.prepare_shared_headers()


def builtin_possible(name: Any, f: FileText) -> bool:
    test = BUILTIN_PRECHECKS.get(name)
    return test is None or test(f)


def possible(cond: Any, f: FileText) -> bool:
    """False when `cond` (a rule's `where:`) cannot hold for any match in the file."""
    if cond is None:
        return True
    if isinstance(cond, list):
        return all(possible(c, f) for c in cond)
    if not isinstance(cond, dict):
        return True
    for key, val in cond.items():
        if key == "all":
            ok = possible(val, f)
        elif key == "any":
            ok = not isinstance(val, list) or any(possible(c, f) for c in val)
        else:
            test = PRECHECKS.get(key)
            ok = test is None or test(val, f)
        if not ok:
            return False
    return True
