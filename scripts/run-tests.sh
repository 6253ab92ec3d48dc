#!/usr/bin/env bash
# Runs every test: the unit tests (ctest) and the integration tests (bats, real runtimes),
# then prints one closing line "tests: N passed, N failed, N skipped".
set -uo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the build folder}
top=$(cd "$(dirname "$0")/.." && pwd)

(cd "$BUILD_DIR" && ctest --output-on-failure -j2 | tee "$BUILD_DIR/ctest.log")
unit_rc=${PIPESTATUS[0]}
unit_total=$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$BUILD_DIR/ctest.log" | tail -1)
unit_failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$BUILD_DIR/ctest.log" | tail -1)
unit_skipped=$(grep -c '(Skipped)' "$BUILD_DIR/ctest.log")

BUILD_DIR=$BUILD_DIR "$top/scripts/run-integration.sh" | tee "$BUILD_DIR/bats.log"
int_rc=${PIPESTATUS[0]}
int_total=$(grep -cE '^(ok|not ok) ' "$BUILD_DIR/bats.log")
int_failed=$(grep -cE '^not ok ' "$BUILD_DIR/bats.log")
int_skipped=$(grep -cE '^ok .* # skip' "$BUILD_DIR/bats.log")

total=$(( ${unit_total:-0} + int_total ))
failed=$(( ${unit_failed:-0} + int_failed ))
skipped=$(( unit_skipped + int_skipped ))
echo
echo "unit: $(( ${unit_total:-0} - ${unit_failed:-0} - unit_skipped )) passed, ${unit_failed:-0} failed, ${unit_skipped} skipped"
echo "integration: $(( int_total - int_failed - int_skipped )) passed, ${int_failed} failed, ${int_skipped} skipped"
echo "tests: $(( total - failed - skipped )) passed, ${failed} failed, ${skipped} skipped"
[ "$unit_rc" -eq 0 ] && [ "$int_rc" -eq 0 ] && [ "${unit_total:-0}" -gt 0 ]
