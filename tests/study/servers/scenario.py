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
import math
import os
import random

import _http


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
        _http.crash(f"RuntimeError: scenario: level {level} too large for this device")
    index = launch_index(a.launches)
    draw = random.Random(f"{a.seed}-{index}").gauss(0.0, a.noise) if a.noise else 0.0
    rate = a.rate * level * math.exp(draw)
    print(f"scenario server: launch {index} level={level} rate={rate:.2f} tok/s", flush=True)
    _http.serve(a.host, a.port, rate, "scenario server ready", ttft_s=a.ttft_ms * level / 1000)


if __name__ == "__main__":
    main()
