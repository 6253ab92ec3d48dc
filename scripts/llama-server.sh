#!/bin/sh
# llama-server.sh [--fetch-only] [LLAMA-SERVER ARGS...]: Debian sid's llama.cpp llama-server,
# for the EPP's tests and benchmarks. It needs glibc >= 2.43 and libstdc++ >= 14, so it runs
# from a private prefix (LLAMA_PREFIX, default build/llama) through sid's own loader with sid's
# libraries; nothing is installed. The first call fetches the packages (~14 MB, with
# scripts/fetch-debian.sh) and sid's python3-gguf (tests/tools/make-tiny-gguf.py uses it from
# PREFIX/usr/lib/python3/dist-packages); later calls need no network. --fetch-only stops there.
# Otherwise it execs llama-server, so the caller's PID is the server's.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${LLAMA_PREFIX:-$top/build/llama}
"$top/scripts/fetch-debian.sh" sid "$prefix" llama.cpp-tools libllama0 libggml0 python3-gguf \
  libc6 libstdc++6 libgcc-s1 libgomp1 libssl3t64 zlib1g libzstd1 ||
  { echo "$0: llama.cpp from Debian sid could not be fetched into $prefix" >&2; exit 1; }
lib=$prefix/usr/lib/x86_64-linux-gnu
# ggml looks for its CPU backends (one per instruction-set level) beside the running
# executable, which here is the loader in $lib: without these links the model fails to load.
for b in "$lib"/ggml/backends0/libggml-cpu-*.so; do
  [ -e "$lib/${b##*/}" ] || ln -s "ggml/backends0/${b##*/}" "$lib/${b##*/}"
done
[ "${1:-}" != --fetch-only ] || exit 0
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib:$lib/llama" "$prefix/usr/bin/llama-server" "$@"
