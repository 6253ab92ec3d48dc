# Helpers of the suites of the simulated Enflame host (sim/): sim_efsmi.bats, sim_faults.bats,
# sim_libefml.bats, sim_builder.bats. Each test needs root (mknod). Run:
# BUILD_DIR=$PWD/build/<name> bats tests/integration/sim_*.bats
# shellcheck disable=SC2034  # what this sets, the suites that load it use

VER=1.4.3.4

# sim_suite_setup: each test's setup ($FIX: the efsmi fixtures, $EXAMPLES: sim's examples).
sim_suite_setup() {
  setup_scratch
  requires root python3 jq
  FIX=$TOP/tests/fixtures/efsmi
  EXAMPLES=$TOP/sim/examples
}

# efsmi / libefml of a built root (their real paths: usr/bin/efsmi is an absolute symlink).
efsmi_in() { "$1/usr/local/efsmi/efsmi-${VER}/efsmi" "${@:2}"; }
efml_in() { echo "$1/usr/local/efsmi/efsmi-${VER}/lib/libefml.so.1.0.0"; }

# desc NAME: writes stdin to $SCRATCH/NAME.yaml and prints the path.
desc() { cat > "$SCRATCH/$1.yaml"; echo "$SCRATCH/$1.yaml"; }

# build_with_faults FAULTS: a 2-card host with the given flow mapping under faults, at $SCRATCH/root.
build_with_faults() {
  local d
  d=$(desc faults <<EOF
cards: [{uuid: TR6Y46010302}, {uuid: TR1V57100501, healthy: false}]
faults: {$1}
EOF
)
  sim_host "$d" "$SCRATCH/root"
}

# efml PY: runs python3 with L = the libefml of $SCRATCH/root loaded through ctypes.
efml() {
  python3 - "$(efml_in "$SCRATCH/root")" <<EOF
import ctypes, sys
from ctypes import Structure, sizeof, byref, c_char, c_int, c_uint32, c_uint64, c_int32, c_bool, create_string_buffer
L = ctypes.CDLL(sys.argv[1])
buf = create_string_buffer(128)
$1
EOF
}
