#!/usr/bin/env bash
# Compile recall (bench/compile_recall.py) on a many-core machine with nvcc 13.0 and no network.
# Carried (scripts/recall_prepare.sh, scripts/fetch_device_wheels.sh): .recall/v11.8 .recall/v13.0
# .recall/include .whl. Compile results are cached in .recall-cache (not carried, so it survives between
# calls on a warm machine): a run cut by its budget continues where it stopped when called again.
#
# Usage (repository root): OUT=dir bash scripts/device_recall.sh [STEP ...]
#   STEP: v11.8 (default), v11.8-fixed (after `fix --unsafe-fixes`; also counts compile regressions),
#         v13.0, fixtures, examples.  Each writes $OUT/recall-STEP.md, .json, .log.
# BUDGET (minutes of compiling per step, default 7) keeps one call under the 10-minute limit; EXTRA adds
# arguments of bench/compile_recall.py (e.g. EXTRA="--only Samples/1_Utilities/deviceQuery" for a smoke run).
set -uo pipefail
SETUP_ONLY=1 source "$(dirname "$0")/device_run.sh"
export CUDAMIGRATE_WHEEL_INCLUDE=$ROOT/.recall/include
CACHE=$ROOT/.recall-cache
J=${J:-$(nproc)}
BUDGET=${BUDGET:-7}
[ $# -gt 0 ] || set -- v11.8
for step in "$@"; do
  case $step in
    v11.8) args=(.recall/v11.8) ;;
    v11.8-fixed) args=(.recall/v11.8 --fixed --work "$ROOT/.recall-work") ;;
    v13.0) args=(.recall/v13.0) ;;
    fixtures) args=(fixtures) ;;
    examples) args=(examples/legacy-app) ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
  T0=$(date +%s)
  # shellcheck disable=SC2086
  "$PY" bench/compile_recall.py "${args[@]}" ${EXTRA:-} -j "$J" --cache "$CACHE" --budget-minutes "$BUDGET" \
    --json "$OUT/recall-$step.json" >"$OUT/recall-$step.md" 2>"$OUT/recall-$step.log"
  echo "$step: rc=$? $(( $(date +%s) - T0 ))s" | tee -a "$OUT/status.txt"
  head -12 "$OUT/recall-$step.md"
done
