#!/bin/sh
# fetch-trixie.sh DEST PACKAGE...: Debian 13 (trixie) packages unpacked into DEST for tests that
# need a newer tool than Debian 12 has (kubectl 1.32 from kubernetes-client, containerd 1.7);
# scripts/fetch-debian.sh does the work (private apt state under DEST/.apt, cached per package).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DEST PACKAGE..." >&2; exit 2; }
exec "$(dirname "$0")/fetch-debian.sh" trixie "$@"
