"""Landscape families that differ in kind from those the search's defaults were chosen on.

The hand-made landscapes, the generated ones (``generated.py``) and the black boxes have four
to six settings whose effects mostly multiply, one at a time. A server the project has never
seen differs in kind: a choice whose best value depends on a flag, numbers that exist only
when a feature is on and are best inside their range, settings that do nothing, a memory
limit that several numbers fill together, a crash that shows only under load (after start-up,
costing the whole launch), and seven to twelve settings. Each family below draws instances of
one such shape from ``random.Random``: ``family(name, i)`` is the same landscape every time.

Which families tune the defaults and which are held out is fixed in ``MANIFEST`` (and in
docs/benchmarks.md) before any default is tuned; the held-out ones are run only to report.

Every number is discrete (an int, or a float with a step), so the optimum is found exactly:
the grid of every relevant setting (do-nothing settings fixed) at a few levels per number,
then each number, and each pair of numbers, searched over its values from the best points
(``_optimum``; ``tests`` of the bench check it against random draws).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.search.landscapes import Landscape, Point, crash, ok

# Chosen before any default was tuned (commit "bench: search families and their manifest").
MANIFEST = {
    "tuning": ["interact", "condint", "coupled", "mixed7"],
    "held_out": [
        "mixed11",
        "loadcrash",
        "plateau",
        "hidden2b",
        "ridge11",
        "paired10",
        "tangle9",
        "curve10",
        "kvcliff",
        "tiles",
        "layout",
        "graphcap",
    ],
}
# ``ridge11`` (issue 52, session r3), ``paired10`` (r5), ``tangle9`` (r6) and ``curve10`` (r7)
# were added to the held-out set when they were written, before any strategy had run on them.
# ``kvcliff`` and ``tiles`` were written blind on 2026-12-06 (session 8), by a helper that had
# not read the search's code, before any strategy ran on them. ``layout`` and ``graphcap`` were
# written blind on 2026-12-07 (session 15), before any strategy ran on them.
INSTANCES = 4  # instances per family in the default runs (more with --instances)

Config = dict[str, Any]
Crash = tuple[str, str, str]  # cause, phase, log line

OOM = ("kv_pool_oom", "memory_pool", "RuntimeError: Not enough memory. Please increase")
GRAPH = (
    "cuda_graph_capture",
    "graph_capture",
    "Capture cuda graph failed: CUDA error: an illegal memory access was encountered",
)
CUDA_OOM = ("cuda_oom", "graph_capture", "torch.OutOfMemoryError: CUDA out of memory.")
LOAD = ("runtime_crash", "benchmark", "RuntimeError: CUDA error: too many resources requested")
ASSERT = ("assertion", "load", "AssertionError: unsupported combination of kernels")
# a Triton kernel that asks for more shared memory than an SM has: the server dies loading it
SMEM = (
    "runtime_crash",
    "load",
    "triton.runtime.errors.OutOfResources: out of resource: shared memory",
)


@dataclass
class Shape:
    """One instance: its settings, baseline, noise-free value, crash regions and noise."""

    name: str
    params: list[dict[str, Any]]
    baseline: Config
    value: Callable[[Config], float]
    crashes: list[tuple[Callable[[Config], bool], Crash]]
    noise: float
    inert: set[str] = field(default_factory=set)  # settings that do nothing
    # a condition per conditional setting: active(config)
    active: dict[str, Callable[[Config], bool]] = field(default_factory=dict)


def p_int(
    name: str,
    low: int,
    high: int,
    *,
    log: bool = False,
    step: int | None = None,
    env: bool = False,
    when: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": "int", "low": low, "high": high}
    if log:
        out["log"] = True
    if step:
        out["step"] = step
    return _where(out, env, when)


def p_float(
    name: str, low: float, high: float, step: float, *, env: bool = False, when: str | None = None
) -> dict[str, Any]:
    out = {"name": name, "type": "float", "low": low, "high": high, "step": step}
    return _where(out, env, when)


def p_cat(
    name: str, choices: list[Any], *, env: bool = False, when: str | None = None
) -> dict[str, Any]:
    return _where({"name": name, "type": "categorical", "choices": choices}, env, when)


def p_bool(name: str, *, env: bool = False, when: str | None = None) -> dict[str, Any]:
    return _where({"name": name, "type": "bool"}, env, when)


def _where(p: dict[str, Any], env: bool, when: str | None) -> dict[str, Any]:
    if env:
        p["env"] = f"FAM_{p['name'].upper()}"
    else:
        p["flag"] = "--" + p["name"].replace("_", "-")
    if when:
        p["when"] = when
    return p


def pos(p: dict[str, Any], x: float) -> float:
    """``x`` on [0, 1] over the parameter's range, on its scale."""
    low, high = float(p["low"]), float(p["high"])
    if p.get("log"):
        low, high, x = math.log(low), math.log(high), math.log(x)
    return (float(x) - low) / (high - low)


def saturate(a: float, knee: float) -> Callable[[float], float]:
    """A gain rising linearly to ``1 + a`` at ``knee`` of the range, flat after."""
    return lambda u: 1.0 + a * min(u, knee) / knee


def peak(a: float, mu: float, w: float) -> Callable[[float], float]:
    """A gain of ``1 + a`` at ``mu`` of the range, falling off with width ``w``."""
    return lambda u: 1.0 + a * math.exp(-0.5 * ((u - mu) / w) ** 2)


def _noise(rng: random.Random) -> float:
    return rng.choice((0.005, 0.01, 0.01, 0.02))


# -- the tuning families -------------------------------------------------------------------


def interact(rng: random.Random) -> Shape:
    """A kernel whose best choice depends on a flag, two flags that pay only together, a
    batch size that saturates (one kernel crashes above an edge), memory up to an OOM edge,
    and a setting that does nothing."""
    kernels = ["k0", "k1", "k2"]
    levels = {"k0": 1.0, "k1": rng.uniform(0.95, 1.3), "k2": rng.uniform(0.95, 1.3)}
    partner = rng.choice(["k1", "k2"])
    gain, loss = rng.uniform(0.15, 0.35), rng.uniform(0.04, 0.12)
    alone, both = rng.uniform(0.03, 0.08), rng.uniform(0.1, 0.2)
    params = [
        p_cat("kernel", kernels),
        p_bool("fused", env=True),
        p_bool("overlap"),
        p_bool("graphs"),
        p_int("batch", 4, 512, log=True),
        p_float("mem", 0.5, 0.95, 0.01),
        p_int("noop", 1, 64, log=True, env=True),
    ]
    pb = params[4]
    bat = saturate(rng.uniform(0.3, 0.7), rng.uniform(0.5, 0.9))
    mem_gain = rng.uniform(0.4, 0.9)
    edge = rng.choice((0.86, 0.88, 0.9, 0.92))
    bad = rng.choice(kernels[1:])
    cut = rng.uniform(0.45, 0.8)

    def value(c: Config) -> float:
        v = 100.0 * levels[c["kernel"]]
        if c["fused"]:
            v *= 1 + gain if c["kernel"] == partner else 1 - loss
        if c["overlap"] and c["graphs"]:
            v *= 1 + both
        elif c["overlap"] or c["graphs"]:
            v *= 1 - alone
        v *= bat(pos(pb, c["batch"]))
        return v * (1 + mem_gain * (c["mem"] - 0.7))

    crashes = [
        (lambda c: c["kernel"] == bad and pos(pb, c["batch"]) > cut, GRAPH),
        (lambda c: c["mem"] > edge + 1e-9, OOM),
    ]
    base = {
        "kernel": "k0",
        "fused": False,
        "overlap": False,
        "graphs": False,
        "batch": 16,
        "mem": 0.7,
        "noop": 8,
    }
    return Shape("", params, base, value, crashes, _noise(rng), inert={"noop"})


def condint(rng: random.Random) -> Shape:
    """Speculative decoding: two numbers that exist only when it is on, each best inside its
    range, crashing when their product is large; a chunk size best inside its range; memory
    whose edge the feature lowers; a scheduler choice; two settings that do nothing."""
    s_star, t_star = rng.randint(2, 5), rng.randint(2, 4)
    amp, cost = rng.uniform(0.35, 0.8), rng.uniform(0.05, 0.2)
    limit = rng.choice((10, 12, 14, 16))
    params = [
        p_bool("spec"),
        p_int("steps", 1, 8, when="spec"),
        p_int("topk", 1, 8, when="spec"),
        p_int("chunk", 256, 16384, log=True),
        p_float("mem", 0.5, 0.95, 0.01),
        p_cat("sched", ["fcfs", "lpm", "dfs"]),
        p_bool("noop", env=True),
        p_int("threads", 64, 1024, step=64, env=True),
    ]
    pc = params[3]
    chunk = peak(rng.uniform(0.1, 0.3), rng.uniform(0.3, 0.7), rng.uniform(0.12, 0.25))
    sched = {"fcfs": 1.0, "lpm": rng.uniform(0.95, 1.12), "dfs": rng.uniform(0.9, 1.1)}
    mem_gain = rng.uniform(0.3, 0.8)
    edge = rng.choice((0.88, 0.9, 0.92))

    def value(c: Config) -> float:
        v = 100.0 * chunk(pos(pc, c["chunk"])) * sched[c["sched"]]
        v *= 1 + mem_gain * (c["mem"] - 0.7)
        if c["spec"]:
            s = math.exp(-0.5 * ((c["steps"] - s_star) / 1.5) ** 2)
            t = math.exp(-0.5 * ((c["topk"] - t_star) / 1.2) ** 2)
            v *= (1 - cost) * (1 + amp * s * t)
        return v

    crashes = [
        (lambda c: bool(c["spec"]) and c["steps"] * c["topk"] > limit, CUDA_OOM),
        (lambda c: c["mem"] > edge - (0.04 if c["spec"] else 0.0) + 1e-9, OOM),
    ]
    base = {
        "spec": False,
        "chunk": 2048,
        "mem": 0.7,
        "sched": "fcfs",
        "noop": False,
        "threads": 256,
    }
    active = {"steps": lambda c: bool(c["spec"]), "topk": lambda c: bool(c["spec"])}
    return Shape("", params, base, value, crashes, _noise(rng), {"noop", "threads"}, active)


def coupled(rng: random.Random) -> Shape:
    """One memory pool that memory share, batch size and context length fill together (a
    crash past their weighted sum), a KV dtype that shrinks what batch and context take, a
    thread count best inside its range, and two flags that do nothing."""
    params = [
        p_float("mem", 0.5, 0.95, 0.01),
        p_int("batch", 8, 1024, log=True),
        p_int("ctx", 1024, 32768, log=True),
        p_cat("dtype", ["auto", "fp8", "bf16"]),
        p_int("threads", 1, 16, env=True),
        p_bool("noop1"),
        p_bool("noop2", env=True),
        p_cat("policy", ["a", "b"]),
    ]
    pm, pb, px, pt = params[0], params[1], params[2], params[4]
    wm, wb, wx = rng.uniform(0.6, 1.0), rng.uniform(0.6, 1.0), rng.uniform(0.3, 0.6)
    limit = rng.uniform(1.0, 1.35)
    shrink = rng.uniform(0.5, 0.75)
    fp8 = rng.uniform(0.0, 0.08)
    gm, gb, gx = rng.uniform(0.3, 0.7), rng.uniform(0.4, 0.9), rng.uniform(0.05, 0.2)
    thr = peak(rng.uniform(0.05, 0.15), rng.uniform(0.3, 0.7), 0.2)
    policy = {"a": 1.0, "b": rng.uniform(0.97, 1.05)}

    def load(c: Config) -> float:
        k = shrink if c["dtype"] == "fp8" else 1.0
        return wm * pos(pm, c["mem"]) + k * (wb * pos(pb, c["batch"]) + wx * pos(px, c["ctx"]))

    def value(c: Config) -> float:
        v = 100.0 * (1 + gm * pos(pm, c["mem"])) * (1 + gb * pos(pb, c["batch"]))
        v *= (1 + gx * pos(px, c["ctx"])) * thr(pos(pt, c["threads"])) * policy[c["policy"]]
        return v * {"auto": 1.0, "fp8": 1 - fp8, "bf16": 0.97}[c["dtype"]]

    base = {
        "mem": 0.6,
        "batch": 32,
        "ctx": 4096,
        "dtype": "auto",
        "threads": 4,
        "noop1": False,
        "noop2": False,
        "policy": "a",
    }
    while load(base) >= limit:  # the baseline must serve
        limit += 0.05
    crashes = [(lambda c: load(c) > limit, OOM)]
    return Shape("", params, base, value, crashes, _noise(rng), {"noop1", "noop2"})


def mixed7(rng: random.Random) -> Shape:
    """Seven settings: speculation with a step count best inside its range, a flag that does
    nothing, two flags where one pays only with the other, memory share and batch size that
    fill one pool, and a crash only under load (one flag with a large batch)."""
    s_star = rng.randint(2, 4)
    amp, cost = rng.uniform(0.3, 0.6), rng.uniform(0.05, 0.15)
    a_alone, b_alone, both = rng.uniform(0.03, 0.1), rng.uniform(0.0, 0.06), rng.uniform(0.15, 0.3)
    params = [
        p_bool("spec"),
        p_int("steps", 1, 6, when="spec"),
        p_bool("noop", env=True),
        p_bool("flag_a"),
        p_bool("flag_b", env=True),
        p_float("mem", 0.6, 0.95, 0.01),
        p_int("batch", 8, 1024, log=True),
    ]
    pm, pb = params[5], params[6]
    gm, bat = rng.uniform(0.4, 0.9), saturate(rng.uniform(0.4, 0.8), rng.uniform(0.6, 0.95))
    limit = rng.uniform(1.15, 1.45)
    load_cut = rng.uniform(0.45, 0.75)

    def value(c: Config) -> float:
        v = 100.0 * (1 + gm * pos(pm, c["mem"])) * bat(pos(pb, c["batch"]))
        if c["flag_a"] and c["flag_b"]:
            v *= 1 + both
        elif c["flag_a"]:
            v *= 1 - a_alone
        elif c["flag_b"]:
            v *= 1 + b_alone
        if c["spec"]:
            v *= (1 - cost) * (1 + amp * math.exp(-0.5 * ((c["steps"] - s_star) / 1.2) ** 2))
        return v

    crashes = [
        (lambda c: pos(pm, c["mem"]) + pos(pb, c["batch"]) > limit, OOM),
        (lambda c: bool(c["flag_b"]) and pos(pb, c["batch"]) > load_cut, LOAD),
    ]
    base = {"spec": False, "noop": False, "flag_a": False, "flag_b": False, "mem": 0.7, "batch": 16}
    return Shape(
        "",
        params,
        base,
        value,
        crashes,
        _noise(rng),
        {"noop"},
        {"steps": lambda c: bool(c["spec"])},
    )


# -- the held-out families -----------------------------------------------------------------


def mixed11(rng: random.Random) -> Shape:
    """Eleven settings: a backend whose CUDA graphs help only some backends, fusion that pays
    more at larger batches, speculation with a step count inside its range, memory and batch
    in one pool, a chunk size best inside its range, and settings that do little or nothing;
    crashes: a backend past a batch edge, the pool, fusion with speculation, long speculation
    under load."""
    backends = ["b0", "b1", "b2", "b3"]
    lv = {b: (1.0 if b == "b0" else rng.uniform(0.9, 1.35)) for b in backends}
    helped = set(rng.sample(backends, 2))
    g_gain, g_loss = rng.uniform(0.1, 0.25), rng.uniform(0.02, 0.08)
    f_gain = rng.uniform(0.1, 0.3)
    s_star, amp, cost = rng.randint(2, 5), rng.uniform(0.2, 0.5), rng.uniform(0.05, 0.12)
    params = [
        p_cat("backend", backends),
        p_bool("graphs"),
        p_bool("fusion", env=True),
        p_bool("spec"),
        p_int("steps", 1, 8, when="spec"),
        p_float("mem", 0.5, 0.95, 0.01),
        p_int("batch", 8, 1024, log=True),
        p_int("chunk", 512, 32768, log=True),
        p_int("nthreads", 64, 512, step=32, env=True),
        p_bool("noop", env=True),
        p_cat("policy", ["fcfs", "lpm", "random"]),
    ]
    pm, pb, pc = params[5], params[6], params[7]
    gm, bat = rng.uniform(0.3, 0.7), saturate(rng.uniform(0.3, 0.7), rng.uniform(0.5, 0.9))
    chunk = peak(rng.uniform(0.08, 0.2), rng.uniform(0.3, 0.7), rng.uniform(0.15, 0.25))
    policy = {"fcfs": 1.0, "lpm": rng.uniform(0.98, 1.05), "random": rng.uniform(0.95, 1.0)}
    bad = rng.choice(backends[1:])
    cut = rng.uniform(0.4, 0.75)
    limit = rng.uniform(1.2, 1.5)
    s_crash = rng.randint(max(s_star + 1, 5), 8)
    load_cut = rng.uniform(0.4, 0.7)

    def value(c: Config) -> float:
        v = 100.0 * lv[c["backend"]] * policy[c["policy"]]
        if c["graphs"]:
            v *= 1 + g_gain if c["backend"] in helped else 1 - g_loss
        ub = pos(pb, c["batch"])
        if c["fusion"]:
            v *= 1 + f_gain * (ub - 0.3)
        v *= (1 + gm * pos(pm, c["mem"])) * bat(ub) * chunk(pos(pc, c["chunk"]))
        if c["spec"]:
            v *= (1 - cost) * (1 + amp * math.exp(-0.5 * ((c["steps"] - s_star) / 1.5) ** 2))
        return v

    crashes = [
        (lambda c: c["backend"] == bad and pos(pb, c["batch"]) > cut, GRAPH),
        (lambda c: pos(pm, c["mem"]) + pos(pb, c["batch"]) > limit, OOM),
        (lambda c: bool(c["fusion"]) and bool(c["spec"]), ASSERT),
        (
            lambda c: bool(c["spec"]) and c["steps"] >= s_crash and pos(pb, c["batch"]) > load_cut,
            LOAD,
        ),
    ]
    base = {
        "backend": "b0",
        "graphs": False,
        "fusion": False,
        "spec": False,
        "mem": 0.6,
        "batch": 32,
        "chunk": 4096,
        "nthreads": 256,
        "noop": False,
        "policy": "fcfs",
    }
    return Shape(
        "",
        params,
        base,
        value,
        crashes,
        _noise(rng),
        {"noop", "nthreads"},
        {"steps": lambda c: bool(c["spec"])},
    )


def loadcrash(rng: random.Random) -> Shape:
    """A backend whose best batch size differs (one saturates early, another scales on but
    crashes under load past an edge), CUDA graphs that pay but take memory (a crash with
    memory past a lower edge), a prefill size best inside its range, and two settings that
    do nothing."""
    params = [
        p_cat("backend", ["x", "y", "z"]),
        p_int("batch", 4, 1024, log=True),
        p_bool("cuda_graph"),
        p_float("mem", 0.5, 0.95, 0.05),
        p_int("prefill", 1024, 65536, log=True),
        p_int("workers", 1, 8, env=True),
        p_cat("log_level", ["info", "warning", "error"], env=True),
        p_bool("stream"),
    ]
    pb, pm, pp = params[1], params[3], params[4]
    knees = {"x": rng.uniform(0.2, 0.4), "y": rng.uniform(0.7, 1.0), "z": rng.uniform(0.4, 0.6)}
    amps = {"x": rng.uniform(0.3, 0.5), "y": rng.uniform(0.6, 1.0), "z": rng.uniform(0.4, 0.7)}
    y_cut = rng.uniform(0.55, 0.8)
    g_gain, g_edge = rng.uniform(0.08, 0.2), rng.choice((0.8, 0.85))
    mem_gain = rng.uniform(0.3, 0.7)
    pre = peak(rng.uniform(0.1, 0.25), rng.uniform(0.3, 0.7), rng.uniform(0.15, 0.3))
    stream = rng.uniform(0.98, 1.04)

    def value(c: Config) -> float:
        b = c["backend"]
        v = 100.0 * saturate(amps[b], knees[b])(pos(pb, c["batch"]))
        v *= (1 + g_gain if c["cuda_graph"] else 1.0) * (1 + mem_gain * pos(pm, c["mem"]))
        return v * pre(pos(pp, c["prefill"])) * (stream if c["stream"] else 1.0)

    crashes = [
        (lambda c: c["backend"] == "y" and pos(pb, c["batch"]) > y_cut, LOAD),
        (lambda c: bool(c["cuda_graph"]) and c["mem"] > g_edge + 1e-9, CUDA_OOM),
        (lambda c: c["mem"] > 0.9 + 1e-9, OOM),
    ]
    base = {
        "backend": "x",
        "batch": 16,
        "cuda_graph": False,
        "mem": 0.7,
        "prefill": 4096,
        "workers": 2,
        "log_level": "info",
        "stream": False,
    }
    return Shape("", params, base, value, crashes, _noise(rng), {"workers", "log_level"})


def plateau(rng: random.Random) -> Shape:
    """Twelve settings, four that matter: two numbers with narrow optima inside their ranges
    (log and linear), a four-way choice and a flag; one choice crashes with a large value;
    eight settings do nothing."""
    params = [
        p_int("buffer", 64, 65536, log=True, env=True),
        p_float("ratio", 0.0, 1.0, 0.02),
        p_cat("algo", ["a0", "a1", "a2", "a3"]),
        p_bool("pin"),
        p_int("n1", 1, 32),
        p_float("f1", 0.0, 1.0, 0.05, env=True),
        p_cat("c1", ["p", "q", "r"]),
        p_bool("b1"),
        p_bool("b2", env=True),
        p_int("n2", 16, 4096, log=True),
        p_cat("c2", ["u", "v"], env=True),
        p_int("n3", 0, 10),
    ]
    pbuf, prat = params[0], params[1]
    buf = peak(rng.uniform(0.3, 0.6), rng.uniform(0.25, 0.75), rng.uniform(0.08, 0.15))
    rat = peak(rng.uniform(0.2, 0.5), rng.uniform(0.2, 0.8), rng.uniform(0.08, 0.15))
    algo = {"a0": 1.0, **{a: rng.uniform(0.85, 1.25) for a in ("a1", "a2", "a3")}}
    pin = rng.uniform(1.02, 1.1)
    bad = max(("a1", "a2", "a3"), key=lambda a: algo[a])
    cut = rng.uniform(0.5, 0.8)

    def value(c: Config) -> float:
        v = 100.0 * buf(pos(pbuf, c["buffer"])) * rat(pos(prat, c["ratio"]))
        return v * algo[c["algo"]] * (pin if c["pin"] else 1.0)

    crashes = [(lambda c: c["algo"] == bad and pos(pbuf, c["buffer"]) > cut, CUDA_OOM)]
    base = {
        "buffer": 1024,
        "ratio": 0.5,
        "algo": "a0",
        "pin": False,
        "n1": 4,
        "f1": 0.5,
        "c1": "p",
        "b1": False,
        "b2": False,
        "n2": 256,
        "c2": "u",
        "n3": 0,
    }
    while any(hit(base) for hit, _ in crashes):
        base["buffer"] //= 2
    inert = {"n1", "f1", "c1", "b1", "b2", "n2", "c2", "n3"}
    return Shape("", params, base, value, crashes, _noise(rng), inert)


def hidden2b(rng: random.Random) -> Shape:
    """Another reading of the issue's second black box: a speculation choice (none or two
    algorithms) with a step count that exists only with an algorithm and is best inside its
    range, a flag that does nothing, two flags of which the second pays only with the first
    (and costs alone), memory and batch in one pool, a crash under load with long
    speculation at a large batch, and a scheduler choice."""
    s_star = {"eagle": rng.randint(2, 5), "ngram": rng.randint(3, 7)}
    amp = {"eagle": rng.uniform(0.3, 0.6), "ngram": rng.uniform(0.15, 0.4)}
    x1, x2_alone, both = rng.uniform(0.03, 0.08), rng.uniform(0.03, 0.08), rng.uniform(0.12, 0.25)
    params = [
        p_cat("algo", ["none", "eagle", "ngram"]),
        p_int("steps", 1, 8, when="algo != 'none'"),
        p_bool("noop"),
        p_bool("x1", env=True),
        p_bool("x2"),
        p_float("mem", 0.6, 0.95, 0.01),
        p_int("batch", 8, 512, log=True),
        p_cat("sched", ["fcfs", "lpm"]),
    ]
    pm, pb = params[5], params[6]
    gm, gb = rng.uniform(0.4, 0.8), rng.uniform(0.4, 0.8)
    limit = rng.uniform(1.2, 1.5)
    s_crash, load_cut = rng.randint(5, 8), rng.uniform(0.4, 0.7)
    sched = rng.uniform(0.97, 1.06)

    def value(c: Config) -> float:
        v = 100.0 * (1 + gm * pos(pm, c["mem"])) * (1 + gb * min(pos(pb, c["batch"]), 0.8))
        if c["x1"] and c["x2"]:
            v *= 1 + both
        elif c["x1"]:
            v *= 1 + x1
        elif c["x2"]:
            v *= 1 - x2_alone
        a = c["algo"]
        if a != "none":
            v *= 0.92 * (1 + amp[a] * math.exp(-0.5 * ((c["steps"] - s_star[a]) / 1.5) ** 2))
        return v * (sched if c["sched"] == "lpm" else 1.0)

    crashes = [
        (lambda c: 1.2 * pos(pm, c["mem"]) + pos(pb, c["batch"]) > limit, OOM),
        (
            lambda c: (
                c["algo"] != "none" and c["steps"] >= s_crash and pos(pb, c["batch"]) > load_cut
            ),
            LOAD,
        ),
    ]
    base = {
        "algo": "none",
        "noop": False,
        "x1": False,
        "x2": False,
        "mem": 0.7,
        "batch": 16,
        "sched": "fcfs",
    }
    while any(hit(base) for hit, _ in crashes):
        limit += 0.05
    return Shape(
        "",
        params,
        base,
        value,
        crashes,
        _noise(rng),
        {"noop"},
        {"steps": lambda c: c["algo"] != "none"},
    )


def ridge11(rng: random.Random) -> Shape:
    """Eleven settings whose numbers act together: a mode that moves where a tile size is
    best, a queue depth best at a fixed ratio to the worker count (a ridge along two numbers,
    higher along it with more workers) that crashes under load past a larger ratio,
    prefetching with a depth that exists only when it is on and is best inside its range,
    compression that pays with one mode only and crashes with large tiles, a ratio best at
    its low end, and three settings that do nothing."""
    modes = ["m0", "m1", "m2"]
    lv = {"m0": 1.0, "m1": rng.uniform(0.95, 1.2), "m2": rng.uniform(0.95, 1.2)}
    mu = {m: rng.uniform(0.2, 0.8) for m in modes}
    t_amp, r_amp = rng.uniform(0.3, 0.5), rng.uniform(0.3, 0.6)
    gap, over = rng.uniform(0.0, 0.3), rng.uniform(0.25, 0.4)
    d_star, d_amp = rng.randint(3, 10), rng.uniform(0.1, 0.25)
    partner, c_gain = rng.choice(modes[1:]), rng.uniform(0.08, 0.15)
    t_cut, r_gain = rng.uniform(0.6, 0.85), rng.uniform(0.05, 0.15)
    params = [
        p_cat("mode", modes),
        p_int("tile", 16, 512, log=True),
        p_int("workers", 1, 32, log=True, env=True),
        p_int("queue", 1, 256, log=True),
        p_bool("prefetch"),
        p_int("depth", 1, 16, when="prefetch"),
        p_bool("compress", env=True),
        p_float("ratio", 0.0, 1.0, 0.05),
        p_int("seed_k", 0, 100, env=True),
        p_bool("verbose"),
        p_cat("label", ["a", "b", "c"], env=True),
    ]
    pt, pw, pq = params[1], params[2], params[3]

    def value(c: Config) -> float:
        ut, uw, uq = pos(pt, c["tile"]), pos(pw, c["workers"]), pos(pq, c["queue"])
        v = (
            100.0
            * lv[c["mode"]]
            * (1 + t_amp * math.exp(-0.5 * ((ut - mu[c["mode"]]) / 0.15) ** 2))
        )
        v *= 1 + r_amp * (0.4 + 0.6 * uw) * math.exp(-0.5 * ((uq - uw - gap) / 0.12) ** 2)
        if c["prefetch"]:
            v *= 0.95 * (1 + d_amp * math.exp(-0.5 * ((c["depth"] - d_star) / 2.0) ** 2))
        if c["compress"]:
            v *= 1 + c_gain if c["mode"] == partner else 0.95
        return v * (1 + r_gain * (0.5 - c["ratio"]))

    crashes = [
        (lambda c: pos(pq, c["queue"]) - pos(pw, c["workers"]) > gap + over, LOAD),
        (lambda c: bool(c["compress"]) and pos(pt, c["tile"]) > t_cut, CUDA_OOM),
    ]
    base = {
        "mode": "m0",
        "tile": 64,
        "workers": 4,
        "queue": 16,
        "prefetch": False,
        "compress": False,
        "ratio": 0.5,
        "seed_k": 0,
        "verbose": False,
        "label": "a",
    }
    while any(hit(base) for hit, _ in crashes):
        base["queue"] //= 2
    return Shape(
        "",
        params,
        base,
        value,
        crashes,
        _noise(rng),
        {"seed_k", "verbose", "label"},
        {"depth": lambda c: bool(c["prefetch"])},
    )


def paired10(rng: random.Random) -> Shape:
    """Ten settings of a server whose gains come in pairs: an FP8 KV cache and an FP8
    attention kernel that each cost a little alone and pay together (the kernel fails to load
    with one backend), output overlap and an async detokenizer that pay only together (the
    async path crashes under load past a batch edge), a scheduler policy that costs at small
    batches and pays at large ones, memory and batch filling one pool that the FP8 cache
    shrinks, a backend choice, and two settings that do nothing."""
    backends = ["triton", "flashinfer", "fa3"]
    lv = {"triton": 1.0, "flashinfer": rng.uniform(0.95, 1.2), "fa3": rng.uniform(0.95, 1.2)}
    bad = rng.choice(backends[1:])
    a_kv, a_attn, g_fp8 = rng.uniform(0.02, 0.06), rng.uniform(0.02, 0.06), rng.uniform(0.1, 0.25)
    o_alone, d_alone, g_ovl = (
        rng.uniform(-0.01, 0.01),
        rng.uniform(0.0, 0.03),
        rng.uniform(0.08, 0.18),
    )
    p_amp, p_mid = rng.uniform(0.1, 0.3), rng.uniform(0.45, 0.7)
    params = [
        p_cat("backend", backends),
        p_bool("fp8_kv", env=True),
        p_bool("fp8_attn"),
        p_bool("overlap"),
        p_bool("async_detok", env=True),
        p_cat("policy", ["fcfs", "lpm", "priority"]),
        p_int("batch", 8, 512, log=True),
        p_float("mem", 0.6, 0.95, 0.01),
        p_int("tok_threads", 1, 16, env=True),
        p_cat("log_level", ["info", "warning", "debug"], env=True),
    ]
    pb, pm = params[6], params[7]
    gm, bat = rng.uniform(0.3, 0.7), saturate(rng.uniform(0.4, 0.8), rng.uniform(0.6, 0.95))
    limit, shrink = rng.uniform(1.1, 1.4), rng.uniform(0.55, 0.75)
    load_cut = rng.uniform(0.55, 0.8)
    prio = rng.uniform(0.96, 1.01)

    def value(c: Config) -> float:
        ub = pos(pb, c["batch"])
        v = 100.0 * lv[c["backend"]] * (1 + gm * pos(pm, c["mem"])) * bat(ub)
        if c["fp8_kv"] and c["fp8_attn"]:
            v *= 1 + g_fp8
        elif c["fp8_kv"]:
            v *= 1 - a_kv
        elif c["fp8_attn"]:
            v *= 1 - a_attn
        if c["overlap"] and c["async_detok"]:
            v *= 1 + g_ovl
        elif c["overlap"]:
            v *= 1 + o_alone
        elif c["async_detok"]:
            v *= 1 - d_alone
        if c["policy"] == "lpm":
            v *= 1 + p_amp * (ub - p_mid)
        elif c["policy"] == "priority":
            v *= prio
        return v

    def pool(c: Config) -> float:
        return pos(pm, c["mem"]) + (shrink if c["fp8_kv"] else 1.0) * pos(pb, c["batch"])

    crashes = [
        (lambda c: pool(c) > limit, OOM),
        (lambda c: bool(c["fp8_attn"]) and c["backend"] == bad, ASSERT),
        (lambda c: bool(c["async_detok"]) and pos(pb, c["batch"]) > load_cut, LOAD),
    ]
    base = {
        "backend": "triton",
        "fp8_kv": False,
        "fp8_attn": False,
        "overlap": False,
        "async_detok": False,
        "policy": "fcfs",
        "batch": 16,
        "mem": 0.7,
        "tok_threads": 4,
        "log_level": "info",
    }
    while any(hit(base) for hit, _ in crashes):
        limit += 0.05
    return Shape("", params, base, value, crashes, _noise(rng), {"tok_threads", "log_level"})


def tangle9(rng: random.Random) -> Shape:
    """Nine settings whose choices meet through numbers: an attention kernel and a scheduler
    whose best pair depends on the prefill chunk (each pair peaks at its own chunk size),
    CUDA graphs and overlap scheduling that pay only together (overlap alone stalls and loses
    8-15%), a quantisation choice with a group size that exists only when it is on and is
    best inside its range, a batch size that saturates, a crash under load where chunk and
    batch together fill the activation memory (earlier with 4-bit weights), and a setting
    that does nothing."""
    kernels, scheds = ["a0", "a1", "a2"], ["s0", "s1", "s2"]
    amp = {(a, s): rng.uniform(0.0, 0.35) for a in kernels for s in scheds}
    amp["a0", "s0"] = rng.uniform(0.1, 0.2)
    mu = {(a, s): rng.uniform(0.1, 0.9) for a in kernels for s in scheds}
    lv = {"a0": 1.0, "a1": rng.uniform(0.92, 1.1), "a2": rng.uniform(0.92, 1.1)}
    o_alone, g_alone, both = (
        rng.uniform(0.08, 0.15),
        rng.uniform(0.0, 0.03),
        rng.uniform(0.12, 0.25),
    )
    q_cost = {"w8": rng.uniform(0.03, 0.08), "w4": rng.uniform(0.05, 0.1)}
    q_amp = {"w8": rng.uniform(0.1, 0.25), "w4": rng.uniform(0.15, 0.35)}
    q_mu = rng.uniform(0.2, 0.8)
    params = [
        p_cat("attn", kernels),
        p_cat("sched", scheds),
        p_int("chunk", 256, 16384, log=True),
        p_bool("graphs"),
        p_bool("overlap", env=True),
        p_cat("quant", ["none", "w8", "w4"]),
        p_int("group", 16, 512, log=True, when="quant != 'none'"),
        p_int("batch", 8, 512, log=True),
        p_int("log_interval", 1, 100, env=True),
    ]
    pc, pg, pb = params[2], params[6], params[7]
    bat = saturate(rng.uniform(0.3, 0.6), rng.uniform(0.5, 0.9))
    limit, w4_less = rng.uniform(1.15, 1.45), rng.uniform(0.1, 0.2)

    def value(c: Config) -> float:
        pair = (c["attn"], c["sched"])
        v = 100.0 * lv[c["attn"]] * bat(pos(pb, c["batch"]))
        v *= 1 + amp[pair] * math.exp(-0.5 * ((pos(pc, c["chunk"]) - mu[pair]) / 0.15) ** 2)
        if c["graphs"] and c["overlap"]:
            v *= 1 + both
        elif c["overlap"]:
            v *= 1 - o_alone
        elif c["graphs"]:
            v *= 1 + g_alone
        q = c["quant"]
        if q != "none":
            u = pos(pg, c["group"])
            v *= (1 - q_cost[q]) * (1 + q_amp[q] * math.exp(-0.5 * ((u - q_mu) / 0.15) ** 2))
        return v

    def load(c: Config) -> float:
        return pos(pc, c["chunk"]) + pos(pb, c["batch"]) + (w4_less if c["quant"] == "w4" else 0)

    crashes = [(lambda c: load(c) > limit, LOAD)]
    base = {
        "attn": "a0",
        "sched": "s0",
        "chunk": 2048,
        "graphs": False,
        "overlap": False,
        "quant": "none",
        "batch": 32,
        "log_interval": 10,
    }
    while any(hit(base) for hit, _ in crashes):
        limit += 0.05
    return Shape(
        "",
        params,
        base,
        value,
        crashes,
        _noise(rng),
        {"log_interval"},
        {"group": lambda c: c["quant"] != "none"},
    )


def curve10(rng: random.Random) -> Shape:
    """Ten settings whose numbers lie on a curve and whose choice decides which number
    matters: the best batch size and the best prefetch window each follow a curve in the
    worker count (the batch rising with its square, the window peaking in the middle: a
    curved ridge across three numbers, higher along it with more workers), a crash under
    load where workers and batch together pass an edge (the ridge runs into it), a policy
    under which a split ratio has an interior optimum, another under which a cache size
    saturates (and fills memory with the batch: out of memory past an edge), a third a level
    apart, pinning that costs with few workers and pays with many, compilation that pays a
    little and crashes with a large window, and two settings that do nothing."""
    policies = ["p0", "p1", "p2"]
    lv = {"p0": 1.0, "p1": rng.uniform(0.9, 1.1), "p2": rng.uniform(0.95, 1.15)}
    b0, b1, bk = rng.uniform(0.1, 0.3), rng.uniform(0.3, 0.55), rng.uniform(1.6, 2.6)
    w0, w1 = rng.uniform(0.1, 0.3), rng.uniform(0.3, 0.6)
    r_amp = rng.uniform(0.35, 0.7)
    s_mu, s_amp = rng.uniform(0.15, 0.85), rng.uniform(0.15, 0.35)
    c_amp, c_knee = rng.uniform(0.15, 0.35), rng.uniform(0.4, 0.8)
    pin_g, cg, w_cut = rng.uniform(0.1, 0.2), rng.uniform(0.04, 0.1), rng.uniform(0.6, 0.85)
    load, memory = rng.uniform(1.3, 1.6), rng.uniform(1.2, 1.5)
    params = [
        p_cat("policy", policies),
        p_int("workers", 1, 64, log=True, env=True),
        p_int("batch", 4, 512, log=True),
        p_int("window", 1, 64),
        p_float("split", 0.0, 1.0, 0.05),
        p_int("cache_mb", 64, 4096, log=True),
        p_bool("pin", env=True),
        p_bool("compile"),
        p_int("log_every", 1, 100, env=True),
        p_cat("color", ["a", "b"]),
    ]
    pw, pb, pn, pc = params[1], params[2], params[3], params[5]
    cache = saturate(c_amp, c_knee)

    def value(c: Config) -> float:
        uw, ub, un = pos(pw, c["workers"]), pos(pb, c["batch"]), pos(pn, c["window"])
        d2 = ((ub - (b0 + b1 * uw**bk)) / 0.1) ** 2
        d2 += ((un - (w0 + w1 * math.sin(math.pi * uw))) / 0.12) ** 2
        v = 100.0 * lv[c["policy"]] * (1 + r_amp * (0.3 + 0.7 * uw) * math.exp(-0.5 * d2))
        if c["policy"] == "p0":
            v *= 1 + s_amp * math.exp(-0.5 * ((c["split"] - s_mu) / 0.12) ** 2)
        elif c["policy"] == "p1":
            v *= cache(pos(pc, c["cache_mb"]))
        if c["pin"]:
            v *= 1 + pin_g * (uw - 0.4)
        if c["compile"]:
            v *= 1 + cg
        return v

    crashes = [
        (lambda c: pos(pw, c["workers"]) + pos(pb, c["batch"]) > load, LOAD),
        (lambda c: pos(pc, c["cache_mb"]) + pos(pb, c["batch"]) > memory, OOM),
        (lambda c: bool(c["compile"]) and pos(pn, c["window"]) > w_cut, GRAPH),
    ]
    base = {
        "policy": "p0",
        "workers": 4,
        "batch": 32,
        "window": 8,
        "split": 0.5,
        "cache_mb": 256,
        "pin": False,
        "compile": False,
        "log_every": 10,
        "color": "a",
    }
    while any(hit(base) for hit, _ in crashes):
        load += 0.05
    return Shape("", params, base, value, crashes, _noise(rng), {"log_every", "color"})


def kvcliff(rng: random.Random) -> Shape:
    """KV-cache preemption: throughput rises with the number of running sequences until their
    KV cache no longer fits, then collapses (the scheduler preempts and recomputes or swaps;
    the server keeps serving, at a third to half the rate) rather than crashing. Where the
    cliff sits depends on several settings at once: the memory share (after the weights), the
    KV dtype (fp8 halves a token's bytes and costs a little compute), the block size
    (fragmentation against kernel speed), CUDA graphs (faster, but their pool takes memory
    and capture runs out of memory at a high share) and the prefill token budget (a choice,
    best inside its range, its activations taken from the same memory). Swap preemption softens the
    collapse by its swap space (a number that exists only with swap); a larger pool also pays
    a little of itself (more prefixes stay cached); two settings do nothing.

    Measured on 2026-12-06 after it was committed, nothing tuned on it (``PYTHONPATH=src python
    -m bench.search --prune --families kvcliff,tiles --seeds 3 --strategies autotune,random,tpe
    --instances 0:4``, then ``4:8``; % of optimum (SE), lowest, at 95%, crashes per study):
    autotune 91.2 (0.6), 88.5, 0/12, 1.2 | 93.5 (1.0), 87.5, 5/12, 1.0; random 89.4 (1.1), 84.0,
    0/12, 1.0 | 91.0 (1.2), 82.6, 2/12, 1.2; tpe 92.7 (1.2), 84.0, 4/12, 2.7 | 95.2 (0.7), 92.7,
    5/12, 2.8; paired (same instance and seed) autotune - random +1.8 (0.9) | +2.5 (0.6),
    autotune - tpe -1.6 (1.1) | -1.7 (0.7)."""
    gpu, weights = 80.0, rng.choice((16.0, 20.0, 24.0, 32.0))  # GB
    kv_kb = rng.choice((96.0, 128.0, 160.0))  # KB per token at 16 bits
    tokens = rng.choice((1200, 1600, 2000, 2600))  # mean KV tokens per running sequence
    act_kb = rng.choice((120.0, 160.0, 240.0))  # activation KB per prefill token
    graph_gb, g_gain = rng.choice((1.5, 2.0, 3.0)), rng.uniform(0.08, 0.18)
    g_edge = rng.choice((0.92, 0.93, 0.94))
    fp8_cost = rng.uniform(0.02, 0.06)
    waste = {8: 0.02, 16: 0.04, 32: 0.08}
    speed = {8: rng.uniform(0.93, 0.97), 16: 1.0, 32: rng.uniform(1.0, 1.03)}
    drop = rng.uniform(0.3, 0.4)
    params = [
        p_int("max_num_seqs", 8, 1024, log=True),
        p_float("mem", 0.5, 0.95, 0.01),
        p_cat("kv_dtype", ["auto", "fp8"]),
        p_cat("block_size", [8, 16, 32]),
        p_bool("cuda_graphs"),
        p_cat("prefill_tokens", [512, 1024, 2048, 4096, 8192, 16384]),
        p_cat("preemption", ["recompute", "swap"]),
        p_int("swap_gb", 0, 32, step=4, when="preemption == 'swap'"),
        p_bool("disable_log_stats"),
        p_int("tokenizer_workers", 1, 8, env=True),
    ]
    ps, pm = params[0], params[1]
    cache = rng.uniform(0.03, 0.08)
    conc = rng.uniform(0.5, 0.9)  # gain from 8 sequences to the knee
    knee, tail = rng.uniform(0.45, 0.7), rng.uniform(0.05, 0.15)
    pre = peak(rng.uniform(0.06, 0.15), rng.uniform(0.35, 0.7), rng.uniform(0.15, 0.25))
    prefills = [512, 1024, 2048, 4096, 8192, 16384]

    def fill(c: Config) -> float:
        """KV demand over KV capacity: above 1 the scheduler preempts."""
        free = c["mem"] * gpu - weights - c["prefill_tokens"] * act_kb / 1e6
        free -= graph_gb if c["cuda_graphs"] else 0.0
        per_token = kv_kb * (0.5 if c["kv_dtype"] == "fp8" else 1.0) / 1e6  # GB
        need = c["max_num_seqs"] * tokens * per_token / (1 - waste[c["block_size"]])
        return need / max(free, 1e-3)

    def value(c: Config) -> float:
        u = pos(ps, c["max_num_seqs"])
        v = 100.0 * (1 + conc * min(u, knee) / knee + tail * max(u - knee, 0.0))
        v *= pre(prefills.index(c["prefill_tokens"]) / 5) * speed[c["block_size"]]
        v *= 1 + cache * pos(pm, c["mem"])  # a larger pool keeps more prefixes cached
        v *= (1 + g_gain if c["cuda_graphs"] else 1.0) * (
            1 - fp8_cost if c["kv_dtype"] == "fp8" else 1.0
        )
        over = fill(c)
        if over > 1.0:
            keep = drop
            if c["preemption"] == "swap":
                keep += 0.2 * min(c["swap_gb"], 16) / 16
            v *= keep / over
        return v

    crashes = [(lambda c: bool(c["cuda_graphs"]) and c["mem"] > g_edge + 1e-9, CUDA_OOM)]
    base = {
        "max_num_seqs": 32,
        "mem": 0.8,
        "kv_dtype": "auto",
        "block_size": 16,
        "cuda_graphs": False,
        "prefill_tokens": 2048,
        "preemption": "recompute",
        "disable_log_stats": False,
        "tokenizer_workers": 1,
    }
    while fill(base) > 1.0:  # the baseline runs below the cliff
        base["max_num_seqs"] //= 2
    return Shape(
        "",
        params,
        base,
        value,
        crashes,
        _noise(rng),
        {"disable_log_stats", "tokenizer_workers"},
        {"swap_gb": lambda c: c["preemption"] == "swap"},
    )


def tiles(rng: random.Random) -> Shape:
    """A GEMM/attention kernel's launch configuration, as a server exposes it: a tile shape
    (two many-valued choices) whose speed is a broad hill around one best tile, a warp count
    whose best value follows the tile's area (too few warps for a large tile spill registers
    and lose 40%), a noisy plateau (every tile and warp count a few percent apart, fixed per
    instance) with one exact combination of tile, warps and pipeline depth that pays well
    above its neighbours, pipeline stages that pay up to the shared-memory limit and fail to
    load past it (the limit set by tile, stages and dtype together), fp8 that pays except
    with the smallest tiles, a stream interval best at its top on a log scale, a prefill
    budget best at one end of its log range, and two settings that do nothing.

    Measured as ``kvcliff`` was (the same two commands, which run both): autotune 75.1 (2.6),
    63.5, 0/12, 0.3 | 79.7 (3.3), 60.2, 1/12, 0.1; random 68.7 (1.5), 58.5, 0/12, 1.7 | 72.4
    (2.6), 62.6, 1/12, 1.7; tpe 77.1 (2.6), 65.9, 1/12, 0.8 | 79.6 (3.2), 54.0, 2/12, 0.8; paired
    autotune - random +6.4 (2.0) | +7.3 (3.7), autotune - tpe -2.0 (3.8) | +0.2 (4.7)."""
    ms, ns, warps = [16, 32, 64, 128, 256], [32, 64, 128, 256], [1, 2, 4, 8]
    m_star, n_star = rng.choice([(m, n) for m in ms for n in ns if (m, n) != (64, 64)])
    hill, width = rng.uniform(0.25, 0.45), rng.uniform(0.8, 1.2)
    jitter = {(m, n, w): rng.uniform(0.97, 1.03) for m in ms for n in ns for w in warps}
    bonus, s_star = rng.uniform(0.15, 0.3), rng.randint(2, 4)
    s_gain = rng.uniform(0.1, 0.25)
    fp8_gain = rng.uniform(0.05, 0.2)
    smem = 232448  # bytes per SM (H100)
    st_gain = rng.uniform(0.04, 0.1)
    pf_gain, pf_low = rng.uniform(0.06, 0.15), rng.random() < 0.5
    params = [
        p_cat("block_m", ms),
        p_cat("block_n", ns),
        p_cat("num_warps", warps),
        p_int("num_stages", 1, 7),
        p_cat("dtype", ["bf16", "fp8"]),
        p_int("stream_interval", 1, 128, log=True),
        p_int("max_prefill", 512, 65536, log=True),
        p_cat("allocator", ["default", "expandable"], env=True),
        p_bool("log_requests"),
    ]
    pst, ppf = params[5], params[6]

    def best_warps(m: int, n: int) -> int:
        return min(max(round(math.log2(m * n / 2048)), 0), 3)

    def value(c: Config) -> float:
        m, n, w, s = c["block_m"], c["block_n"], c["num_warps"], c["num_stages"]
        d2 = (math.log2(m / m_star) ** 2 + math.log2(n / n_star) ** 2) / width**2
        v = 100.0 * (1 + hill * math.exp(-0.5 * d2)) * jitter[m, n, w]
        off = abs(math.log2(w) - best_warps(m, n))
        v *= 0.6 if math.log2(w) < best_warps(m, n) - 1 else 1 - 0.1 * off
        exact = (m, n) == (m_star, n_star) and off == 0 and s == s_star
        v *= 1 + bonus if exact else 1.0
        v *= 1 + s_gain * (1 - 1 / s)
        if c["dtype"] == "fp8":
            v *= 1 + fp8_gain if m >= 64 else 0.9
        v *= 1 + st_gain * pos(pst, c["stream_interval"])
        u = pos(ppf, c["max_prefill"])
        return v * (1 + pf_gain * ((1 - u) if pf_low else u))

    def shared(c: Config) -> int:
        return (
            (c["block_m"] + c["block_n"]) * 64 * (1 if c["dtype"] == "fp8" else 2) * c["num_stages"]
        )

    crashes = [(lambda c: shared(c) > smem, SMEM)]
    base = {
        "block_m": 64,
        "block_n": 64,
        "num_warps": 4,
        "num_stages": 2,
        "dtype": "bf16",
        "stream_interval": 1,
        "max_prefill": 8192,
        "allocator": "default",
        "log_requests": False,
    }
    return Shape("", params, base, value, crashes, _noise(rng), {"allocator", "log_requests"})


# ``layout``'s crashes
TOO_MANY_GPUS = (
    "invalid_argument",
    "launch",
    "ValueError: The number of required GPUs exceeds the total number of available GPUs",
)
HEADS = (
    "assertion",
    "load",
    "AssertionError: Total number of attention heads must be divisible by tensor parallel size",
)
AWQ_SHAPE = (
    "invalid_argument",
    "load",
    "ValueError: The input size is not aligned with the quantized weight shape.",
)
NO_KV = (
    "kv_pool_oom",
    "memory_pool",
    "ValueError: No available memory for the cache blocks. Try increasing gpu_memory_utilization",
)
WARMUP_OOM = ("cuda_oom", "memory_pool", "torch.OutOfMemoryError: CUDA out of memory.")

# the models ``layout`` serves: parameters (billions), layers, query heads, KV heads, head
# size, MLP width (the shapes of Llama-2-13B, Qwen2.5-32B, Yi-34B, Falcon-40B, Llama-3-70B)
_MODELS = (
    (13.0, 40, 40, 40, 128, 13824),
    (32.8, 64, 40, 8, 128, 27648),
    (34.4, 60, 56, 8, 128, 20480),
    (41.8, 60, 128, 8, 64, 32768),
    (70.6, 80, 64, 8, 128, 28672),
)


def layout(rng: random.Random) -> Shape:
    """How one model is laid out over an 8-GPU node, priced by a roofline of a decode step.
    Tensor- and pipeline-parallel sizes set how many replicas serve (8 // (tp * pp); GPUs left
    over idle) and how much of each GPU the weights take; the crashes form a scattered lattice,
    not an edge: a tensor-parallel size must divide the model's heads (and suit its KV heads),
    tp * pp may not pass 8, 4-bit AWQ weights need the MLP width split into whole groups of 128,
    the weights must leave room for a KV cache, and a high memory share with many sequences runs
    out of memory in the sampler's warm-up. Weight quantisation (fp8 faster, AWQ smaller but
    slower at large batches) moves which layouts fit and pay. The clients are a fixed number
    spread over the replicas: the running batch is the least of the sequence cap, the KV
    capacity and the per-replica load (the last two move with the layout), and a larger batch
    can push the all-reduce past the custom path's 8 MB. The all-reduce is priced by message
    size: vLLM's custom all-reduce (tp 2, 4, 6 or 8, messages up to 8 MB), else NCCL, whose
    algorithm (tree wins small messages, ring large; auto switches at a fixed size that may be
    wrong) and minimum channel count matter only when tp > 1 and the custom path is off or too
    small, which no ``when`` says. Two settings do nothing.

    Measured on 2026-12-07 after it was committed, nothing tuned on it (``PYTHONPATH=src python
    -m bench.search --prune --families layout,graphcap --seeds 3 --strategies
    autotune,random,tpe --instances 0:4``, then ``4:8``; % of optimum (SE), lowest, at 95%,
    crashes per study): autotune 99.6 (0.3), 97.5, 12/12, 6.8 | 96.5 (1.2), 91.6, 7/12, 5.4;
    random 71.8 (2.9), 61.1, 0/12, 22.1 | 72.7 (2.3), 65.4, 0/12, 22.4; tpe 71.8 (2.9), 61.1,
    0/12, 22.0 | 73.3 (2.6), 65.4, 0/12, 22.2 (its answer equal to random's in 23 of 24
    studies); paired (same instance and seed) autotune - random +27.8 (3.0) | +23.8 (3.1),
    autotune - tpe +27.8 (3.0) | +23.2 (3.4). autotune launched 44 per study (30 and its
    confirmation); with random and tpe given 44 (``--strategies random,tpe --trials 44``):
    autotune - random +23.9 (3.4) | +19.2 (3.3), autotune - tpe +25.9 (3.4) | +18.5 (3.3)."""
    params_b, layers, heads, kv_heads, dim, width = rng.choice(_MODELS)
    gpus, hbm, bw = 8, 80.0, 3350.0  # GPUs, GB and GB/s each
    clients = rng.choice((128, 256, 384, 512, 768))
    tokens = rng.choice((1200, 2000, 3000))  # mean KV tokens per running sequence
    kv_gb = layers * kv_heads * dim * 2 * 2 / 1e9  # per token, bf16
    act = rng.uniform(2.5, 4.0)  # activations and CUDA context, GB per GPU
    tflops = rng.uniform(500.0, 650.0)
    nbytes = {"bf16": 2.0, "fp8": 1.0, "awq": 0.56}  # per parameter, scales included
    read = {"bf16": 2.0, "fp8": 1.0, "awq": 0.8}  # per parameter a step takes to read and unpack
    speed = {"bf16": 1.0, "fp8": rng.uniform(1.4, 1.7), "awq": rng.uniform(0.35, 0.55)}
    cpu = rng.uniform(0.002, 0.004)  # scheduling per step, s
    bubble = rng.uniform(0.1, 0.2)
    sat = rng.choice((8, 16, 24))  # NCCL channels that fill the links
    switch = rng.choice((6.4e4, 2.6e5, 1e6, 4e6))  # auto picks tree below this many bytes
    sampler = rng.uniform(1.2e-3, 2.0e-3)  # sampler warm-up, GB per sequence
    params = [
        p_int("tensor_parallel_size", 1, 8),
        p_int("pipeline_parallel_size", 1, 4),
        p_cat("quantization", ["bf16", "fp8", "awq"]),
        p_float("gpu_memory_utilization", 0.5, 0.95, 0.01),
        p_int("max_num_seqs", 8, 1024, log=True),
        p_bool("disable_custom_all_reduce"),
        p_cat("nccl_algo", ["auto", "ring", "tree"], env=True),
        p_int("nccl_min_nchannels", 1, 32, log=True, env=True),
        p_bool("disable_log_requests"),
        p_cat("log_format", ["text", "json"], env=True),
    ]

    def sizes(c: Config) -> tuple[int, int, int]:
        tp, pp = c["tensor_parallel_size"], c["pipeline_parallel_size"]
        return tp, pp, tp * pp

    def free(c: Config) -> float:
        """GB per GPU left for the KV cache."""
        _, _, n = sizes(c)
        used = params_b * nbytes[c["quantization"]] / n + act
        return c["gpu_memory_utilization"] * hbm - used

    def allreduce(c: Config, size: float) -> float:
        """Seconds for one all-reduce of ``size`` bytes over tp GPUs."""
        tp = c["tensor_parallel_size"]
        if not c["disable_custom_all_reduce"] and tp % 2 == 0 and size <= 8e6:
            return 4e-6 + size / 4e11
        ch = c["nccl_min_nchannels"]
        algo = c["nccl_algo"]
        if algo == "auto":
            algo = "tree" if size < switch else "ring"
        ring = 3.6e11 * tp / (2 * (tp - 1)) * min(ch, sat) / sat
        if algo == "ring":
            return 8e-6 + 2e-6 * (tp - 1) + 2.5e-7 * ch + size / ring
        return 6e-6 + 2e-6 * math.log2(tp) + 2.5e-7 * ch + size / (0.55 * ring)

    def value(c: Config) -> float:
        tp, pp, n = sizes(c)
        replicas = gpus // n
        per_token = kv_gb * max(tp / kv_heads, 1.0) / n  # KV heads copied when tp > their count
        cap = free(c) / per_token / tokens
        demand = min(c["max_num_seqs"], clients / replicas)
        b = min(demand, cap)  # the scheduler admits what the KV cache holds
        micro = b / pp
        memory = (params_b * read[c["quantization"]] / n + micro * tokens * per_token) / bw
        compute = 2 * params_b * 1e9 * micro / n / (tflops * 1e12 * speed[c["quantization"]])
        tick = max(memory, compute) + cpu + (3e-5 if pp > 1 else 0.0)
        if tp > 1:
            tick += 2 * layers / pp * allreduce(c, micro * heads * dim * 2)
        return replicas * micro / tick / (1 + bubble * (pp - 1)) / 20.0

    def misfit(c: Config) -> bool:
        tp = c["tensor_parallel_size"]
        return heads % tp != 0 or (kv_heads % tp != 0 and tp % kv_heads != 0)

    def unaligned(c: Config) -> bool:
        tp = c["tensor_parallel_size"]
        return c["quantization"] == "awq" and (width % tp != 0 or width // tp % 128 != 0)

    def warmup(c: Config) -> bool:
        return c["gpu_memory_utilization"] * hbm + act + c["max_num_seqs"] * sampler > hbm

    crashes = [
        (lambda c: sizes(c)[2] > gpus, TOO_MANY_GPUS),
        (misfit, HEADS),
        (unaligned, AWQ_SHAPE),
        (lambda c: free(c) < 1.0, NO_KV),
        (warmup, WARMUP_OOM),
    ]
    base = {
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "quantization": "bf16",
        "gpu_memory_utilization": 0.9,
        "max_num_seqs": 256,
        "disable_custom_all_reduce": False,
        "nccl_algo": "auto",
        "nccl_min_nchannels": 8,
        "disable_log_requests": False,
        "log_format": "text",
    }
    # the usual start: the smallest power of two that leaves 40% of the memory for KV
    while free(base) < 0.4 * hbm or misfit(base):
        base["tensor_parallel_size"] *= 2
    return Shape(
        "", params, base, value, crashes, _noise(rng), {"disable_log_requests", "log_format"}
    )


def graphcap(rng: random.Random) -> Shape:
    """An SGLang-like server on one GPU (an 8B, 14B or 20B model), where CUDA graphs are
    captured for batch sizes up to a cap (one of eight sizes): a running batch past the cap
    falls back to eager launches (a sharp drop, no crash), and the captured sizes take their
    memory from the KV pool. The running batch is the least of the request cap, the KV pool's
    capacity and the benchmark's fixed number of clients, so past that point the request cap
    does nothing (a plateau whose start the search cannot see). Radix (prefix) caching pays with
    the workload's shared prefixes (none in some instances, where it costs a little) and stores
    them once; the scheduling policy decides how many prefix hits it finds, and longest-prefix-
    match (lpm) sorts the queue at a cost, falling back to first-come-first-served once more
    than 128 requests wait, so its sign turns with the load the other numbers leave waiting.
    Mixing prefill chunks into decode batches pays with large batches and costs with small ones.
    A static share too low leaves no KV pool; too high leaves graph capture out of memory. Two
    settings do nothing.

    Measured as ``layout`` was (the same commands, which run both): autotune 96.5 (1.6), 81.0,
    10/12, 0.4 | 97.3 (0.9), 91.3, 9/12, 0.2; random 85.4 (4.3), 49.4, 4/12, 0.4 | 83.1 (3.8),
    51.1, 1/12, 0.4; tpe 94.2 (1.8), 81.0, 8/12, 0.5 | 92.6 (1.8), 80.0, 6/12, 0.2; paired
    autotune - random +11.0 (4.2) | +14.2 (3.3), autotune - tpe +2.2 (1.7) | +4.7 (1.9); with
    random and tpe at 44 launches: autotune - random +9.3 (3.0) | +14.2 (3.3), autotune - tpe
    -1.0 (0.7) | -0.5 (1.4)."""
    weights = rng.choice((16.0, 28.0, 40.0))  # GB: an 8B, a 14B, a 20B model
    kv_mb = {16.0: 0.131, 28.0: 0.197, 40.0: 0.164}[weights]  # MB per token, bf16
    clients = rng.choice((256, 384, 512, 1024))
    tokens = rng.choice((800, 1500, 2500))  # mean KV tokens per running sequence
    share = rng.choice((0.0, 0.4, 0.7))  # the tokens of a request that are a shared prefix
    prefill = rng.uniform(0.25, 0.45)  # the time that prefill takes with no prefix hit
    eager = rng.uniform(0.003, 0.006)  # s a step loses without graphs
    graph_gb = rng.choice((1.0, 1.5, 2.0))  # graph memory at 512 captured sizes
    graph_edge = rng.uniform(2.5, 5.0)  # GB that capture needs beyond the static share
    policy = {"fcfs": 0.7, "lpm": 1.0, "dfs-weight": 0.9, "random": 0.55}
    sort_cost = rng.uniform(0.04, 0.1)  # lpm's sorting, at 128 waiting requests
    radix_cost = rng.uniform(0.01, 0.02)
    mix = rng.uniform(0.08, 0.16)
    hbm, bw = 80.0, 3350.0
    compute = weights / 16.0 * 2.3e-5  # s per token of the batch
    params = [
        p_int("max_running_requests", 16, 1024, log=True),
        p_float("mem_fraction_static", 0.5, 0.95, 0.01),
        p_bool("cuda_graph"),
        p_cat("cuda_graph_max_bs", [32, 64, 128, 160, 256, 320, 384, 512], when="cuda_graph"),
        p_cat("schedule_policy", ["fcfs", "lpm", "dfs-weight", "random"]),
        p_bool("disable_radix_cache"),
        p_bool("enable_mixed_chunk"),
        p_bool("enable_metrics"),
        p_cat("log_level", ["info", "warning", "error"], env=True),
    ]

    def pool(c: Config) -> float:
        """GB of KV pool: the static share less the weights and the captured graphs."""
        graphs = graph_gb * c["cuda_graph_max_bs"] / 512 if c["cuda_graph"] else 0.0
        return c["mem_fraction_static"] * hbm - weights - graphs

    def value(c: Config) -> float:
        radix = not c["disable_radix_cache"]
        per_seq = tokens * (1 - 0.8 * share if radix else 1.0) * kv_mb / 1e3  # GB
        cap = pool(c) / per_seq
        b = min(c["max_running_requests"], cap, clients)
        waiting = clients - b
        step = max((weights + b * per_seq) / bw, b * compute)
        if not (c["cuda_graph"] and b <= c["cuda_graph_max_bs"]):
            step += eager
        v = b / step
        hit = share * policy[c["schedule_policy"]] if radix else 0.0
        if c["schedule_policy"] == "lpm" and waiting > 128:
            hit = share * policy["fcfs"] if radix else 0.0  # lpm falls back to fcfs
        elif c["schedule_policy"] == "lpm":
            v *= 1 - sort_cost * waiting / 128
        v *= (1 - prefill * (1 - hit)) / (1 - prefill)
        if radix and share == 0.0:
            v *= 1 - radix_cost
        if c["enable_mixed_chunk"]:
            v *= 1 + mix * (min(b, 256) / 256 - 0.35)
        return v / 20.0

    crashes = [
        (lambda c: pool(c) < 2.0, OOM),
        (
            lambda c: bool(c["cuda_graph"]) and (1 - c["mem_fraction_static"]) * hbm < graph_edge,
            CUDA_OOM,
        ),
    ]
    base = {
        "max_running_requests": 128,
        "mem_fraction_static": 0.88,
        "cuda_graph": True,
        "cuda_graph_max_bs": 160,
        "schedule_policy": "fcfs",
        "disable_radix_cache": False,
        "enable_mixed_chunk": False,
        "enable_metrics": False,
        "log_level": "info",
    }
    return Shape(
        "",
        params,
        base,
        value,
        crashes,
        _noise(rng),
        {"enable_metrics", "log_level"},
        {"cuda_graph_max_bs": lambda c: bool(c["cuda_graph"])},
    )


FAMILIES: dict[str, Callable[[random.Random], Shape]] = {
    "interact": interact,
    "condint": condint,
    "coupled": coupled,
    "mixed7": mixed7,
    "mixed11": mixed11,
    "loadcrash": loadcrash,
    "plateau": plateau,
    "hidden2b": hidden2b,
    "ridge11": ridge11,
    "paired10": paired10,
    "tangle9": tangle9,
    "curve10": curve10,
    "kvcliff": kvcliff,
    "tiles": tiles,
    "layout": layout,
    "graphcap": graphcap,
}
_SALT = {name: k for k, name in enumerate(FAMILIES)}


def shape(name: str, index: int) -> Shape:
    """Instance ``index`` of family ``name`` (the same every time)."""
    out = FAMILIES[name](random.Random(1_000_003 * (_SALT[name] + 1) + index))
    out.name = f"{name}{index}"
    return out


def family(name: str, index: int) -> Landscape:
    """Instance ``index`` of family ``name`` as a landscape (``{name}{index}``)."""
    s = shape(name, index)

    def evaluate(c: Config, r: random.Random) -> Point:
        c = _active(s, c)
        for hit, (cause, phase, message) in s.crashes:
            if hit(c):
                return crash(cause, phase, message)
        return ok(s.value(c), r, s.noise)

    land = Landscape(
        f"{name}{index}",
        (FAMILIES[name].__doc__ or "").split(".")[0],
        s.params,
        evaluate,
        dict(s.baseline),
        held_out=name in MANIFEST["held_out"],
        regions=len(s.crashes),
    )
    land._optimum = _optimum(s)
    return land


def _active(s: Shape, c: Config) -> Config:
    """``c`` with its inactive conditional settings dropped."""
    return {k: v for k, v in c.items() if k not in s.active or s.active[k](c)}


def truth(s: Shape, c: Config) -> float | None:
    c = _active(s, c)
    if any(hit(c) for hit, _ in s.crashes):
        return None
    return s.value(c)


def values(p: dict[str, Any], most: int | None = None) -> list[Any]:
    """Every value of a setting (``most``: about that many, ends included)."""
    if p["type"] == "bool":
        return [False, True]
    if p["type"] == "categorical":
        return list(p["choices"])
    low, high = p["low"], p["high"]
    if p["type"] == "float":
        k = round((high - low) / p["step"])
        out = [round(low + i * p["step"], 10) for i in range(k + 1)]
    else:
        out = list(range(low, high + 1, p.get("step") or 1))
    if most is not None and len(out) > most:
        if p.get("log") and p["type"] == "int":
            lo, hi = math.log(low), math.log(high)
            pts = {round(math.exp(lo + i * (hi - lo) / (most - 1))) for i in range(most)}
            out = sorted(min(max(int(v), low), high) for v in pts)
        else:
            out = [out[round(i * (len(out) - 1) / (most - 1))] for i in range(most)]
    return out


def _optimum(s: Shape) -> float:
    """The best noise-free value. For every assignment of the relevant choices (categoricals
    and bools), the best point of a coarse grid of the numbers, each number then searched
    over 400 of its values until none improves; from the three best of distinct values, each
    pair of numbers searched together (up to 100 values of one against 400 of the other: a
    crash edge along their sum) and each number again over all its values (2000 at most).
    Cached on disk (``CACHE``) by family, instance and this file's source."""
    key = f"{_SOURCE}:{s.name}"
    cached = _cache().get(key)
    if cached is not None:
        return float(cached)
    relevant = [p for p in s.params if p["name"] not in s.inert]
    numbers = [p for p in relevant if p["type"] in ("int", "float")]
    choices = [p for p in relevant if p["type"] not in ("int", "float")]
    coarse = {p["name"]: values(p, 5) for p in numbers}
    quick = {p["name"]: values(p, 400) for p in numbers}
    lines = {p["name"]: values(p, 2000) for p in numbers}

    def polish(v: float, c: Config, lines: dict[str, list[Any]]) -> tuple[float, Config]:
        improved = True
        while improved:
            improved = False
            for name, xs in lines.items():
                for x in xs:
                    t = truth(s, {**c, name: x})
                    if t is not None and t > v + 1e-12:
                        v, c, improved = t, {**c, name: x}, True
        return v, c

    starts: list[tuple[float, Config]] = []
    for assignment in itertools.product(*(values(p) for p in choices)):
        fixed = {**s.baseline, **{p["name"]: x for p, x in zip(choices, assignment, strict=True)}}
        top: tuple[float, Config] | None = None
        for combo in itertools.product(*coarse.values()):
            c = {**fixed, **dict(zip(coarse, combo, strict=True))}
            v = truth(s, c)
            if v is not None and (top is None or v > top[0]):
                top = (v, c)
        if top is not None:
            starts.append(polish(*top, quick))
    starts.sort(key=lambda x: -x[0])
    # three different points: starts of equal value are mostly one point, reached through
    # choices that do nothing there, and would crowd out the next basin
    distinct: list[tuple[float, Config]] = []
    for v, c in starts:
        if all(abs(v - w) > 1e-9 * max(1.0, abs(w)) for w, _ in distinct):
            distinct.append((v, c))
    best = starts[0][0]
    for v, c in distinct[:3]:
        for a, b in itertools.combinations(numbers, 2):
            if len(lines[a["name"]]) > len(lines[b["name"]]):
                a, b = b, a
            na, nb = a["name"], b["name"]
            for x, y in itertools.product(values(a, 100), values(b, 400)):
                t = truth(s, {**c, na: x, nb: y})
                if t is not None and t > v + 1e-12:
                    v, c = t, {**c, na: x, nb: y}
        v, c = polish(v, c, lines)
        best = max(best, v)
    _store(key, best)
    return best


CACHE = Path.home() / ".cache" / "autotune" / "search-families.json"
_SOURCE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]


def _cache() -> dict[str, float]:
    try:
        return dict(json.loads(CACHE.read_text()))
    except (OSError, ValueError):  # no cache yet, or a torn one: computed again
        return {}


def _store(key: str, value: float) -> None:
    data = _cache()
    data[key] = value
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(CACHE)


def landscapes(names: list[str], instances: range) -> list[Landscape]:
    return [family(n, i) for n in names for i in instances]


__all__ = ["FAMILIES", "INSTANCES", "MANIFEST", "family", "landscapes", "shape", "truth"]
