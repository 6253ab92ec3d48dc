#!/bin/sh
# fetch-debian.sh SUITE DEST PACKAGE...: downloads packages of the Debian suite SUITE (trixie,
# forky, sid, ...) and unpacks them into DEST (dpkg -x, nothing installed), for tests that need
# a newer tool than Debian 12 has. apt runs on a private sources list, lists and cache under
# DEST/.apt: the host's /etc/apt and /var/lib/apt are neither read for sources nor written.
# No dependency is resolved: name every package the tool needs. A package already unpacked
# (DEST/.apt/done/<name>) is not fetched again, so a second call needs no network.
# One DEST holds one suite: its lists are that suite's.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 SUITE DEST PACKAGE..." >&2; exit 2; }
suite=$1; shift
dest=$(mkdir -p "$1" && cd "$1" && pwd); shift
work=$dest/.apt
missing=
for p in "$@"; do [ -e "$work/done/$p" ] || missing="$missing $p"; done
[ -n "$missing" ] || exit 0
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/done"
echo "deb http://deb.debian.org/debian $suite main" > "$work/sources.list"
set -- -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=- \
  -o Dir::State::Lists="$work/lists" -o Dir::State::status=/dev/null -o Dir::Cache="$work/cache" \
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o Acquire::Retries=2 -q=2
apt-get "$@" update >&2 || { echo "$0: apt-get update against $suite failed (network?)" >&2; exit 1; }
cd "$work/debs"
# shellcheck disable=SC2086  # one word per package
apt-get "$@" download $missing >&2 || { echo "$0: apt-get download$missing failed" >&2; exit 1; }
for p in $missing; do
  for deb in "${p}"_*.deb; do dpkg -x "$deb" "$dest"; done
  touch "$work/done/$p"
done
