#!/usr/bin/env bash
# Writes runtime-shim/shim.order: the functions the shim calls on its hot paths, in the order
# of their first call, which the release link (lld --symbol-ordering-file, runtime-shim/
# CMakeLists.txt) lays out together (issue 20: fewer pages mapped, fewer faults, lower RSS).
#
#   BUILD_DIR=$PWD/build/release bench/shim_order.sh      # then rebuild the shim
#
# Rerun it when the shim's hot paths change a lot (a new parser, a new library): a stale list
# only orders less well, names it lacks are placed as usual. It traces, with one-shot
# breakpoints on every function (bench/first_calls.cpp), the release shim with runtime
# /bin/true on the simulated 8-card host: auto mode with the spec on disk and without (libefml
# discovery), cdi mode with 1 and 8 cards, a config.json without a request, a passthrough
# `state` and `--version`. Needs root (the simulated host's device nodes) and runc, like the
# other bench scripts. OUT=FILE writes elsewhere.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the release build folder}
OUT=${OUT:-$(cd "$(dirname "$0")/.." && pwd)/runtime-shim/shim.order}
shim_bench_setup shim_order
c++ -O2 -std=c++20 -static -o "$tmp/first_calls" "$bench_dir/first_calls.cpp"
mkdir -p "$tmp/cdi" "$tmp/empty"
ENFLAME_CTK_CONFIG=$tmp/plain.toml "$ctk" cdi generate --output "$tmp/cdi/enflame.com-gpu.yaml"
for m in auto:cdi auto:empty cdi:cdi; do
  printf '[enflame-container-runtime]\nmode = "%s"\nspec-dirs = ["%s"]\nruntimes = ["/bin/true"]\n%s\n' \
    "${m%%:*}" "$tmp/${m#*:}" "$cli" > "$tmp/${m/:/-}.toml"
done
busybox_bundles 1=0 8=all none=
# Every function symbol of the binary, as offsets from its load base (a static PIE links at 0).
# (lld gives the empty __preinit_array bounds, at _start, a text type: they are no function.)
nm -n --defined-only "$shim" | awk '$2 ~ /^[tTwWi]$/ && $3 !~ /^__preinit_array_/ { print $1, $3 }' > "$tmp/syms"
: > "$tmp/calls"
trace() {  # CONFIG ARGS...: one traced run; a create gets a fresh copy of its bundle's config.json
  local cfg=$1; shift
  if [ "$1" = create ]; then cp "$3/orig.json" "$3/config.json"; fi
  ENFLAME_CTK_CONFIG=$tmp/$cfg.toml "$tmp/first_calls" "$tmp/syms" "$tmp/calls" -- "$shim" "$@" >/dev/null 2>&1
}
trace auto-cdi create --bundle "$tmp/b-8" x
trace auto-cdi create --bundle "$tmp/b-1" x
trace auto-empty create --bundle "$tmp/b-8" x
trace cdi-cdi create --bundle "$tmp/b-8" x
trace cdi-cdi create --bundle "$tmp/b-1" x
trace auto-cdi create --bundle "$tmp/b-none" x
trace auto-cdi state x
trace auto-cdi --version
{
  echo "# The shim's functions in the order of their first call on its hot paths (issue 20),"
  echo "# for lld --symbol-ordering-file. Written by bench/shim_order.sh; do not edit."
  awk '!seen[$0]++' "$tmp/calls"
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "shim_order: $(grep -vc '^#' "$OUT") functions in $OUT"
