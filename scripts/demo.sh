#!/usr/bin/env bash
# make demo: the toolkit's main job on a simulated Enflame host (4 S60 cards), end to end:
#   1. lay out the simulated host (real device nodes, sysfs, efsmi and libefml simulators)
#   2. enflame-ctk info: what discovery finds, and through which backend
#   3. enflame-ctk cdi generate: the CDI spec, then podman run --device enflame.com/gpu=1
#   4. enflame-container-runtime (the runc shim): ENFLAME_VISIBLE_DEVICES=0,2 on a runc bundle
# Everything it creates (scratch folder, CDI spec in /var/run/cdi, containers) is removed at exit.
set -euo pipefail
BUILD_DIR=$(cd "${BUILD_DIR:?set BUILD_DIR to the build folder}" && pwd)
CTK=$BUILD_DIR/ctk/enflame-ctk
SHIM=$BUILD_DIR/runtime-shim/enflame-container-runtime
SIM_HOST=$BUILD_DIR/sim/enflame-sim-host
[ "$(id -u)" -eq 0 ] || { echo "error: the demo makes device nodes (mknod): run it as root" >&2; exit 1; }

D=$(mktemp -d /tmp/enflame-demo.XXXXXX); chmod 755 "$D"
SPEC=/var/run/cdi/enflame-demo-$$.yaml
CID=enflame-demo-$$
made_cdi_dir=0; [ -d /var/run/cdi ] || made_cdi_dir=1
PM=(podman --root "$D/pm/root" --runroot "$D/pm/run" --tmpdir "$D/pm/tmp")
cleanup() {
  set +e
  runc delete -f "$CID" >/dev/null 2>&1
  [ -f "$D/containers.conf" ] && CONTAINERS_CONF=$D/containers.conf "${PM[@]}" rm -af >/dev/null 2>&1
  [ -d "$D/pm" ] && CONTAINERS_CONF=$D/containers.conf "${PM[@]}" system reset -f >/dev/null 2>&1
  rm -f "$SPEC"
  # the folder too if the demo made it and nothing else was put there since
  [ "$made_cdi_dir" = 1 ] && rmdir /var/run/cdi 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "enflame-ctk $("$CTK" --version | sed 's/^enflame-ctk //')"

step "1. a simulated host with 4 S60 cards in $D/host"
"$SIM_HOST" example --cards 4 > "$D/host.yaml"
"$SIM_HOST" build --desc "$D/host.yaml" --root "$D/host"
ls -l "$D/host/dev"
cat > "$D/config.toml" <<TOML
[enflame-container-cli]
driver-root = "$D/host"
dev-root = "$D/host"
TOML
export ENFLAME_CTK_CONFIG=$D/config.toml

step "2. enflame-ctk info"
"$CTK" info

step "3. enflame-ctk cdi generate --output $SPEC"
mkdir -p /var/run/cdi
"$CTK" cdi generate --output "$SPEC"
"$CTK" cdi list --spec-dir /var/run/cdi | grep enflame.com/gpu || true
# podman here: runc (crun refuses hybrid cgroups), rlimits within the hard limit, own storage.
mkdir -p "$D/rootfs/bin" "$D/rootfs/etc" "$D/rootfs/proc" "$D/rootfs/sys" "$D/rootfs/dev"
cp /bin/busybox "$D/rootfs/bin/"
for a in sh ls cat env grep readlink; do ln -s busybox "$D/rootfs/bin/$a"; done
cat > "$D/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
netns = "none"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
CONF
export CONTAINERS_CONF=$D/containers.conf
echo '$ podman run --device enflame.com/gpu=1 ... ls -l /dev/gcu* ; env | grep ENFLAME'
"${PM[@]}" run --rm --device enflame.com/gpu=1 --rootfs "$D/rootfs" /bin/sh -c \
  'ls -l /dev/gcu*; readlink /usr/lib/libefml.so.1 || ls -l /usr/lib/libefml.so.1; env | grep ENFLAME'
unset CONTAINERS_CONF
rm -f "$SPEC"

step "4. enflame-container-runtime (runc shim) with ENFLAME_VISIBLE_DEVICES=0,2 (auto mode: no spec on disk)"
B=$D/bundle; mkdir -p "$B"; cp -a "$D/rootfs" "$B/rootfs"
(cd "$B" && runc spec)
python3 - "$B/config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c['process']['terminal'] = False
c['process']['args'] = ['/bin/sh', '-c', 'ls -l /dev/gcu*; grep -o "/usr/lib/libefml.so.1 [^ ]*" /proc/self/mountinfo']
c['process']['env'].append('ENFLAME_VISIBLE_DEVICES=0,2')
c['root']['readonly'] = False
json.dump(c, open(p, 'w'), indent=1)
PY
echo '$ enflame-container-runtime run --bundle bundle demo'
(cd "$B" && "$SHIM" run "$CID")

step "done: everything the demo created is removed"
