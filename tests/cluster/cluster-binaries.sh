# shellcheck shell=bash
# cluster.sh's binaries: the Kubernetes release the user names (ENFLAME_KUBE_BIN), etcd and
# containerd from Debian 13, and the prerequisites checked before anything starts.
# Sourced by cluster.sh, which runs under `set -Eeuo pipefail` and sets HERE, TOP, the constants
# and D (DIR) before calling any of these.

# kube_bins: sets KBIN (a folder holding the five Kubernetes binaries of one release, 1.32 or
# newer) from $ENFLAME_KUBE_BIN, unpacking NAME.zst files there into build/kube/bin once (checked
# against a SHA256SUMS beside them when there is one). No package registry serves these
# binaries: the user names them (tests/cluster/README.md).
kube_bins() {
  local src=${ENFLAME_KUBE_BIN:-} n lacking=()
  [ -n "$src" ] ||
    missing "ENFLAME_KUBE_BIN is not set: name a folder holding ${KUBE_NAMES[*]} of one release, 1.32 or newer (plain or NAME.zst)"
  [ -d "$src" ] || missing "ENFLAME_KUBE_BIN '$src' is not a folder: set it to a folder holding ${KUBE_NAMES[*]} (1.32 or newer)"
  for n in "${KUBE_NAMES[@]}"; do
    [ -x "$src/$n" ] || [ -f "$src/$n.zst" ] || lacking+=("$n")
  done
  [ ${#lacking[@]} -eq 0 ] ||
    missing "no ${lacking[*]} in '$src': set ENFLAME_KUBE_BIN to a folder holding ${KUBE_NAMES[*]} (1.32 or newer, plain or NAME.zst)"
  unpack_kube_bins "$src"
  kube_release "$src"
}

# kube_release SRC: the five binaries in $KBIN are of one release, 1.32 or newer; else missing.
kube_release() {
  local n v first= bad=()
  for n in "${KUBE_NAMES[@]}"; do
    if [ "$n" = kubectl ]; then v=$("$KBIN/$n" version --client 2>/dev/null | grep -oE 'v[0-9]+\.[0-9]+\.[0-9]+' | sed -n 1p)
    else v=$("$KBIN/$n" --version 2>/dev/null | grep -oE 'v[0-9]+\.[0-9]+\.[0-9]+' | sed -n 1p); fi
    [ -n "$v" ] || missing "'$1/$n' does not tell its version: ENFLAME_KUBE_BIN must hold the release binaries (1.32 or newer)"
    first=${first:-$v}
    [ "$v" = "$first" ] || bad+=("$n $v")
  done
  [ ${#bad[@]} -eq 0 ] || missing "'$1' mixes releases: ${KUBE_NAMES[0]} is $first, $(IFS=,; echo "${bad[*]}"): use the five binaries of one release"
  v=${first#v}; v=${v#1.}; v=${v%%.*}
  [ "$v" -ge 32 ] || missing "'$1' holds Kubernetes $first: the cluster suites need 1.32 or newer"
  KUBE_VERSION=$first
}

# unpack_kube_bins SRC: KBIN=SRC for plain binaries; NAME.zst files unpacked into build/kube/bin.
unpack_kube_bins() {
  local src=$1 n want got tmp
  if [ ! -f "$src/${KUBE_NAMES[0]}.zst" ]; then KBIN=$(cd "$src" && pwd); return 0; fi
  KBIN=$TOP/build/kube/bin
  mkdir -p "$KBIN"
  for n in "${KUBE_NAMES[@]}"; do
    [ ! -x "$KBIN/$n" ] || [ "$KBIN/$n" -nt "$src/$n.zst" ] || rm -f "$KBIN/$n"
    [ ! -x "$KBIN/$n" ] || continue
    command -v zstd >/dev/null || missing "zstd is needed to unpack '$src/$n.zst' (apt-get install zstd)"
    tmp=$(mktemp "$KBIN/.$n.XXXXXX")
    zstd -q -d -f --long=27 -o "$tmp" "$src/$n.zst" || { rm -f "$tmp"; missing "cannot unpack '$src/$n.zst'"; }
    want=$(awk -v n="$n" '$2 == n || $2 == "*" n {print $1}' "$src/SHA256SUMS" 2>/dev/null || true)
    got=$(sha256sum "$tmp" | cut -d' ' -f1)
    if [ -n "$want" ] && [ "$want" != "$got" ]; then
      rm -f "$tmp"
      missing "'$src/$n.zst' unpacks to sha256 $got, SHA256SUMS says $want"
    fi
    chmod 755 "$tmp"
    mv -f "$tmp" "$KBIN/$n"
  done
}

# debian_bins: sets PREFIX, the folder Debian 13's etcd-server and containerd are unpacked in
# (shared with the other tests: $BUILD_DIR/trixie, or build/trixie).
debian_bins() {
  PREFIX=${BUILD_DIR:-$TOP/build}/trixie
  if [ ! -x "$PREFIX/usr/bin/etcd" ] || [ ! -x "$PREFIX/usr/bin/containerd" ]; then
    mkdir -p "$D/logs"
    "$TOP/scripts/fetch-trixie.sh" "$PREFIX" etcd-server containerd > "$D/logs/fetch-trixie.log" 2>&1 ||
      missing "etcd 3.5 and containerd 1.7 from Debian 13 could not be fetched into '$PREFIX': $(tail -n 1 "$D/logs/fetch-trixie.log")"
  fi
  PREFIX=$(cd "$PREFIX" && pwd)
}

prerequisites() {
  local c
  [ "$(id -u)" -eq 0 ] || missing "needs root (mount namespaces, cgroups, containers)"
  for c in runc unshare nsenter setsid openssl python3 curl ss ip iptables; do
    command -v "$c" >/dev/null || missing "needs $c on PATH"
  done
  [ -x /bin/busybox ] && file -L /bin/busybox | grep 'statically linked' >/dev/null ||
    missing "needs a static /bin/busybox for the busybox and pause images (apt-get install busybox-static)"
}
