#!/usr/bin/env bats
# Security regressions for the hooks (docs/security.md, rules for code that touches a
# container): each test is a hostile rootfs or image env. The container either starts cleanly or is
# refused with a clear error, and the host is unchanged: no file of ours outside the rootfs, no
# marker, no new mount in the host's mountinfo, the host's ld.so.cache untouched. Real runc;
# crun-hybrid where noted.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

# Names the hooks create; none may ever appear in these host folders.
OUR_NAMES="libefml.so libefml.so.1 libefml.so.1.0.0 libtopsrt.so libtopsrt.so.2 libeccl.so libefrt.so efsmi gcu0 gcu1 gcuctl 00-enflame.conf"
HOST_DIRS="/ /etc /etc/ld.so.conf.d /usr/lib /lib /dev /proc/self/root/etc"

setup() {
  requires root runc python3
  setup_scratch
  # A host with the real driver has some of these names already: note what is there, so a write
  # to one shows up as well as a new one (no test is skipped for it).
  host_names > "$SCRATCH/names.before"
  sim_example 2 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  printf '[enflame-container-runtime]\nlog-file = "%s"\nlog-level = "debug"\n' "$SCRATCH/hook.log" >> "$SCRATCH/config.toml"
  crun_hybrid "$SCRATCH/crun-hybrid"
  MARKER=$SCRATCH/marker
  CACHE_SUM=$(sha256sum /etc/ld.so.cache 2>/dev/null || true)
  mount_points > "$SCRATCH/mounts.before"
}

teardown() { teardown_scratch; }

mount_points() { awk '{print $5}' /proc/self/mountinfo | sort; }

# host_names: each of OUR_NAMES present in HOST_DIRS, with its inode, size, mtime and ctime.
host_names() {
  local d n
  for d in $HOST_DIRS; do for n in $OUR_NAMES; do
    if [ -e "$d/$n" ]; then stat -c '%n %i %s %Y %Z' "$d/$n"; fi
  done; done
}

# host_untouched: the assertions every test ends with.
host_untouched() {
  local names
  names=$(host_names | diff "$SCRATCH/names.before" -) || { echo "host changed: $names"; return 1; }
  [ ! -e "$MARKER" ] || { echo "marker left on the host"; return 1; }
  [ "$(sha256sum /etc/ld.so.cache 2>/dev/null || true)" = "$CACHE_SUM" ] || { echo "host ld.so.cache changed"; return 1; }
  # New mount points on the host: none of ours, none over host folders.
  local added
  added=$(mount_points | comm -13 "$SCRATCH/mounts.before" -)
  if echo "$added" | grep -E "^(/|/etc.*|/usr.*|/lib.*|/dev/gcu.*|/sbin.*)$|$SCRATCH|libefml|efsmi|gcu"; then
    echo "new host mounts: $added"; return 1
  fi
}

PROBE='["sh","-c","ls /dev; cat /proc/self/mountinfo; true"]'

# hostile_bundle ENV...: bundle with the prestart hook and ENV... in the image env.
hostile_bundle() {
  oci_bundle "$SCRATCH/b" "$PROBE"
  R=$SCRATCH/b/rootfs
  local e
  for e in "$@"; do bundle_edit "$SCRATCH/b" "c['process']['env'].append('$e')"; done
  bundle_edit "$SCRATCH/b" "c['hooks']={'prestart':[{'path':'$HOOK','args':['enflame-container-runtime-hook','prestart'],'env':['ENFLAME_CTK_CONFIG=$SCRATCH/config.toml']}]}"
}

# start RUNTIME: run the bundle; $status/$output as bats sets them.
start() {
  local id
  id=$(unique_id sec)
  on_teardown "$1 delete -f $id >/dev/null 2>&1"
  run bash -c "cd '$SCRATCH/b' && timeout 60 '$1' run '$id' 2>&1"
  echo "status $status: $output" | tail -5
}

# started_or_refused: ok when the container ran, or was refused by a line of ours or runc's.
started_or_refused() {
  [ "$status" -eq 0 ] && return 0
  echo "$output" | grep -E "error|Error" >/dev/null
}

@test "/usr/lib a symlink to the host's / : libraries land inside the rootfs" {
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0
  mkdir -p "$R/usr"; ln -s / "$R/usr/lib"
  start runc
  started_or_refused
  [ "$status" -eq 0 ]
  echo "$output" | grep -E " /libefml.so.1 ro,nosuid,nodev"   # "/" of the rootfs
  host_untouched
}

@test "/usr/lib a symlink to the host's /etc (runc and crun)" {
  requires crun unshare
  for rt in runc "$SCRATCH/crun-hybrid"; do
    rm -rf "$SCRATCH/b"
    hostile_bundle ENFLAME_VISIBLE_DEVICES=0
    mkdir -p "$R/usr"; ln -s /etc "$R/usr/lib"
    start "$rt"
    started_or_refused
    host_untouched
    [ ! -e "$R/etc/libefml.so.1" ] || echo "$output" | grep -E " /etc/libefml.so.1 ro,"
  done
}

@test "/usr/lib a symlink through /proc/self/root to the host's /etc" {
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0
  mkdir -p "$R/usr"; ln -s /proc/self/root/etc "$R/usr/lib"
  start runc
  started_or_refused
  host_untouched
}

@test "a ../ chain out of the rootfs" {
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0,1
  mkdir -p "$R/usr/local"; ln -s ../../../../../../../../../../../etc "$R/usr/lib"
  ln -s ../../../../../../../../../../.. "$R/usr/local/efsmi"
  start runc
  started_or_refused
  host_untouched
}

@test "/dev a symlink to the host's /dev (runc's /dev tmpfs removed)" {
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0
  bundle_edit "$SCRATCH/b" "c['mounts']=[m for m in c['mounts'] if not m['destination'].startswith('/dev')]"
  rmdir "$R/dev"; ln -s /proc/self/root/dev "$R/dev"
  start runc
  started_or_refused
  host_untouched
  # runc itself refuses that rootfs before the hook runs; run the hook by hand on it as well,
  # with this shell as the "container" (same mount namespace as the host).
  run bash -c "printf '%s' '{\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$SCRATCH/b\"}' | ENFLAME_CTK_CONFIG='$SCRATCH/config.toml' '$HOOK' prestart 2>&1"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  echo "$output" | grep -E "^error: injecting into container : creating /dev/gcuctl in $R: resolving /dev: (Too many levels of symbolic links|No such file or directory)$"
  host_untouched
}

@test "a symlink swapped during the hook: /usr/lib flips between the rootfs and the host's /etc" {
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0,1
  mkdir -p "$R/usr/lib.real"; ln -s lib.real "$R/usr/lib"
  touch "$SCRATCH/racing"
  ( while [ -e "$SCRATCH/racing" ]; do
      ln -sfn /etc "$R/usr/lib.tmp" && mv -T "$R/usr/lib.tmp" "$R/usr/lib"
      ln -sfn lib.real "$R/usr/lib.tmp" && mv -T "$R/usr/lib.tmp" "$R/usr/lib"
    done ) &
  local racer=$!
  on_teardown "rm -f '$SCRATCH/racing'; kill $racer 2>/dev/null; wait $racer 2>/dev/null"
  local i started=0 refused=0
  for i in $(seq 1 10); do
    start runc
    if [ "$status" -eq 0 ]; then started=$((started+1)); else refused=$((refused+1)); started_or_refused; fi
    host_untouched
  done
  rm -f "$SCRATCH/racing"; wait $racer || true
  echo "started $started, refused $refused"
  host_untouched
}

@test "image env LD_PRELOAD=/proc/self/cwd/evil.so reaches no host process (prestart and createContainer hooks)" {
  requires gcc
  cat > "$SCRATCH/evil.c" <<C
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void evil(void) {
  int fd = open("$MARKER", O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) close(fd);
}
C
  gcc -shared -fPIC -o "$SCRATCH/evil.so" "$SCRATCH/evil.c"
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0 LD_PRELOAD=/proc/self/cwd/evil.so
  # cwd is the bundle for prestart and the rootfs for runc's createContainer: evil.so in both.
  cp "$SCRATCH/evil.so" "$SCRATCH/b/evil.so"; cp "$SCRATCH/evil.so" "$R/evil.so"
  bundle_edit "$SCRATCH/b" "c['hooks']['createContainer']=[{'path':'$CTK','args':['enflame-ctk','hook','update-ldcache','--folder','/usr/lib'],'env':['PATH=/usr/sbin:/usr/bin:/sbin:/bin']}]"
  start runc
  [ "$status" -eq 0 ]
  host_untouched
  # and the sandbox refuses an LD_* entry outright, were one ever handed to it
  [ ! -e "$MARKER" ]
}

@test "an image with its own /sbin/ldconfig: the host's runs, the image's never" {
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0
  mkdir -p "$R/sbin"
  printf '#!/bin/sh\ntouch /image-ldconfig-ran %s\n' "$MARKER" > "$R/sbin/ldconfig"; chmod 755 "$R/sbin/ldconfig"
  start runc
  [ "$status" -eq 0 ]
  [ ! -e "$R/image-ldconfig-ran" ]
  /sbin/ldconfig -C "$R/etc/ld.so.cache" -p | grep -E "=> /usr/lib/libefml"
  host_untouched
}

@test "a config naming a container-side ldconfig is refused with a clear error" {
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0
  mkdir -p "$R/sbin"
  printf '#!/bin/sh\ntouch /image-ldconfig-ran %s\n' "$MARKER" > "$R/sbin/ldconfig"; chmod 755 "$R/sbin/ldconfig"
  printf 'ldconfig = "/sbin/ldconfig"\n' > "$SCRATCH/extra"
  python3 - "$SCRATCH/config.toml" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read().replace('[enflame-container-cli]\n', '[enflame-container-cli]\nldconfig = "/sbin/ldconfig"\n')
open(p, "w").write(s)
PY
  start runc
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "ldconfig '/sbin/ldconfig' is not a host path: only host binaries ('@/sbin/ldconfig') are run"
  [ ! -e "$R/image-ldconfig-ran" ]
  host_untouched
}

@test "ld.so.conf in the image pointing at host files cannot make ldconfig touch the host" {
  hostile_bundle ENFLAME_VISIBLE_DEVICES=0
  ln -s /etc/shadow "$R/etc/ld.so.conf"
  mkdir -p "$R/etc/ld.so.conf.d"; ln -s /etc/passwd "$R/etc/ld.so.conf.d/00-enflame.conf"
  start runc
  started_or_refused
  host_untouched
  # the in-root write refuses to replace the symlink: the host's /etc/passwd is intact
  grep -q '^root:' /etc/passwd
  echo "$output" | grep -F "refusing to replace a symlink" || [ "$status" -eq 0 ]
}
