#!/usr/bin/env bash
# Compile-verified fix on a many-core machine with nvcc 13.0 and no network (bench/verify_fix.py): fix
# --unsafe-fixes of all of cuda-samples v11.8 with --no-verify and with default verification, then the build's
# units rechecked in the original and both fixed copies. Writes $OUT/verify-v11.8.txt (the figures: compiles per
# unit reached, wall times, units building after each, lost, worse), .json and .log.
# Carried (scripts/recall_prepare.sh, scripts/fetch_device_wheels.sh): .recall/v11.8 .recall/include .whl
# Usage (repository root): OUT=dir bash scripts/device_verify_fix.sh   (about 5 minutes on 16 cores)
set -uo pipefail
SETUP_ONLY=1 source "$(dirname "$0")/device_run.sh"
export CUDAMIGRATE_WHEEL_INCLUDE=$ROOT/.recall/include
J=${J:-$(nproc)}
T0=$(date +%s)
# shellcheck disable=SC2086
"$PY" bench/verify_fix.py .recall/v11.8 ${EXTRA:-} --jobs "$J" --recheck --work "$ROOT/.recall-work/verify" \
  --json "$OUT/verify-v11.8.json" >"$OUT/verify-v11.8.txt" 2>"$OUT/verify-v11.8.log"
echo "verify-v11.8: rc=$? $(( $(date +%s) - T0 ))s" | tee -a "$OUT/status.txt"
head -20 "$OUT/verify-v11.8.txt"
