#!/usr/bin/env bash
# Installs what building and testing enflame-container-toolkit needs on Debian 12, and only
# what is missing: a second run is a no-op that takes well under a second.
# Daemons (containerd, dockerd) are never started here: tests start their own, by PID.
set -euo pipefail

PKGS=(
  # build
  build-essential cmake pkg-config git ccache
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libseccomp-dev libcap-dev
  libtomlplusplus-dev googletest libgtest-dev
  lld              # the release shim's link in hot-path order (runtime-shim/shim.order; GNU ld without it)
  # the Kubernetes plane (k8s/): gRPC and protobuf, compiled with Debian's protoc
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # the exporter's metrics (prometheus-cpp) and HTTP (civetweb), the DRA plugin's API-server client (libcurl)
  prometheus-cpp-dev libcivetweb-dev libcurl4-openssl-dev
  libxxhash-dev    # enflame-epp's approximate prefix cache: xxh64 over prompt blocks
  libssl-dev       # the operator's renderer: SHA-256 for kustomize's configMapGenerator names
  # tests
  bats python3 python3-jsonschema python3-yaml jq util-linux procps busybox-static
  curl             # the client of the HTTP tests (exporter, epp_*.bats); libcurl's -dev brings no binary
  prometheus       # promtool (exposition, rules); monitoring.bats runs its daemon on loopback
  prometheus-node-exporter  # monitoring.bats scrapes it; make node-exporter-image packs it
  zstd             # unpacks the NPD or Kubernetes binaries a user names as .zst (ENFLAME_NPD_BIN, ENFLAME_KUBE_BIN)
  openssl          # k8s/tests/fake_apiserver.py makes its CA and certificates with it
  man-db systemd   # package.bats: `man` for the man pages, systemd-analyze for the units
  runc crun podman uidmap containerd docker.io e2fsprogs
  mmdebstrap       # make images: the image's Debian 12 libraries; host_binaries.bats: a Debian 11 root
  patchelf         # host_binaries.bats: runc's copy in a root, pointed at its own libraries
  rpm              # make packages: rpmbuild for the .rpm; package_host.bats: rpm --root
  g++-aarch64-linux-gnu  # make host-binaries ARCH=arm64: the cross compiler (its sysroot: scripts/arm64-sysroot.sh)
  qemu-user-static # host_binaries_arm64.bats: runs the arm64 binaries (qemu-aarch64-static, no binfmt needed)
  python3-numpy python3-tqdm  # tests/tools/make-tiny-gguf.py: sid's python3-gguf writes the tiny model for epp_llama.bats and bench/epp.sh
  python3-protobuf # scripts/check-epp-protos.sh: reads upstream's ext_proc descriptors beside ours
  strace           # dra_plugin_restart.bats: the kernel kills the plugin at a chosen rename (strace --inject)
  iptables         # tests/cluster/cluster.sh: the kubernetes Service's DNAT rule (no kube-proxy there)
  # static checks (make test runs them after the tests)
  clang-tidy-14 cppcheck
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep '^ii' >/dev/null || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing packages: ${missing[*]} (run as root to install them)" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Keep package installs from starting daemons (Debian's policy-rc.d convention).
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; created_policy=1
fi
trap '[ $created_policy -eq 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
