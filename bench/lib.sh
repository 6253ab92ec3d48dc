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

# shim_bench_setup NAME: what shim.sh, shim_interleaved.sh and shim_order.sh share. Checks root, runc and the
# binaries (sets shim, sim, ctk; exits 0 with "NAME: skipped" without root or runc), makes
# $tmp (removed on exit, with runc's leftovers), builds shim_time, an 8-card simulated host,
# $tmp/plain.toml, $cli (its [enflame-container-cli] table) and the busybox rootfs.
shim_bench_setup() {
  if [ "$(id -u)" -ne 0 ]; then echo "$1: skipped (needs root)"; exit 0; fi
  command -v runc >/dev/null || { echo "$1: skipped (no runc)"; exit 0; }
  shim=$BUILD_DIR/runtime-shim/enflame-container-runtime
  sim=$BUILD_DIR/sim/enflame-sim-host
  ctk=$BUILD_DIR/ctk/enflame-ctk
  local b
  for b in "$shim" "$sim" "$ctk"; do [ -x "$b" ] || { echo "$1: no $b (build it first)" >&2; exit 1; }; done
  # BENCH_TMPDIR: where the bundles (and the rest) live. /tmp by default (a disk here, as for
  # podman's bundles); containerd and CRI-O keep theirs on tmpfs (/run), which
  # BENCH_TMPDIR=/dev/shm imitates: there the config.json rewrite waits for no journal.
  tmp=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/ectk-bench-$1.XXXXXX")
  chmod 755 "$tmp"
  # shellcheck disable=SC2064 # $tmp is fixed now
  trap "runc_cleanup '$tmp/rr'; rm -rf '$tmp'" EXIT
  build_shim_time "$tmp"
  "$sim" example --cards 8 > "$tmp/host.yaml"
  "$sim" build --desc "$tmp/host.yaml" --root "$tmp/host" >/dev/null
  cli=$(printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$tmp/host" "$tmp/host")
  echo "$cli" > "$tmp/plain.toml"
  mkdir -p "$tmp/rootfs"/{bin,proc,sys,dev,etc,tmp}
  cp /bin/busybox "$tmp/rootfs/bin/"; ln -s busybox "$tmp/rootfs/bin/true"
}

# busybox_bundles NAME=SELECTION...: $tmp/b-NAME/orig.json, runc's default spec on the busybox
# rootfs running /bin/true, with ENFLAME_VISIBLE_DEVICES=SELECTION (none when it is empty).
busybox_bundles() {
  python3 - "$tmp" "$@" <<'PY'
import json, os, subprocess, sys
tmp = sys.argv[1]
os.makedirs(f"{tmp}/spec")
subprocess.run(["runc", "spec"], cwd=f"{tmp}/spec", check=True)
base = json.load(open(f"{tmp}/spec/config.json"))
base["root"] = {"path": f"{tmp}/rootfs", "readonly": False}
base["process"]["terminal"] = False
base["process"]["args"] = ["/bin/true"]
for arg in sys.argv[2:]:
    name, sel = arg.split("=", 1)
    c = json.loads(json.dumps(base))
    if sel: c["process"]["env"].append(f"ENFLAME_VISIBLE_DEVICES={sel}")
    os.makedirs(f"{tmp}/b-{name}")
    with open(f"{tmp}/b-{name}/orig.json", "w") as fh:
        json.dump(c, fh, indent="\t")
PY
}
