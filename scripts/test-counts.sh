# shellcheck shell=bash
# Sourced by run-tests.sh and run-asan.sh: run a test stage, keep its log, count its results.
# The variables these functions set are their results, read by the script that sources this.
# shellcheck disable=SC2034

# run_unit DIR: ctest in the build folder DIR (log DIR/ctest.log). Sets unit_rc, unit_total,
# unit_failed, unit_skipped.
run_unit() {
    (cd "$1" && ctest --output-on-failure -j2 | tee "$1/ctest.log")
    unit_rc=${PIPESTATUS[0]}
    unit_total=$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$1/ctest.log" | tail -1)
    unit_failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$1/ctest.log" | tail -1)
    unit_skipped=$(grep -c '(Skipped)' "$1/ctest.log")
    unit_total=${unit_total:-0} unit_failed=${unit_failed:-0}
}

# run_bats LOG CMD...: run CMD (bats --tap, or a script that execs it) into LOG. Sets int_rc,
# int_total, int_failed, int_skipped.
run_bats() {
    local log=$1; shift
    "$@" | tee "$log"
    int_rc=${PIPESTATUS[0]}
    int_total=$(grep -cE '^(ok|not ok) ' "$log")
    int_failed=$(grep -cE '^not ok ' "$log")
    int_skipped=$(grep -cE '^ok .* # skip' "$log")
}
