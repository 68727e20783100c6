#!/usr/bin/env bash
# Issue 33's speed figures on the GPU machine's cores, this checkout against ast-grep (and, with BASE, another
# checkout side by side in the same call, each tree's bench run from its own root):
#   vs_astgrep.txt      bench/vs_astgrep.py TREE --runs $RUNS --jobs $JOBS: cold scans at -j JOBS and -j 1 against
#                       ast-grep's default threads and --threads 1, each tool's parallel CPU over one worker, one file,
#                       one new file (result cache warm), --version
#   phases.txt          bench/parallel_phases.py TREE --jobs $JOBS: where the CPU of -j JOBS over -j 1 goes
#   lsp.txt             bench/lsp_latency.py FILE (in-process warm diagnostics) and --lsp FILE (through the server)
#   one_file.txt        the one-new-file run's start-up: -X importtime's largest imports and how long nvidia-smi and
#                       nvcc --version take here (the calibration lookup and the default target ask them per run)
#   base-*.txt          the same from BASE's checkout (BASE=/path/to/checkout), when given
# Python dependencies and nvcc come from scripts/device_run.sh's set-up (SETUP_ONLY=1); ast-grep from
# .whl/ast_grep_cli-*.whl (unpacked), else the one on PATH.
#
# Usage (repository root): OUT=/some/dir [TREE=.recall/v11.8] [JOBS=16] [RUNS=5] [BASE=dir] bash scripts/device_speed.sh
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/.device-out}
TREE=$(readlink -f "${TREE:-.recall/v11.8}")
JOBS=${JOBS:-16}
RUNS=${RUNS:-5}
mkdir -p "$OUT"
SETUP_ONLY=1 source scripts/device_run.sh >"$OUT/setup.log" 2>&1 || { cat "$OUT/setup.log"; exit 3; }
SG=""
if ls .whl/ast_grep_cli-*.whl >/dev/null 2>&1; then
  mkdir -p "$DEPS/astgrep" && "$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$(ls .whl/ast_grep_cli-*.whl | head -1)" "$DEPS/astgrep"
  SG=$(find "$DEPS/astgrep" -path '*scripts/ast-grep' | head -1)  # (the wheel's `sg` is a launcher that looks for it on PATH)
  [ -n "$SG" ] && chmod +x "$SG"
fi
[ -n "$SG" ] || SG=$(command -v ast-grep || true)  # (not `sg`: on many systems that is shadow-utils' switch-group)
[ -n "$SG" ] || { echo "ast-grep not found (.whl/ast_grep_cli-*.whl or PATH)" | tee "$OUT/status.txt"; exit 3; }
LSPFILE=$(find "$TREE" -name vulkanImageCUDA.cu | head -1)
[ -n "$LSPFILE" ] && head -1700 "$LSPFILE" >"$OUT/lsp-1700.cu"

bench() {  # $1: checkout, $2: prefix of the output files
  local T=$1 P=$2
  ( cd "$T" && export PYTHONPATH="$T${PYTHONPATH:+:$PYTHONPATH}"
    timeout 400 "$PY" bench/vs_astgrep.py "$TREE" --runs "$RUNS" --jobs "$JOBS" --ast-grep "$SG" >"$OUT/${P}vs_astgrep.txt" 2>&1
    [ -f bench/parallel_phases.py ] && timeout 200 "$PY" bench/parallel_phases.py "$TREE" --jobs "$JOBS" --runs 3 \
      >"$OUT/${P}phases.txt" 2>&1
    if [ -f "$OUT/lsp-1700.cu" ]; then
      { timeout 120 "$PY" bench/lsp_latency.py "$OUT/lsp-1700.cu"; timeout 120 "$PY" bench/lsp_latency.py --lsp "$OUT/lsp-1700.cu"; } \
        >"$OUT/${P}lsp.txt" 2>&1
    fi
    NEW=$(mktemp -d)/simpleStreams.cu
    cp "$(find "$TREE" -name simpleStreams.cu | head -1)" "$NEW"
    export CUDAMIGRATE_CACHE_DIR=$(mktemp -d)
    "$PY" -P -m cudamigrate scan --no-semantic --exit-zero "$NEW" >/dev/null 2>&1  # the caches exist
    echo "// new" >>"$NEW"
    { "$PY" -P -X importtime -m cudamigrate scan --no-semantic --exit-zero --format json "$NEW" 2>&1 >/dev/null \
        | sort -t'|' -k2 -n | tail -25
      "$PY" - <<'PYEOF'
import shutil, statistics, subprocess, time
for cmd in (["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], ["nvcc", "--version"]):
    exe = shutil.which(cmd[0])
    if exe is None:
        print(f"{cmd[0]}: not found"); continue
    ts = []
    for _ in range(5):
        t = time.perf_counter(); subprocess.run([exe, *cmd[1:]], capture_output=True); ts.append(time.perf_counter() - t)
    print(f"{' '.join(cmd)}: median {1000 * statistics.median(ts):.1f} ms wall of 5")
PYEOF
    } >"$OUT/${P}one_file.txt" 2>&1 )
}
bench "$ROOT" ""
[ -n "${BASE:-}" ] && bench "$(readlink -f "$BASE")" "base-"
grep -h -A14 "^| work" "$OUT"/*vs_astgrep.txt; grep -h "parallel CPU" "$OUT"/*vs_astgrep.txt "$OUT"/*phases.txt
tail -n 30 "$OUT/phases.txt"; cat "$OUT/lsp.txt" 2>/dev/null; tail -n 3 "$OUT/one_file.txt"
