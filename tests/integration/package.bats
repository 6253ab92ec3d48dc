#!/usr/bin/env bats
# Man pages, systemd units, bash completion, `cmake --install`, and the Debian package made by
# `cpack -G DEB` in $BUILD_DIR: installed into this machine with dpkg -i, used, then purged,
# checking that nothing of it is left. The package test is skipped when the package is already
# installed (someone else's install is not ours to remove).

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
  [ -x "$CTK" ] || skip "needs $CTK"
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
  [ -x "$CTK" ] && [ -x "$SIM_HOST" ] || skip "needs $CTK and $SIM_HOST"
  local u=$SCRATCH/units
  mkdir -p "$u"
  cp "$TOP"/packaging/systemd/enflame-cdi-refresh.{service,path} "$u/"
  grep -qx 'ExecStart=/usr/bin/enflame-ctk cdi generate --output /var/run/cdi/enflame.com-gpu.yaml' "$u/enflame-cdi-refresh.service"
  grep -qx 'PathChanged=/lib/modules/%v/modules.dep' "$u/enflame-cdi-refresh.path"
  grep -qx 'Unit=enflame-cdi-refresh.service' "$u/enflame-cdi-refresh.path"
  if command -v systemd-analyze >/dev/null; then
    # No systemd runs here, but the analyzer works offline. The binary the unit names is
    # installed only by the package, so point it at the build's for this check.
    sed -i "s|/usr/bin/enflame-ctk|$CTK|" "$u/enflame-cdi-refresh.service"
    run systemd-analyze verify --man=no "$u/enflame-cdi-refresh.service" "$u/enflame-cdi-refresh.path"
    [ "$status" -eq 0 ]
    [ -z "$output" ] || { echo "$output"; false; }
  else
    echo "# systemd-analyze not installed: unit syntax checked by the greps only" >&3
  fi
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
  [ -f "$BUILD_DIR/cmake_install.cmake" ] && [ -x "$CTK" ] && [ -x "$SHIM" ] && [ -x "$HOOK" ] || skip "needs a full build in $BUILD_DIR"
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

@test "the .deb installs with dpkg -i, works, and purges without a trace" {
  requires root dpkg cpack
  [ -x "$CTK" ] && [ -x "$SHIM" ] && [ -x "$HOOK" ] || skip "needs a full build in $BUILD_DIR"
  # Two runs of this file at once (two people running the suite) would install and purge the
  # same package under each other: take turns.
  # (the lock is on this file itself, so nothing is left behind)
  exec 9<"$BATS_TEST_FILENAME"
  flock -w 600 9 || skip "another package test held the lock for 10 minutes"
  if dpkg-query -W -f='${db:Status-Abbrev}' "$PKG" 2>/dev/null | grep -q '^i'; then
    skip "$PKG is already installed on this machine"
  fi
  (cd "$BUILD_DIR" && cpack -G DEB -B "$SCRATCH/pkg" >/dev/null)
  local deb
  deb=$(ls "$SCRATCH"/pkg/${PKG}_*.deb)
  dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/enflame-container-runtime/config.toml
  # purge even if an assertion below fails
  on_teardown "dpkg --purge $PKG >/dev/null 2>&1"
  run dpkg -i "$deb"
  [ "$status" -eq 0 ]
  dpkg-query -L "$PKG" | sort > "$SCRATCH/files"

  run /usr/bin/enflame-ctk --version
  [ "$status" -eq 0 ]
  [[ "$output" == "enflame-ctk "* ]]
  run /usr/bin/enflame-container-runtime --version
  [ "$status" -eq 0 ]
  man -w enflame-ctk | grep -q '^/usr/share/man/man1/enflame-ctk.1'
  man -w 5 enflame-container-runtime-config.toml >/dev/null
  # the installed shim is the default runtime path
  run /usr/bin/enflame-ctk runtime configure --runtime docker --config "$SCRATCH/daemon.json" --dry-run
  [ "$status" -eq 0 ]
  [ "$(jq -r .runtimes.enflame.path <<<"$output")" = /usr/bin/enflame-container-runtime ]
  # the demo against the installed binaries: a spec for a simulated host
  if [ -x "$SIM_HOST" ]; then
    sim_example 2 > "$SCRATCH/desc.yaml"
    sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
    write_config "$SCRATCH/config.toml" "$SCRATCH/host"
    ENFLAME_CTK_CONFIG=$SCRATCH/config.toml /usr/bin/enflame-ctk cdi generate --output "$SCRATCH/spec.yaml"
    run /usr/bin/enflame-ctk cdi validate "$SCRATCH/spec.yaml"
    [ "$status" -eq 0 ]
    ENFLAME_CTK_CONFIG=$SCRATCH/config.toml /usr/bin/enflame-ctk info | grep -q S60
    # scripts/demo.sh (podman with CDI, the shim under runc) with the installed binaries: a
    # build-folder lookalike whose binaries are the package's.
    if command -v podman >/dev/null && command -v runc >/dev/null; then
      local fake=$SCRATCH/installed
      mkdir -p "$fake"/{cdi-gen,runtime-shim,sim}
      ln -s /usr/bin/enflame-ctk "$fake/cdi-gen/enflame-ctk"
      ln -s /usr/bin/enflame-container-runtime "$fake/runtime-shim/enflame-container-runtime"
      ln -s "$SIM_HOST" "$fake/sim/enflame-sim-host"
      run env BUILD_DIR="$fake" "$TOP/scripts/demo.sh"
      echo "$output"
      [ "$status" -eq 0 ]
      [[ "$output" == *"/dev/gcu2"* ]]
    fi
  fi
  if command -v systemd-analyze >/dev/null; then
    run systemd-analyze verify /usr/lib/systemd/system/enflame-cdi-refresh.service /usr/lib/systemd/system/enflame-cdi-refresh.path
    [ "$status" -eq 0 ]
    [ -z "$output" ] || { echo "$output"; false; }
  fi
  # a changed conffile survives remove but not purge
  echo '# local' >> /etc/enflame-container-runtime/config.toml
  dpkg --remove "$PKG" >/dev/null
  [ -f /etc/enflame-container-runtime/config.toml ]
  [ ! -e /usr/bin/enflame-ctk ]
  run dpkg --purge "$PKG"
  [ "$status" -eq 0 ]
  run dpkg-query -W "$PKG"
  [ "$status" -ne 0 ]
  local f left=""
  while read -r f; do
    [ -d "$f" ] && [ -n "$(ls -A "$f" 2>/dev/null)" ] && continue   # shared folders such as /usr/bin
    [ -e "$f" ] && left="$left $f"
  done < "$SCRATCH/files"
  [ -z "$left" ] || { echo "left behind:$left"; false; }
  [ ! -e /etc/enflame-container-runtime ]
}
