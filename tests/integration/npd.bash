# Shared by npd.bats and npd_cluster.bats: the real Node Problem Detector and the shipped
# monitor config with the test's paths and interval. Load after helpers.

# npd_binary: the unpacked NPD under $BUILD_DIR/npd (unpacked and checked on first use), or why not.
npd_binary() {
  local zst=${NPD_ZST:-$TOP/../shared/npd/bin/node-problem-detector.zst} out=$BUILD_DIR/npd/node-problem-detector
  if [ ! -x "$out" ]; then
    [ -f "$zst" ] || { echo "$zst is missing"; return 1; }
    mkdir -p "$BUILD_DIR/npd"
    zstd -q -f -d --long=27 -o "$out.tmp" "$zst" &&
      (cd "$(dirname "$zst")" && sed 's|node-problem-detector$|'"$out.tmp"'|' SHA256SUMS | sha256sum -c --quiet) &&
      chmod 755 "$out.tmp" && mv "$out.tmp" "$out" || { echo "unpacking $zst failed"; return 1; }
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
