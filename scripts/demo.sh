#!/usr/bin/env bash
# make demo: builds a simulated Enflame host and shows what the toolkit does with it.
set -euo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the build folder}
echo "== enflame-ctk $("$BUILD_DIR"/cdi-gen/enflame-ctk --version)"
