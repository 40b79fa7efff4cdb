"""Landscapes for search strategies: spaces with a known optimum, crash regions and a cost model.

Each landscape is a space (the same dictionary a space file holds) plus a function from one
configuration to what a launch would produce: a value (with noise where the landscape is
noisy), or a crash with a cause, a phase and a log line, and the server-seconds the launch held
the node. The optimum is found by enumerating a grid of the space (``optimum``), so "% of the
optimum" never depends on any strategy.

Crash regions differ in shape on purpose: boxes, thresholds on products, a categorical value
that crashes only with some numeric values, whole categorical values, conditional parameters,
and optima that sit exactly at a crash edge. ``HELD_OUT`` landscapes are never used to choose
defaults; they are reported separately.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

# Server-seconds a launch holds the node (an 8-GPU server: minutes per start).
OK_S = 240.0  # start, warm up, benchmark, tear down
CRASH_S = {  # by phase reached when it dies
    "launch": 20.0,
    "load": 120.0,
    "memory_pool": 150.0,
    "graph_capture": 200.0,
    "benchmark": 260.0,
    "ready": 600.0,  # a start-up timeout waits for the whole limit
}


@dataclass(frozen=True)
class Point:
    """What one launch produced."""

    value: float | None  # measured; None: crashed
    truth: float | None  # noise-free value (for "% of optimum")
    cause: str = ""
    phase: str = ""
    message: str = ""
    seconds: float = OK_S


def ok(truth: float, rng: random.Random | None = None, noise: float = 0.0) -> Point:
    measured = truth * math.exp(rng.gauss(0.0, noise)) if rng is not None and noise else truth
    return Point(measured, truth)


def crash(cause: str, phase: str, message: str) -> Point:
    return Point(None, None, cause, phase, message, CRASH_S[phase])


@dataclass
class Landscape:
    """A space and what each configuration does."""

    name: str
    about: str
    parameters: list[dict[str, Any]]
    evaluate: Callable[[dict[str, Any], random.Random], Point]
    baseline: dict[str, Any]
    held_out: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # more space keys (constraints, ...)
    regions: int = 0  # crash regions, where known (generated landscapes)
    grid_levels: int = 33  # grid points per number when the optimum is searched
    _optimum: float | None = None

    def space(self, trials: int) -> dict[str, Any]:
        """The space file's content (a command engine that is never started)."""
        return {
            "name": f"bench-{self.name}",
            "engine": {"name": "command", "command": ["landscape", "--port", "{port}"]},
            "model": self.name,
            "parameters": self.parameters,
            "baseline": self.baseline,
            "objective": {"metric": "output_tok_s", "direction": "maximize"},
            "budget": {"trials": trials},
            **self.extra,
        }

    def optimum(self) -> float:
        """The best noise-free value over a grid of the space (searched on first use)."""
        if self._optimum is None:
            best = 0.0
            for config in grid(self.parameters, self.grid_levels):
                p = self.evaluate(config, random.Random(0))
                if p.truth is not None:
                    best = max(best, p.truth)
            self._optimum = best
        return self._optimum


def levels(p: dict[str, Any], n: int) -> list[Any]:
    """Up to ``n`` values of one parameter, ends included (log-spaced where ``log``)."""
    if p["type"] == "bool":
        return [False, True]
    if p["type"] == "categorical":
        return list(p["choices"])
    low, high = p["low"], p["high"]
    if isinstance(high, dict) or isinstance(low, dict):  # bounded by another: its own range
        low = low if not isinstance(low, dict) else 1
        high = high if not isinstance(high, dict) else 64
    if p.get("step"):
        k = round((high - low) / p["step"])
        pts = [low + i * p["step"] for i in range(k + 1)]
        if len(pts) > n:
            pts = [pts[round(i * (len(pts) - 1) / (n - 1))] for i in range(n)]
        return [round(v, 10) for v in pts]
    if p["type"] == "int":
        if high - low + 1 <= n:
            return list(range(int(low), int(high) + 1))
        if p.get("log"):
            vals = {
                round(math.exp(math.log(low) + i * (math.log(high) - math.log(low)) / (n - 1)))
                for i in range(n)
            }
        else:
            vals = {round(low + i * (high - low) / (n - 1)) for i in range(n)}
        return sorted(vals)
    return [low + i * (high - low) / (n - 1) for i in range(n)]


def grid(parameters: list[dict[str, Any]], n: int) -> Iterator[dict[str, Any]]:
    """Every combination of each parameter's ``n`` levels (conditional ones left out when off,
    combinations outside a bound taken from another parameter dropped)."""
    names = [p["name"] for p in parameters]
    for combo in itertools.product(*(levels(p, n) for p in parameters)):
        config = dict(zip(names, combo, strict=True))
        for p in parameters:
            when = p.get("when")
            if when and not _holds(when, config):
                config.pop(p["name"], None)
        if all(_inside(p, config) for p in parameters):
            yield config


def _inside(p: dict[str, Any], config: dict[str, Any]) -> bool:
    if p["name"] not in config:
        return True
    v = config[p["name"]]
    low, high = p.get("low"), p.get("high")
    if isinstance(high, dict) and v > config[high["param"]]:
        return False
    return not (isinstance(low, dict) and v < config[low["param"]])


def _holds(when: str, config: dict[str, Any]) -> bool:
    # The landscapes' conditions are all "name" (a bool parameter that is on).
    return bool(config.get(when))


def _log2(x: float) -> float:
    return math.log2(max(x, 1e-9))


# -- the landscapes ------------------------------------------------------------------------


def _box(c: dict[str, Any], rng: random.Random) -> Point:
    if c["graph_bs"] >= 128 and c["mem"] >= 0.80:
        return crash(
            "cuda_graph_capture",
            "graph_capture",
            "Capture cuda graph failed: CUDA error: out of memory",
        )
    v = 100 * (1 + 0.5 * _log2(c["graph_bs"] / 16) / 5) * (1 + 1.2 * (c["mem"] - 0.6))
    v *= {"fcfs": 1.0, "lpm": 1.12, "random": 0.93}[c["policy"]] * (1.05 if c["overlap"] else 1)
    return ok(v)


def _product(c: dict[str, Any], rng: random.Random) -> Point:
    load = c["mem"] * _log2(c["running"])
    if load > 6.0:
        return crash(
            "kv_pool_oom",
            "memory_pool",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        )
    v = 100 * (0.6 + c["mem"]) * (1 + 0.25 * min(_log2(c["running"]) - 3, 5))
    v *= {2048: 0.95, 4096: 1.0, 8192: 1.06, 16384: 1.02}[c["chunk"]]
    return ok(v * (1.03 if c["radix"] else 1.0))


def _catnum(c: dict[str, Any], rng: random.Random) -> Point:
    if c["attention"] == "fa3":
        return crash(
            "arch_unsupported",
            "load",
            "RuntimeError: FlashAttention v3 requires sm90 (this GPU is sm120)",
        )
    if c["attention"] == "flashinfer" and c["batch"] > 8:
        return crash(
            "cuda_graph_capture",
            "graph_capture",
            "Capture cuda graph failed: an illegal memory access was encountered",
        )
    base = {"triton": 1.0, "flashinfer": 1.5, "torch_native": 0.7}[c["attention"]]
    v = 100 * base * (1 + 0.35 * _log2(c["batch"])) / (1 + 0.05 * _log2(c["batch"]) ** 2)
    return ok(v * (1 + 0.2 * c["x"] - 0.3 * (c["x"] - 0.6) ** 2))


def _conditional(c: dict[str, Any], rng: random.Random) -> Point:
    v = 100 * (1 + 0.3 * (c["mem"] - 0.5))
    if c["spec"]:
        steps, topk = c["steps"], c["topk"]
        if steps * topk > 16:
            return crash(
                "cuda_oom",
                "graph_capture",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            )
        v *= 1 + 1.2 * (1 - math.exp(-steps / 2.5)) * (1 + 0.2 * _log2(topk)) / 1.4
    return ok(v)


def _noisy(c: dict[str, Any], rng: random.Random) -> Point:
    if c["x"] + c["y"] > 1.5:
        return crash("startup_timeout", "ready", "server not ready within 600 s")
    v = 100 * (1 + c["x"]) * (1 + 0.8 * c["y"]) * (1 + 0.1 * _log2(c["n"]) / 6)
    v *= {"a": 1.0, "b": 1.08}[c["mode"]]
    return ok(v, rng, 0.05)


def _flat(c: dict[str, Any], rng: random.Random) -> Point:
    if c["kernel"] == "experimental":
        return crash("assertion", "load", "AssertionError: experimental kernel needs --tp-size 1")
    v = 100 * (1 + 0.01 * c["x"]) * (1 + 0.002 * _log2(c["n"]))
    return ok(v, rng, 0.01)


def _edge(c: dict[str, Any], rng: random.Random) -> Point:
    if c["mem"] > 0.90:
        return crash(
            "cuda_oom",
            "load",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB",
        )
    v = 100 * (1 + 3 * (c["mem"] - 0.5)) * (1 + 0.02 * c["a"]) * (1.02 if c["b"] else 1)
    return ok(v * {"p": 1.0, "q": 1.01, "r": 0.99}[c["c"]])


def _five(c: dict[str, Any], rng: random.Random) -> Point:
    # Like the hidden check: 5 parameters, 3 crash regions, optimum about 3x the baseline.
    if c["backend"] == "trtllm" and c["fusion"]:
        return crash(
            "arch_unsupported",
            "load",
            "RuntimeError: fused allreduce is not supported by the trtllm backend",
        )
    if c["max_batch"] > 256 and c["mem"] > 0.85:
        return crash(
            "kv_pool_oom",
            "memory_pool",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        )
    if c["threads"] >= 1024 and c["backend"] != "triton":
        return crash(
            "runtime_crash",
            "benchmark",
            "RuntimeError: CUDA error: too many resources requested for launch",
        )
    v = 100 * {"triton": 1.0, "flashinfer": 1.35, "trtllm": 1.5}[c["backend"]]
    v *= 1 + 0.25 * min(_log2(c["max_batch"] / 16), 5)
    v *= 1 + 1.0 * (c["mem"] - 0.7)
    v *= 1 + 0.08 * _log2(c["threads"] / 128)
    return ok(v * (1.1 if c["fusion"] else 1.0), rng, 0.02)


def _ridge(c: dict[str, Any], rng: random.Random) -> Point:
    if _log2(c["chunk"]) + _log2(c["bs"]) > 19:
        return crash(
            "cuda_oom", "benchmark", "torch.OutOfMemoryError: CUDA out of memory during prefill"
        )
    if c["sched"] == "lof" and c["bs"] > 64:
        return crash("assertion", "benchmark", "AssertionError: lof scheduler queue overflow")
    v = 100 * (1 + 0.18 * _log2(c["chunk"] / 512)) * (1 + 0.15 * _log2(c["bs"] / 4))
    v /= 1 + 0.012 * (_log2(c["chunk"]) - 12) ** 2
    return ok(v * {"fcfs": 1.0, "lpm": 1.06, "lof": 1.1}[c["sched"]], rng, 0.02)


def _channels(c: dict[str, Any], rng: random.Random) -> Point:
    lo, hi = c["min_ch"], c["max_ch"]
    if c["proto"] == "LL128" and c["algo"] == "Tree":
        return crash("nccl_error", "load", "NCCL WARN Error : no algorithm/protocol available")
    if c["buff"] < 262144 and hi >= 16:
        return crash("nccl_error", "load", "NCCL WARN Cuda failure 'out of memory'")
    lat = (
        30 / (1 + 0.4 * _log2(lo))
        + 2.0 * _log2(hi)
        + {"LL": 0, "LL128": -2, "Simple": 6}[c["proto"]]
    )
    lat += {"Ring": 0.0, "Tree": -1.5}[c["algo"]]
    return ok(1000.0 / lat, rng, 0.02)


def _p(name: str, type_: str, **kw: Any) -> dict[str, Any]:
    flag = kw.pop("env", None)
    out: dict[str, Any] = {"name": name, "type": type_}
    out.update({"env": flag} if flag else {"flag": "--" + name.replace("_", "-")})
    out.update(kw)
    return out


LANDSCAPES: list[Landscape] = [
    Landscape(
        "box",
        "crash box graph_bs >= 128 and mem >= 0.8; optimum at its edge",
        [
            _p("graph_bs", "int", low=16, high=512, log=True),
            _p("mem", "float", low=0.5, high=0.95, step=0.05),
            _p("policy", "categorical", choices=["fcfs", "lpm", "random"]),
            _p("overlap", "bool"),
        ],
        _box,
        {"graph_bs": 32, "mem": 0.6, "policy": "fcfs", "overlap": False},
    ),
    Landscape(
        "product",
        "OOM when mem * log2(running) > 6; optimum on that curve",
        [
            _p("mem", "float", low=0.5, high=0.95, step=0.05, memory="increasing"),
            _p("running", "int", low=8, high=1024, log=True, memory="increasing"),
            _p("chunk", "categorical", choices=[2048, 4096, 8192, 16384]),
            _p("radix", "bool"),
        ],
        _product,
        {"mem": 0.6, "running": 16, "chunk": 4096, "radix": False},
    ),
    Landscape(
        "catnum",
        "fa3 always crashes; flashinfer crashes above batch 8 and is best at 8",
        [
            _p("attention", "categorical", choices=["triton", "flashinfer", "fa3", "torch_native"]),
            _p("batch", "int", low=1, high=64, log=True),
            _p("x", "float", low=0.0, high=1.0),
        ],
        _catnum,
        {"attention": "triton", "batch": 4, "x": 0.0},
    ),
    Landscape(
        "conditional",
        "speculative steps/topk only when spec is on; steps * topk > 16 crashes",
        [
            _p("spec", "bool"),
            _p("steps", "int", low=1, high=8, when="spec"),
            _p("topk", "categorical", choices=[1, 2, 4, 8], when="spec"),
            _p("mem", "float", low=0.5, high=0.9),
        ],
        _conditional,
        {"spec": False, "mem": 0.6},
    ),
    Landscape(
        "noisy",
        "5% noise; start-up timeouts when x + y > 1.5",
        [
            _p("x", "float", low=0.0, high=1.0),
            _p("y", "float", low=0.0, high=1.0),
            _p("n", "int", low=1, high=64, log=True),
            _p("mode", "categorical", choices=["a", "b"]),
        ],
        _noisy,
        {"x": 0.2, "y": 0.2, "n": 1, "mode": "a"},
    ),
    Landscape(
        "flat",
        "every configuration within 3% of the baseline; one kernel crashes",
        [
            _p("kernel", "categorical", choices=["default", "fast", "experimental"]),
            _p("x", "float", low=0.0, high=1.0),
            _p("n", "int", low=1, high=64, log=True),
        ],
        _flat,
        {"kernel": "default", "x": 0.5, "n": 8},
    ),
    Landscape(
        "edge",
        "value rises with mem up to 0.90, OOM above; mem declared memory: increasing",
        [
            _p("mem", "float", low=0.5, high=0.98, step=0.02, memory="increasing"),
            _p("a", "int", low=0, high=4),
            _p("b", "bool"),
            _p("c", "categorical", choices=["p", "q", "r"]),
        ],
        _edge,
        {"mem": 0.6, "a": 0, "b": False, "c": "p"},
    ),
    Landscape(
        "five",
        "held out: 5 parameters (flags and env), 3 crash regions, optimum ~3x baseline",
        [
            _p("backend", "categorical", choices=["triton", "flashinfer", "trtllm"]),
            _p("max_batch", "int", low=8, high=1024, log=True),
            _p("mem", "float", low=0.6, high=0.95, step=0.05),
            _p("threads", "int", low=64, high=2048, log=True, env="KERNEL_THREADS"),
            _p("fusion", "bool", env="ENABLE_FUSION"),
        ],
        _five,
        {"backend": "triton", "max_batch": 32, "mem": 0.7, "threads": 128, "fusion": False},
        held_out=True,
    ),
    Landscape(
        "ridge",
        "held out: OOM over log2(chunk) + log2(bs) > 19; lof crashes above bs 64",
        [
            _p("chunk", "int", low=512, high=32768, log=True),
            _p("bs", "int", low=4, high=1024, log=True),
            _p("sched", "categorical", choices=["fcfs", "lpm", "lof"]),
        ],
        _ridge,
        {"chunk": 2048, "bs": 16, "sched": "fcfs"},
        held_out=True,
    ),
    Landscape(
        "channels",
        "held out: NCCL-like; min_ch <= max_ch as a bound; two crash regions",
        [
            _p("max_ch", "int", low=1, high=32, log=True, env="NCCL_MAX_NCHANNELS"),
            _p(
                "min_ch", "int", low=1, high={"param": "max_ch"}, log=True, env="NCCL_MIN_NCHANNELS"
            ),
            _p("buff", "categorical", choices=[131072, 524288, 4194304], env="NCCL_BUFFSIZE"),
            _p("proto", "categorical", choices=["LL", "LL128", "Simple"], env="NCCL_PROTO"),
            _p("algo", "categorical", choices=["Ring", "Tree"], env="NCCL_ALGO"),
        ],
        _channels,
        {"max_ch": 8, "min_ch": 2, "buff": 4194304, "proto": "Simple", "algo": "Ring"},
        held_out=True,
    ),
]


def by_name(name: str) -> Landscape:
    for land in LANDSCAPES:
        if land.name == name:
            return land
    raise KeyError(name)
