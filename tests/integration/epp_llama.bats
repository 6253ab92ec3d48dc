#!/usr/bin/env bats
# enflame-epp in front of real model servers: three of Debian sid's llama-server (llama.bash:
# a private prefix fetched once, the tiny random-weight model of tests/tools/make-tiny-gguf.py)
# on loopback, the real enflame-epp given them with --endpoints, and epp-gateway playing Envoy
# towards it (k8s/tests/FAKES.md). Each server answers as its own model name (--alias), so a
# response says which server made it; its usage says how much of the prompt its prefix cache
# held. Skips with one line when llama-server cannot be fetched (no network on first use).

load helpers
load epp
load llama
bats_require_minimum_version 1.5.0

setup() {
  requires jq curl
  setup_scratch
  llama_setup
}
teardown() { teardown_scratch; }

# complete PORT PROMPT [MAX_TOKENS [EXTRA_JSON]]: POST /v1/completions to 127.0.0.1:PORT (a
# llama-server, or the gateway); prints "model cached_tokens prompt_tokens" of the answer, the
# model being the alias of the server that made it.
complete() {
  jq -n --arg p "$2" --argjson n "${3:-4}" --argjson x "${4:-{\}}" '{model: "tiny", prompt: $p, max_tokens: $n, temperature: 0} + $x' |
    curl -sSf --max-time 60 -H 'Content-Type: application/json' --data-binary @- "http://127.0.0.1:$1/v1/completions" |
    jq -r '"\(.model) \(.usage.prompt_tokens_details.cached_tokens) \(.usage.prompt_tokens)"'
}

# long_prompt SEED: about 1200 characters (= tokens of the tiny model) of words no other seed shares.
long_prompt() {
  /usr/bin/python3 -c 'import random, string, sys
r = random.Random(sys.argv[1])
print(" ".join("".join(r.choice(string.ascii_lowercase) for _ in range(r.randint(2, 9))) for _ in range(200))[:1200])' "$1"
}

# routed_servers: llama-servers a, b and c, an EPP given the three (its default config) and the
# gateway in front of it: $GATEWAY_PORT; a's port is $A.
routed_servers() {
  local ports=() n
  epp_binaries
  for n in a b c; do
    llama_start "$n"
    ports+=("127.0.0.1:$LLAMA_PORT")
  done
  A=${ports[0]#127.0.0.1:}
  epp_start "$(IFS=,; echo "${ports[*]}")"
  # shellcheck disable=SC2119 # no extra flags
  gateway_start
}

@test "llama-server: the tiny model answers; a repeated long prefix is served from its cache, on another server it is not" {
  llama_start a
  local a=$LLAMA_PORT
  llama_start b
  local b=$LLAMA_PORT
  local p
  p=$(long_prompt 1)
  read -r model cached total < <(complete "$a" "$p first question")
  [ "$model" = a ]
  [ "$cached" -eq 0 ]
  [ "$total" -ge 1200 ]
  read -r model cached total < <(complete "$a" "$p second question")
  [ "$cached" -ge 1200 ]
  read -r model cached total < <(complete "$b" "$p third question")
  [ "$model" = b ]
  [ "$cached" -eq 0 ]
}

@test "enflame-epp: a completion through epp-gateway is answered by one of the real llama-servers" {
  routed_servers
  read -r model cached total < <(complete "$GATEWAY_PORT" "Hello, who are you?" 8)
  [[ $model == [abc] ]]
  [ "$total" -ge 20 ]
}

@test "enflame-epp: repeats of a long shared-prefix prompt land on the server that caches it" {
  routed_servers
  local seed p first model cached total turn
  for seed in 1 2 3 4; do
    p=$(long_prompt "$seed")
    read -r first cached total < <(complete "$GATEWAY_PORT" "$p first question")
    echo "prefix $seed: first on $first, $cached of $total tokens cached"
    # new to every server: at most the first few characters match a slot's last prompt
    [ "$cached" -lt 64 ]
    for turn in second third; do
      read -r model cached total < <(complete "$GATEWAY_PORT" "$p $turn question")
      echo "prefix $seed: first on $first, $turn on $model, $cached of $total tokens cached"
      [ "$model" = "$first" ]
      [ "$cached" -ge 1200 ]
    done
  done
}

@test "enflame-epp: requests avoid a server whose slots are busy (the EPP scrapes llamacpp metrics)" {
  routed_servers
  llama_busy "$A" 3
  # both of a's slots generating and one request waiting for a slot
  wait_for llama_waiting "$A"
  sleep 0.3  # a few of the EPP's 50 ms scrapes
  local i model cached total
  for i in 1 2 3 4 5 6 7 8 9; do
    read -r model cached total < <(complete "$GATEWAY_PORT" "short question number $i" 4)
    echo "request $i: $model"
    [[ $model == [bc] ]]
  done
}
