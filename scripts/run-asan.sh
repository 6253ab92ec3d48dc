#!/usr/bin/env bash
# The sanitizer run (issue 7): builds the `asan` preset (ASan + UBSan, -fno-sanitize-recover)
# and runs, against it, every unit test (ctest) and the integration tests that exercise the
# shim and the hooks: shim.bats, hooks.bats, security.bats (hostile rootfs trees), faults.bats
# (full, read-only and failing disks; efsmi faults), concurrency.bats, shim_podman.bats and
# shim_containerd.bats (2.5 minutes in all on 2 cores, once built). Any sanitizer report fails
# the run: ASan and UBSan abort the process, which fails the test that started it.
# Prints one closing line "asan tests: N passed, N failed, N skipped".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-$top/build/asan}

if [ ! -f "$ASAN_BUILD_DIR/CMakeCache.txt" ]; then
    if [ "$ASAN_BUILD_DIR" = "$top/build/asan" ]; then
        (cd "$top" && cmake --preset asan >/dev/null) || exit 1
    else
        echo "error: '$ASAN_BUILD_DIR' is not configured (cmake --preset asan, or leave ASAN_BUILD_DIR unset)" >&2
        exit 1
    fi
fi
cmake --build "$ASAN_BUILD_DIR" -j2 || exit 1

# halt_on_error/abort: a report is a failure, never a log line. LeakSanitizer runs at exit by
# default; detect_leaks is left unset here so the executables' own default can switch it off
# where it cannot work (cmake/lsan_options.cpp), since this variable would override it.
# Binaries started by a runtime (the hooks under runc) get the OCI spec's own env, where these
# defaults (halt on error, leaks on) hold as well.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# shellcheck source=scripts/test-counts.sh
. "$top/scripts/test-counts.sh"
run_unit "$ASAN_BUILD_DIR"
it=$top/tests/integration
run_bats "$ASAN_BUILD_DIR/bats.log" env BUILD_DIR="$ASAN_BUILD_DIR" bats --tap "$it/shim.bats" "$it/hooks.bats" \
    "$it/security.bats" "$it/faults.bats" "$it/concurrency.bats" "$it/shim_podman.bats" "$it/shim_containerd.bats"

total=$(( unit_total + int_total ))
failed=$(( unit_failed + int_failed ))
skipped=$(( unit_skipped + int_skipped ))
echo
echo "asan tests: $(( total - failed - skipped )) passed, ${failed} failed, ${skipped} skipped"
[ "$unit_rc" -eq 0 ] && [ "$int_rc" -eq 0 ] && [ "$unit_total" -gt 0 ]
