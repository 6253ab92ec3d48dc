#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fake OpenAI-API model server for the enflame-epp tests (python3 standard library only).

It listens on 127.0.0.1 on a port the kernel picks and writes that port to <dir>/port once it
listens. It answers:

  POST /v1/completions, /v1/chat/completions
        a JSON completion of `max_tokens` (default 16) words "t0 t1 ...", or with "stream": true
        that many Server-Sent Events, a usage event when stream_options.include_usage, then
        "data: [DONE]". Every answer carries the header x-served-by: <--name>. A body that is
        not JSON is a 400. Each request is logged first, as one JSON line in
        <dir>/requests.jsonl: seq, method, path, headers (names in lower case), body_len,
        body_sha256, model.
  GET  /metrics
        the values of <dir>/metrics.json (read on every scrape) in the --format's names:
        {"waiting": 0, "running": 0, "kv_cache": 0.0, "block_size": 16, "num_gpu_blocks": 1000,
         "lora": {"max_lora": 4, "running": "a,b", "waiting": ""}, "status": 200}
        all optional; "status" other than 200 makes the scrape fail with that status.
  PUT  /fake/metrics
        replaces <dir>/metrics.json with the body (a JSON object), as a test would write it.
  GET  /health, /v1/models

--token-delay-ms N sleeps N ms before each generated word (streamed or not), so a request can
be held open while a test looks at the queue.
"""

import argparse
import hashlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FORMATS = {
    # name of: waiting queue, running, KV-cache usage (0..1), cache config info
    "vllm": ("vllm:num_requests_waiting", "vllm:num_requests_running",
             "vllm:kv_cache_usage_perc", "vllm:cache_config_info"),
    "sglang": ("sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:token_usage",
               "sglang:cache_config_info"),
}


def metrics_text(fmt, v):
    """The Prometheus text exposition of the values `v` under the names of format `fmt`."""
    waiting, running, kv, info = FORMATS[fmt]
    block_label = "block_size" if fmt == "vllm" else "page_size"
    blocks_label = "num_gpu_blocks" if fmt == "vllm" else "num_pages"
    lines = [
        f"# TYPE {waiting} gauge", f'{waiting}{{model_name="fake"}} {v.get("waiting", 0)}',
        f"# TYPE {running} gauge", f'{running}{{model_name="fake"}} {v.get("running", 0)}',
        f"# TYPE {kv} gauge", f'{kv}{{model_name="fake"}} {v.get("kv_cache", 0.0)}',
        f"# TYPE {info} gauge",
        f'{info}{{{block_label}="{v.get("block_size", 16)}",'
        f'{blocks_label}="{v.get("num_gpu_blocks", 1000)}"}} 1',
    ]
    lora = v.get("lora")
    if fmt == "vllm" and lora is not None:
        lines += [
            "# TYPE vllm:lora_requests_info gauge",
            f'vllm:lora_requests_info{{max_lora="{lora.get("max_lora", 4)}",'
            f'running_lora_adapters="{lora.get("running", "")}",'
            f'waiting_lora_adapters="{lora.get("waiting", "")}"}} {time.time():.3f}',
        ]
    return "\n".join(lines) + "\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-model-server/1"

    def log_message(self, *_):
        pass

    def reply(self, status, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-served-by", self.server.name)
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        if self.path == "/metrics":
            v = self.server.values()
            status = int(v.get("status", 200))
            if status != 200:
                return self.reply(status, "scrape refused by the test\n", "text/plain")
            return self.reply(200, metrics_text(self.server.fmt, v),
                              "text/plain; version=0.0.4")
        if self.path == "/health":
            return self.reply(200, "{}")
        if self.path == "/v1/models":
            return self.reply(200, json.dumps({"object": "list", "data": [
                {"id": self.server.name, "object": "model"}]}))
        return self.reply(404, json.dumps({"error": f"no {self.path}"}))

    def do_PUT(self):
        if self.path != "/fake/metrics":
            return self.reply(404, json.dumps({"error": f"no {self.path}"}))
        try:
            values = json.loads(self.read_body())
            assert isinstance(values, dict)
        except (ValueError, AssertionError):
            return self.reply(400, json.dumps({"error": "want a JSON object"}))
        self.server.set_values(values)
        return self.reply(200, "{}")

    def do_POST(self):
        body = self.read_body()
        try:
            req = json.loads(body)
            assert isinstance(req, dict)
        except (ValueError, AssertionError):
            req = None
        self.server.log_request(self, body, req)
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            return self.reply(404, json.dumps({"error": f"no {self.path}"}))
        if req is None:
            return self.reply(400, json.dumps({"error": "body is not a JSON object"}))
        n = int(req.get("max_tokens") or 16)
        if req.get("stream"):
            return self.stream(req, n)
        words = []
        for i in range(n):
            self.server.delay()
            words.append(f"t{i}")
        return self.reply(200, json.dumps({
            "id": "cmpl-fake", "object": "text_completion", "model": req.get("model", ""),
            "choices": [{"index": 0, "text": " ".join(words), "finish_reason": "length"}],
            "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": n,
                      "total_tokens": len(body) // 4 + n}}))

    def stream(self, req, n):
        # Close-delimited, as many servers send SSE; flushed event by event.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("x-served-by", self.server.name)
        self.end_headers()
        self.close_connection = True

        def event(obj):
            self.wfile.write(b"data: " + obj.encode() + b"\n\n")
            self.wfile.flush()

        for i in range(n):
            self.server.delay()
            event(json.dumps({"id": "cmpl-fake", "object": "text_completion",
                              "model": req.get("model", ""),
                              "choices": [{"index": 0, "text": f"t{i} "}]}))
        if (req.get("stream_options") or {}).get("include_usage"):
            event(json.dumps({"id": "cmpl-fake", "choices": [],
                              "usage": {"prompt_tokens": 1, "completion_tokens": n}}))
        event("[DONE]")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", args.port), Handler)
        self.dir, self.name, self.fmt = args.dir, args.name, args.format
        self.token_delay = args.token_delay_ms / 1000.0
        self.lock = threading.Lock()
        self.seq = 0

    def delay(self):
        if self.token_delay:
            time.sleep(self.token_delay)

    def values(self):
        try:
            with open(os.path.join(self.dir, "metrics.json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def set_values(self, values):
        path = os.path.join(self.dir, "metrics.json")
        with open(path + ".new", "w") as f:
            json.dump(values, f)
        os.replace(path + ".new", path)

    def log_request(self, handler, body, req):
        with self.lock:
            self.seq += 1
            line = json.dumps({
                "seq": self.seq, "method": handler.command, "path": handler.path,
                "headers": {k.lower(): v for k, v in handler.headers.items()},
                "body_len": len(body), "body_sha256": hashlib.sha256(body).hexdigest(),
                "model": (req or {}).get("model")})
            with open(os.path.join(self.dir, "requests.jsonl"), "a") as f:
                f.write(line + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="state folder (port, requests.jsonl, metrics.json)")
    ap.add_argument("--name", default="fake", help="x-served-by and /v1/models id")
    ap.add_argument("--format", choices=sorted(FORMATS), default="vllm", help="metric names")
    ap.add_argument("--port", type=int, default=0, help="0: the kernel picks one")
    ap.add_argument("--token-delay-ms", type=float, default=0.0)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    srv = Server(args)
    port_file = os.path.join(args.dir, "port")
    with open(port_file + ".new", "w") as f:
        f.write(f"{srv.server_address[1]}\n")
    os.replace(port_file + ".new", port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
