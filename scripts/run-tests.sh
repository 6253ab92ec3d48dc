#!/usr/bin/env bash
# Runs every test: the unit tests (ctest) and the integration tests (bats, real runtimes) of
# BUILD_DIR, then the sanitizer run (scripts/run-asan.sh: the asan preset's unit tests and the
# shim/hook integration tests under ASan+UBSan) and the static checks over libinject/
# (scripts/lint.sh), and prints one closing line "tests: N passed, N failed, N skipped".
# ENFLAME_TEST_ASAN=0 / ENFLAME_TEST_LINT=0 skip those two stages for a quick local run; CI
# (.ci/run -> make test) runs everything.
set -uo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the build folder}
top=$(cd "$(dirname "$0")/.." && pwd)

# shellcheck source=scripts/test-counts.sh
. "$top/scripts/test-counts.sh"
run_unit "$BUILD_DIR"
run_bats "$BUILD_DIR/bats.log" env BUILD_DIR="$BUILD_DIR" "$top/scripts/run-integration.sh"

asan_rc=0 asan_line="asan tests: not run (ENFLAME_TEST_ASAN=0)"
asan_passed=0 asan_failed=0 asan_skipped=0
if [ "${ENFLAME_TEST_ASAN:-1}" != 0 ]; then
    "$top/scripts/run-asan.sh" 2>&1 | tee "$BUILD_DIR/asan.log"
    asan_rc=${PIPESTATUS[0]}
    asan_line=$(grep -E '^asan tests: ' "$BUILD_DIR/asan.log" | tail -1)
    if [ -z "$asan_line" ]; then
        asan_line="asan tests: the sanitizer build or run failed (see $BUILD_DIR/asan.log)"
        asan_failed=1
    else
        read -r asan_passed asan_failed asan_skipped < <(echo "$asan_line" |
            sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/')
    fi
fi

lint_rc=0 lint_line="lint: not run (ENFLAME_TEST_LINT=0)"
if [ "${ENFLAME_TEST_LINT:-1}" != 0 ]; then
    BUILD_DIR=$BUILD_DIR "$top/scripts/lint.sh" 2>&1 | tee "$BUILD_DIR/lint.log"
    lint_rc=${PIPESTATUS[0]}
    if [ "$lint_rc" -eq 0 ]; then lint_line="lint: clang-tidy and cppcheck clean over libinject/"
    else lint_line="lint: FAILED (findings above, log in $BUILD_DIR/lint.log)"; fi
fi

total=$(( unit_total + int_total + asan_passed + asan_failed + asan_skipped ))
failed=$(( unit_failed + int_failed + asan_failed ))
skipped=$(( unit_skipped + int_skipped + asan_skipped ))
echo
echo "unit: $(( unit_total - unit_failed - unit_skipped )) passed, $unit_failed failed, ${unit_skipped} skipped"
echo "integration: $(( int_total - int_failed - int_skipped )) passed, ${int_failed} failed, ${int_skipped} skipped"
echo "$asan_line"
echo "$lint_line"
echo "tests: $(( total - failed - skipped )) passed, ${failed} failed, ${skipped} skipped"
[ "$unit_rc" -eq 0 ] && [ "$int_rc" -eq 0 ] && [ "$unit_total" -gt 0 ] && [ "$asan_rc" -eq 0 ] && [ "$lint_rc" -eq 0 ]
