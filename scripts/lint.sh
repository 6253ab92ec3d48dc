#!/usr/bin/env bash
# Static checks over libinject/: clang-tidy 14 (checks in .clang-tidy) and cppcheck 2.10.
# Exits non-zero on any finding. Uses the compile database of BUILD_DIR (configured with
# CMAKE_EXPORT_COMPILE_COMMANDS by every preset); configures it when it is missing.
# Suppressions live next to the code (NOLINT / cppcheck-suppress), each with its reason.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$top/build/dev}
jobs=${LINT_JOBS:-$(nproc)}

for tool in run-clang-tidy-14 clang-tidy-14 cppcheck python3; do
    command -v "$tool" >/dev/null || { echo "error: lint needs '$tool' (apt-get install clang-tidy-14 cppcheck)" >&2; exit 2; }
done
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
    cmake -S "$top" -B "$BUILD_DIR" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi

# -Wno-error: with the build's -Werror, clang's own warnings become errors that NOLINT cannot
# silence; WarningsAsErrors in .clang-tidy still fails the run on any finding.
# Only libinject's own translation units: cppcheck has no reliable path filter for --project.
lintdir="$BUILD_DIR/lint"
mkdir -p "$lintdir"
python3 - "$BUILD_DIR/compile_commands.json" "$lintdir/compile_commands.json" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
json.dump([e for e in db if "/libinject/src/" in e["file"]], open(sys.argv[2], "w"), indent=1)
PY

rc=0
echo "lint: clang-tidy over libinject/ ($jobs jobs)"
if ! run-clang-tidy-14 -clang-tidy-binary "$(command -v clang-tidy-14)" -p "$lintdir" -j "$jobs" -quiet \
        -extra-arg=-Wno-error \
        "$top/libinject/src/" >"$lintdir/clang-tidy.log" 2>&1; then
    rc=1
fi
# run-clang-tidy prints its own progress lines; show only the findings.
if grep -E '(warning|error): ' "$lintdir/clang-tidy.log" | sed "s|$top/||" | sort -u; then rc=1; fi

echo "lint: cppcheck over libinject/"
if ! cppcheck --project="$lintdir/compile_commands.json" --std=c++20 -j "$jobs" --quiet \
        --enable=warning,performance,portability --inline-suppr \
        --suppress=missingIncludeSystem --error-exitcode=1 \
        --template='{file}:{line}:{column}: {severity}: {message} [{id}]' >"$lintdir/cppcheck.log" 2>&1; then
    rc=1
fi
sed "s|$top/||" "$lintdir/cppcheck.log"

if [ "$rc" -eq 0 ]; then echo "lint: clean"; else echo "lint: findings above" >&2; fi
exit "$rc"
