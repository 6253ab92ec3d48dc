#!/usr/bin/env bash
# Runs the bats integration tests against the binaries in $BUILD_DIR.
set -uo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the build folder}
top=$(cd "$(dirname "$0")/.." && pwd)
shopt -s nullglob
files=("$top"/tests/integration/*.bats)
if [ ${#files[@]} -eq 0 ]; then echo "no integration tests"; exit 0; fi
export BUILD_DIR
exec bats --tap "${files[@]}"
