#!/usr/bin/env bats
# The host packages (`make packages`: cpack in the static build folder, $STATIC_BUILD_DIR): a
# .deb and an .rpm of the static shim, hook and enflame-ctk with the config, man pages, units and
# completion. Both hold the same files; the .rpm asks nothing of a RHEL-family host but rpm's
# own features; each installs into an empty root (rpm --root, dpkg --root), where its binaries
# run chrooted with no library beside them, and goes again without a trace but a changed config.

load helpers
bats_require_minimum_version 1.5.0

STATIC_BUILD_DIR=${STATIC_BUILD_DIR:-$TOP/build/static}
PKG=enflame-container-toolkit-host

setup() {
  setup_scratch
  requires cpack rpm rpmbuild dpkg dpkg-deb chroot
  [ -x "$STATIC_BUILD_DIR/ctk/enflame-ctk" ] ||
    skip_or_fail "no $STATIC_BUILD_DIR/ctk/enflame-ctk: make host-binaries builds it"
  (cd "$STATIC_BUILD_DIR" && cpack -B "$SCRATCH/pkg" > "$SCRATCH/cpack.log" 2>&1) ||
    { cat "$SCRATCH/cpack.log"; false; }
  RPM=$(ls "$SCRATCH"/pkg/${PKG}-*.rpm)
  DEB=$(ls "$SCRATCH"/pkg/${PKG}_*.deb)
}

teardown() { teardown_scratch; }

# files_of_rpm / files_of_deb: the regular files and links a package installs, sorted.
files_of_rpm() { rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$RPM" | awk '$1 !~ /^d/ {print $2}' | sort; }
files_of_deb() { dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort; }

# runs_chrooted ROOT: the three binaries start chrooted in ROOT and say their version (the
# shim then asks runc for its own, which this empty root has not: named as missing), and
# enflame-ctk reads the packaged config there.
runs_chrooted() {
  local b
  for b in enflame-ctk enflame-container-runtime-hook; do
    run -0 chroot "$1" "/usr/bin/$b" --version
    [[ $output == "$b "* ]]
  done
  run chroot "$1" /usr/bin/enflame-container-runtime --version
  [[ ${lines[0]} == "enflame-container-runtime version "* ]]
  [[ $output == *"no low-level runtime found: tried 'runc', 'crun'"* ]]
  run -0 chroot "$1" /usr/bin/enflame-ctk --config /etc/enflame-container-runtime/config.toml config
  [[ $output == *"[enflame-container-cli]"* ]]
}

@test "make packages: the .deb and the .rpm hold the same files; the .rpm requires only rpm's own features, its config kept across upgrades" {
  files_of_rpm > "$SCRATCH/rpm.files"
  files_of_deb > "$SCRATCH/deb.files"
  diff "$SCRATCH/deb.files" "$SCRATCH/rpm.files"
  grep -qx /usr/bin/enflame-container-runtime "$SCRATCH/rpm.files"
  grep -qx /usr/bin/enflame-container-runtime-hook "$SCRATCH/rpm.files"
  grep -qx /usr/bin/enflame-ctk "$SCRATCH/rpm.files"
  grep -qx /usr/lib/systemd/system/enflame-cdi-refresh.service "$SCRATCH/rpm.files"
  # what a host must have: nothing but rpm's features (no library, not even the loader)
  rpm -qpR "$RPM" > "$SCRATCH/requires"
  cat "$SCRATCH/requires"
  run ! grep -v '^rpmlib(' "$SCRATCH/requires"
  # the folders the host's own packages own are not claimed
  rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$RPM" | awk '$1 ~ /^d/ {print $2}' > "$SCRATCH/dirs"
  run ! grep -xE '/etc|/usr/lib/systemd(/system)?|/usr/share/man(/man[15])?|/usr/share/bash-completion(/completions)?' "$SCRATCH/dirs"
  [ "$(rpm -qpc "$RPM")" = /etc/enflame-container-runtime/config.toml ]
  rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$RPM" | grep -qx 'cn /etc/enflame-container-runtime/config.toml'
  # the Debian package's config is a conffile too
  dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles | grep -qx /etc/enflame-container-runtime/config.toml
}

@test "the .rpm installs into an empty root with rpm --root, runs there chrooted with no library, and erases leaving only the changed config (.rpmsave)" {
  local R=$SCRATCH/rpmroot
  mkdir -p "$R"
  # the database where RHEL keeps it (Debian's rpm defaults to ~/.rpmdb)
  rpmr() { rpm --root "$R" --dbpath /var/lib/rpm "$@"; }
  rpmr --initdb
  run -0 rpmr -i --nosignature "$RPM"
  [ "$(rpmr -q "$PKG")" = "$PKG-0.1.0-1.x86_64" ]
  # nothing in the root but the package and rpm's database: no loader, no libc
  [ -z "$(find "$R" -name 'ld-linux*' -o -name 'libc.so*')" ]
  runs_chrooted "$R"
  echo '# local' >> "$R/etc/enflame-container-runtime/config.toml"
  run -0 rpmr -e "$PKG"
  [ "$(tail -1 "$R/etc/enflame-container-runtime/config.toml.rpmsave")" = "# local" ]
  find "$R" -mindepth 1 -not -path "$R/var/lib/rpm*" -not -path "$R/var" -not -path "$R/var/lib" \
    -not -path "$R/etc" -not -path "$R/etc/enflame-container-runtime" \
    -not -path "$R/etc/enflame-container-runtime/config.toml.rpmsave" -not -type d > "$SCRATCH/left"
  [ ! -s "$SCRATCH/left" ] || { cat "$SCRATCH/left"; false; }
}

@test "the host .deb installs into an empty root with dpkg --root, runs there chrooted with no library, and purges without a trace" {
  local R=$SCRATCH/debroot
  mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
  : > "$R/var/lib/dpkg/status"
  : > "$R/var/lib/dpkg/available"
  run -0 dpkg --root="$R" --force-script-chrootless -i "$DEB"
  [ "$(dpkg-query --root="$R" -W -f='${db:Status-Abbrev}' "$PKG")" = "ii " ]
  [ -z "$(find "$R" -name 'ld-linux*' -o -name 'libc.so*')" ]
  runs_chrooted "$R"
  run -0 dpkg --root="$R" --force-script-chrootless --purge "$PKG"
  find "$R" -mindepth 1 -not -path "$R/var/lib/dpkg*" -not -path "$R/var" -not -path "$R/var/lib" \
    -not -type d > "$SCRATCH/left"
  [ ! -s "$SCRATCH/left" ] || { cat "$SCRATCH/left"; false; }
}

@test "make packages ARCH=arm64: the .deb says Architecture arm64 and the .rpm aarch64, both hold the x86_64 packages' files, their binaries aarch64 static PIEs" {
  local arm=${ARM64_BUILD_DIR:-$TOP/build/static-arm64} f
  [ -x "$arm/ctk/enflame-ctk" ] || skip_or_fail "no $arm/ctk/enflame-ctk: make host-binaries ARCH=arm64 builds it"
  (cd "$arm" && cpack -B "$SCRATCH/arm" > "$SCRATCH/cpack-arm.log" 2>&1) || { cat "$SCRATCH/cpack-arm.log"; false; }
  local adeb arpm
  adeb=$(ls "$SCRATCH"/arm/${PKG}_*_arm64.deb)
  arpm=$(ls "$SCRATCH"/arm/${PKG}-*.aarch64.rpm)
  [ "$(dpkg-deb -f "$adeb" Architecture)" = arm64 ]
  [ "$(rpm -qp --qf '%{ARCH}' "$arpm")" = aarch64 ]
  run ! grep -v '^rpmlib(' < <(rpm -qpR "$arpm")
  files_of_deb > "$SCRATCH/deb.files"
  DEB=$adeb files_of_deb > "$SCRATCH/arm-deb.files"
  RPM=$arpm files_of_rpm > "$SCRATCH/arm-rpm.files"
  diff "$SCRATCH/deb.files" "$SCRATCH/arm-deb.files"
  diff "$SCRATCH/deb.files" "$SCRATCH/arm-rpm.files"
  mkdir "$SCRATCH/x"
  dpkg-deb -x "$adeb" "$SCRATCH/x"
  for f in enflame-ctk enflame-container-runtime enflame-container-runtime-hook; do
    run -0 file -b "$SCRATCH/x/usr/bin/$f"
    [[ $output == *"ARM aarch64"*"static-pie linked"* ]]
  done
}
