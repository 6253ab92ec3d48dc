#!/usr/bin/env bats
# The README's first commands as a newcomer runs them: `make demo` (and, with the Kubernetes
# binaries named, `make demo-cluster`) exit 0, show the cards where they should be and leave
# nothing behind; no script ends a run that worked with a pipe's SIGPIPE (status 141).

load helpers
bats_require_minimum_version 1.5.0

setup() { setup_scratch; }
teardown() { teardown_scratch; }

# leftovers: what a demo may leave on the host, listed (nothing when clean).
leftovers() {
  ls -d /tmp/enflame-demo.* /tmp/ectk-demo-cluster.* /var/run/cdi/enflame-demo-* 2>/dev/null || true
}

@test "make demo: exit 0, card 1 in a podman container, cards 0 and 2 through the shim, nothing left behind" {
  requires root podman runc
  [ -z "$(leftovers)" ] || skip_or_fail "a demo's leftovers from before: $(leftovers)"
  local preset
  preset=$(basename "$BUILD_DIR")
  # through make when BUILD_DIR is a preset's folder (its targets are built: a no-op build)
  if [ "$BUILD_DIR" = "$TOP/build/$preset" ]; then
    run make -s -C "$TOP" demo PRESET="$preset"
  else
    run env BUILD_DIR="$BUILD_DIR" "$TOP/scripts/demo.sh"
  fi
  echo "$output"
  [ "$status" -eq 0 ]
  # podman --device enflame.com/gpu=1: that card alone
  [[ $output == *"238,   1 "*"/dev/gcu1"* ]]
  # the shim with ENFLAME_VISIBLE_DEVICES=0,2: those two
  [[ $output == *"/dev/gcu0"*"/dev/gcu2"*"/usr/lib/libefml.so.1 ro"* ]]
  [[ $output == *"== done: everything the demo created is removed"* ]]
  [ -z "$(leftovers)" ]
}

@test "scripts: no pipeline under pipefail ends in a reader that quits early (SIGPIPE, exit 141)" {
  run python3 "$TOP/tests/lint/early_readers.py" "$TOP"/scripts/*.sh "$TOP"/tests/cluster/*.sh \
    "$TOP"/bench/*.sh "$TOP"/k8s/tests/*.sh "$TOP/.ci/run"
  echo "$output"
  [ "$status" -eq 0 ]
  # and the check finds one (a pipeline made to fail it)
  printf '#!/bin/bash\nset -euo pipefail\nseq 100000 |\n  head -n 1\n' > "$SCRATCH/bad.sh"
  run -1 python3 "$TOP/tests/lint/early_readers.py" "$SCRATCH/bad.sh"
  [ "$output" = "$SCRATCH/bad.sh:3: seq 100000 | head -n 1" ]
}

@test "make demo-cluster: exit 0 on a real one-node cluster, everything removed" {
  needs_kube_bin
  requires root
  run make -s -C "$TOP" demo-cluster PRESET="$(basename "$BUILD_DIR")"
  echo "$output" | tail -n 40
  [ "$status" -eq 0 ]
  # the example pod's two cards, and the node's capacity
  [[ $output == *"ENFLAME_VISIBLE_DEVICES="* ]]
  [[ $output == *"capacity "*", allocatable "* ]]
  [[ $output == *"demo-cluster: done in "* ]]
  [ -z "$(leftovers)" ]
}

@test "the repository needs nothing beside it: no file cites the folder that only a checkout has beside it" {
  run grep -rnI --exclude-dir=build --exclude-dir=.git -e '\.\./shar[e]d' "$TOP"
  echo "$output"
  [ "$status" -eq 1 ]
  [ -z "$output" ]
}

@test "the repository needs nothing beside it: no file cites the design notes kept outside it" {
  # What the code cites lives in docs/ (docs/README.md lists the files): cite those. The
  # brackets keep this file from matching its own pattern.
  local pat='(DESIG[N]|KUBERNETE[S])\.md|fact[s]/[A-Za-z0-9_.-]+\.md'
  # the pattern finds each kind of citation (the names split so this file does not hold them)
  for cite in "DESIGN"".md section 3" "KUBERNETES"".md section 5" "facts""/operator.md 1.3"; do
    grep -qE "$pat" <<<"$cite" || { echo "pattern misses: $cite"; return 1; }
  done
  if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
    run git -C "$TOP" grep -nIE -e "$pat"
  else
    run grep -rnIE --exclude-dir=build --exclude-dir=.git -e "$pat" "$TOP"
  fi
  echo "$output"
  [ "$status" -eq 1 ]
  [ -z "$output" ]
}
