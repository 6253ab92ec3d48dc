# Shared by npd.bats and npd_cluster.bats: the real Node Problem Detector and the shipped
# monitor config with the test's paths and interval. Load after helpers.

# npd_binary: the real Node Problem Detector that $ENFLAME_NPD_BIN names (no package registry
# serves it), or why not. A plain binary is used as it is; NAME.zst is unpacked under
# $BUILD_DIR/npd once, checked against a SHA256SUMS beside it when there is one. Callers skip
# first with needs_npd_bin when the variable is unset.
npd_binary() {
  local src=${ENFLAME_NPD_BIN:-} out=$BUILD_DIR/npd/node-problem-detector want got
  [ -n "$src" ] || { echo "$NPD_BIN_REASON"; return 1; }
  [ -f "$src" ] || { echo "ENFLAME_NPD_BIN '$src' is not a file"; return 1; }
  if [[ $src != *.zst ]]; then
    [ -x "$src" ] || { echo "ENFLAME_NPD_BIN '$src' is not executable"; return 1; }
    echo "$src"
    return 0
  fi
  if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
    mkdir -p "$BUILD_DIR/npd"
    zstd -q -f -d --long=27 -o "$out.tmp" "$src" || { echo "unpacking $src failed"; return 1; }
    want=$(awk '$2 ~ /(^|[*\/])node-problem-detector$/ {print $1}' "$(dirname "$src")/SHA256SUMS" 2>/dev/null || true)
    got=$(sha256sum "$out.tmp" | cut -d' ' -f1)
    if [ -n "$want" ] && [ "$want" != "$got" ]; then
      rm -f "$out.tmp"; echo "$src unpacks to sha256 $got, SHA256SUMS says $want"; return 1
    fi
    chmod 755 "$out.tmp" && mv "$out.tmp" "$out"
  fi
  echo "$out"
}

# full_links ROOT N: cards 0..N-1 at their maximum PCIe link (the simulator's default link,
# Gen3 x8 of Gen5 x16, is a degraded one).
full_links() {
  local i
  for (( i = 0; i < $2; i++ )); do
    "$SIM_HOST" telemetry --root "$1" --card "$i" pcie_link_width=16 pcie_link_speed=5
  done
}

# monitor_config OUT INTERVAL PLUGIN_DIR CONFIG [STATE_DIR]: deployments/npd's custom-plugin
# monitor with invoke_interval INTERVAL (seconds), the plugin at PLUGIN_DIR instead of
# /opt/enflame, the toolkit config CONFIG instead of /config/enflame-ctk.toml, and
# --state-dir STATE_DIR added to every rule when given.
monitor_config() {
  python3 - "$TOP/deployments/npd/enflame-gcu-monitor.json" "$@" <<'PY'
import json, sys
src, out, interval, plugin, config = sys.argv[1:6]
state = sys.argv[6] if len(sys.argv) > 6 else None
m = json.load(open(src))
m["pluginConfig"]["invoke_interval"] = interval + "s"
fix = lambda s: s.replace("/opt/enflame", plugin).replace("/config/enflame-ctk.toml", config)
for r in m["rules"]:
    r["path"] = fix(r["path"])
    r["args"] = [fix(a) for a in r["args"]] + (["--state-dir", state] if state else [])
json.dump(m, open(out, "w"), indent=1)
PY
}
