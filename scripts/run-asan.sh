#!/usr/bin/env bash
# The sanitizer run (issue 7): builds the `asan` preset (ASan + UBSan, -fno-sanitize-recover)
# and runs, against it, every unit test (ctest, with the fuzz corpora replayed) and the
# integration tests that exercise the shim and the hooks: shim.bats, hooks.bats, security.bats
# (hostile rootfs trees), faults.bats (full, read-only and failing disks; efsmi faults),
# concurrency.bats, shim_podman.bats and shim_containerd.bats. Any sanitizer report fails the
# run: ASan and UBSan abort the process, which fails the test that started it.
# The tree is built for `all`, which is exactly what this runs: the unit tests and fuzz
# replayers ctest runs, and the binaries and simulators the bats files use (the benchmarks are
# out of `all`). Logs: ASAN_BUILD_DIR/ctest.log and bats.log.
# Prints "asan stage times: ..." and one closing line "asan tests: N passed, N failed, N skipped".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-$top/build/asan}

# No log of an earlier run may stand in for this one if the build fails.
rm -f "$ASAN_BUILD_DIR/ctest.log" "$ASAN_BUILD_DIR/bats.log"
start=$SECONDS
# Configured every time (a second or two), so the tree always has the preset's flags.
(cd "$top" && cmake --preset asan -B "$ASAN_BUILD_DIR" >/dev/null) || exit 1
cmake --build "$ASAN_BUILD_DIR" -j2 || exit 1
build_s=$(( SECONDS - start ))

# halt_on_error/abort: a report is a failure, never a log line. LeakSanitizer runs at exit by
# default; detect_leaks is left unset here so the executables' own default can switch it off
# where it cannot work (cmake/lsan_options.cpp), since this variable would override it.
# Binaries started by a runtime (the hooks under runc) get the OCI spec's own env, where these
# defaults (halt on error, leaks on) hold as well.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# shellcheck source=scripts/test-counts.sh
. "$top/scripts/test-counts.sh"
start=$SECONDS
run_unit "$ASAN_BUILD_DIR"
unit_s=$(( SECONDS - start )) start=$SECONDS
it=$top/tests/integration
run_bats "$ASAN_BUILD_DIR/bats.log" env BUILD_DIR="$ASAN_BUILD_DIR" bats --tap "$it/shim.bats" "$it/hooks.bats" \
    "$it/security.bats" "$it/faults.bats" "$it/concurrency.bats" "$it/shim_podman.bats" "$it/shim_containerd.bats"
bats_s=$(( SECONDS - start ))

total=$(( unit_total + int_total ))
failed=$(( unit_failed + int_failed ))
skipped=$(( unit_skipped + int_skipped ))
echo
echo "asan stage times: build ${build_s}s, unit ${unit_s}s, bats ${bats_s}s"
echo "asan tests: $(counts_line $(( total - failed - skipped )) "$failed" "$skipped")"
[ "$unit_rc" -eq 0 ] && [ "$int_rc" -eq 0 ] && [ "$unit_total" -gt 0 ]
