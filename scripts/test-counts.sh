# shellcheck shell=bash
# Sourced by run-tests.sh and run-asan.sh: run a test stage, keep its log, count its results,
# and name the tests that failed or were skipped (so that run-tests.sh counts a test once,
# however many stages run it). The variables these functions set are their results, read by
# the script that sources this.
# shellcheck disable=SC2034

# ctest_counts LOG: "TOTAL FAILED SKIPPED" from a ctest log ("0 0 0" without one).
ctest_counts() {
    local total failed skipped
    total=$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$1" 2>/dev/null | tail -1)
    failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$1" 2>/dev/null | tail -1)
    skipped=$(ctest_keys "$1" skip | wc -l)
    echo "${total:-0} ${failed:-0} $skipped"
}

# ctest_keys LOG fail|skip: "unit NAME" for each test ctest lists as failed (FAILED: failed,
# timed out, crashed, not run) or as skipped, one a line.
ctest_keys() {
    [ -f "$1" ] || return 0
    awk -v want="$2" '
        /^The following tests FAILED:/ { sec = "fail"; next }
        /^The following tests did not run:/ { sec = "skip"; next }
        /^[^ \t]/ { sec = "" }
        sec == want && match($0, /^[ \t]+[0-9]+ - /) {
            name = substr($0, RLENGTH + 1)
            status = name; sub(/.* \(/, "", status); sub(/\)$/, "", status)
            sub(/ \([^()]*\)$/, "", name)
            if (want == "fail" || status == "Skipped") print "unit " name
        }' "$1"
}

# bats_counts LOG: "TOTAL FAILED SKIPPED" from a bats --tap log ("0 0 0" without one).
bats_counts() {
    [ -f "$1" ] || { echo "0 0 0"; return 0; }
    echo "$(grep -cE '^(ok|not ok) [0-9]+ ' "$1") $(grep -cE '^not ok [0-9]+ ' "$1") $(grep -cE '^ok [0-9]+ .* # skip' "$1")"
}

# bats_keys LOG fail|skip: "bats DESCRIPTION" for each failed or skipped test, one a line.
bats_keys() {
    [ -f "$1" ] || return 0
    case $2 in
        fail) sed -n 's/^not ok [0-9]* \(.*\)$/bats \1/p' "$1" ;;
        skip) sed -n 's/^ok [0-9]* \(.*\) # skip.*$/bats \1/p' "$1" ;;
    esac
}

# run_unit DIR: ctest in the build folder DIR (log DIR/ctest.log). Sets unit_rc, unit_total,
# unit_failed, unit_skipped.
run_unit() {
    (cd "$1" && ctest --output-on-failure -j2 | tee "$1/ctest.log")
    unit_rc=${PIPESTATUS[0]}
    read -r unit_total unit_failed unit_skipped < <(ctest_counts "$1/ctest.log")
}

# run_bats LOG CMD...: run CMD (bats --tap, or a script that execs it) into LOG. Sets int_rc,
# int_total, int_failed, int_skipped.
run_bats() {
    local log=$1; shift
    "$@" | tee "$log"
    int_rc=${PIPESTATUS[0]}
    read -r int_total int_failed int_skipped < <(bats_counts "$log")
}

# skip_reasons BATS_LOG [CTEST_LOG]: "  N tests: REASON" for each distinct reason the first run
# skipped tests for, most first (GoogleTest's skips, whose reason ctest does not keep, as one).
skip_reasons() {
    {
        [ -f "$1" ] && sed -n 's/^ok [0-9]* .* # skip *\(.*\)$/\1/p' "$1"
        [ -n "${2:-}" ] && ctest_keys "$2" skip | sed 's/.*/a unit test skipped itself (ctest.log names it)/'
    } | sort | uniq -c | sort -rn | awk '{ n = $1; sub(/^ *[0-9]+ /, ""); printf "  %d test%s: %s\n", n, n == 1 ? "" : "s", $0 }'
}

# counts_line P F S: "P passed, F failed, S skipped".
counts_line() { echo "$1 passed, $2 failed, $3 skipped"; }
