#!/usr/bin/env bats
# enflame-epp's hand-written Envoy protos (k8s/epp/wire/proto) against upstream's: the
# descriptors embedded in Debian sid's go-control-plane Go files (scripts/check-epp-protos.sh,
# unpacked once into $BUILD_DIR/envoy-protos). Every message, field and enum value must have
# upstream's name, number, type, label and type name; a proto broken on purpose must fail.

load helpers
bats_require_minimum_version 1.5.0

PREFIX=$BUILD_DIR/envoy-protos
CHECK=$TOP/scripts/check-epp-protos.sh
PY=${PYTHON:-/usr/bin/python3}

# debian_reachable: deb.debian.org answers on port 80 within 5 s.
debian_reachable() { timeout 5 bash -c 'exec 3<>/dev/tcp/deb.debian.org/80' 2>/dev/null; }

setup() {
  requires protoc
  "$PY" -c 'import google.protobuf' 2>/dev/null || skip_or_fail "needs python3-protobuf for $PY"
  local fetched=$PREFIX/.apt/done/golang-github-envoyproxy-go-control-plane-dev
  if [ ! -e "$fetched" ] && ! debian_reachable; then
    skip "deb.debian.org unreachable: upstream's protos (sid's go-control-plane) cannot be fetched"
  fi
  setup_scratch
}
teardown() { teardown_scratch; }

@test "every message, field and enum value of our ext_proc protos is upstream's" {
  run "$CHECK" "$PREFIX"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output != *differs:* ]]
  fields=$(sed -n 's/^matched upstream: .* \([0-9]*\) fields,.*/\1/p' <<<"$output")
  [ "$fields" -ge 71 ]
  [[ $output == *"1 methods"* ]]
}

# break_and_check FILE SED WHAT: our protos copied, SED applied to FILE; the check must fail
# with a line starting "differs: WHAT".
break_and_check() {
  rm -rf "$SCRATCH/proto"
  cp -r "$TOP/k8s/epp/wire/proto" "$SCRATCH/proto"
  sed -i "$2" "$SCRATCH/proto/$1"
  run ! diff -r "$TOP/k8s/epp/wire/proto" "$SCRATCH/proto"
  EPP_PROTO_DIR=$SCRATCH/proto run "$CHECK" "$PREFIX"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"differs: $3"* ]]
}

@test "a changed field number, field type, enum value or message name, or a missing field, is caught" {
  ext=envoy/service/ext_proc/v3/external_processor.proto
  break_and_check $ext 's/clear_route_cache = 5/clear_route_cache = 6/' \
    envoy.service.ext_proc.v3.CommonResponse.clear_route_cache
  break_and_check envoy/config/core/v3/base.proto 's/bytes raw_value = 3/string raw_value = 3/' \
    envoy.config.core.v3.HeaderValue.raw_value
  break_and_check envoy/extensions/filters/http/ext_proc/v3/processing_mode.proto \
    's/FULL_DUPLEX_STREAMED = 4/FULL_DUPLEX_STREAMED = 6/' \
    envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode.FULL_DUPLEX_STREAMED
  break_and_check $ext 's/HttpTrailers/HttpTrailer/g' \
    "envoy.service.ext_proc.v3.HttpTrailer: no such message"
  break_and_check $ext '/HttpHeaders response_headers = 3;/d' \
    "envoy.service.ext_proc.v3.ProcessingRequest.response_headers = 3: upstream has it, ours does not"
}
