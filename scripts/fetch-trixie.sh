#!/bin/sh
# fetch-trixie.sh DEST PACKAGE...: downloads Debian 13 (trixie) packages and unpacks them into
# DEST (dpkg -x, nothing installed), for tests that need a newer tool than Debian 12 has
# (kubectl 1.32 from kubernetes-client, containerd 1.7). apt runs on a private sources list,
# lists and cache under DEST/.apt: the host's /etc/apt and /var/lib/apt are neither read for
# sources nor written. A package already unpacked (DEST/.apt/done/<name>) is not fetched again.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DEST PACKAGE..." >&2; exit 2; }
dest=$(mkdir -p "$1" && cd "$1" && pwd); shift
work=$dest/.apt
missing=
for p in "$@"; do [ -e "$work/done/$p" ] || missing="$missing $p"; done
[ -n "$missing" ] || exit 0
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/done"
echo "deb http://deb.debian.org/debian trixie main" > "$work/sources.list"
set -- -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=- \
  -o Dir::State::Lists="$work/lists" -o Dir::State::status=/dev/null -o Dir::Cache="$work/cache" \
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o Acquire::Retries=2 -q=2
apt-get "$@" update >&2 || { echo "$0: apt-get update against trixie failed (network?)" >&2; exit 1; }
cd "$work/debs"
# shellcheck disable=SC2086  # one word per package
apt-get "$@" download $missing >&2 || { echo "$0: apt-get download$missing failed" >&2; exit 1; }
for p in $missing; do
  for deb in "${p}"_*.deb; do dpkg -x "$deb" "$dest"; done
  touch "$work/done/$p"
done
