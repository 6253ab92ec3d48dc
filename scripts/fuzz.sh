#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets (clang, ASan+UBSan) and runs each for
# FUZZ_SECONDS (default 60) on a copy of its committed corpus. Prints executions per target;
# a crash leaves its input in build/fuzz/findings/<target>/ and fails the run.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${FUZZ_SECONDS:-60}
command -v clang++ >/dev/null || { echo "error: clang++ is needed for make fuzz (apt-get install clang)" >&2; exit 1; }
targets=()
for src in "$top"/tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
cmake --preset fuzz >/dev/null && cmake --build --preset fuzz --target "${targets[@]}" || exit 1
rc=0
for bin in "$top"/build/fuzz/tests/fuzz/fuzz_*; do
  case $bin in *_replay) continue ;; esac
  [ -x "$bin" ] || continue
  name=$(basename "$bin"); corpus=${name#fuzz_}
  work=$top/build/fuzz/corpus/$corpus; findings=$top/build/fuzz/findings/$corpus
  mkdir -p "$work" "$findings"; cp -n "$top/tests/fuzz/corpus/$corpus"/* "$work"/ 2>/dev/null
  log=$top/build/fuzz/$name.log
  "$bin" -max_total_time="$secs" -print_final_stats=1 -max_len=65536 -artifact_prefix="$findings/" "$work" >"$log" 2>&1 || rc=1
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  [ -z "$execs" ] && execs=$(grep -oE '#[0-9]+' "$log" | tail -1 | tr -d '#')
  printf '%-22s %10s execs  %s\n' "$name" "${execs:-?}" "$(ls "$findings" | wc -l) findings"
done
exit $rc
