#!/usr/bin/env bats
# Man pages, systemd units, bash completion, `cmake --install`, and the Debian package made by
# `cpack -G DEB` in $BUILD_DIR: installed with `dpkg --root` into a throwaway root in $SCRATCH
# (never onto this machine), used, then purged, checking that nothing of it is left.

load helpers

PKG=enflame-container-toolkit
MANPAGES=(enflame-ctk.1 enflame-container-runtime.1 enflame-container-runtime-hook.1 enflame-container-runtime-config.toml.5)

setup() { setup_scratch; }
teardown() { teardown_scratch; }

@test "man pages render without warnings" {
  requires man
  local p
  for p in "${MANPAGES[@]}"; do
    run bash -c "MANWIDTH=80 man --warnings -l '$TOP/man/$p' 2>&1 >/dev/null"
    [ "$status" -eq 0 ]
    [ -z "$output" ] || { echo "$p: $output"; false; }
    MANWIDTH=80 man -l "$TOP/man/$p" 2>/dev/null | grep -q '^NAME'
  done
}

@test "enflame-ctk(1) names every subcommand and every runtime configure flag" {
  requires man
  [ -x "$CTK" ] || skip_or_fail "needs $CTK"
  local page cmd flag
  page=$(MANWIDTH=200 man -l "$TOP/man/enflame-ctk.1" 2>/dev/null)
  for cmd in $("$CTK" --help | sed -n '/^Subcommands:/,$p' | awk 'NR>1 && NF {print $1}'); do
    grep -qw -- "$cmd" <<<"$page" || { echo "missing subcommand $cmd"; false; }
  done
  for flag in $("$CTK" runtime configure --help | grep -oE -- '--[a-z][a-z.-]+' | grep -vx -- --help | sort -u); do
    grep -q -- "$flag" <<<"$page" || { echo "missing flag $flag"; false; }
  done
}

@test "systemd units pass systemd-analyze verify, and the refresh command writes a valid spec" {
  requires systemd-analyze
  [ -x "$CTK" ] || skip_or_fail "needs $CTK"
  [ -x "$SIM_HOST" ] || skip_or_fail "needs $SIM_HOST"
  local u=$SCRATCH/units
  mkdir -p "$u"
  cp "$TOP"/packaging/systemd/enflame-cdi-refresh.{service,path} "$u/"
  grep -qx 'ExecStart=/usr/bin/enflame-ctk cdi generate --output /var/run/cdi/enflame.com-gpu.yaml' "$u/enflame-cdi-refresh.service"
  grep -qx 'PathChanged=/lib/modules/%v/modules.dep' "$u/enflame-cdi-refresh.path"
  grep -qx 'Unit=enflame-cdi-refresh.service' "$u/enflame-cdi-refresh.path"
  # No systemd runs here, but the analyzer works offline. The binary the unit names is
  # installed only by the package, so point it at the build's for this check.
  sed -i "s|/usr/bin/enflame-ctk|$CTK|" "$u/enflame-cdi-refresh.service"
  run systemd-analyze verify --man=no "$u/enflame-cdi-refresh.service" "$u/enflame-cdi-refresh.path"
  [ "$status" -eq 0 ]
  [ -z "$output" ] || { echo "$output"; false; }
  # The unit's command, against a simulated host, into a scratch file.
  sim_example 2 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  local cmd
  cmd=$(sed -n 's/^ExecStart=//p' "$TOP/packaging/systemd/enflame-cdi-refresh.service")
  cmd=${cmd//\/usr\/bin\/enflame-ctk/$CTK}
  cmd=${cmd//\/var\/run\/cdi\/enflame.com-gpu.yaml/$SCRATCH/cdi/enflame.com-gpu.yaml}
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml $cmd
  [ -s "$SCRATCH/cdi/enflame.com-gpu.yaml" ]
  run "$CTK" cdi validate "$SCRATCH/cdi/enflame.com-gpu.yaml"
  [ "$status" -eq 0 ]
  run "$CTK" cdi list --spec-dir "$SCRATCH/cdi"
  [[ "$output" == *"enflame.com/gpu=0"* ]]
}

@test "bash completion completes commands, subcommands and engine names" {
  local c=$TOP/packaging/enflame-ctk.bash-completion
  bash -n "$c"
  complete_words() {
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _enflame_ctk; echo "${COMPREPLY[*]}"' _ "$c" "$@"
  }
  [ "$(complete_words enflame-ctk ru)" = runtime ]
  [ "$(complete_words enflame-ctk runtime "")" = "configure unconfigure" ]
  [ "$(complete_words enflame-ctk runtime configure --runtime c)" = "containerd crio" ]
  [ "$(complete_words enflame-ctk cdi g)" = generate ]
}

@test "cmake --install lays out binaries, config, man pages, units, completion, examples" {
  local b
  for b in "$BUILD_DIR/cmake_install.cmake" "$CTK" "$SHIM" "$HOOK"; do
    [ -e "$b" ] || skip_or_fail "needs a full build in $BUILD_DIR (no $b)"
  done
  # DESTDIR: never into the real /usr
  DESTDIR=$SCRATCH/stage cmake --install "$BUILD_DIR" --prefix /usr >/dev/null
  local s=$SCRATCH/stage f
  for f in usr/bin/enflame-ctk usr/bin/enflame-container-runtime usr/bin/enflame-container-runtime-hook \
           etc/enflame-container-runtime/config.toml usr/share/man/man1/enflame-ctk.1 \
           usr/share/man/man5/enflame-container-runtime-config.toml.5 \
           usr/lib/systemd/system/enflame-cdi-refresh.service usr/lib/systemd/system/enflame-cdi-refresh.path \
           usr/share/bash-completion/completions/enflame-ctk \
           usr/share/doc/enflame-container-toolkit/examples/docker/daemon.json; do
    [ -e "$s/$f" ] || { echo "missing $f"; false; }
  done
  # the shipped config.toml is valid and means the defaults
  run "$s/usr/bin/enflame-ctk" --config "$s/etc/enflame-container-runtime/config.toml" config
  [ "$status" -eq 0 ]
  [ "$output" = "$("$CTK" --config /dev/null config)" ]
}

@test "the .deb installs into a throwaway root, works, and purges without a trace" {
  requires root dpkg cpack man systemd-analyze unshare podman runc
  [ -x "$CTK" ] || skip_or_fail "needs a full build in $BUILD_DIR"
  [ -x "$SHIM" ] || skip_or_fail "needs a full build in $BUILD_DIR"
  [ -x "$HOOK" ] || skip_or_fail "needs a full build in $BUILD_DIR"
  [ -x "$SIM_HOST" ] || skip_or_fail "needs a full build in $BUILD_DIR"
  (cd "$BUILD_DIR" && cpack -G DEB -B "$SCRATCH/pkg" >/dev/null)
  local deb
  deb=$(ls "$SCRATCH"/pkg/${PKG}_*.deb)
  dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/enflame-container-runtime/config.toml
  # No maintainer scripts: dpkg --root below runs everything dpkg would run on a real machine.
  [ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -t | sort | tr '\n' ' ')" = "./conffiles ./control ./md5sums " ]
  # The root: this machine's package database (so the dependencies are checked against what
  # is installed here), without the installed packages' files.
  local R=$SCRATCH/root p
  mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
  cp /var/lib/dpkg/status "$R/var/lib/dpkg/status"
  touch "$R/var/lib/dpkg/available"
  for p in $(dpkg-query -W -f='${db:Status-Abbrev}${binary:Package}\n' | awk '/^.i/ {print substr($0, 4)}'); do
    : > "$R/var/lib/dpkg/info/$p.list"
  done
  run dpkg --root="$R" -i "$deb"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(dpkg-query --root="$R" -W -f='${db:Status-Abbrev}' "$PKG")" = "ii " ]
  dpkg-query --root="$R" -L "$PKG" | sort > "$SCRATCH/files"
  grep -qx /usr/bin/enflame-container-runtime-hook "$SCRATCH/files"
  grep -qx /usr/lib/systemd/system/enflame-cdi-refresh.path "$SCRATCH/files"
  grep -qx /usr/bin/enflame-feature-discovery "$SCRATCH/files"
  grep -qx /usr/share/man/man8/enflame-feature-discovery.8 "$SCRATCH/files"
  grep -qx /usr/bin/enflame-gcu-exporter "$SCRATCH/files"
  grep -qx /usr/share/man/man8/enflame-gcu-exporter.8 "$SCRATCH/files"
  run "$R/usr/bin/enflame-gcu-exporter" --version
  [[ "$output" == "enflame-gcu-exporter "* ]]
  grep -qx /usr/bin/enflame-dra-plugin "$SCRATCH/files"
  grep -qx /usr/share/man/man8/enflame-dra-plugin.8 "$SCRATCH/files"
  grep -qx /usr/share/doc/enflame-container-toolkit/deployments/dra/kustomization.yaml "$SCRATCH/files"
  run "$R/usr/bin/enflame-dra-plugin" --version
  [[ "$output" == "enflame-dra-plugin "* ]]

  run "$R/usr/bin/enflame-ctk" --version
  [ "$status" -eq 0 ]
  [[ "$output" == "enflame-ctk "* ]]
  run "$R/usr/bin/enflame-container-runtime" --version
  [ "$status" -eq 0 ]
  [ "$(MANPATH=$R/usr/share/man man -w enflame-ctk)" = "$R/usr/share/man/man1/enflame-ctk.1" ]
  [ "$(MANPATH=$R/usr/share/man man -w 5 enflame-container-runtime-config.toml)" = "$R/usr/share/man/man5/enflame-container-runtime-config.toml.5" ]
  # the installed shim is the default runtime path (the one beside enflame-ctk: /usr/bin on a
  # machine, the throwaway root's here)
  run "$R/usr/bin/enflame-ctk" runtime configure --runtime docker --config "$SCRATCH/daemon.json" --dry-run
  [ "$status" -eq 0 ]
  [ "$(jq -r .runtimes.enflame.path <<<"$output")" = "$R/usr/bin/enflame-container-runtime" ]
  # the demo against the installed binaries: a spec for a simulated host
  sim_example 2 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$R/usr/bin/enflame-ctk" cdi generate --output "$SCRATCH/spec.yaml"
  run "$R/usr/bin/enflame-ctk" cdi validate "$SCRATCH/spec.yaml"
  [ "$status" -eq 0 ]
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$R/usr/bin/enflame-ctk" info | grep -q S60
  # scripts/demo.sh (podman with CDI, the shim under runc) with the installed binaries: a
  # build-folder lookalike whose binaries are the package's. The demo writes its spec into
  # /var/run/cdi: it runs where that is a private folder (cdi_ns).
  local fake=$SCRATCH/installed
  mkdir -p "$fake"/{ctk,runtime-shim,sim}
  ln -s "$R/usr/bin/enflame-ctk" "$fake/ctk/enflame-ctk"
  ln -s "$R/usr/bin/enflame-container-runtime" "$fake/runtime-shim/enflame-container-runtime"
  ln -s "$SIM_HOST" "$fake/sim/enflame-sim-host"
  cdi_ns "$SCRATCH/run"
  run "${CDI_NS[@]}" env BUILD_DIR="$fake" "$TOP/scripts/demo.sh"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"/dev/gcu2"* ]]
  # the installed units, pointed at the installed enflame-ctk, with its installed man page
  mkdir -p "$SCRATCH/units"
  for p in service path; do
    sed "s|/usr/bin/enflame-ctk|$R/usr/bin/enflame-ctk|" "$R/usr/lib/systemd/system/enflame-cdi-refresh.$p" \
      > "$SCRATCH/units/enflame-cdi-refresh.$p"
  done
  run env MANPATH="$R/usr/share/man" systemd-analyze verify "$SCRATCH"/units/enflame-cdi-refresh.{service,path}
  [ "$status" -eq 0 ]
  [ -z "$output" ] || { echo "$output"; false; }
  # a changed conffile survives remove but not purge
  echo '# local' >> "$R/etc/enflame-container-runtime/config.toml"
  dpkg --root="$R" --remove "$PKG" >/dev/null
  [ "$(tail -1 "$R/etc/enflame-container-runtime/config.toml")" = "# local" ]
  [ ! -e "$R/usr/bin/enflame-ctk" ]
  run dpkg --root="$R" --purge "$PKG"
  [ "$status" -eq 0 ]
  run dpkg-query --root="$R" -W "$PKG"
  [ "$status" -ne 0 ]
  # nothing left: no other package of this root owns a file or folder, so all of it goes
  local f left=""
  while read -r f; do
    [ -e "$R$f" ] && left="$left $f"
  done < "$SCRATCH/files"
  [ -z "$left" ] || { echo "left behind:$left"; false; }
  [ "$(cd "$R" && find . -path ./var/lib/dpkg -prune -o -print | sort | tr '\n' ' ')" = ". ./var ./var/lib " ]
}
