# SPDX-License-Identifier: Apache-2.0
"""The load bench/epp.sh sends through a gateway to llama-servers (standard library only).

A completion is POST /v1/completions with a plain prompt and `"model": "tiny"` (the EPP refuses
a body without a model; llama-server ignores the name); llama-server answers with `model`
(its --alias, so the server that made the answer is known), `usage.prompt_tokens` and
`usage.prompt_tokens_details.cached_tokens` (prompt tokens its prefix cache already held).

Token counts: the tiny model (tests/tools/make-tiny-gguf.py) has one token per ASCII character,
plus a BOS and sentencepiece's leading space marker before every prompt, so the tokens two
prompts share are their common characters + 2. That gives the ideal cacheable tokens of a
request: what one server with an unbounded cache would hold of it, from any request sent
before it.
"""
import http.client
import json
import random
import socket
import string
import threading
import time

SHARED_LEAD_TOKENS = 2  # BOS and the leading space marker


def words(rng, n_chars):
    """Random lower-case words, n_chars long: text no other group shares past a few characters."""
    out, size = [], 0
    while size < n_chars:
        w = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9)))
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n_chars]


def conversations(seed, groups, turns, prefix_chars, turn_chars=50):
    """`groups` conversations of `turns` prompts each: a system prompt of prefix_chars unique to
    the group, then the turns so far (user question and a fixed stand-in answer: the model's
    real answers are noise), so turn k's prompt extends turn k-1's."""
    rng = random.Random(seed)
    convs = []
    for g in range(groups):
        text = f"[system {seed}.{g}] " + words(rng, prefix_chars)
        prompts = []
        for _ in range(turns):
            text += "\nUser: " + words(rng, turn_chars) + "\nAssistant:"
            prompts.append(text)
            text += " " + words(rng, turn_chars)
        convs.append(prompts)
    return convs


def common_prefix(a, b):
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Client:
    """Completions against one base URL (http://host:port), one connection per thread."""

    def __init__(self, host, port, timeout=120):
        self.host, self.port, self.timeout = host, port, timeout
        self.local = threading.local()

    def complete(self, prompt, max_tokens, extra=None):
        """-> dict: ms, status, model, prompt_tokens, cached_tokens (None when not answered)."""
        body = {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **(extra or {})}
        data = json.dumps(body).encode()
        t0 = time.monotonic()
        status, payload = self._post("/v1/completions", data)
        ms = (time.monotonic() - t0) * 1000
        r = {"ms": ms, "status": status, "model": None, "prompt_tokens": None, "cached_tokens": None}
        if status == 200:
            ans = json.loads(payload)
            usage = ans.get("usage", {})
            r["model"] = ans.get("model")
            r["prompt_tokens"] = usage.get("prompt_tokens")
            r["cached_tokens"] = usage.get("prompt_tokens_details", {}).get("cached_tokens")
        return r

    def _post(self, path, data):
        for attempt in (0, 1):  # one retry on a kept-alive connection the peer closed
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                conn.request("POST", path, data, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, ConnectionError, OSError):
                conn.close()
                self.local.conn = None
                if attempt:
                    return 0, b""
        return 0, b""


def run_conversations(client, convs, max_tokens, seed, stagger_ms=300):
    """Each conversation in its own thread, its turns one after another, the threads started
    at seeded random offsets within stagger_ms (users do not arrive in one instant). Returns
    per-request results with `ideal` (cacheable tokens given every prompt sent before it)."""
    rng = random.Random(seed)
    starts = [rng.uniform(0, stagger_ms / 1000) for _ in convs]
    sent, lock, results = [], threading.Lock(), []

    def one(g):
        time.sleep(starts[g])
        for turn, prompt in enumerate(convs[g]):
            with lock:
                best = max((common_prefix(prompt, p) for p in sent), default=-SHARED_LEAD_TOKENS)
                sent.append(prompt)
            r = client.complete(prompt, max_tokens)
            r.update(group=g, turn=turn, ideal=best + SHARED_LEAD_TOKENS)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=one, args=(g,)) for g in range(len(convs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def run_closed_loop(client, prompts, concurrency, max_tokens):
    """The prompts spread over `concurrency` threads, each sending its share one after another."""
    results, lock = [], threading.Lock()

    def worker(share):
        for p in share:
            r = client.complete(p, max_tokens)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=worker, args=(prompts[i::concurrency],)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


class Busy:
    """Keeps one server busy: `n` threads each streaming long generations (max_tokens, EOS
    ignored) one after another, directly to it, until stop(), which drops their connections:
    llama-server cancels a streamed generation when it cannot write to its client."""

    def __init__(self, host, port, n, max_tokens=1500):
        self.host, self.port, self.max_tokens = host, port, max_tokens
        self.conns = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._loop, args=(i,)) for i in range(n)]

    def _loop(self, i):
        body = json.dumps({"prompt": f"busy {i} " + "x" * 64, "max_tokens": self.max_tokens,
                           "ignore_eos": True, "stream": True}).encode()
        while True:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
            with self.lock:
                if self.stopping.is_set():
                    return
                self.conns.append(conn)
            try:
                conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                while resp.read(4096):
                    pass
            except (http.client.HTTPException, OSError):
                pass
            conn.close()

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        with self.lock:
            self.stopping.set()
            for conn in self.conns:
                if conn.sock is not None:
                    try:
                        conn.sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
        for t in self.threads:
            t.join()
