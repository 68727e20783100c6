#!/usr/bin/env bash
# GPU differential of real programs: cuda-samples v11.8 before and after `cudamigrate fix --unsafe-fixes`,
# with NVIDIA's v13.0 sample as the reference where the original no longer builds.
#
#   bash DIR/oracle_gpu.sh DIR OUTDIR
#
# DIR is what `python bench/oracle_cuda_samples.py V11 V13 --gpu-prepare DIR` wrote: before/, after/, v13/
# (sample dirs + Common headers) and programs.tsv ("<category>/<sample>\t<extra nvcc flags>"). Needs nvcc and
# a GPU; no network. Writes OUTDIR/logs.tar.gz: per program and side, the build log, a .built marker, the
# run's output (.raw) and exit status (.rc); the reference side runs a second time (ref2). The table is made
# from it where there is no GPU: `oracle_cuda_samples.py ... --gpu-results logs.tar.gz`.
#
# Build: every top-level .cu/.cpp/.c of the sample dir in one nvcc call (-std=c++17 -arch=sm_90, includes: the
# sample dir and Common); for the driver-API samples (*Drv) the *_kernel.cu files become <name>64.fatbin
# next to the binary, as their Makefiles do. Run: in the sample dir, stdin closed, 60 s limit.
set -u
DIR=$(cd "$1" && pwd)
OUTD=$2
mkdir -p "$OUTD"
LOG="$DIR/_logs"
rm -rf "$LOG"; mkdir -p "$LOG"
JOBS=$(nproc 2>/dev/null || echo 4)
# -lcuda links against the toolkit's stub; the driver's libcuda.so.1 is loaded at run time
STUBS="$(dirname "$(command -v nvcc)")/../lib64/stubs"
export STUBS

build_one() {  # side prog flags
  local side=$1 prog=$2 flags=$3
  local d="$DIR/$side/$prog" name; name=$(basename "$prog")
  local log="$LOG/${side}__${name}.build"
  [ -d "$d" ] || { echo "no source" >"$log"; return 1; }
  cd "$d" || return 1
  local srcs=()
  for f in *.cu *.cpp *.c; do
    [ -f "$f" ] || continue
    if [[ "$name" == *Drv && "$f" == *_kernel.cu ]]; then
      nvcc -std=c++17 -arch=sm_90 -fatbin -I. -I"$DIR/$side/Common" -o "${f%.cu}64.fatbin" "$f" >>"$log" 2>&1 || return 1
      continue
    fi
    srcs+=("$f")
  done
  # shellcheck disable=SC2086
  timeout 300 nvcc -std=c++17 -arch=sm_90 -I. -I"$DIR/$side/Common" -o "prog_$side" "${srcs[@]}" -L"$STUBS" $flags >>"$log" 2>&1
}
export -f build_one
export DIR LOG

# build everything in parallel
while IFS=$'\t' read -r prog flags; do
  [ -n "$prog" ] || continue
  for side in before after v13; do
    printf '%s\t%s\t%s\n' "$side" "$prog" "$flags"
  done
done <"$DIR/programs.tsv" | xargs -P "$JOBS" -d '\n' -I{} bash -c 'IFS=$'"'"'\t'"'"' read -r s p f <<<"{}"; build_one "$s" "$p" "$f" && touch "$LOG/${s}__$(basename "$p").built"'

run_one() {  # side prog [tag] -> LOG/tag__name.raw and .rc (tag defaults to side)
  local side=$1 prog=$2 tag=${3:-$1} name; name=$(basename "$prog")
  [ -f "$LOG/${side}__${name}.built" ] || return 1
  cd "$DIR/$side/$prog" || return 1
  timeout 60 "./prog_$side" >"$LOG/${tag}__${name}.raw" 2>&1 </dev/null
  echo $? >"$LOG/${tag}__${name}.rc"
}

# run every built side; the reference (before, or v13 where before did not build) runs twice so that the
# comparison can tell a program whose output varies run to run
while IFS=$'\t' read -r prog flags; do
  [ -n "$prog" ] || continue
  name=$(basename "$prog")
  for side in before after v13; do run_one "$side" "$prog"; done
  if [ -f "$LOG/before__${name}.built" ]; then run_one before "$prog" ref2; else run_one v13 "$prog" ref2; fi
  printf '%s' "$prog"
  for t in before after v13 ref2; do printf '\t%s=%s' "$t" "$(cat "$LOG/${t}__${name}.rc" 2>/dev/null || echo -)"; done
  echo
done <"$DIR/programs.tsv"
tar -czf "$OUTD/logs.tar.gz" -C "$DIR" _logs
