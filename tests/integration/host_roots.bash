# Roots that stand for a node's root in host_binaries.bats (x86_64) and
# host_binaries_arm64.bats: a root with no shared library, the simulated cards and runc in it,
# and the commands that run there with the root as their mount namespace's root. Mounts are
# made only in a private mount namespace per command (node_ns, in_root) and go with it.
# Needs FILE_DIR (desc.yaml: the simulated host's description) and helpers.bash's SIM_HOST.
# shellcheck disable=SC2034  # what this sets, the suites that load it use

TK=/usr/local/enflame/toolkit
RUNC_STATE=/var/lib/ectk-runc   # runc's state, on disk in the root: it outlives one in_root

# bare_root DIR: a root with no shared library and no loader: folders, and /sbin/ldconfig
# (static-pie; every host has one, and the hook runs the host's).
bare_root() {
  mkdir -p "$1"/{proc,sys,dev,tmp,run,etc,sbin,usr/bin,usr/local/sbin,var/lib}
  chmod 1777 "$1/tmp"
  cp /sbin/ldconfig "$1/sbin/"
}

# node_parts ROOT: what a node has besides the toolkit: the simulated cards and their driver in
# /sim, runc (in /opt/host-runc, linked from /usr/local/sbin), a bundle folder and an engine
# binary for the installer to find (dockerd: never run, --restart-mode none).
node_parts() {
  local r=$1 lib
  "$SIM_HOST" build --desc "$FILE_DIR/desc.yaml" --root "$r/sim" > /dev/null
  mkdir -p "$r/opt/host-runc" "$r/usr/local/sbin" "$r/usr/bin" "$r$RUNC_STATE" "$r/bundles"
  cp "$(command -v runc)" "$r/opt/host-runc/runc"
  for lib in $(ldd "$(command -v runc)" | grep -oE '/[^ ]+'); do cp -L "$lib" "$r/opt/host-runc/"; done
  patchelf --set-interpreter "/opt/host-runc/$(basename "$(patchelf --print-interpreter "$r/opt/host-runc/runc")")" \
    --set-rpath /opt/host-runc "$r/opt/host-runc/runc"
  ln -s /opt/host-runc/runc "$r/usr/local/sbin/runc"
  [ -e "$r/usr/bin/dockerd" ] || install -m 755 /dev/null "$r/usr/bin/dockerd"
}

# node_ns ROOT CMD...: CMD with a plain environment in a private mount namespace where ROOT is
# a mount point with the host's /proc, /sys and /dev in it, as a node's root is (runc needs
# them; so does the installer's run of the copied enflame-ctk, which reads /proc/self/exe).
# The mounts go with the namespace.
NODE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck disable=SC2016  # expands in the namespace's shell
NODE_MOUNTS='r=$1; shift
  mount --bind "$r" "$r" && mount --rbind /proc "$r/proc" && mount --rbind /sys "$r/sys" &&
    mount --rbind /dev "$r/dev" || exit 125
'
node_ns() { env -i PATH=$NODE_PATH unshare --mount --propagation private /bin/sh -c "$NODE_MOUNTS"'exec "$@"' node-ns "$@"; }

# in_root ROOT CMD...: CMD in node_ns with ROOT as the namespace's root (pivot_root, the host's
# root unmounted: not a chroot, which a mount-namespace join by the hook or runc would leave).
# The host's static busybox does the unmount.
in_root() {
  # shellcheck disable=SC2016
  env -i PATH=$NODE_PATH unshare --mount --propagation private /bin/sh -c "$NODE_MOUNTS"'
    cd "$r" && mkdir -p .host && pivot_root . .host || exit 125
    exec /.host/bin/busybox sh -c "/.host/bin/busybox umount -l /.host && exec \"\$@\"" in-root "$@"' in-root "$@"
}

# root_bundle ROOT ID ENV...: a busybox bundle at ROOT/bundles/ID (/bundles/ID inside), ENV...
# in its process env; removed in teardown, after its container (registered by the caller).
root_bundle() {
  local dir=$1/bundles/$2 e; shift 2
  on_teardown "rm -rf '$dir'"
  oci_bundle "$dir" '["sh","-c","true"]'
  for e in "$@"; do bundle_edit "$dir" "c['process']['env'].append('$e')"; done
}

# created_with_card ROOT ID: runc says container ID is created, and its /dev holds card 1 (the
# host's major:minor) and not card 0.
created_with_card() {
  local st pid
  st=$(in_root "$1" runc --root "$RUNC_STATE" state "$2")
  [[ $(jq -r .status <<<"$st") == created ]]
  pid=$(jq -r .pid <<<"$st")
  [ -c "/proc/$pid/root/dev/gcu1" ]
  [ "$(stat -c %t:%T "/proc/$pid/root/dev/gcu1")" = "$(stat -c %t:%T "$1/sim/dev/gcu1")" ]
  [ ! -e "/proc/$pid/root/dev/gcu0" ]
}

# root_cat ROOT PATH: PATH read as a process chrooted into ROOT sees it (bullseye's /var/run is
# a link to /run: outside the root it would name this host's).
root_cat() { python3 -c 'import os, sys; os.chroot(sys.argv[1]); sys.stdout.write(open(sys.argv[2]).read())' "$@"; }

# remove_roots: teardown_file's: FILE_DIR removed, unless a mount is left under it (never
# follow one into the host's /dev: nothing is mounted there outside in_root's namespaces).
remove_roots() {
  if [ -z "${FILE_DIR:-}" ] || [ ! -d "$FILE_DIR" ]; then return 0; fi
  if grep -qF " $FILE_DIR/" /proc/self/mountinfo; then
    echo "teardown: mounts left under $FILE_DIR, not removed" >&3
    return 1
  fi
  rm -rf --one-file-system "$FILE_DIR"
}

# info_says_two_cards: what `enflame-ctk info` ($output) of a static build says in a root with
# the simulated two-card host at /sim: efsmi answered, both cards, and the host's libefml found
# and left alone (docs/host-binaries.md).
# shellcheck disable=SC2154  # $output: the caller's bats `run`
info_says_two_cards() {
  grep -Fx "backend: efsmi-json" <<<"$output"
  grep -Fx "2 cards" <<<"$output"
  grep -F "GCU 1: S60" <<<"$output"
  grep -E "^libefml: '/sim/.*' not loaded: this static build does not dlopen host libraries" <<<"$output"
}
