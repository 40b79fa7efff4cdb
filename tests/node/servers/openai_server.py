"""A stdlib stand-in inference server for node tests.

Serves ``/health`` (503 until started), ``/v1/completions`` and ``/v1/chat/completions``
(OpenAI SSE) and ``/generate`` (SGLang-style SSE with cumulative
``meta_info.completion_tokens``) at a fixed token rate (``--record FILE``: each request body
as a JSON line), logs
SGLang-like milestones, and can misbehave on request: die or log a fatal line after N
requests, reject unknown fields with 422, answer 503 above N requests in flight, leave orphan
children behind.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS: argparse.Namespace
STARTED = threading.Event()
LOCK = threading.Lock()
COUNT = 0
ACTIVE = 0

# The grandchild escapes the process group (setsid) and the tree (its parent exits at once),
# and ignores SIGTERM: only SIGKILL by PID found through the inherited environment gets it.
DOUBLE_FORK = """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print('grandchild', os.getpid(), flush=True)
    while True:
        time.sleep(1)
os._exit(0)
"""
SETSID = """
import os, signal, time
os.setsid()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print('setsid child', os.getpid(), flush=True)
while True:
    time.sleep(1)
"""
IGNORE_TERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print('stubborn child', flush=True)
while True:
    time.sleep(1)
"""


def log(line: str) -> None:
    print(line, flush=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass

    def _json(self, status: int, obj: object) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200 if STARTED.is_set() else 503, {})
        elif self.path == "/get_server_info" and ARGS.accept_length is not None:
            self._json(200, {"internal_states": [{"avg_spec_accept_length": ARGS.accept_length}]})
        else:
            self._json(404, {"detail": "not found"})

    def do_POST(self) -> None:
        global COUNT, ACTIVE
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if ARGS.record:
            with LOCK, open(ARGS.record, "a") as out:
                out.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if self.path not in ("/v1/completions", "/generate", "/v1/chat/completions"):
            self._json(404, {"detail": "not found"})
            return
        if ARGS.reject_field and ARGS.reject_field in body:
            self._json(422, {"detail": f"Unexpected fields in the request: {ARGS.reject_field}"})
            return
        with LOCK:
            COUNT += 1
            number = COUNT
        if ARGS.reject_above:
            with LOCK:
                ACTIVE += 1
                over = ACTIVE > ARGS.reject_above
            try:
                if over:
                    self._json(503, {"error": {"message": "out of memory at this load"}})
                else:
                    self._stream(body, number)
            finally:
                with LOCK:
                    ACTIVE -= 1
            return
        self._stream(body, number)

    def _stream(self, body: dict, number: int) -> None:
        if ARGS.die_after and number > ARGS.die_after:
            log("Scheduler hit an exception: Traceback (most recent call last):")
            log('  File "scheduler.py", line 1, in event_loop')
            log("RuntimeError: worker exploded")
            os._exit(1)
        if ARGS.fatal_after and number == ARGS.fatal_after + 1:
            log(f"{ARGS.fatal_line} at={time.time():.3f}")
        generate = self.path == "/generate"
        if generate:
            n = int(body["sampling_params"]["max_new_tokens"])
        else:
            n = int(body["max_tokens"])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        delay = 1.0 / ARGS.rate
        text = ""
        sent = 0
        while sent < n:
            time.sleep(delay)
            step = min(ARGS.chunk, n - sent)
            sent += step
            piece = " tok" * step
            text += piece
            if generate:
                obj: dict[str, object] = {"text": text, "meta_info": {"completion_tokens": sent}}
            elif self.path == "/v1/chat/completions":
                obj = {"choices": [{"index": 0, "delta": {"content": piece}}]}
            else:
                obj = {"choices": [{"index": 0, "text": piece, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
            self.wfile.flush()
        if not generate and ARGS.usage:
            sent_text = body.get("prompt") or "".join(m["content"] for m in body["messages"])
            usage = {"completion_tokens": n, "prompt_tokens": len(sent_text)}
            final = {"choices": [], "usage": usage}
            self.wfile.write(f"data: {json.dumps(final)}\n\n".encode())
        if not ARGS.no_done:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def spawn(kind: str) -> None:
    code = {"double-fork": DOUBLE_FORK, "setsid": SETSID, "ignore-term": IGNORE_TERM}[kind]
    subprocess.Popen([sys.executable, "-c", code])


def main() -> None:
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rate", type=float, default=2000.0, help="chunks per second")
    parser.add_argument("--chunk", type=int, default=1, help="tokens per chunk")
    parser.add_argument("--startup-s", type=float, default=0.2)
    parser.add_argument("--usage", action="store_true")
    parser.add_argument("--no-done", action="store_true")
    parser.add_argument("--reject-field", default=None)
    parser.add_argument("--die-after", type=int, default=0)
    parser.add_argument("--fatal-after", type=int, default=0)
    parser.add_argument(
        "--reject-above", type=int, default=0, help="503 while more requests are in flight"
    )
    parser.add_argument(
        "--fatal-line", default="Decode out of memory. Try to lower your batch size."
    )
    parser.add_argument("--accept-length", type=float, default=None)
    parser.add_argument("--spawn", action="append", default=[])
    parser.add_argument("--record", default=None, help="append each request body to this file")
    parser.add_argument("--ignore-sigterm", action="store_true")
    ARGS = parser.parse_args()
    if ARGS.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for kind in ARGS.spawn:
        spawn(kind)
    log("Load weight begin. avail mem=70.00 GB")
    ThreadingHTTPServer.request_queue_size = 1024  # not socketserver's 5: clients connect at once
    server = ThreadingHTTPServer((ARGS.host, ARGS.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(ARGS.startup_s / 2)
    log("Load weight end. type=LlamaForCausalLM, mem usage=1.00 GB.")
    log("Capture cuda graph begin. This can take up to several minutes.")
    time.sleep(ARGS.startup_s / 2)
    log("Capture cuda graph end. Time elapsed: 0.10 s.")
    STARTED.set()
    log("The server is fired up and ready to roll!")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
