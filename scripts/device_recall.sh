#!/usr/bin/env bash
# Compile recall (bench/compile_recall.py) on a many-core machine with nvcc 13.0 and no network.
# Carried (scripts/recall_prepare.sh, scripts/fetch_device_wheels.sh): .recall/v11.8 .recall/v13.0
# .recall/include .whl, and the other trees recall_prepare.sh copied (.recall/cudahandbook, .recall/parboil).
# Compile results are cached in .recall-cache (not carried, so it survives between
# calls on a warm machine): a run cut by its budget continues where it stopped when called again.
#
# Usage (repository root): OUT=dir bash scripts/device_recall.sh [STEP ...]
#   STEP: v11.8 (default), v11.8-fixed (after `fix --unsafe-fixes`; also counts compile regressions),
#         v13.0, fixtures, examples, or NAME / NAME-fixed for any tree .recall/NAME (cudahandbook, parboil).
#         Each writes $OUT/recall-STEP.md, .json, .log.
# BUDGET (minutes of compiling per step, default 7) keeps one call under the 10-minute limit; EXTRA adds
# arguments of bench/compile_recall.py (e.g. EXTRA="--only Samples/1_Utilities/deviceQuery" for a smoke run).
# SYNTAX=1 passes --syntax-only (the host compiler emits no object; device compilation still runs).
# NVCC_RELEASE=13.5 compiles with that release's nvcc from NVIDIA's wheels instead of the device's toolkit:
# .recall/nvcc-13.5.tar.xz (scripts/pack_pip_toolkit.sh 13.5) is unpacked once into .recall-toolkits (kept on
# a warm machine, so a later call need not carry it again), and scan and fix get --target-cuda 13.5.
set -uo pipefail
SETUP_ONLY=1 source "$(dirname "$0")/device_run.sh"
export CUDAMIGRATE_WHEEL_INCLUDE=$ROOT/.recall/include
CACHE=$ROOT/.recall-cache
J=${J:-$(nproc)}
BUDGET=${BUDGET:-7}
REL_ARGS=()
if [ -n "${NVCC_RELEASE:-}" ]; then
  export CUDAMIGRATE_TOOLKITS=$ROOT/.recall-toolkits
  if [ ! -x "$CUDAMIGRATE_TOOLKITS/$NVCC_RELEASE/nvidia/cu13/bin/nvcc" ]; then
    [ -f "$ROOT/.recall/nvcc-$NVCC_RELEASE.tar.xz" ] || { echo "no .recall/nvcc-$NVCC_RELEASE.tar.xz to unpack" >&2; exit 2; }
    mkdir -p "$CUDAMIGRATE_TOOLKITS/$NVCC_RELEASE"
    "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$ROOT/.recall/nvcc-$NVCC_RELEASE.tar.xz" "$CUDAMIGRATE_TOOLKITS/$NVCC_RELEASE"   # no xz binary needed
  fi
  "$CUDAMIGRATE_TOOLKITS/$NVCC_RELEASE/nvidia/cu13/bin/nvcc" --version | tail -2 | tee -a "$OUT/status.txt"
  CACHE=$ROOT/.recall-cache-$NVCC_RELEASE
  REL_ARGS=(--nvcc-release "$NVCC_RELEASE" --scan-args "--target-cuda $NVCC_RELEASE"
            --fix-args "--unsafe-fixes --target-cuda $NVCC_RELEASE")
fi
[ "${SYNTAX:-0}" = 1 ] && REL_ARGS+=(--syntax-only)
[ $# -gt 0 ] || set -- v11.8
for step in "$@"; do
  case $step in
    fixtures) args=(fixtures) ;;
    examples) args=(examples/legacy-app) ;;
    *-fixed) args=(".recall/${step%-fixed}" --fixed --work "$ROOT/.recall-work") ;;
    *) args=(".recall/$step") ;;
  esac
  [ -d "${args[0]}" ] || { echo "unknown step $step (no ${args[0]})" >&2; exit 2; }
  T0=$(date +%s)
  # shellcheck disable=SC2086
  "$PY" bench/compile_recall.py "${args[@]}" "${REL_ARGS[@]}" ${EXTRA:-} -j "$J" --cache "$CACHE" \
    --budget-minutes "$BUDGET" --json "$OUT/recall-$step.json" >"$OUT/recall-$step.md" 2>"$OUT/recall-$step.log"
  echo "$step: rc=$? $(( $(date +%s) - T0 ))s" | tee -a "$OUT/status.txt"
  head -12 "$OUT/recall-$step.md"
done
