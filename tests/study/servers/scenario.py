"""A stdlib streaming server for the claims autotune makes: noise, a real optimum, a trade-off.

``scenario.py --port P [--level L] [--noise F] [--launches DIR] [--seed S] [--ignore-flags]
[--rate R] [--ttft-ms T]``

- Each request streams ``max_tokens`` tokens at ``R * L`` tokens per second (absolute
  deadlines: the configured rate exactly), after an extra first-token delay of ``T * L`` ms: a
  higher ``--level`` is faster in throughput and slower to the first token (a real trade-off
  for a study with two objectives); ``--level 3`` is a real 3x optimum over ``--level 1``.
- ``--level`` 4 or more does not fit: it logs ``RuntimeError: level ... too large`` and exits 1
  (a crash, told to the study as infeasible).
- ``--ignore-flags``: ``--level`` changes nothing (a server whose flags do not matter).
- ``--noise F``: this launch's rate is multiplied by a log-normal draw of spread ``F`` (launch
  to launch noise, like a GPU server's clocks and memory layout). Draws are seeded by
  ``--seed`` and the launch's index, counted in ``--launches DIR`` (one file per launch), so
  a run of launches is reproducible.
- ``--noise 0 --ttft-ms 0``: a server streaming at a fixed, known rate (the truth a load
  generator is checked against).

It answers ``/health`` and ``/v1/completions`` (OpenAI server-sent events with ``usage``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RATE = 100.0  # tokens per second of one stream
TTFT_S = 0.0


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
        start = time.monotonic() + TTFT_S
        for i in range(n):
            # Absolute deadlines: token i at TTFT_S + (i + 1) / RATE, so that a request of n
            # tokens takes TTFT_S + n / RATE and a stream's rate is RATE exactly.
            time.sleep(max(0.0, start + (i + 1) / RATE - time.monotonic()))
            chunk = {"choices": [{"index": 0, "text": " tok", "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        final = {"choices": [], "usage": {"completion_tokens": n, "prompt_tokens": 1}}
        self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def launch_index(folder: str | None) -> int:
    """This launch's index: the first free ``n-K`` file in ``folder`` (0 without one)."""
    if not folder:
        return 0
    os.makedirs(folder, exist_ok=True)
    k = 0
    while True:
        try:
            os.close(os.open(os.path.join(folder, f"n-{k}"), os.O_CREAT | os.O_EXCL))
            return k
        except FileExistsError:
            k += 1


def main() -> None:
    global RATE, TTFT_S
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--ttft-ms", type=float, default=0.0)
    p.add_argument("--noise", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--launches", default=None)
    p.add_argument("--ignore-flags", action="store_true")
    a = p.parse_args()
    level = 1 if a.ignore_flags else a.level
    if level >= 4:
        print("Traceback (most recent call last):", flush=True)
        print(f"RuntimeError: scenario: level {level} too large for this device", flush=True)
        raise SystemExit(1)
    index = launch_index(a.launches)
    draw = random.Random(f"{a.seed}-{index}").gauss(0.0, a.noise) if a.noise else 0.0
    RATE = a.rate * level * math.exp(draw)
    TTFT_S = a.ttft_ms * level / 1000.0
    print(f"scenario server: launch {index} level={level} rate={RATE:.2f} tok/s", flush=True)
    ThreadingHTTPServer.request_queue_size = 256  # 64 streams connect at once (default 5)
    server = ThreadingHTTPServer((a.host, a.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("scenario server ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
