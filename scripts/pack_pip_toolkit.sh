#!/usr/bin/env bash
# Pack the part of a CUDA release's pip-installed compiler that `nvcc -c` runs (cudamigrate/core/pip_toolkit.py
# installs it into ~/.cache/cudamigrate/toolkits/RELEASE) into .recall/nvcc-RELEASE.tar.xz, for a machine
# without network (scripts/device_recall.sh unpacks it and points $CUDAMIGRATE_TOOLKITS at it).
#
# Kept: bin/{nvcc,nvcc.profile,cudafe++,ptxas,fatbinary,bin2c,crt}, nvvm/bin/cicc, nvvm/libdevice, include/
# (with the profiler API's cuda_profiler_api.h and NVTX 3's nvtx3/, pinned since; the 13.5 figures below are
# from before: not re-measured) and the wheel stamp (pip_toolkit.installed checks it). Left out: nvlink, the libraries (lib/: libnvvm.so.4
# 74 MiB, libcudart), which compiling with -c never runs. 13.5: 228 MB unpacked, 48,208,308 bytes (46 MiB) packed
# with xz -9, checked: the unpacked copy compiles (also -rdc=true) and pip_toolkit.installed("13.5") finds it.
# It nearly fills a 64 MiB carry: carry it in a call of its own (with .whl), the sources in the next.
# Usage (repository root): bash scripts/pack_pip_toolkit.sh 13.5
set -euo pipefail
cd "$(dirname "$0")/.."
REL=${1:?usage: pack_pip_toolkit.sh RELEASE}
PY=${PY:-python3}
NVCC=$("$PY" -c 'import sys; from cudamigrate.core import pip_toolkit as t; print(t.install(sys.argv[1]))' "$REL")
TOP=$(cd "$(dirname "$NVCC")/../../.." && pwd)   # …/toolkits/RELEASE
mkdir -p .recall
C=nvidia/cu13
tar -C "$TOP" -cf - .cudamigrate-wheels $C/bin/nvcc $C/bin/nvcc.profile $C/bin/cudafe++ $C/bin/ptxas \
  $C/bin/fatbinary $C/bin/bin2c $C/bin/crt $C/nvvm/bin/cicc $C/nvvm/libdevice $C/include \
  | xz -T0 -9 > ".recall/nvcc-$REL.tar.xz"
ls -la ".recall/nvcc-$REL.tar.xz"
