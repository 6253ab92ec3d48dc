#!/usr/bin/env bash
# Runs every test stage of `make test` and counts each test once:
#   build    the BUILD_DIR tree (`all`: the binaries, simulators, unit tests, fuzz replayers),
#            build/static (`make host-binaries`: the three static host binaries that
#            host_binaries.bats installs into a Debian 11 root and a root without libraries)
#            and build/static-arm64 (the same three cross-built for aarch64, which
#            host_binaries_arm64.bats runs under qemu-aarch64-static): `host-binaries ARCH=all`
#   unit     its unit tests (ctest)
#   bats     its integration tests (bats, real runtimes; scripts/run-integration.sh)
#   asan     the unit tests and the shim/hook integration tests again, under ASan+UBSan
#            (scripts/run-asan.sh, build/asan)
#   release  shim.bats, shim_entry.bats and hooks.bats again, against the release preset's
#            binaries: the shipped shim is the lean one (runtime-shim/CMakeLists.txt), a static
#            PIE whose passthrough fast path runs before glibc starts, so it is tested too
#            (build/release, only the targets those files use)
#   lint     clang-tidy and cppcheck over libinject/ (scripts/lint.sh)
# ENFLAME_TEST_ASAN=0, ENFLAME_TEST_RELEASE=0, ENFLAME_TEST_LINT=0 skip a stage for a quick
# local run; CI (.ci/run -> make test) runs everything.
#
# It prints each stage's counts on its own line ("asan rerun: ..." for a rerun), the stages'
# wall times, and last one closing line "tests: N passed, N failed, N skipped" that counts the
# distinct tests of the first run (unit + integration): a test that fails in any stage, a
# rerun included, counts as failed (once), and a stage that fails without a failing test (a
# build, lint, a test runner that crashed) counts as one failed test. It exits non-zero
# exactly when that line says a test failed.
set -uo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the build folder}
top=$(cd "$(dirname "$0")/.." && pwd)
export ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-$top/build/asan}
RELEASE_BUILD_DIR=${RELEASE_BUILD_DIR:-$top/build/release}
# What shim.bats and hooks.bats run (tests/integration/helpers.bash: CTK, SHIM, HOOK, SIM_HOST
# and the simulators it copies into each simulated host).
RELEASE_TEST_TARGETS=(enflame-ctk enflame-container-runtime enflame-container-runtime-hook
                      enflame-sim-host enflame-sim-efsmi efml-sim)

# shellcheck source=scripts/test-counts.sh
. "$top/scripts/test-counts.sh"

results=$BUILD_DIR/test-results
rm -rf "$results" && mkdir -p "$results"
# first.failed / first.skipped: the first run's failed and skipped tests; rerun.failed: the
# tests a rerun failed; stage.failed: stages that failed without a failing test.
: > "$results/first.failed"; : > "$results/first.skipped"; : > "$results/rerun.failed"; : > "$results/stage.failed"

# stage_failed NAME WHY: a stage failed with no failing test to show for it.
stage_failed() { echo "stage $1: $2" >> "$results/stage.failed"; }

stage_times=()
# timed NAME CMD...: run CMD in this shell and note its wall time under NAME, with the
# breakdown CMD may leave in stage_detail ("build 30s, bats 60s").
timed() {
    local name=$1 start=$SECONDS rc
    shift
    stage_detail=
    "$@"; rc=$?
    stage_times+=("$name $(( SECONDS - start ))s${stage_detail:+ ($stage_detail)}")
    return $rc
}

# ---- build, unit, bats: the first run, whose tests are the ones counted ----
lines=()
built=1
build_stage() { cmake --build "$BUILD_DIR" -j2 && make -s -C "$top" host-binaries ARCH=all; }
if ! timed build build_stage; then
    built=0
    stage_failed build "cmake --build $BUILD_DIR or make host-binaries ARCH=all failed"
    unit_total=0 unit_failed=0 unit_skipped=0 int_total=0 int_failed=0 int_skipped=0
    lines+=("build: FAILED (output above); no test ran")
else
    timed unit run_unit "$BUILD_DIR"
    ctest_keys "$BUILD_DIR/ctest.log" fail >> "$results/first.failed"
    ctest_keys "$BUILD_DIR/ctest.log" skip >> "$results/first.skipped"
    if [ "$unit_total" -eq 0 ]; then stage_failed unit "no unit test ran"
    elif [ "$unit_rc" -ne 0 ] && [ "$unit_failed" -eq 0 ]; then stage_failed unit "ctest exited $unit_rc"; fi
    lines+=("unit tests: $(counts_line $(( unit_total - unit_failed - unit_skipped )) "$unit_failed" "$unit_skipped")")

    timed bats run_bats "$BUILD_DIR/bats.log" env BUILD_DIR="$BUILD_DIR" "$top/scripts/run-integration.sh"
    bats_keys "$BUILD_DIR/bats.log" fail >> "$results/first.failed"
    bats_keys "$BUILD_DIR/bats.log" skip >> "$results/first.skipped"
    if [ "$int_total" -eq 0 ]; then stage_failed bats "no integration test ran"
    elif [ "$int_rc" -ne 0 ] && [ "$int_failed" -eq 0 ]; then stage_failed bats "bats exited $int_rc"; fi
    lines+=("integration tests: $(counts_line $(( int_total - int_failed - int_skipped )) "$int_failed" "$int_skipped")")
fi

# ---- reruns: the same tests again, in another build ----
# rerun NAME RC CTEST_LOG BATS_LOG WHAT: count a rerun from its logs (either may be "" or
# missing), note its failures, and add its "NAME rerun: ..." line.
rerun() {
    local name=$1 rc=$2 what=$5 t=0 f=0 s=0 ut uf us bt bf bs
    read -r ut uf us < <(ctest_counts "${3:-/nonexistent}")
    read -r bt bf bs < <(bats_counts "${4:-/nonexistent}")
    t=$(( ut + bt )) f=$(( uf + bf )) s=$(( us + bs ))
    { [ -n "$3" ] && ctest_keys "$3" fail; [ -n "$4" ] && bats_keys "$4" fail; } >> "$results/rerun.failed"
    if [ "$t" -eq 0 ]; then
        stage_failed "$name" "no test ran (exit $rc)"
        lines+=("$name rerun: FAILED before any test ran (see its output above)")
        return
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then stage_failed "$name" "exited $rc without a failing test"; fi
    lines+=("$name rerun: $(counts_line $(( t - f - s )) "$f" "$s") ($what)")
}

# skipping NAME VAR: true (and says why) when stage NAME is not to run.
skipping() {
    if [ "$built" = 0 ]; then lines+=("$1: not run (the build failed)"); return 0; fi
    if [ "${!2:-1}" = 0 ]; then lines+=("$1: not run ($2=0)"); return 0; fi
    return 1
}

if ! skipping "asan rerun" ENFLAME_TEST_ASAN; then
    asan_stage() {
        "$top/scripts/run-asan.sh" 2>&1 | tee "$BUILD_DIR/asan.log"
        rerun asan "${PIPESTATUS[0]}" "$ASAN_BUILD_DIR/ctest.log" "$ASAN_BUILD_DIR/bats.log" \
            "the unit tests and the shim/hook bats files under ASan+UBSan; log $BUILD_DIR/asan.log"
        stage_detail=$(sed -n 's/^asan stage times: //p' "$BUILD_DIR/asan.log" | tail -1)
    }
    timed asan asan_stage
fi

if ! skipping "release rerun" ENFLAME_TEST_RELEASE; then
    release_stage() {
        # run_bats's results stay local: int_* are the first run's counts.
        local rc=1 start=$SECONDS int_rc int_total int_failed int_skipped
        rm -f "$RELEASE_BUILD_DIR/bats.log"
        # Configured every time, so the tree always has the preset's flags: what ships.
        if (cd "$top" && cmake --preset release -B "$RELEASE_BUILD_DIR" >/dev/null) &&
           cmake --build "$RELEASE_BUILD_DIR" -j2 --target "${RELEASE_TEST_TARGETS[@]}"; then
            stage_detail="build $(( SECONDS - start ))s" start=$SECONDS
            run_bats "$RELEASE_BUILD_DIR/bats.log" env BUILD_DIR="$RELEASE_BUILD_DIR" \
                bats --tap "$top/tests/integration/shim.bats" "$top/tests/integration/shim_entry.bats" \
                "$top/tests/integration/hooks.bats"
            rc=$int_rc
            stage_detail+=", bats $(( SECONDS - start ))s"
        fi
        rerun release "$rc" "" "$RELEASE_BUILD_DIR/bats.log" "shim.bats, shim_entry.bats and hooks.bats against the release build"
    }
    timed release release_stage
fi

if ! skipping lint ENFLAME_TEST_LINT; then
    lint_stage() {
        BUILD_DIR=$BUILD_DIR "$top/scripts/lint.sh" 2>&1 | tee "$BUILD_DIR/lint.log"
        if [ "${PIPESTATUS[0]}" -eq 0 ]; then lines+=("lint: clang-tidy and cppcheck clean over libinject/")
        else
            stage_failed lint "findings in $BUILD_DIR/lint.log"
            lines+=("lint: FAILED (findings above, log in $BUILD_DIR/lint.log)")
        fi
    }
    timed lint lint_stage
fi

# ---- the one count: each test of the first run once ----
# A test a rerun failed that did not fail the first time moves to failed (from passed, or from
# skipped if the first run skipped it); a failed stage adds one failed "test" of its own.
sort -u "$results/rerun.failed" | grep -vxFf "$results/first.failed" > "$results/rerun.new-failures"
new_failed=$(wc -l < "$results/rerun.new-failures")
were_skipped=$(grep -cxFf "$results/first.skipped" "$results/rerun.new-failures")
stages=$(wc -l < "$results/stage.failed")
total=$(( unit_total + int_total + stages ))
failed=$(( unit_failed + int_failed + new_failed + stages ))
skipped=$(( unit_skipped + int_skipped - were_skipped ))

echo
printf '%s\n' "${lines[@]}"
if [ "$(( new_failed + stages ))" -gt 0 ]; then
    echo "failed beyond the first run's tests:"
    sed 's/^/  /' "$results/rerun.new-failures" "$results/stage.failed"
fi
echo "distinct tests: $(( unit_total + int_total )) (unit $unit_total, integration $int_total); a test failed in any stage counts as failed once"
if [ "$skipped" -gt 0 ]; then
    echo "skipped $skipped tests, and why (each reason once):"
    skip_reasons "$BUILD_DIR/bats.log" "$BUILD_DIR/ctest.log"
fi
stage_times+=("total ${SECONDS}s")
echo "stage times: $(printf '%s, ' "${stage_times[@]}" | sed 's/, $//')"
echo "tests: $(counts_line $(( total - failed - skipped )) "$failed" "$skipped")"
[ "$failed" -eq 0 ]
