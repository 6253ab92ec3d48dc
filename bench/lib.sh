# shellcheck shell=bash
# Sourced by the bench scripts: what they share on the shell side (bench/benchlib.py is the
# Python side, imported through PYTHONPATH; no __pycache__ is written into the source tree).
bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PYTHONPATH=$bench_dir PYTHONDONTWRITEBYTECODE=1

# build_shim_time DIR: bench/shim_time.cpp as DIR/shim_time (static: no dynamic loading in
# the timer's own fork).
build_shim_time() { c++ -O2 -static -o "$1/shim_time" "$bench_dir/shim_time.cpp"; }

# runc_cleanup ROOT: force-delete every container left in the private runc root ROOT.
runc_cleanup() {
  local c
  for c in $(runc --root "$1" list -q 2>/dev/null); do runc --root "$1" delete -f "$c"; done
}
