"""A black-box inference server for checking the search end to end (never in bench/search).

Five settings, as flags and environment variables: ``--attention-backend`` (categorical),
``--max-batch`` (log-scaled int), ``--mem-fraction`` (float), ``BB_KERNEL_THREADS`` (log-scaled
int, environment) and ``BB_FUSION`` (bool, environment). Three crash regions, each logging the
kind of error a real server prints:

- flashinfer with ``--max-batch`` above 128: CUDA graph capture fails (illegal memory access);
- ``--mem-fraction`` above 0.88 with fusion on: ``torch.OutOfMemoryError``;
- trtllm with 1024 or more kernel threads: ``too many resources requested for launch``.

Otherwise it serves ``/health`` and ``/v1/completions`` (OpenAI SSE) at a rate that rewards
the edges of those regions; the optimum is about 3x the baseline (triton, 16, 0.7, 128, off).
"""

from __future__ import annotations

import argparse
import json
import math
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
            time.sleep(max(0.0, start + (i + 1) / RATE - time.monotonic()))
            chunk = {"choices": [{"index": 0, "text": " tok", "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        final = {"choices": [], "usage": {"completion_tokens": n, "prompt_tokens": 1}}
        self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def die(lines: list[str]) -> None:
    print("Traceback (most recent call last):", flush=True)
    print('  File "/srv/blackbox/model_runner.py", line 412, in capture', flush=True)
    for line in lines:
        print(line, flush=True)
    sys.exit(1)


def crash_of(backend: str, batch: int, mem: float, threads: int, fusion: bool) -> list[str] | None:
    """The error lines a configuration dies with, or None when it serves."""
    if backend == "flashinfer" and batch > 128:
        return [
            "Capture cuda graph failed: CUDA error: an illegal memory access was encountered",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ]
    if mem > 0.88 and fusion:
        return [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
            "a total capacity of 79.19 GiB of which 1.12 GiB is free."
        ]
    if backend == "trtllm" and threads >= 1024:
        return ["RuntimeError: CUDA error: too many resources requested for launch"]
    return None


def rate(backend: str, batch: int, mem: float, threads: int, fusion: bool) -> float:
    """Tokens per second of one configuration (noise-free)."""
    r = 100.0 * {"triton": 1.0, "flashinfer": 1.45, "trtllm": 1.3}[backend]
    r *= 1 + 0.15 * min(math.log2(batch / 16), 3)
    r *= 1 + 0.8 * (mem - 0.7)
    r *= 1 + 0.05 * math.log2(threads / 128)
    return r * (1.15 if fusion else 1.0)


def main() -> None:
    global RATE
    p = argparse.ArgumentParser(description="black-box inference server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument(
        "--attention-backend", choices=["triton", "flashinfer", "trtllm"], default="triton"
    )
    p.add_argument("--max-batch", type=int, default=16)
    p.add_argument("--mem-fraction", type=float, default=0.7)
    a = p.parse_args()
    threads = int(os.environ.get("BB_KERNEL_THREADS", "128"))
    fusion = os.environ.get("BB_FUSION", "0") == "1"
    print(
        f"blackbox: backend={a.attention_backend} batch={a.max_batch} mem={a.mem_fraction} "
        f"threads={threads} fusion={fusion}",
        flush=True,
    )
    lines = crash_of(a.attention_backend, a.max_batch, a.mem_fraction, threads, fusion)
    if lines is not None:
        die(lines)
    RATE = rate(a.attention_backend, a.max_batch, a.mem_fraction, threads, fusion)
    server = ThreadingHTTPServer((a.host, a.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("blackbox ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
