#!/bin/sh
# check-epp-protos.sh [PREFIX]: compares enflame-epp's hand-written Envoy protos
# (k8s/epp/wire/proto, or EPP_PROTO_DIR) field by field with upstream's. Upstream's come from
# Debian sid's golang-github-envoyproxy-go-control-plane-dev (arch all), whose generated Go
# files embed each proto's FileDescriptorProto; scripts/fetch-debian.sh unpacks it into PREFIX
# (default build/envoy-protos; no network once it is there). The comparison is
# scripts/epp-proto-compare.py, run by Debian's python3 (PYTHON) for its python3-protobuf. Exit 0: all match; 1: a difference or no
# package.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$top/build/envoy-protos}
protos=${EPP_PROTO_DIR:-$top/k8s/epp/wire/proto}
"$top/scripts/fetch-debian.sh" sid "$prefix" golang-github-envoyproxy-go-control-plane-dev ||
  { echo "$0: go-control-plane from Debian sid could not be fetched into $prefix" >&2; exit 1; }
go=$prefix/usr/share/gocode/src/github.com/envoyproxy/go-control-plane
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files="envoy/service/ext_proc/v3/external_processor envoy/config/core/v3/base
  envoy/type/v3/http_status envoy/extensions/filters/http/ext_proc/v3/processing_mode"
set --
for f in $files; do set -- "$@" "$protos/$f.proto"; done
protoc --proto_path="$protos" --descriptor_set_out="$tmp/ours.pb" "$@"
set --
for f in $files; do set -- "$@" "$go/$f.pb.go"; done
version=$(cat "$prefix"/usr/share/doc/golang-github-envoyproxy-go-control-plane-dev/changelog.Debian.gz 2>/dev/null |
  gzip -dc 2>/dev/null | sed -n '1s/.*(\(.*\)).*/\1/p')
echo "upstream: go-control-plane ${version:-?} (Debian sid)"
# Fields and messages Envoy added after the go-control-plane sid ships: absent there is fine,
# different never.
ext=envoy.service.ext_proc.v3
"${PYTHON:-/usr/bin/python3}" "$top/scripts/epp-proto-compare.py" \
  --newer $ext.ProtocolConfiguration --newer $ext.ProcessingRequest.protocol_config \
  --newer $ext.StreamedImmediateResponse --newer $ext.ProcessingResponse.streamed_immediate_response \
  --newer $ext.ProcessingResponse.request_drain \
  --newer $ext.HttpBody.end_of_stream_without_message --newer $ext.HttpBody.grpc_message_compressed \
  --newer $ext.StreamedBodyResponse.end_of_stream_without_message \
  --newer $ext.StreamedBodyResponse.grpc_message_compressed \
  --newer envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode.GRPC \
  "$tmp/ours.pb" "$@"
