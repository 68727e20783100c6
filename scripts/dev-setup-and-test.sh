#!/usr/bin/env bash
# Everything the tests need, then the tests: the README's second command, and what CI runs (.ci/run calls it).
#   1. a virtual environment ($VENV, default .venv in the checkout) with the package, its test extras and the
#      CUDA 13.0-matched cuBLAS/NVRTC/cuFFT/NPP/cuSPARSE/cuSOLVER/cuRAND/nvJPEG/nvJitLink/nvFatbin wheels (headers +
#      libraries nvcc needs for the fixtures, headers the API inventory is built from) and the 12.x wheels' headers;
#   2. the Debian packages in .ci/apt-packages (headless Chromium for the report tests), through apt-get (with
#      sudo when not root) where apt-get exists; semantic mode's libclang and resource headers come from the
#      libclang-ng wheel among the package's dependencies (the old `libclang` wheel is removed: both are `clang`);
#   3. ruff and mypy on the package, `cudamigrate selftest --gpu` (one line and exit 0 without a GPU), then the test suite.
# It fails if nvcc is on PATH but the nvcc tests were skipped, or if the semantic-mode tests were skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# The old `libclang` wheel and libclang-ng both install the `clang` package: remove the old one, and when it was
# there, reinstall libclang-ng's files (uninstalling libclang deletes the clang/*.py files the two share).
had_old_libclang=0
python -m pip show -q libclang >/dev/null 2>&1 && { had_old_libclang=1; python -m pip uninstall -q -y libclang; }
python -m pip install -q '.[test]' 'nvidia-cublas==13.0.2.14' 'nvidia-cuda-nvrtc==13.0.88' 'nvidia-cufft==12.0.0.61' 'nvidia-npp==13.0.1.2' 'nvidia-cusparse==12.6.3.3' \
  'nvidia-cusolver==12.0.4.66' 'nvidia-curand==10.4.0.35' 'nvidia-nvjpeg==13.0.1.86' 'nvidia-nvjitlink==13.0.88' 'nvidia-nvfatbin==13.0.85'
if [ "$had_old_libclang" = 1 ]; then
  python -m pip install -q --force-reinstall --no-deps "libclang-ng==$(python -c 'import importlib.metadata as m; print(m.version("libclang-ng"))')"
fi
# The last 12.x wheels' headers (pip download, include/ kept, ~/.cache/cudamigrate/inventory-headers), which
# scripts/build_api_inventory.py compares with 13.0: tests/test_api_inventory.py checks the shipped inventory against them.
python scripts/build_api_inventory.py --fetch-only

if [ -f .ci/apt-packages ] && command -v apt-get >/dev/null 2>&1; then
  pkgs=$(grep -v '^#' .ci/apt-packages | xargs || true)
  missing=$(for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"; done | xargs || true)
  if [ -n "$missing" ]; then
    SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    ($SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing) >/tmp/cudamigrate-apt.log 2>&1 \
      || { echo "apt-get install $missing failed:"; tail -20 /tmp/cudamigrate-apt.log; exit 1; }
  fi
fi

# Lint and type-check the package (settings in pyproject.toml; ruff and mypy are pinned in the test extras).
ruff check cudamigrate
mypy cudamigrate

# GPU stage: one line and exit 0 without a GPU; with one, every gpu.run fixture must build, run and match.
python -m cudamigrate selftest --gpu --out "$(mktemp -d)"

LOG=$(mktemp)
set +e
# --- the test command ---
python -m pytest -n auto -rs --durations=15 "$@" 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
bash scripts/check-test-log.sh "$LOG"
