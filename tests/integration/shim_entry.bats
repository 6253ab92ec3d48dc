#!/usr/bin/env bats
# The shim's passthrough fast path (issue 27, runtime-shim/fast_entry.cpp): a call the shim does
# not change is handled at the ELF entry point, before glibc starts, with its own reading of the
# config. These tests hold it to main()'s behaviour: every config main() accepts reaches the
# same runtime with runc's argv unchanged, every config main() refuses stops the call with
# main()'s error, the shim never execs itself, and runc's --log is created as before. The
# runtime is a script that records its argv (what runc would be given).

load helpers
bats_require_minimum_version 1.5.0   # `run !`

setup() {
  setup_scratch
  mkdir -p "$SCRATCH/bin"
  # The runtime: records its argv, one per line, and exits 0.
  # shellcheck disable=SC2016 # $0 and $@ are the script's own
  printf '#!/bin/sh\nprintf "%%s\\n" "$0" "$@" > "%s/argv"\n' "$SCRATCH" > "$SCRATCH/bin/runc"
  chmod +x "$SCRATCH/bin/runc"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
}

teardown() { teardown_scratch; }

# passes_to RUNTIME ARGS...: the shim with ARGS (and the environment changes in RT_ENV) execs
# RUNTIME with exactly ARGS.
RT_ENV=()
passes_to() {
  local rt=$1; shift
  rm -f "$SCRATCH/argv"
  run env "${RT_ENV[@]}" /usr/bin/timeout 20 "$SHIM" "$@"
  [ "$status" -eq 0 ]
  [ "$(cat "$SCRATCH/argv")" = "$(printf '%s\n' "$rt" "$@")" ]
}

# refused TEXT: `shim state x` fails with main()'s error naming TEXT and runs no runtime (the
# default runtime "runc" on PATH is the recording script).
refused() {
  rm -f "$SCRATCH/argv"
  run env "PATH=$SCRATCH/bin" /usr/bin/timeout 20 "$SHIM" state x
  [ "$status" -ne 0 ]
  echo "$output"
  [[ "$output" == *"enflame-container-runtime: error: loading the configuration: "*"$1"* ]]
  [ ! -e "$SCRATCH/argv" ]
}

@test "fast path: every config form main() accepts reaches the runtime with runc's argv unchanged" {
  # Every key of both tables, comments, tabs, CRLF line ends, a runtime found second on PATH.
  printf '# comment\r\n[enflame-container-cli]\r\ndriver-root = "/"  # the host\r\n\tdev-root=\"/\"\r\nhost-driver-root = ""\r\nhost-dev-root = "/"\r\nldconfig = "@/sbin/ldconfig"\r\ndevice-prefix = "gcu"\r\nlibrary-search-paths = [ "/usr/lib" , "/lib" ]\r\ncompute-libraries = []\r\nefsmi-timeout-ms = 5000\r\n\r\n[enflame-container-runtime]\r\nmode = "legacy"\r\nruntimes = ["no-such-runtime", "/nonexistent/runc", "runc"]\r\nspec-dirs = ["/etc/cdi"]\r\nlog-file = ""\r\nlog-level = "warn"\r\naccept-envvar-when-unprivileged = false\r\ncdi-kind = "enflame.com/gpu"\r\nhook-path = ""\r\n' > "$ENFLAME_CTK_CONFIG"
  RT_ENV=("PATH=/nonexistent:$SCRATCH/bin:/usr/bin:/bin")
  passes_to "$SCRATCH/bin/runc" --root /r --log-format json state -- "a b" ""
  RT_ENV=()
  # An absolute runtime path, Go's flag forms, a lone "-" and "--" as arguments.
  printf '[enflame-container-runtime]\nruntimes = ["%s"]\n' "$SCRATCH/bin/runc" > "$ENFLAME_CTK_CONFIG"
  passes_to "$SCRATCH/bin/runc" -root=/r -systemd-cgroup kill --all id KILL
  passes_to "$SCRATCH/bin/runc" --rootless true delete -f - --
  passes_to "$SCRATCH/bin/runc" ""
  # TOML beyond the fast path's subset (escapes, a multi-line array, a literal string): main() reads it.
  printf '[enflame-container-runtime]\nruntimes = [\n  "%s",\n]\ncdi-kind = "enflame.com\\u002Fgpu"\nmode = '"'cdi'"'\n' \
    "$SCRATCH/bin/runc" > "$ENFLAME_CTK_CONFIG"
  passes_to "$SCRATCH/bin/runc" state x
  # No config file at the path named by an empty ENFLAME_CTK_CONFIG: the default file, if absent
  # the defaults (runc, crun on PATH).
  if [ ! -e /etc/enflame-container-runtime/config.toml ]; then
    RT_ENV=(ENFLAME_CTK_CONFIG= "PATH=$SCRATCH/bin")
    passes_to "$SCRATCH/bin/runc" state x
  fi
}

@test "fast path: every config main() refuses stops a passthrough call with main()'s error" {
  local -a cases=(
    "unknown key 'mdoe'|[enflame-container-runtime]\nmdoe = \"cdi\"\n"
    "unknown table|[enflame-container-runtimes]\n"
    "unknown key 'runtimes'|runtimes = [\"runc\"]\n"
    "line 3|[enflame-container-runtime]\nmode = \"cdi\"\nmode = \"cdi\"\n"
    "line 3|[enflame-container-runtime]\n[enflame-container-cli]\n[enflame-container-runtime]\n"
    "mode 'bogus'|[enflame-container-runtime]\nmode = \"bogus\"\n"
    "log-level 'loud'|[enflame-container-runtime]\nlog-level = \"loud\"\n"
    "must be an array of strings|[enflame-container-runtime]\nruntimes = \"runc\"\n"
    "must be an array of strings|[enflame-container-runtime]\nruntimes = [\"runc\", 1]\n"
    "must be a string|[enflame-container-runtime]\nmode = 1\n"
    "must be true or false|[enflame-container-runtime]\naccept-envvar-when-unprivileged = \"yes\"\n"
    "device-prefix 'a/b'|[enflame-container-cli]\ndevice-prefix = \"a/b\"\n"
    "device-prefix ''|[enflame-container-cli]\ndevice-prefix = \"\"\n"
    "host-dev-root 'rel'|[enflame-container-cli]\nhost-dev-root = \"rel\"\n"
    "must be a positive integer|[enflame-container-cli]\nefsmi-timeout-ms = 0\n"
    "line 2|[enflame-container-runtime]\nmode = \"cdi\" x\n"
    "line 2|[enflame-container-runtime]\nmode = \"cdi\n"
    "line 1|[enflame-container-cli\0]\n"
    "line 1|[enflame-container-cli\0enflame-container-runtime]\n"
    "line 1|[enflame-container-cli\0hook-path]\n"
    "line 2|[enflame-container-runtime]\nmode = \"cdi\"\0\n"
  )
  # (a NUL in a table header: the release binary keeps "hook-path" right after the literal
  # "enflame-container-cli", so a fast path reading past it accepted that header)
  local c
  for c in "${cases[@]}"; do
    echo "case: ${c%%|*}"
    # shellcheck disable=SC2059 # the case's text is the format
    printf "${c#*|}" > "$ENFLAME_CTK_CONFIG"
    refused "${c%%|*}"
  done
  # A config file that is named but missing.
  ENFLAME_CTK_CONFIG=$SCRATCH/missing.toml refused "missing.toml"
}

@test "fast path: the shim never execs itself, and runc's --log is created as main() does" {
  # The shim under the runtime's name comes first on PATH and as an absolute path: both skipped.
  mkdir -p "$SCRATCH/self"
  ln -s "$SHIM" "$SCRATCH/self/runc"
  printf '[enflame-container-runtime]\nruntimes = ["%s", "runc"]\n' "$SHIM" > "$ENFLAME_CTK_CONFIG"
  RT_ENV=("PATH=$SCRATCH/self:$SCRATCH/bin")
  passes_to "$SCRATCH/bin/runc" state x
  RT_ENV=()
  # The shim alone: no runtime found, main()'s error names what it tried.
  printf '[enflame-container-runtime]\nruntimes = ["%s"]\n' "$SHIM" > "$ENFLAME_CTK_CONFIG"
  run timeout 20 "$SHIM" state x
  [ "$status" -eq 1 ]
  [[ "$output" == *"no low-level runtime found: tried '$SHIM'"* ]]
  # --log: created (runc appends to it), also by a call that passes through.
  printf '[enflame-container-runtime]\nruntimes = ["%s"]\n' "$SCRATCH/bin/runc" > "$ENFLAME_CTK_CONFIG"
  passes_to "$SCRATCH/bin/runc" --log "$SCRATCH/runc.log" state x
  [ -f "$SCRATCH/runc.log" ]
  passes_to "$SCRATCH/bin/runc" --log="$SCRATCH/runc2.log" --log-format=json state x
  [ -f "$SCRATCH/runc2.log" ]
  # --debug: main() writes its debug line into runc's log before the exec.
  passes_to "$SCRATCH/bin/runc" --debug --log "$SCRATCH/debug.log" state x
  grep -F "level=debug msg=\"exec $SCRATCH/bin/runc state\"" "$SCRATCH/debug.log"
}
