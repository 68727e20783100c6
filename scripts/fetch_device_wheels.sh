#!/usr/bin/env bash
# Download the wheels the GPU stage needs on a machine without network into .whl/ (carried to the device).
#
#   scripts/fetch_device_wheels.sh            # runtime deps for CPython 3.12 (+ 3.10/3.11/3.13 binaries)
#   WITH_NVRTC=1 scripts/fetch_device_wheels.sh         # + .whl/nvrtc-cu13-min.tar.xz (~31 MiB): nvrtc.h,
#                                                       #   libnvrtc.so.13, libnvrtc-builtins.so.13.0 only
#   WITH_CUDA_WHEELS=1 scripts/fetch_device_wheels.sh   # the full nvidia-cublas / nvidia-cuda-nvrtc wheels (~0.5 GB!)
#
# The runtime dependencies are small (~5 MiB). nvidia-cublas (about 400 MiB) and nvidia-cuda-nvrtc (about
# 90 MiB) do not fit a 64 MiB carry: scripts/device_run.sh first looks for cuBLAS/NVRTC in the device's
# toolkit (/usr/local/cuda*/include/cublas_v2.h) or in any Python's site-packages/nvidia/cu13, and only
# installs them from .whl/ when they are there. libclang (semantic mode only) is not needed by the GPU stage.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${DEST:-.whl}
PYVERS=${PYVERS:-"3.12 3.10 3.11 3.13"}
mkdir -p "$DEST"
# name==version: the versions this repository is tested with (pyproject.toml bounds)
PKGS=(
  "tree-sitter==0.26.1"
  "tree-sitter-cuda==0.21.2"
  "tree-sitter-cpp==0.23.4"
  "click==8.5.1"
  "jinja2==3.1.6"
  "markupsafe==3.0.4"
  "pyyaml==6.0.4"
  "pathspec==1.1.1"
  "google-re2==1.1.20251105"
  # the editor server (bench/lsp_latency.py --lsp, the server tests)
  "pygls==2.1.1"
  "lsprotocol==2025.0.0"
  "cattrs==26.2.1"
  "attrs==26.1.0"
  "typing-extensions==4.16.0"
)
if [ "${WITH_CUDA_WHEELS:-0}" = 1 ]; then
  PKGS+=("nvidia-cublas==13.0.2.14" "nvidia-cuda-nvrtc==13.0.88")
fi
for v in $PYVERS; do
  for p in "${PKGS[@]}"; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$v" --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$DEST" "$p" 2>&1 | grep -v "is ignored" || true
  done
done
if [ "${WITH_NVRTC:-0}" = 1 ] && [ ! -f "$DEST/nvrtc-cu13-min.tar.xz" ]; then
  # The NVRTC wheel (86 MiB) holds two copies of the 105 MiB library; the three files a program needs,
  # xz-compressed, are ~31 MiB. device_run.sh unpacks them when the device has no NVRTC of its own.
  T=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$T" "nvidia-cuda-nvrtc==13.0.88" 2>&1 | grep -v "is ignored" || true
  python3 - "$T" <<'PYEOF'
import glob, sys, zipfile
t = sys.argv[1]
z = zipfile.ZipFile(glob.glob(f"{t}/nvidia_cuda_nvrtc-*.whl")[0])
for n in ("nvidia/cu13/include/nvrtc.h", "nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cu13/lib/libnvrtc-builtins.so.13.0"):
    z.extract(n, f"{t}/x")
PYEOF
  (cd "$T/x" && tar cf - nvidia | xz -6 -T0 >"$OLDPWD/$DEST/nvrtc-cu13-min.tar.xz")
  rm -rf "$T"
fi
ls -l "$DEST"
du -sh "$DEST"
