#!/usr/bin/env bash
# GPU stage on a bare GPU machine without network: installs nothing system-wide, runs
#   cudamigrate selftest --gpu   (every gpu.run fixture: original and fixed program built, run, compared)
#   cudamigrate calibrate        (bench/gpu/*.cu: measured costs of the performance rules on this GPU)
# and writes everything to $OUT:
#   env.txt            nvidia-smi, nvcc, python, where cuBLAS/NVRTC came from
#   selftest.txt       the table;  selftest.json  per-case results;  selftest.log  progress/stderr
#   outputs/<case>/    every program's full stdout;  expected/<family>/<case>/expected.txt  outputs recorded
#                      for cases that compare with an expected.txt not written yet (review, then
#                      `cp -r $OUT/expected/. fixtures/`)
#   calibration.json   the calibration entry for this GPU (copy into cudamigrate/calibration.json)
#   calibrate.log      benchmark progress; status.txt  exit codes of both stages
#
# Python dependencies: an interpreter that already has them, else the wheels carried in .whl/
# (scripts/fetch_device_wheels.sh), installed with pip --target, or unpacked directly when pip is missing.
# cuBLAS/NVRTC: the toolkit's own (include/cublas_v2.h), else any site-packages/nvidia/cu13, else
# nvidia_cublas/nvidia_cuda_nvrtc wheels from .whl/; without them the cases that need them are skipped.
#
# Usage (repository root): OUT=/some/dir bash scripts/device_run.sh      Total budget: under 10 minutes.
# SKIP_CALIBRATE=1 runs only the selftest.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/.device-out}
mkdir -p "$OUT"
ENVF=$OUT/env.txt
: >"$ENVF"
note() { echo "$*" | tee -a "$ENVF" >&2; }
START=$(date +%s)
export PYTHONUNBUFFERED=1

# ---- nvcc
if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13*/bin /opt/cuda/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
command -v nvcc >/dev/null 2>&1 || { note "nvcc not found (PATH, /usr/local/cuda*/bin)"; exit 3; }
note "nvcc: $(command -v nvcc) ($(nvcc --version | grep -o 'release [0-9.]*, V[0-9.]*'))"
note "$(nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv 2>&1)"

# ---- python >= 3.10
PY=""
for c in python3 python3.13 python3.12 python3.11 python3.10; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then PY=$(command -v "$c"); break; fi
done
[ -n "$PY" ] || { note "no python >= 3.10 found"; exit 3; }
note "python: $PY $("$PY" -V 2>&1)"

DEPS=$ROOT/.pydeps
export PYTHONPATH="$DEPS:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
have_deps() { "$PY" -c 'import tree_sitter, tree_sitter_cuda, tree_sitter_cpp, yaml, click, jinja2, markupsafe, pathspec, re2' 2>/dev/null; }
unpack_wheels() {  # unzip the wheels for this interpreter (no pip needed); $1: glob of names
  "$PY" - "$DEPS" "$@" <<'PYEOF'
import glob, re, sys, zipfile
dest, pats = sys.argv[1], sys.argv[2:]
minor = sys.version_info[1]
def ok(tag):
    py, abi = tag.split("-")[:2]
    for t in py.split("."):
        if t.startswith("py3") or t == f"cp3{minor}":
            return True
        m = re.fullmatch(r"cp3(\d+)", t)
        if m and abi == "abi3" and int(m.group(1)) <= minor:
            return True
    return False
for pat in pats:
    for w in sorted(glob.glob(pat)):
        parts = w[:-4].split("-")
        if ok("-".join(parts[-3:-1])) and ("x86_64" in parts[-1] or parts[-1] == "any"):
            zipfile.ZipFile(w).extractall(dest)
            print("unpacked", w)
PYEOF
}
if have_deps; then
  note "python deps: already importable"
elif [ -d .whl ]; then
  mkdir -p "$DEPS"
  if "$PY" -m pip --version >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --find-links .whl --target "$DEPS" \
      tree-sitter tree-sitter-cuda tree-sitter-cpp click jinja2 markupsafe pyyaml pathspec google-re2 >>"$ENVF" 2>&1 || true
  fi
  have_deps || unpack_wheels ".whl/tree_sitter-*.whl" ".whl/tree_sitter_cuda-*.whl" ".whl/tree_sitter_cpp-*.whl" \
    ".whl/click-*.whl" ".whl/jinja2-*.whl" ".whl/markupsafe-*.whl" ".whl/pyyaml-*.whl" ".whl/PyYAML-*.whl" \
    ".whl/pathspec-*.whl" ".whl/google_re2-*.whl" >>"$ENVF" 2>&1
  have_deps && note "python deps: from .whl" || { note "python deps missing (carry .whl/)"; "$PY" -c 'import tree_sitter, yaml, click, jinja2, pathspec' 2>&1 | tee -a "$ENVF"; exit 3; }
else
  note "python deps missing and no .whl/ carried"; exit 3
fi
# the editor server's (cudamigrate server, bench/lsp_latency.py --lsp): pure-Python wheels, unpacked when missing
if ! "$PY" -c 'import pygls, lsprotocol' 2>/dev/null && [ -d .whl ]; then
  mkdir -p "$DEPS" && unpack_wheels ".whl/pygls-*.whl" ".whl/lsprotocol-*.whl" ".whl/cattrs-*.whl" ".whl/attrs-*.whl" \
    ".whl/typing_extensions-*.whl" >>"$ENVF" 2>&1
  "$PY" -c 'import pygls, lsprotocol' 2>/dev/null && note "server deps: from .whl" || note "server deps missing (carry .whl/)"
fi

# ---- cuBLAS / NVRTC
CUDA_HOME=$("$PY" -c 'from cudamigrate.toolcheck.build import cuda_home; print(cuda_home() or "")')  # follows wrapper scripts
[ -n "$CUDA_HOME" ] || CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
export CUDA_HOME
note "toolkit: $CUDA_HOME"
if [ -f "$CUDA_HOME/include/cublas_v2.h" ] && [ -f "$CUDA_HOME/include/nvrtc.h" ]; then
  note "cuBLAS/NVRTC: toolkit $CUDA_HOME"
else
  NV=""
  for base in $("$PY" -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()] + [p for p in sys.path if p.endswith("-packages")]))' 2>/dev/null) \
              /usr/lib/python3*/*-packages /usr/local/lib/python3*/*-packages /opt/*/lib/python3*/site-packages \
              /opt/conda/lib/python3*/site-packages /root/.local/lib/python3*/site-packages; do
    if [ -f "$base/nvidia/cu13/include/cublas_v2.h" ]; then NV=$base/nvidia/cu13; break; fi
  done
  if [ -z "$NV" ] && ls .whl/nvidia_cublas-*.whl >/dev/null 2>&1; then
    mkdir -p "$DEPS" && unpack_wheels ".whl/nvidia_cublas-*.whl" ".whl/nvidia_cuda_nvrtc-*.whl" >>"$ENVF" 2>&1
    [ -f "$DEPS/nvidia/cu13/include/cublas_v2.h" ] && NV=$DEPS/nvidia/cu13
  fi
  # NVRTC alone, carried as .whl/nvrtc-cu13-min.tar.xz (fetch_device_wheels.sh WITH_NVRTC=1)
  if [ -f .whl/nvrtc-cu13-min.tar.xz ] && [ ! -f "$CUDA_HOME/include/nvrtc.h" ] && { [ -z "$NV" ] || [ ! -f "$NV/include/nvrtc.h" ]; }; then
    if [ -n "$NV" ] && [ -w "$NV" ]; then tar xJf .whl/nvrtc-cu13-min.tar.xz -C "$NV/../.." ; else
      mkdir -p "$DEPS" && tar xJf .whl/nvrtc-cu13-min.tar.xz -C "$DEPS"
      [ -z "$NV" ] && NV=$DEPS/nvidia/cu13
    fi
    note "NVRTC: unpacked from .whl/nvrtc-cu13-min.tar.xz"
  fi
  if [ -n "$NV" ]; then
    export CUDAMIGRATE_NVIDIA_ROOT=$NV
    note "cuBLAS/NVRTC: $NV"
  else
    note "cuBLAS/NVRTC: not found; cases and benchmarks that need them are skipped"
  fi
fi
export LD_LIBRARY_PATH="${CUDAMIGRATE_NVIDIA_ROOT:+$CUDAMIGRATE_NVIDIA_ROOT/lib:}$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
note "setup took $(( $(date +%s) - START ))s"
# `SETUP_ONLY=1 source scripts/device_run.sh` stops here with PY, PYTHONPATH and CUDA_HOME set (device_recall.sh)
if [ "${SETUP_ONLY:-0}" = 1 ]; then return 0 2>/dev/null || exit 0; fi

# ---- the two stages (the calibration runs first: it is the one whose figures need a quiet GPU)
# Budgets keep the whole run under 10 minutes and make both commands write their results before the limit.
CAL=skipped
if [ "${SKIP_CALIBRATE:-0}" != 1 ]; then
  timeout 230 "$PY" -m cudamigrate calibrate --out "$OUT/calibration.json" --timeout 90 --budget 200 2>"$OUT/calibrate.log"
  CAL=$?
fi
timeout 330 "$PY" -m cudamigrate selftest --gpu --out "$OUT" --timeout 60 --budget 300 --record-expected >"$OUT/selftest.stdout" 2>"$OUT/selftest.log"
ST=$?
printf 'calibrate=%s selftest=%s seconds=%s\n' "$CAL" "$ST" "$(( $(date +%s) - START ))" | tee "$OUT/status.txt"
cat "$OUT/selftest.txt" 2>/dev/null || tail -40 "$OUT/selftest.log"
[ -f "$OUT/calibrate.log" ] && tail -15 "$OUT/calibrate.log"
{ [ "$CAL" = 0 ] || [ "$CAL" = skipped ]; } && [ "$ST" = 0 ]
