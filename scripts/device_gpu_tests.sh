#!/usr/bin/env bash
# The GPU pytest stage on a bare GPU machine without network: the tests marked `gpu` (programs fixed by
# `cudamigrate fix` built and run, their output compared), which CI skips for want of a GPU.
# Carried: .whl (scripts/fetch_device_wheels.sh, plus pytest, pluggy, iniconfig and packaging wheels).
# Usage (repository root): OUT=dir bash scripts/device_gpu_tests.sh    Writes $OUT/gpu-pytest.log.
set -uo pipefail
SETUP_ONLY=1 source "$(dirname "$0")/device_run.sh"
PT=$(mktemp -d)
"$PY" -m pip install -q --no-index --no-deps --target "$PT" .whl/pytest-*.whl .whl/pluggy-*.whl .whl/iniconfig-*.whl \
  .whl/packaging-*.whl >/dev/null 2>&1 || unpack_wheels ".whl/pytest-*.whl" ".whl/pluggy-*.whl" ".whl/iniconfig-*.whl" \
  ".whl/packaging-*.whl" >/dev/null
[ -d "$PT/pytest" ] || PT=$DEPS
PYTHONPATH="$PT:$PYTHONPATH" timeout "${BUDGET:-240}" "$PY" -m pytest -p no:cacheprovider -q -rs -m gpu \
  $(grep -l "mark.gpu" tests/test_*.py) >"$OUT/gpu-pytest.log" 2>&1
rc=$?
echo "gpu-pytest: rc=$rc" | tee -a "$OUT/status.txt"
tail -15 "$OUT/gpu-pytest.log"
exit $rc
