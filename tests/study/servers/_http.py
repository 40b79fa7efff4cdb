"""The part the test servers here share: ``/health``, an OpenAI token stream, a logged crash.

The servers differ only in which flags crash them and how fast they stream: each works out
its rate, then calls :func:`serve` (or :func:`crash`). They run as scripts from this folder
(and bench/ puts this folder on ``sys.path``), so this module is imported as plain ``_http``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NoReturn


class Handler(BaseHTTPRequestHandler):
    """``/health``, and ``/v1/completions`` streaming ``max_tokens`` tokens at ``rate``."""

    protocol_version = "HTTP/1.1"
    rate = 100.0  # tokens per second of one stream
    ttft_s = 0.0  # extra delay before the first token

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
        start = time.monotonic() + self.ttft_s
        for i in range(n):
            # Absolute deadlines: token i at ttft_s + (i + 1) / rate, so that a request of n
            # tokens takes ttft_s + n / rate and a stream's rate is the configured one exactly.
            time.sleep(max(0.0, start + (i + 1) / self.rate - time.monotonic()))
            chunk = {"choices": [{"index": 0, "text": " tok", "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        final = {"choices": [], "usage": {"completion_tokens": n, "prompt_tokens": 1}}
        self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # 64 streams connect at once (the default backlog is 5)


def serve(host: str, port: int, rate: float, ready: str, ttft_s: float = 0.0) -> NoReturn:
    """Stream at ``rate`` tokens/s on ``host:port``, print ``ready`` and serve until killed.

    Raises:
        OSError: the port is taken (``EADDRINUSE``, as a real server logs it).
    """
    handler = type("Handler", (Handler,), {"rate": rate, "ttft_s": ttft_s})
    server = _Server((host, port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(ready, flush=True)
    while True:
        time.sleep(3600)


def crash(*lines: str) -> NoReturn:
    """Log a traceback ending in ``lines`` and exit 1, as a server that fails to start."""
    print("Traceback (most recent call last):", flush=True)
    for line in lines:
        print(line, flush=True)
    sys.exit(1)
