#!/usr/bin/env bash
# Discovery of 64 simulated cards, per backend, median of $RUNS (default 50) runs: in process
# (discover_with) and as `enflame-ctk info`, against `env /bin/true` in the same alternating
# loop. Needs root (the host builder makes device nodes) and BUILD_DIR/bench/discovery_bench.
set -euo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the (release) build folder}
RUNS=${RUNS:-50}
CARDS=${CARDS:-64}
if [ "$(id -u)" -ne 0 ]; then echo "discovery: skipped (needs root for the simulated host's mknod)"; exit 0; fi
bench=$BUILD_DIR/bench/discovery_bench
[ -x "$bench" ] || { echo "discovery: no $bench (build the discovery_bench target)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ectk-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$BUILD_DIR/sim/enflame-sim-host" example --cards "$CARDS" --drs > "$tmp/host.yaml"
"$BUILD_DIR/sim/enflame-sim-host" build --desc "$tmp/host.yaml" --root "$tmp/host"
printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$tmp/host" "$tmp/host" > "$tmp/config.toml"
"$bench" --root "$tmp/host" --ctk "$BUILD_DIR/cdi-gen/enflame-ctk" --config "$tmp/config.toml" --runs "$RUNS" \
  ${BENCH_JSON:+--json "$BENCH_JSON"}
