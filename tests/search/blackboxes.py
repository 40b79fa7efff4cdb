"""The black boxes of tests/study/servers as the search's tests and benchmark read them.

``blackbox`` is ``tests/study/servers/blackbox.py`` (5 settings as flags and environment
variables, 3 crash regions); every other ``blackboxN.py`` there names its own ``PARAMETERS``,
``BASELINE``, ``truth``, ``optimum`` and ``crash_of``. ``space_file`` writes a space that
launches one with the ``command`` engine; ``landscape`` answers its rate in-process, its
crashes classified by the command engine's rules as a launch's log would be.
"""

from __future__ import annotations

import importlib
import itertools
import sys
from pathlib import Path
from typing import Any

import yaml

SERVERS = Path(__file__).resolve().parents[1] / "study" / "servers"
if str(SERVERS) not in sys.path:
    sys.path.insert(0, str(SERVERS))

from blackbox import crash_of, rate  # noqa: E402

PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "backend",
        "type": "categorical",
        "choices": ["triton", "flashinfer", "trtllm"],
        "flag": "--attention-backend",
    },
    {
        "name": "max_batch",
        "type": "int",
        "low": 8,
        "high": 1024,
        "log": True,
        "flag": "--max-batch",
    },
    {
        "name": "mem",
        "type": "float",
        "low": 0.6,
        "high": 0.95,
        "step": 0.01,
        "flag": "--mem-fraction",
    },
    {
        "name": "threads",
        "type": "int",
        "low": 64,
        "high": 2048,
        "log": True,
        "env": "BB_KERNEL_THREADS",
    },
    {"name": "fusion", "type": "bool", "env": "BB_FUSION"},
]
BASELINE = {"backend": "triton", "max_batch": 16, "mem": 0.7, "threads": 128, "fusion": False}


def space_file(path: Path, trials: int, server: str = "blackbox") -> Path:
    parameters, baseline, _, _, _ = SERVER[server]
    space = {
        "name": server,
        "engine": {
            "name": "command",
            "command": [sys.executable, str(SERVERS / f"{server}.py"), "--port", "{port}"],
            "startup_timeout_s": 30,
        },
        "model": server,
        "parameters": parameters,
        "baseline": baseline,
        "objective": {"metric": "output_tok_s", "direction": "maximize"},
        "workload": {
            "concurrency": 1,
            "num_requests": 2,
            "prompt_len": 4,
            "output_len": 24,
            "warmup_requests": 0,
        },
        "budget": {"trials": trials},
    }
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def crash_lines(c: dict[str, Any]) -> list[str] | None:
    return crash_of(c["backend"], c["max_batch"], c["mem"], c["threads"], c["fusion"])


def truth(c: dict[str, Any]) -> float | None:
    if crash_lines(c) is not None:
        return None
    return rate(c["backend"], c["max_batch"], c["mem"], c["threads"], c["fusion"])


def optimum() -> float:
    """The best noise-free rate: its factors are monotone up to the crash edges, so the grid
    of range ends and edge values holds it."""
    best = 0.0
    for b, bt, m, t, f in itertools.product(
        ["triton", "flashinfer", "trtllm"],
        [8, 16, 64, 128, 129, 1024],
        [0.6, 0.7, 0.88, 0.89, 0.95],
        [64, 128, 1023, 1024, 2048],
        [False, True],
    ):
        v = truth({"backend": b, "max_batch": bt, "mem": m, "threads": t, "fusion": f})
        best = max(best, v or 0.0)
    return best


# name -> (parameters, baseline, truth, optimum, the error lines a configuration dies with):
# ``blackbox`` is this file's; every other ``blackboxN.py`` under tests/study/servers names its
# own (PARAMETERS, BASELINE, truth, optimum, crash_of)
SERVER: dict[str, tuple[list[dict[str, Any]], dict[str, Any], Any, Any, Any]] = {
    "blackbox": (PARAMETERS, BASELINE, truth, optimum, crash_lines),
}
for _path in sorted(SERVERS.glob("blackbox[0-9]*.py")):
    _box = importlib.import_module(_path.stem)
    SERVER[_path.stem] = (_box.PARAMETERS, _box.BASELINE, _box.truth, _box.optimum, _box.crash_of)


def landscape(server: str = "blackbox", noise: float = 0.03, empty: bool = False) -> Any:
    """The server's rate function as a bench/search landscape, answered in-process (``noise``:
    the launch-to-launch spread, log scale). A crash is the server's own error lines,
    classified by the command engine's rules as a launch's log is. ``empty``: the space's
    baseline is ``{}``, and a setting left unset takes the server's own default (its usual
    baseline's value)."""
    import random

    from tests.search.landscapes import CRASH_S, Landscape, Point, crash, ok

    from autotune.engines import get_engine
    from autotune.models import Phase
    from autotune.node.failures import classify
    from autotune.space.schema import EngineSpec

    parameters, baseline, truth_of, optimum_of, crash_of_ = SERVER[server]
    rules = get_engine(
        EngineSpec(name="command", command=["server", "--port", "{port}"])
    ).failure_rules()

    defaults = dict(baseline)

    def evaluate(c: dict[str, Any], rng: random.Random) -> Point:
        c = {**defaults, **c}
        lines = crash_of_(c)
        if lines is None:
            return ok(truth_of(c), rng, noise)
        f = classify(lines, rules, phase=Phase.LOAD, exit_code=1, argv=[], env={})
        phase = f.phase.value if f.phase.value in CRASH_S else "load"
        return crash(f.cause.value, phase, f.message or "".join(f.evidence[:1]))

    land = Landscape(
        server, f"tests/study/servers/{server}.py", parameters, evaluate, {} if empty else baseline
    )
    land._optimum = optimum_of()
    return land


__all__ = ["BASELINE", "PARAMETERS", "SERVER", "landscape", "optimum", "space_file", "truth"]
