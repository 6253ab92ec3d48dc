#!/usr/bin/env bash
# A whole container start through podman (4.3.1, root, runc, private storage, busybox --rootfs,
# no image, no network), four ways alternating in one loop, medians over $RUNS (default 60):
#   none    podman run --rm --rootfs R true                     no toolkit (the reference)
#   native  podman run --device enflame.com/gpu=0 ...           podman's own CDI injection of
#                                                               our generated spec (reference)
#   shim    podman --runtime <our shim> run -e ENFLAME_VISIBLE_DEVICES=0 ...   ours, cdi mode
#   hook    podman --hooks-dir D run -e ENFLAME_VISIBLE_DEVICES=0 ...  ours, the legacy hook
# Rows (common schema, bench/benchlib.py, to $BENCH_JSON): shim vs none, shim vs native,
# hook vs none, and native vs none (podman's cost, not ours, for scale). Each podman run is
# timed with shim_time; peak RSS is n/a here (the podman client is not ours, and the shim
# execs runc in its own process): the shim's and the hook's own RSS are in shim.sh/hook.sh.
#
# podman 4.3.1 reads CDI specs only from /etc/cdi and /var/run/cdi (containers.conf has no
# cdi_spec_dirs before 4.4), so the loop runs in a private mount namespace where our spec dir
# is bind-mounted over /run/cdi (and an empty dir over /etc/cdi if it exists): nothing is
# written to the host's CDI dirs and no other spec is seen. All four variants run in that same
# namespace. Needs root, podman, runc and the build's shim, hook, enflame-ctk and sim.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the (release) build folder}
RUNS=${RUNS:-60}
if [ "$(id -u)" -ne 0 ]; then echo "podman: skipped (needs root)"; exit 0; fi
for c in podman runc unshare; do command -v $c >/dev/null || { echo "podman: skipped (no $c)"; exit 0; }; done
[ -d /run/cdi ] || { echo "podman: skipped (no /run/cdi to bind our spec dir over)"; exit 0; }
shim=$BUILD_DIR/runtime-shim/enflame-container-runtime
hook=$BUILD_DIR/hooks/enflame-container-runtime-hook
ctk=$BUILD_DIR/ctk/enflame-ctk
sim=$BUILD_DIR/sim/enflame-sim-host
for b in "$shim" "$hook" "$ctk" "$sim"; do [ -x "$b" ] || { echo "podman: no $b (build it first)" >&2; exit 1; }; done
tmp=$(mktemp -d /tmp/ectk-bench-podman.XXXXXX)
chmod 755 "$tmp"
PM=(podman --root "$tmp/pm/root" --runroot "$tmp/pm/run" --tmpdir "$tmp/pm/tmp")
export CONTAINERS_CONF=$tmp/containers.conf
cleanup() {
  "${PM[@]}" rm -af -t 0 >/dev/null 2>&1 || true
  # conmon's exit command (podman container cleanup) may still be running: let it finish.
  for _ in $(seq 50); do pgrep -f "$tmp/pm" >/dev/null || break; sleep 0.2; done
  awk -v s="$tmp/" 'index($5, s) == 1 {print $5}' /proc/self/mountinfo | sort -r |
    while read -r m; do umount -l "$m"; done
  rm -rf "$tmp"
}
trap cleanup EXIT

build_shim_time "$tmp"
"$sim" example --cards 8 > "$tmp/host.yaml"
"$sim" build --desc "$tmp/host.yaml" --root "$tmp/host" >/dev/null
mkdir -p "$tmp/cdi" "$tmp/empty" "$tmp/hooks.d"
cat > "$tmp/config.toml" <<TOML
[enflame-container-runtime]
mode = "cdi"
spec-dirs = ["$tmp/cdi"]
runtimes = ["runc"]
[enflame-container-cli]
driver-root = "$tmp/host"
dev-root = "$tmp/host"
TOML
ENFLAME_CTK_CONFIG=$tmp/config.toml "$ctk" cdi generate --output "$tmp/cdi/enflame.com-gpu.yaml"
# The legacy hook for every container podman starts with --hooks-dir (OCI hooks 1.0.0).
cat > "$tmp/hooks.d/enflame.json" <<JSON
{"version": "1.0.0", "when": {"always": true}, "stages": ["prestart"],
 "hook": {"path": "$hook", "args": ["enflame-container-runtime-hook", "prestart"],
          "env": ["ENFLAME_CTK_CONFIG=$tmp/config.toml"]}}
JSON
r=$tmp/rootfs
mkdir -p "$r"/{bin,proc,sys,dev,etc,tmp,root,run}
cp /bin/busybox "$r/bin/"; ln -s busybox "$r/bin/true"; ln -s busybox "$r/bin/sh"
echo 'root:x:0:0:root:/root:/bin/sh' > "$r/etc/passwd"
echo 'root:x:0:' > "$r/etc/group"
# The containers.conf the integration tests use (runc, cgroupfs, no network, rlimits within the
# hard limit); conmon passes only conmon_env_vars to the runtime, so the shim's config goes there.
printf '%s\n' '[containers]' 'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]' 'netns = "none"' \
  '[engine]' 'cgroup_manager = "cgroupfs"' 'events_logger = "file"' 'runtime = "runc"' \
  "conmon_env_vars = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \"ENFLAME_CTK_CONFIG=$tmp/config.toml\"]" \
  > "$CONTAINERS_CONF"

etc_cdi=; [ -d /etc/cdi ] && etc_cdi=/etc/cdi
# shellcheck disable=SC2016  # $1, $2 expand in the inner shell
unshare --mount --propagation private -- /bin/sh -c '
  mount --bind "$1/cdi" /run/cdi || exit 1
  [ -z "$2" ] || mount --bind "$1/empty" "$2" || exit 1
  shift 2
  exec "$@"' sh "$tmp" "$etc_cdi" \
  python3 - "$tmp" "$shim" "$RUNS" "${BENCH_JSON:-}" <<'PY'
import subprocess, sys
import benchlib as bl
tmp, shim, runs, out_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
       "CONTAINERS_CONF": f"{tmp}/containers.conf"}
timer = bl.Timer(f"{tmp}/shim_time", env)
pm = ["/usr/bin/podman", "--root", f"{tmp}/pm/root", "--runroot", f"{tmp}/pm/run", "--tmpdir", f"{tmp}/pm/tmp"]
tail = ["--rootfs", f"{tmp}/rootfs", "true"]
req = ["-e", "ENFLAME_VISIBLE_DEVICES=0"]
variants = {
    "none": pm + ["run", "--rm"] + tail,
    "native": pm + ["run", "--rm", "--device", "enflame.com/gpu=0"] + tail,
    "shim": pm + ["--runtime", shim, "run", "--rm"] + req + tail,
    "hook": pm + ["--hooks-dir", f"{tmp}/hooks.d", "run", "--rm"] + req + tail,
}
# Check once that each variant does what it says (gcu0 in the container or not), so no
# variant is a no-op; this also warms the page cache.
for k, argv in variants.items():
    probe = argv[:-1] + ["sh", "-c", "test -c /dev/gcu0"]
    got = subprocess.run(probe, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if (got.returncode == 0) != (k != "none"):
        sys.exit(f"podman bench: {k}: /dev/gcu0 {'missing' if k != 'none' else 'present'} (exit {got.returncode}): "
                 f"{got.stderr.strip()[-1000:]}")
t = {k: [] for k in variants}
for r in range(runs):
    # every other round in reverse, so no variant always runs right after another
    for k, argv in (list(variants.items()) if r % 2 == 0 else list(variants.items())[::-1]):
        t[k].append(timer.run(argv, out=f"{tmp}/run.out")[0])
what = {"none": "podman run, no toolkit",
        "native": "podman run --device enflame.com/gpu=0",
        "shim": "podman --runtime <shim> run -e VISIBLE=0",
        "hook": "podman --hooks-dir <hook> run -e VISIBLE=0"}
s = {k: bl.side(what[k], v) for k, v in t.items()}
print(f"podman run of `true`, {runs} runs per variant, alternating; milliseconds")
print(f"{'variant':<8} {'median':>8} {'p25-p75':>17} {'vs none':>8}")
for k in variants:
    print(f"{k:<8} {s[k]['median_ms']:8.1f} {s[k]['p25_ms']:8.1f}-{s[k]['p75_ms']:<8.1f} "
          f"{s[k]['median_ms'] - s['none']['median_ms']:+8.1f}")
note = "RSS n/a: podman's process tree; see the shim and hook rows"
rows = [bl.row("podman", "start, 1 card, shim (cdi mode) vs no toolkit", runs, s["shim"], s["none"], note=note),
        bl.row("podman", "start, 1 card, shim (cdi mode) vs podman's CDI", runs, s["shim"], s["native"], note=note),
        bl.row("podman", "start, 1 card, legacy hook vs no toolkit", runs, s["hook"], s["none"], note=note),
        bl.row("podman", "(not ours) podman's CDI --device vs no toolkit", runs, s["native"], s["none"],
               note="podman's own CDI injection, for scale")]
bl.write(out_json, "podman", runs, rows)
PY
