#!/usr/bin/env bats
# Load: many containers started at once through the shim (runc bundles, podman), each gets
# exactly what it asked for, none fails, no temp file is left; and `cdi generate` rewriting a
# spec in a loop while podman reads it never shows podman a partial file.
# Every loop is bounded; every container, spec and mount is removed in teardown.

load helpers

setup() {
  setup_scratch
  requires root runc python3
  sim_setup 4
  RR=$SCRATCH/runc-root   # a private runc state root
}

teardown() { teardown_scratch; }

# check_cards FILE CARD: FILE (the container's `ls /dev` and env) shows exactly gcuCARD and
# gcuctl, or no gcu node at all when CARD is "-".
check_cards() {
  local f=$1 card=$2 got
  grep -Fxq "probe-done" "$f" || { echo "$f: the container did not finish"; cat "$f"; return 1; }
  got=$(grep -E '^gcu' "$f" | sort | tr '\n' ' ')
  if [ "$card" = - ]; then
    [ -z "$got" ] || { echo "$f: asked for nothing, got: $got"; return 1; }
  else
    [ "$got" = "gcu$card gcuctl " ] || { echo "$f: asked for card $card, got: $got"; return 1; }
  fi
}

@test "50 runc bundles created in parallel through the shim: each gets what it asked, no temp file" {
  local n=50 i pids=() ids=()
  busybox_rootfs "$SCRATCH/rootfs0"
  runc spec --bundle "$SCRATCH" && mv "$SCRATCH/config.json" "$SCRATCH/spec0.json"
  for ((i = 0; i < n; i++)); do
    mkdir -p "$SCRATCH/b$i"
    cp -a "$SCRATCH/rootfs0" "$SCRATCH/b$i/rootfs"
    ids[i]=$(unique_id conc$i)
    on_teardown "runc --root '$RR' delete -f ${ids[i]} >/dev/null 2>&1"
  done
  # Even bundles ask for card i%4, odd ones ask for nothing.
  python3 - "$SCRATCH" "$n" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
base = json.load(open(f"{d}/spec0.json"))
for i in range(n):
    c = json.loads(json.dumps(base))
    c["process"]["terminal"] = False
    c["process"]["args"] = ["sh", "-c", "ls /dev; env; echo probe-done"]
    if i % 2 == 0:
        c["process"]["env"].append(f"ENFLAME_VISIBLE_DEVICES={i // 2 % 4}")
    json.dump(c, open(f"{d}/b{i}/config.json", "w"))
PY
  for ((i = 0; i < n; i++)); do
    timeout 120 "$SHIM" --root "$RR" run --bundle "$SCRATCH/b$i" "${ids[i]}" \
      > "$SCRATCH/out$i" 2> "$SCRATCH/err$i" < /dev/null &
    pids[i]=$!
  done
  local failed=0
  for ((i = 0; i < n; i++)); do
    if ! wait "${pids[i]}"; then echo "container $i failed: $(cat "$SCRATCH/err$i")"; failed=$((failed + 1)); fi
  done
  [ "$failed" -eq 0 ]
  for ((i = 0; i < n; i++)); do
    if ((i % 2 == 0)); then
      check_cards "$SCRATCH/out$i" $((i / 2 % 4))
      grep -Fxq "ENFLAME_VISIBLE_DEVICES=void" "$SCRATCH/out$i"
    else
      check_cards "$SCRATCH/out$i" -
    fi
  done
  [ -z "$(find "$SCRATCH" -maxdepth 2 -name 'config.json.tmp.*' -print -quit)" ]
  # the requests were rewritten, the others left alone
  grep -q '"/dev/gcu0"' "$SCRATCH/b0/config.json"
  run grep -c 'gcu' "$SCRATCH/b1/config.json"
  [ "$output" = 0 ]
}

# --- podman ---

requires_podman() {
  requires podman
  podman_with_shim
}

@test "10 podman runs in parallel through the shim: each gets what it asked, none fails" {
  requires_podman
  local n=10 i pids=() env
  # Each container writes what it sees into a bind-mounted folder: under load podman's attach
  # can lose the last output of a container that exits at once (seen once in CI: podman ran
  # and exited 0, but its stdout lacked the final line).
  mkdir -p "$SCRATCH/res"
  for ((i = 0; i < n; i++)); do
    env=(); ((i % 2 == 0)) && env=(-e "ENFLAME_VISIBLE_DEVICES=$((i / 2 % 4))")
    timeout 150 "${PM[@]}" --runtime "$SHIM" run --rm --name "$(unique_id pmconc$i)" "${env[@]}" \
      -v "$SCRATCH/res:/res" --rootfs "$SCRATCH/rootfs" \
      sh -c "{ ls /dev; env; echo probe-done; } > /res/out$i.tmp && mv /res/out$i.tmp /res/out$i" \
      > "$SCRATCH/log$i" 2> "$SCRATCH/err$i" < /dev/null &
    pids[i]=$!
  done
  local failed=0
  for ((i = 0; i < n; i++)); do
    if ! wait "${pids[i]}"; then echo "podman run $i failed: $(cat "$SCRATCH/err$i")"; failed=$((failed + 1)); fi
  done
  [ "$failed" -eq 0 ]
  for ((i = 0; i < n; i++)); do
    if ((i % 2 == 0)); then check_cards "$SCRATCH/res/out$i" $((i / 2 % 4)); else check_cards "$SCRATCH/res/out$i" -; fi
  done
}

@test "cdi generate rewriting the spec in a loop while podman starts 20 containers: no parse error" {
  requires_podman
  requires unshare
  # podman reads specs from /var/run/cdi only: it runs in a private mount namespace whose /run
  # is $SCRATCH/run (cdi_ns), so the spec is written to $SCRATCH/run/cdi, never the host's.
  cdi_ns "$SCRATCH/run"
  PM=("${CDI_NS[@]}" "${PM[@]}")
  local vendor="race-$$-$RANDOM.enflame.com" spec="$SCRATCH/run/cdi/ectk-race-$$-$RANDOM.yaml"
  "$CTK" cdi generate --no-drs --vendor "$vendor" --output "$spec"
  # The writer: regenerate until told to stop, at most 2000 times (bounded even if we die).
  (
    for ((k = 0; k < 2000; k++)); do
      [ -e "$SCRATCH/stop" ] && break
      "$CTK" cdi generate --no-drs --vendor "$vendor" --output "$spec" || echo "generate failed" >> "$SCRATCH/gen-errors"
      echo $k > "$SCRATCH/gen-count"
    done
  ) &
  local writer=$!
  on_teardown "touch '$SCRATCH/stop'; wait $writer 2>/dev/null"
  local i failed=0
  mkdir -p "$SCRATCH/res"   # results through a bind mount, as in the test above
  for ((i = 0; i < 20; i++)); do
    if ! timeout 60 "${PM[@]}" run --rm --name "$(unique_id pmrace$i)" --device "$vendor/gpu=0" \
         -v "$SCRATCH/res:/res" --rootfs "$SCRATCH/rootfs" \
         sh -c "{ ls /dev; echo probe-done; } > /res/out$i.tmp && mv /res/out$i.tmp /res/out$i" \
         > "$SCRATCH/log$i" 2>&1 < /dev/null; then
      echo "podman run $i failed: $(cat "$SCRATCH/log$i")"; failed=$((failed + 1))
    fi
  done
  touch "$SCRATCH/stop"
  wait $writer
  echo "spec regenerated $(cat "$SCRATCH/gen-count") times during the runs"
  [ "$failed" -eq 0 ]
  [ ! -e "$SCRATCH/gen-errors" ]
  [ "$(cat "$SCRATCH/gen-count")" -ge 20 ]
  for ((i = 0; i < 20; i++)); do check_cards "$SCRATCH/res/out$i" 0; done
  [ -z "$(find "$SCRATCH/run/cdi" -maxdepth 1 -name "$(basename "$spec").tmp.*" -print -quit)" ]
}
