"""A tiny stdlib inference server whose launch flags decide whether it crashes or how fast it is.

``toy.py --port P [--backend a|b|c|d] [--x F] [--y N] [--buf N] [--clash-port P]
[--clash-once FILE]``

- backends ``c`` and ``d`` are "unsupported": the server logs a traceback ending in
  ``RuntimeError: no kernel for backend ...`` and exits 1 (about half of the toy space);
- ``x * y > 5`` does not fit: ``RuntimeError: toy: tile x*y=... too large`` and exit 1;
- ``--buf`` above 48 logs SGLang's KV-pool message (``Not enough memory. Please try to
  increase --mem-fraction-static``) and exits 1: a memory failure;
- ``--clash-port P`` binds port P instead of ``--port``: a real ``EADDRINUSE`` when P is
  held (an infrastructure failure); with ``--clash-once FILE`` only the first launch (the one
  that creates FILE) does;
- otherwise it serves ``/health`` and ``/v1/completions`` (OpenAI SSE) at
  ``100 * (1 + x*y/5) * (1.1 for backend b)`` tokens per second, so the objective rewards
  configurations close to the crashing edge, as memory-bound tuning does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RATE = 100.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass

    def do_GET(self) -> None:
        body = b"{}"
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(length) or b"{}")
        n = int(req.get("max_tokens", 16))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        start = time.monotonic()
        for i in range(n):
            # Absolute deadlines: the measured rate is the configured one, without drift.
            time.sleep(max(0.0, start + (i + 1) / RATE - time.monotonic()))
            chunk = {"choices": [{"index": 0, "text": " tok", "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        final = {"choices": [], "usage": {"completion_tokens": n, "prompt_tokens": 1}}
        self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def crash(message: str) -> None:
    print("Traceback (most recent call last):", flush=True)
    print('  File "toy.py", line 1, in <module>', flush=True)
    print(message, flush=True)
    sys.exit(1)


def main() -> None:
    global RATE
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--backend", default="a")
    p.add_argument("--x", type=float, default=0.5)
    p.add_argument("--y", type=int, default=1)
    p.add_argument("--buf", type=int, default=1)
    p.add_argument("--clash-port", type=int, default=0)
    p.add_argument("--clash-once", default=None)
    a = p.parse_args()
    print(f"toy server: backend={a.backend} x={a.x} y={a.y} buf={a.buf}", flush=True)
    if a.backend in ("c", "d"):
        crash(f"RuntimeError: no kernel for backend {a.backend!r} on this device")
    if a.x * a.y > 5:
        crash(f"RuntimeError: toy: tile x*y={a.x * a.y:.2f} too large")
    if a.buf > 48:
        crash(
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: buf={a.buf}"
        )
    port = a.port
    if a.clash_port:
        first = True
        if a.clash_once:
            try:
                os.close(os.open(a.clash_once, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                first = False
        if first:
            port = a.clash_port
    RATE = 100.0 * (1 + a.x * a.y / 5) * (1.1 if a.backend == "b" else 1.0)
    server = ThreadingHTTPServer((a.host, port), Handler)  # EADDRINUSE when clashing
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("toy server ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
