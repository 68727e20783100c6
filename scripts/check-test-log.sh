#!/usr/bin/env bash
# The CI guards on a pytest log (`pytest -rs` output): a green run that skipped what this machine can run is
# a failure. Exit 1 if nvcc is on PATH but the nvcc tests were skipped or nothing passed, or if the
# semantic-mode (libclang) tests, the fresh-venv install test or, with the CUDA 13.0 toolkit present, the API inventory check were skipped. Used by scripts/dev-setup-and-test.sh (and so by .ci/run).
set -euo pipefail
LOG=${1:?usage: check-test-log.sh PYTEST_LOG}
if command -v nvcc >/dev/null 2>&1 && grep -q "nvcc not on PATH" "$LOG"; then
  echo "CI: nvcc is on PATH but nvcc tests were skipped" >&2
  exit 1
fi
if command -v nvcc >/dev/null 2>&1 && ! grep -Eq "[0-9]+ passed" "$LOG"; then
  echo "CI: no passing tests reported" >&2
  exit 1
fi
if grep -q "libclang semantic mode unavailable" "$LOG"; then
  echo "CI: semantic-mode tests were skipped (the libclang-ng wheel from pyproject.toml missing, or shadowed by the libclang wheel?)" >&2
  exit 1
fi
if grep -q "package index not reachable" "$LOG"; then
  echo "CI: the fresh-venv install test was skipped (tests/test_fresh_install.py could not reach the package index)" >&2
  exit 1
fi
if grep -q "needs the nvidia-npp 13.0 wheel" "$LOG"; then
  echo "CI: the NPP data check was skipped (the nvidia-npp wheel this script installs is missing?)" >&2
  exit 1
fi
if [ -d /usr/local/cuda-13.0/include ] && grep -q "test_api_inventory.py.*SKIPPED\|SKIPPED.*test_api_inventory.py" "$LOG"; then
  echo "CI: the API inventory regeneration check was skipped (13.0 wheels or the 12.x headers from scripts/build_api_inventory.py --fetch-only missing?)" >&2
  exit 1
fi
