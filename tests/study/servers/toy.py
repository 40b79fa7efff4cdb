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
import os
from typing import NoReturn

import _http


def crash(message: str) -> NoReturn:
    _http.crash('  File "toy.py", line 1, in <module>', message)


def main() -> None:
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
    rate = 100.0 * (1 + a.x * a.y / 5) * (1.1 if a.backend == "b" else 1.0)
    _http.serve(a.host, port, rate, "toy server ready")  # EADDRINUSE when clashing


if __name__ == "__main__":
    main()
