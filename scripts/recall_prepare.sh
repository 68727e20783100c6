#!/usr/bin/env bash
# Prepare what scripts/device_recall.sh needs on a machine without network, under .recall/ (git-ignored):
#   .recall/v11.8, .recall/v13.0   the C/C++/CUDA sources of the cuda-samples checkouts (no data files: ~11 MiB each)
#   .recall/include                the 13.0-matched wheel headers (nvidia/cu13/include of this venv, ~7 MiB), plus
#                                  the cuSOLVER and cuRAND wheel headers when WITH_SOLVER=1 (pip download, headers kept)
#   .recall/cudahandbook, .recall/parboil  the same of two more legacy code bases, when HANDBOOK / PARBOIL name a
#                                  checkout (`git -C /work/.mirror/abduld+Parboil/repo archive HEAD | tar -x -C DIR`)
# Usage (repository root): V11=/work/oracle/v11.8 V13=/work/oracle/v13.0 [HANDBOOK=dir] [PARBOIL=dir]
#                          [WITH_SOLVER=1] bash scripts/recall_prepare.sh
# Then carry: .recall/v11.8 .recall/v13.0 .recall/include .whl (scripts/fetch_device_wheels.sh), and for another
# release's compiler .recall/nvcc-13.5.tar.xz (scripts/pack_pip_toolkit.sh 13.5) in a call of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
V11=${V11:-/work/oracle/v11.8}
V13=${V13:-/work/oracle/v13.0}
PY=${PY:-python3}
mkdir -p .recall
TREES=("$V11" .recall/v11.8 "$V13" .recall/v13.0)
[ -n "${HANDBOOK:-}" ] && TREES+=("$HANDBOOK" .recall/cudahandbook)
[ -n "${PARBOIL:-}" ] && TREES+=("$PARBOIL" .recall/parboil)
"$PY" - "${TREES[@]}" <<'PYEOF'
import shutil, sys
from pathlib import Path
EXTS = {".cu", ".cuh", ".cpp", ".c", ".cc", ".cxx", ".h", ".hpp", ".hh", ".hxx", ".inl"}
args = sys.argv[1:]
for src, dst in zip(args[::2], args[1::2]):
    src, dst = Path(src), Path(dst)
    if dst.exists():
        shutil.rmtree(dst)
    n = 0
    for p in src.rglob("*"):
        if p.is_file() and p.suffix in EXTS and ".git" not in p.relative_to(src).parts:
            q = dst / p.relative_to(src)
            q.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, q)
            n += 1
    print(f"{dst}: {n} source files")
PYEOF
INC=$("$PY" -c 'from cudamigrate.toolcheck.build import wheel_root; r = wheel_root(); print(r / "include" if r else "")')
[ -n "$INC" ] || { echo "no nvidia/cu13 wheel headers in this interpreter" >&2; exit 3; }
rm -rf .recall/include && mkdir -p .recall/include && cp -r "$INC"/. .recall/include/
if [ "${WITH_SOLVER:-0}" = 1 ]; then
  T=$(mktemp -d)
  "$PY" -m pip download -q --no-deps -d "$T" nvidia-cusolver==12.0.4.66 nvidia-curand==10.4.0.35
  for w in "$T"/*.whl; do "$PY" -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1]); p = "nvidia/cu13/include/"
for n in z.namelist():
    if n.startswith(p) and not n.endswith("/"):
        open(sys.argv[2] + "/" + n[len(p):], "wb").write(z.read(n))' "$w" .recall/include; done
  rm -rf "$T"
fi
du -sh .recall/* | sed 's/^/  /'
