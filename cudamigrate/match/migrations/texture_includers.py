"""References a header reads but does not declare: declared in the headers its includers include.

A header such as `reads.cuh` (`__device__ float sample(...) { return tex2D(texImg, ...); }`) often relies on
every file that includes it having included `textures.cuh` first. Scanned on its own it sees no declaration of
`texImg`, so its read would stay in reference form (CM603, manual) while the declaration and the binds migrate,
and nothing would build. When every file of the run that includes the header sees one and the same declaration
of the name through its own includes, that declaration is the one the header reads, and the header's uses
migrate with it. Files that disagree (two declarations, or none) leave the name unknown here, as before.
An includer's own declarations above its `#include` of the header count too (`Includer.seen_by`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..context import FileContext


@dataclass(frozen=True)
class Includer:
    """What one file that includes headers declares for them to read, computed once per file of the run:
    the references its own includes declare, its file-scope declarations (as references of that file, with
    their offsets) and its `#include` directives (offset, the resolved project header or None)."""

    headers: dict[str, Any]
    own: tuple[tuple[int, Any], ...]
    sites: tuple[tuple[int, Path | None], ...]

    def seen_by(self, header: Path) -> dict[str, Any]:
        """The references `header` can read where this file includes it: its headers' ones, and its own
        declarations above that `#include` (`texture<> t;` then `#include "kernels.h"`, as SHOC and Rodinia do)."""
        at = next((o for o, inc in self.sites if inc == header), None)
        out = dict(self.headers)
        for off, r in self.own:
            if at is not None and off < at:
                out.setdefault(r.name, r)
        return out


def includer_refs(ctx: "FileContext", includer: Callable[["FileContext"], Includer], other: Callable) -> dict:
    """name -> the Ref every includer of `ctx`'s file sees where it includes it (none for a file nobody
    includes). `includer(octx)` describes a file that includes it (`Includer`); `other(ctx, path)` a context
    for another file of the run."""
    project = ctx.project
    if project is None or not project.files:
        return {}
    me = Path(os.path.realpath(ctx.source.path))  # (Path.resolve: RuntimeError on a symlink loop)
    users = [p for p in project.includers(me) if Path(os.path.realpath(p)) != me]
    if not users:
        return {}
    cache = project.cache.setdefault(("texture-includer-refs",), {})
    seen: list[dict] = []
    for path in users:
        key = Path(os.path.realpath(path))
        if key not in cache:
            octx = other(ctx, key)
            cache[key] = includer(octx) if octx is not None else None
        seen.append(cache[key].seen_by(me) if cache[key] is not None else {})
    out = {}
    for name, ref in seen[0].items():
        paths = {str(s[name].path) if name in s and s[name].path is not None else None for s in seen}
        only = next(iter(paths)) if len(paths) == 1 else None
        if only is not None and Path(os.path.realpath(only)) != me:
            out[name] = ref
    return out


# a reference-form read, bind or surface call (the names of texture.TEX_READS, TEX_BINDS and SURF_FUNCS)
READ_CALL = re.compile(rb"\b(?:tex(?:1Dfetch|[123]D|[12]DLayered|CubemapLayered|Cubemap|2Dgather)(?:Lod|Grad)?"
                       rb"|surf\w+|cudaBindTexture\w*|cudaUnbindTexture|cudaBindSurface\w*)\s*\(")


def includers_may_declare(data: bytes, path: Path, project: Any, reference_text: re.Pattern) -> bool:
    """The precheck's side of `includer_refs`: can a file that reads references see a declaration through one of
    the files that include it? (the includer or a header it reaches holds `texture<`/`surface<` text)"""
    if project is None or not project.files or not READ_CALL.search(data):
        return False
    for user in project.includers(path):
        for f in [user, *project.reachable(user)]:
            text = project.read(f)
            if text is None or reference_text.search(text):
                return True
    return False


def prepare_includers(project: Any, files: list[Path]) -> None:
    """Before worker processes fork: when one of `files` (those about to be scanned) reads references, its
    precheck (`includers_may_declare`) will need the run's whole include graph; built here, once, it is inherited
    by every worker instead of being built again by each worker that meets such a file (cuda-samples v11.8:
    0.13 s a worker, for 11 of its 790 files). A file that cannot be read here (or is over the index's size
    limit) is left to the workers, which build the graph themselves if they need it."""
    if project is None or not project.files:
        return
    for path in files:
        data = project.read(path)
        if data is not None and (b"tex" in data or b"surf" in data or b"cudaBind" in data or b"cudaUnbind" in data) \
                and READ_CALL.search(data):
            project.includer_map()
            return
