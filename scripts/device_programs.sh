#!/usr/bin/env bash
# Programs of a legacy code base (never committed: fetched, then carried in an ignored folder), built twice on
# the GPU machine and run: the original with a compatibility shim (-include SHIM: the removed APIs mapped to
# their replacements, so the old code builds with today's nvcc) and the copy `cudamigrate fix` rewrote. Prints
# one line per program (built, ran, same output); each output goes to $OUT/<name>.orig|fixed.txt.
# Usage: ORIG=dir FIXED=dir SHIM=file INC="dir ..." LIBS="-lcuda ..." PROGS="rel/a.cu ..." OUT=dir bash $0
set -uo pipefail
ARCH=${ARCH:-sm_90}
build() {  # $1 tree, $2 program, $3 output binary, extra flags after
  local tree prog=$2 bin=$3; tree=$(cd "$1" && pwd); shift 3
  local flags=(); for d in ${INC:-}; do flags+=("-I$tree/$d"); done
  (cd "$tree/$(dirname "$prog")" && nvcc -arch="$ARCH" -std=c++17 -w "${flags[@]}" "$@" \
    "$(basename "$prog")" -o "$bin" ${LIBS:-}) >"$bin.log" 2>&1
}
mkdir -p "$OUT" /tmp/progbin
for p in $PROGS; do
  n=$(echo "$p" | tr '/.' '__')
  build "$ORIG" "$p" "/tmp/progbin/$n.orig" -include cuda_runtime.h -include cuda_fp16.h -include "$PWD/$SHIM" & build "$FIXED" "$p" "/tmp/progbin/$n.fixed" & wait
done
for p in $PROGS; do
  n=$(echo "$p" | tr '/.' '__'); line="$p:"
  for v in orig fixed; do
    if [ -x "/tmp/progbin/$n.$v" ]; then
      (cd "$(dirname "/tmp/progbin/$n.$v")" && timeout "${RUN_TIMEOUT:-60}" "./$n.$v") >"$OUT/$n.$v.txt" 2>&1
      line="$line $v built, exit $?;"
    else
      line="$line $v did not build ($(grep -m1 -i error "/tmp/progbin/$n.$v.log" | cut -c1-120));"
    fi
  done
  if [ -f "$OUT/$n.orig.txt" ] && [ -f "$OUT/$n.fixed.txt" ]; then
    if cmp -s "$OUT/$n.orig.txt" "$OUT/$n.fixed.txt"; then line="$line same output"; else
      line="$line outputs differ ($(diff "$OUT/$n.orig.txt" "$OUT/$n.fixed.txt" | grep -c '^[<>]') lines)"; fi
  fi
  echo "$line"
done
