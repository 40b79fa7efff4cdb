"""The claims autotune makes, checked on servers it has never seen (the ``command`` engine).

Not the stand-in: a small stdlib streaming server (tests/study/servers/scenario.py) launched
by the ``command`` engine, as a user's own server would be, through the whole CLI
(``autotune start``, real Optuna SQLite storage, the local executor) with every default of
``start`` but the ablation (3 baseline launches, confirmation of the top 3, 3 to 5 rounds):

- ``null``: ``--level`` changes nothing (``--ignore-flags``) and launches differ by about 8%
  (``--noise 0.08``, log-normal, seeded per launch): a claimed gain is a false claim;
- ``real``: ``--level 3`` streams 3x faster than the baseline's ``--level 1``, under the same
  launch noise: the gain must be claimed with its whole interval above zero;
- ``fixed``: one server streaming at a fixed rate (no noise, no delay): autotune's output
  tok/s beside a minimal raw-socket client's (bench/loadgen.py) on the same server, same
  streams, and the truth (streams x rate, less the connection set-up each request pays).

Timing figures depend on the machine's load: say so next to them.

    .venv/bin/python bench/claims_command.py --seeds 10
    .venv/bin/python bench/claims_command.py --scenarios fixed --streams 64
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: bench/ is on the path, not the root

# The studies are test fixtures (tests/e2e/test_claims_command.py runs one seed of each).
from bench.noise_claims import COLUMNS, print_tally, run_cli_study, verdict  # noqa: E402
from tests.e2e.claims_studies import SERVER, run_study  # noqa: E402


def claims(args: argparse.Namespace, env: dict[str, str], tmp: Path) -> None:
    print(f"launch noise {args.noise:.0%}; real measurements of a stdlib server (command engine)")
    print(f"{COLUMNS} {'exported':>9} {'wall s':>6}")
    got: dict[str, list[bool]] = {}
    for scenario in [s for s in args.scenarios.split(",") if s in ("null", "real")]:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            t0 = time.monotonic()
            status, exported, _ = run_study(
                tmp / f"{scenario}-{seed}",
                env,
                ignore_flags=scenario == "null",
                seed=seed,
                noise=args.noise,
            )
            claimed, row = verdict(scenario, seed, status)
            got.setdefault(scenario, []).append(claimed)
            what = "baseline" if exported["is_baseline"] else f"level {exported['config']['level']}"
            print(f"{row} {what:>9} {time.monotonic() - t0:>6.0f}", flush=True)
    print_tally(got)


def fixed(args: argparse.Namespace, env: dict[str, str], tmp: Path) -> None:
    """autotune's reading of a fixed-rate server beside a minimal client's and the truth."""
    from bench.loadgen import raw_client

    from autotune.models import Workload
    from autotune.node.process import free_port

    rate, streams, tokens = args.rate, args.streams, args.tokens
    workdir = tmp / "fixed"
    workdir.mkdir(parents=True)
    command = [sys.executable, str(SERVER), "--port", "{port}", "--rate", str(rate)]
    workload = {
        "concurrency": streams,
        "num_requests": streams * 2,
        "prompt_len": 8,
        "output_len": tokens,
        "warmup_requests": 0,
        "windows": 3,
    }
    data = {
        "name": "fixed",
        "engine": {"name": "command", "command": command, "startup_timeout_s": 60},
        "model": "scenario",
        "parameters": [{"name": "level", "type": "categorical", "choices": [1], "flag": "--level"}],
        "baseline": {"level": 1},
        "workload": workload,
        "budget": {"trials": 1},
    }
    path = workdir / "fixed.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    start = ["--executor", "local", "--baseline-launches", "1", "--no-confirm", "-q"]
    status, _, _ = run_cli_study(workdir, env, path, start)
    ours = status["trials"][0]["metrics"]["output_tok_s"]
    # The minimal client on a fresh launch of the same server, three windows, median.
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port), "--rate", str(rate)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert server.stdout is not None
        for line in server.stdout:
            if b"ready" in line:
                break
        w = Workload(**{k: v for k, v in workload.items() if k != "windows"})
        raw = sorted(raw_client(f"http://127.0.0.1:{port}", w).output_tok_s for _ in range(3))[1]
    finally:
        server.kill()
        server.wait()
    truth = streams * rate
    print(f"fixed rate: {streams} streams x {rate:g} tok/s, {tokens} tokens a request")
    print(f"  truth (stream rate x streams): {truth:,.1f} tok/s")
    print(f"  autotune (median of 3 windows): {ours:,.1f} tok/s ({ours / truth - 1:+.2%})")
    print(f"  minimal raw-socket client:      {raw:,.1f} tok/s ({raw / truth - 1:+.2%})")
    print(f"  autotune vs the minimal client: {ours / raw - 1:+.2%}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--noise", type=float, default=0.08)
    p.add_argument("--scenarios", default="null,real,fixed")
    p.add_argument("--streams", type=int, default=64)
    p.add_argument("--rate", type=float, default=20.0, help="fixed: tok/s of one stream")
    p.add_argument("--tokens", type=int, default=64, help="fixed: tokens of one request")
    args = p.parse_args()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory(prefix="claims-command-") as tmp:
        env["AUTOTUNE_NODE_STATE"] = str(Path(tmp) / "node-state")
        if {"null", "real"} & set(args.scenarios.split(",")):
            claims(args, env, Path(tmp))
        if "fixed" in args.scenarios.split(","):
            fixed(args, env, Path(tmp))


if __name__ == "__main__":
    main()
