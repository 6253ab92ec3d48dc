# Shared helpers for the bats integration tests. Load with `load helpers`.
# Every test gets its own scratch folder ($SCRATCH) removed in teardown; tests that start
# containers or daemons register a cleanup with `on_teardown "cmd"` so it runs pass or fail.

BUILD_DIR=${BUILD_DIR:?BUILD_DIR must point at the build folder}
TOP=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
CTK=$BUILD_DIR/cdi-gen/enflame-ctk
SHIM=$BUILD_DIR/runtime-shim/enflame-container-runtime
HOOK=$BUILD_DIR/hooks/enflame-container-runtime-hook
SIM_HOST=$BUILD_DIR/sim/enflame-sim-host

# requires root|podman|runc|crun|containerd|dockerd ... : skip with a reason when missing.
requires() {
  local r
  for r in "$@"; do
    case $r in
      root) [ "$(id -u)" -eq 0 ] || skip "needs root" ;;
      *) command -v "$r" >/dev/null 2>&1 || skip "needs $r" ;;
    esac
  done
}

setup_scratch() {
  SCRATCH=$(mktemp -d /tmp/ectk-it.XXXXXX)
  chmod 755 "$SCRATCH"
  _TEARDOWN_CMDS=()
}

# on_teardown CMD: run CMD (with eval) in teardown, last registered first.
on_teardown() { _TEARDOWN_CMDS+=("$1"); }

teardown_scratch() {
  local i
  for (( i=${#_TEARDOWN_CMDS[@]}-1; i>=0; i-- )); do eval "${_TEARDOWN_CMDS[$i]}" || true; done
  _TEARDOWN_CMDS=()
  [ -n "${SCRATCH:-}" ] && [ -d "$SCRATCH" ] && rm -rf "$SCRATCH"
}

# sim_host DESC ROOT: lay out a simulated Enflame host from a description file.
sim_host() { "$SIM_HOST" build --desc "$1" --root "$2"; }

# sim_example N [args]: print an example description with N cards.
sim_example() { local n=$1; shift; "$SIM_HOST" example --cards "$n" "$@"; }

# write_config FILE ROOT: a config.toml pointing driver-root and dev-root at ROOT.
write_config() {
  cat > "$1" <<TOML
[enflame-container-cli]
driver-root = "$2"
dev-root = "$2"
TOML
}
