#!/usr/bin/env python3
"""Write the NPP data files from the CUDA 13.0 nvidia-npp wheel.

    python scripts/gen_npp_data.py            # (re)write both lists from the nvidia-npp wheel in this venv
    python scripts/gen_npp_data.py --check    # exit 1 if a committed list differs

cudamigrate/data/npp_removed_non_ctx.txt (CM540): the NPP functions CUDA 13.0 removed in favour of `_Ctx`.

A name is listed when the 13.0 NPP headers (nvidia-npp 13.0.1.2: nvidia/cu13/include/npp*.h) declare
`name_Ctx(...)` and the 13.0 libraries (nvidia/cu13/lib/libnpp*.so.13) no longer export `name`. Each line is
`name link` when the headers still declare the old prototype (nppi: the call compiles, then fails to link with
`undefined reference`) or `name compile` when they do not (npps: `identifier is undefined`), and `name none`
when the `_Ctx` twin is declared but not exported either (no 13.0 replacement links). NVIDIA's
cuda-samples switched every call to `_Ctx` for 13.0 ("Update all non-ctx nppi APIs to ctx APIs").

cudamigrate/data/npp_size_t_out_params.txt (CM542): each NPP function whose 13.0 prototype has a `size_t *`
parameter (the buffer-size queries), as `name index parameter since`, index 0-based, `since` the CUDA release
whose NPP first declared that parameter `size_t *` (SIZE_T_SINCE below). A removed non-`_Ctx` name that the
13.0 headers no longer declare is listed with its `_Ctx` twin's parameter (CM540 renames the call and appends
the context, so the index is the same).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "cudamigrate" / "data" / "npp_removed_non_ctx.txt"
OUT_SIZES = ROOT / "cudamigrate" / "data" / "npp_size_t_out_params.txt"
PROTO = re.compile(r"(?<![\w.])(npp[is]\w+)\s*\(")  # headers hold only prototypes once comments are gone
PROTO_PARAMS = re.compile(r"(?<![\w.])(npp[is]\w+)\s*\(([^;{}()]*)\)\s*;")
SIZE_T_PTR = re.compile(r"^size_t\s*\*\s*(\w+)$")
# When the buffer-size out-parameters became `size_t *`, from the headers of the nvidia-npp-cu12 / -cu11 wheels
# (CUDA release of each NPP version: anaconda.org/nvidia/libnpp-dev labels): NPP 11.8.0.86 (CUDA 11.8) and
# 12.2.3.2 (CUDA 12.3.2) declare 1610 of today's 1615 `size_t *` parameters as `int *`; 12.2.5.2 (CUDA 12.4.0)
# declares all but the two watershed queries `size_t *`; those two are `int *` through 12.3.1.54 (CUDA 12.6.x)
# and `size_t *` from 12.3.3.65 (CUDA 12.8.0). The five already `size_t *` in 11.8 are listed as 11.8.
SIZE_T_SINCE_DEFAULT = "12.4"
SIZE_T_SINCE = {
    "nppiSegmentWatershedGetBufferSize_8u_C1R": "12.8", "nppiSegmentWatershedGetBufferSize_16u_C1R": "12.8",
    "nppiDistanceTransformPBAGetBufferSize": "11.8", "nppiDistanceTransformPBAGetAntialiasingBufferSize": "11.8",
    "nppiSignedDistanceTransformPBAGetBufferSize": "11.8", "nppiSignedDistanceTransformPBAGet64fBufferSize": "11.8",
    "nppiSignedDistanceTransformPBAGetAntialiasingBufferSize": "11.8",
}
COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def wheel_dir() -> Path:
    import nvidia  # the namespace package of the CUDA wheels

    for base in nvidia.__path__:
        d = Path(base) / "cu13"
        if (d / "include" / "npp.h").is_file():
            return d
    sys.exit("nvidia-npp (13.0) is not installed: pip install 'nvidia-npp==13.0.1.2'")


def exported(lib_dir: Path) -> set[str]:
    names: set[str] = set()
    for so in sorted(lib_dir.glob("libnpp*.so.13")):
        out = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "T":
                names.add(parts[2].split("@")[0])
    return names


def removed_names(d: Path) -> list[str]:
    declared: set[str] = set()
    for h in sorted((d / "include").glob("npp*.h")):
        declared |= set(PROTO.findall(COMMENTS.sub(" ", h.read_text(encoding="utf-8", errors="replace"))))
    libs = exported(d / "lib")
    if not any(n.endswith("_Ctx") for n in libs):
        sys.exit(f"no _Ctx symbols exported from {d / 'lib'}: not the 13.0 NPP libraries")
    out = []
    for c in sorted(declared):
        n = c[: -len("_Ctx")]
        if c.endswith("_Ctx") and n not in libs:
            # `none`: the _Ctx twin is declared but not exported either (nppiSub_32s_C4RSfs): no replacement links
            out.append(f"{n} {'none' if c not in libs else 'link' if n in declared else 'compile'}")
    return out


def headers_text(d: Path) -> str:
    return "\n".join(COMMENTS.sub(" ", h.read_text(encoding="utf-8", errors="replace"))
                     for h in sorted((d / "include").glob("npp*.h")))


def size_t_out_params(d: Path) -> list[str]:
    """`name index parameter` for every `size_t *` parameter of a 13.0 NPP prototype."""
    text = headers_text(d)
    found: dict[str, tuple[int, str]] = {}
    for m in PROTO_PARAMS.finditer(text):
        params = [" ".join(p.split()) for p in m.group(2).split(",")]
        for i, p in enumerate(params):
            pm = SIZE_T_PTR.match(p)
            if pm:
                found[m.group(1)] = (i, pm.group(1))
    declared = set(PROTO.findall(text))
    for name, how in (ln.split() for ln in removed_names(d)):
        if how == "compile" and name not in declared and name + "_Ctx" in found:
            found[name] = found[name + "_Ctx"]
    def since(n: str) -> str:
        base = n[: -len("_Ctx")] if n.endswith("_Ctx") else n
        return SIZE_T_SINCE.get(base, SIZE_T_SINCE_DEFAULT)
    return [f"{n} {i} {p} {since(n)}" for n, (i, p) in sorted(found.items())]


def render_sizes(rows: list[str]) -> str:
    head = ("# NPP functions whose CUDA 13.0 prototype takes `size_t *` (nvidia-npp 13.0.1.2 headers): name, 0-based\n"
            "# parameter index, parameter name, CUDA release since which it is size_t *. Written by scripts/gen_npp_data.py; do not edit.\n")
    return head + "".join(r + "\n" for r in rows)


def render(names: list[str]) -> str:
    head = ("# NPP functions removed in CUDA 13.0: a _Ctx twin is declared, the name is no longer exported by libnpp*.so.13.\n"
            "# `link`: still declared (fails to link); `compile`: undeclared; `none`: the _Ctx twin is not exported either.\n"
            "# Written by scripts/gen_npp_data.py; do not edit.\n")
    return head + "".join(n + "\n" for n in names)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    d = wheel_dir()
    outputs = [(OUT, render(removed_names(d))), (OUT_SIZES, render_sizes(size_t_out_params(d)))]
    if args.check:
        stale = [p for p, text in outputs if not p.is_file() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"{p} is stale; run scripts/gen_npp_data.py", file=sys.stderr)
        return 1 if stale else 0
    for p, text in outputs:
        p.write_text(text, encoding="utf-8")
        print(f"wrote {sum(1 for ln in text.splitlines() if not ln.startswith('#'))} lines to {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
