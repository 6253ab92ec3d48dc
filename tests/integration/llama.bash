# shellcheck shell=bash
# Real model servers for the enflame-epp tests and bench/epp.sh: Debian sid's llama-server
# (scripts/llama-server.sh: a private prefix fetched once, run through sid's loader) on loopback,
# serving the tiny random-weight model tests/tools/make-tiny-gguf.py writes. Needs helpers.bash.
# shellcheck disable=SC2034  # what this sets, the suites that load it use

# llama_setup: $LLAMA_PREFIX (default $BUILD_DIR/llama) with llama-server fetched and the model
# $TINY_GGUF written (both kept for the next run), or skip (fail under CI) with one line saying
# what could not be had.
llama_setup() {
  export LLAMA_PREFIX=${LLAMA_PREFIX:-$BUILD_DIR/llama}
  TINY_GGUF=$LLAMA_PREFIX/tiny.gguf
  "$TOP/scripts/llama-server.sh" --fetch-only > "$SCRATCH/llama-fetch.log" 2>&1 ||
    { skip_or_fail "llama-server from Debian sid: $(tail -n 1 "$SCRATCH/llama-fetch.log")"; return; }
  [ -s "$TINY_GGUF" ] && return 0
  # Debian's python3 and numpy, whatever python3 comes first in PATH
  PYTHONPATH=$LLAMA_PREFIX/usr/lib/python3/dist-packages /usr/bin/python3 \
    "$TOP/tests/tools/make-tiny-gguf.py" "$TINY_GGUF.tmp" > "$SCRATCH/llama-model.log" 2>&1 ||
    { skip_or_fail "the tiny model: $(tail -n 1 "$SCRATCH/llama-model.log")"; return; }
  mv "$TINY_GGUF.tmp" "$TINY_GGUF"
}

# llama_start NAME [ARGS...]: a llama-server answering as model NAME (--alias: a response's
# "model" names the server that made it) on a loopback port the kernel picks, 2 slots of 2048
# tokens, one thread, /metrics and /slots on, and ARGS. Sets LLAMA_PORT and LLAMA_PID, logs to
# $SCRATCH/llama-NAME.log and is stopped by PID in teardown. Up once /health answers 200.
llama_start() {
  local name=$1 log=$SCRATCH/llama-$1.log
  shift
  "$TOP/scripts/llama-server.sh" -m "$TINY_GGUF" --alias "$name" --host 127.0.0.1 --port 0 \
    -np 2 -c 4096 -t 1 --metrics --slots --no-webui "$@" > "$log" 2>&1 3>&- &
  LLAMA_PID=$!
  on_teardown "stop_pid $LLAMA_PID"
  if ! wait_for llama_listening "$log" || ! kill -0 "$LLAMA_PID" 2>/dev/null; then
    tail -n 3 "$log" >&2
    return 1
  fi
  LLAMA_PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | head -n 1)
  wait_for curl -sf -o /dev/null "http://127.0.0.1:$LLAMA_PORT/health"
}

# llama_listening LOG: the server of LOG has said its port (or died: then wait_for ends early).
llama_listening() {
  grep -qs 'listening on http://127.0.0.1:[0-9]' "$1" && return 0
  kill -0 "$LLAMA_PID" 2>/dev/null || { echo "llama-server exited" >&2; return 0; }
  return 1
}

# llama_busy PORT N: N streamed long generations (EOS ignored) sent straight to the server at
# PORT, each started again when it ends, in the background until stopped by PID in teardown (or
# by `stop_pid $LLAMA_BUSY_PID`): its connections close with it, and llama-server cancels a
# streamed generation it cannot write. With N over the server's slots, some wait (deferred).
llama_busy() {
  /usr/bin/python3 -c '
import http.client, json, sys, threading
port, n = int(sys.argv[1]), int(sys.argv[2])
def loop(i):
    body = json.dumps({"prompt": f"busy {i} " + "x" * 64, "max_tokens": 1500, "ignore_eos": True, "stream": True})
    while True:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            while r.read(4096):
                pass
        except (http.client.HTTPException, OSError):
            pass
        c.close()
for i in range(n):
    threading.Thread(target=loop, args=(i,), daemon=True).start()
threading.Event().wait()' "$1" "$2" 3>&- &
  LLAMA_BUSY_PID=$!
  on_teardown "stop_pid $LLAMA_BUSY_PID"
}

# llama_waiting PORT: the llama-server at PORT has a request waiting for a slot
# (llamacpp:requests_deferred >= 1 on its /metrics).
llama_waiting() {
  curl -sf "http://127.0.0.1:$1/metrics" | awk '$1 == "llamacpp:requests_deferred" && $2 >= 1 { n++ } END { exit !n }'
}
