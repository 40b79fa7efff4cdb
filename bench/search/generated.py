"""Landscapes drawn at random, for choosing search defaults on more than a handful of shapes.

The hand-made landscapes (``landscapes.py``) and the black boxes are few, and the defaults
tuned on them can fit their quirks. ``generated(i)`` draws a server-like landscape from
``random.Random(i)``: four to six settings (one or two categoricals, one to three numbers on a
log or linear scale, a bool), effects that multiply (a level per choice, a number that
saturates, peaks inside its range, rises to a cap or hurts), sometimes a choice that changes a
number's effect, two or three crash regions of the shapes real servers show (a choice with a
number past a threshold, a bool with a number past a threshold, two choices together, a number
past a threshold alone, two numbers past a threshold on their sum), each with its own cause
and log line, and 0.5-3% launch noise. Regions are drawn where the values are good, so optima
often sit at a crash edge.

Indices 0-999 are the tuning family; 1000 and up are held out (``--generated 1000:1040``),
never looked at while choosing defaults. ``like_hidden(land)`` (``--like-hidden``) keeps those
of the shape issue 13 gives its hidden server: five settings, three crash regions, an optimum
2-4.5x the baseline.

``partial(land)`` is the same landscape with a baseline that leaves one to three settings to
the engine, as a campaign leaves NCCL variables unset (``--generated A:B --partial``, names
``gen12u``): the landscape gives each an engine default of its own, drawn inside its range
where the baseline still serves; a configuration that sets the value is measured with it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from bench.search.landscapes import Landscape, Point, crash, ok

HELD_OUT_FROM = 1000

# (cause, phase, log line) of each crash region's error
ERRORS = [
    ("cuda_oom", "memory_pool", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"),
    ("kv_pool_oom", "memory_pool", "RuntimeError: Not enough memory. Please try to increase"),
    (
        "cuda_graph_capture",
        "graph_capture",
        "Capture cuda graph failed: CUDA error: an illegal memory access was encountered",
    ),
    ("assertion", "load", "AssertionError: unsupported combination of kernels"),
    ("nccl_error", "load", "NCCL WARN Error : no algorithm/protocol available"),
    ("runtime_crash", "benchmark", "RuntimeError: CUDA error: too many resources requested"),
]


def generated(index: int) -> Landscape:
    """Landscape number ``index`` (the same every time)."""
    rng = random.Random(index * 7_777 + 13)
    params: list[dict[str, Any]] = []
    baseline: dict[str, Any] = {}
    effects: list[Callable[[dict[str, Any]], float]] = []

    for k in range(rng.choice((1, 1, 2))):
        name = f"cat{k}"
        n = rng.choice((2, 3, 3, 4))
        choices = [f"{name}_{j}" for j in range(n)]
        levels = {c: (1.0 if j == 0 else rng.uniform(0.8, 1.5)) for j, c in enumerate(choices)}
        params.append(_param(name, "categorical", rng, choices=choices))
        baseline[name] = choices[0]
        effects.append(lambda c, name=name, levels=levels: levels[c[name]])

    numbers: list[str] = []
    for k in range(rng.choice((1, 2, 2, 3))):
        name = f"num{k}"
        numbers.append(name)
        if rng.random() < 0.6:  # a log-scaled int: batch sizes, buffer sizes, threads
            low = rng.choice((1, 4, 8, 64, 256))
            high = low * 2 ** rng.randint(6, 10)
            params.append(_param(name, "int", rng, low=low, high=high, log=True))
            baseline[name] = int(round(low * (high / low) ** rng.uniform(0.1, 0.4)))
        else:  # a fraction: memory share, a ratio
            low, high = rng.choice(((0.5, 0.95), (0.6, 0.95), (0.0, 1.0)))
            params.append(_param(name, "float", rng, low=low, high=high, step=0.01))
            baseline[name] = round(low + (high - low) * rng.uniform(0.1, 0.4), 2)
        effects.append(_numeric_effect(name, params[-1], rng))

    params.append(_param("flag", "bool", rng))
    baseline["flag"] = False
    gain = rng.uniform(0.9, 1.25)
    effects.append(lambda c, gain=gain: gain if c["flag"] else 1.0)

    # Sometimes a choice changes how much a number matters (an interaction).
    cats = [p for p in params if p["type"] == "categorical"]
    if rng.random() < 0.4 and numbers:
        cat, num = rng.choice(cats), rng.choice(numbers)
        choice = rng.choice(cat["choices"])
        pnum = next(p for p in params if p["name"] == num)
        strength = rng.uniform(0.1, 0.4)
        effects.append(
            lambda c, cat=cat["name"], choice=choice, pnum=pnum, s=strength: (
                1.0 + s * _pos(pnum, c[pnum["name"]]) if c[cat] == choice else 1.0
            )
        )

    def value(c: dict[str, Any]) -> float:
        v = 100.0
        for f in effects:
            v *= f(c)
        return v

    regions = _regions(params, baseline, value, rng)
    noise = rng.choice((0.005, 0.01, 0.02, 0.03))

    def evaluate(c: dict[str, Any], r: random.Random) -> Point:
        for hit, (cause, phase, message) in regions:
            if hit(c):
                return crash(cause, phase, message)
        return ok(value(c), r, noise)

    land = Landscape(
        f"gen{index}",
        f"generated #{index}: {len(params)} settings, {len(regions)} crash regions",
        params,
        evaluate,
        baseline,
        held_out=index >= HELD_OUT_FROM,
        regions=len(regions),
        grid_levels=_levels(params),
    )
    return land


def like_hidden(land: Landscape) -> bool:
    """Whether a generated landscape has the shape issue 13 gives its hidden server: five
    settings of the kinds it names (categorical, log-scaled int, bool; no fraction), three
    crash regions, and an optimum 2 to 4.5 times the baseline (the issue's is 3.07x)."""
    kinds = [p["type"] for p in land.parameters]
    if len(kinds) != 5 or "float" in kinds or land.regions != 3:
        return False
    if not any(p.get("log") for p in land.parameters):
        return False
    base = land.evaluate(land.baseline, random.Random(0)).truth
    return base is not None and 2.0 <= land.optimum() / base <= 4.5


def partial(land: Landscape, empty: bool = False) -> Landscape:
    """``land`` with a baseline that leaves settings unset (their engine defaults hidden);
    ``empty``: all of them (``baseline: {}``, the engine's defaults)."""
    index = int(land.name[3:])
    rng = random.Random(index * 104_729 + 7)
    names = [p["name"] for p in land.parameters]
    k = len(names) if empty else min(len(names) - 1, rng.choice((1, 2, 2, 3)))
    for _ in range(50):  # defaults under which the baseline still serves
        unset = rng.sample(names, k)
        defaults = {p["name"]: _draw(p, rng) for p in land.parameters if p["name"] in unset}
        if land.evaluate({**land.baseline, **defaults}, random.Random(0)).truth is not None:
            break
    inner = land.evaluate

    def evaluate(c: dict[str, Any], r: random.Random) -> Point:
        return inner({**defaults, **c}, r)

    return Landscape(
        f"{land.name}{'e' if empty else 'u'}",
        f"{land.about}; the baseline leaves {', '.join(sorted(defaults))} unset",
        land.parameters,
        evaluate,
        {n: v for n, v in land.baseline.items() if n not in defaults},
        held_out=land.held_out,
        regions=land.regions,
        _optimum=land.optimum(),
    )


def _draw(p: dict[str, Any], rng: random.Random) -> Any:
    """An engine default: a choice, or a value 20-80% along the range on its scale."""
    if p["type"] == "bool":
        return rng.random() < 0.5
    if p["type"] == "categorical":
        return rng.choice(p["choices"])
    low, high, u = float(p["low"]), float(p["high"]), rng.uniform(0.2, 0.8)
    x = low * (high / low) ** u if p.get("log") else low + (high - low) * u
    return int(round(x)) if p["type"] == "int" else round(x, 2)


def _param(name: str, type_: str, rng: random.Random, **kw: Any) -> dict[str, Any]:
    how = {"env": f"GEN_{name.upper()}"} if rng.random() < 0.4 else {"flag": f"--{name}"}
    return {"name": name, "type": type_, **how, **kw}


def _pos(p: dict[str, Any], x: float) -> float:
    """``x`` on [0, 1] over the parameter's range, on its scale."""
    low, high = float(p["low"]), float(p["high"])
    if p.get("log"):
        low, high, x = math.log(low), math.log(high), math.log(x)
    return (float(x) - low) / (high - low)


def _numeric_effect(
    name: str, p: dict[str, Any], rng: random.Random
) -> Callable[[dict[str, Any]], float]:
    shape = rng.choice(("saturate", "saturate", "peak", "cap", "hurt"))
    a = rng.uniform(0.15, 0.8)
    if shape == "saturate":  # rises and levels off (graph batch sizes)
        s = rng.uniform(0.1, 0.4)
        return lambda c: 1.0 + a * (1.0 - math.exp(-_pos(p, c[name]) / s))
    if shape == "peak":  # a best value inside the range (a buffer size)
        mu, w = rng.uniform(0.3, 0.85), rng.uniform(0.1, 0.3)
        return lambda c: 1.0 + a * math.exp(-0.5 * ((_pos(p, c[name]) - mu) / w) ** 2)
    if shape == "cap":  # rises linearly to a cap
        cap = rng.uniform(0.4, 1.0)
        return lambda c: 1.0 + a * min(_pos(p, c[name]), cap) / cap
    return lambda c: 1.0 + 0.3 * a * (1.0 - _pos(p, c[name]))  # the baseline's side is better


def _regions(
    params: list[dict[str, Any]],
    baseline: dict[str, Any],
    value: Callable[[dict[str, Any]], float],
    rng: random.Random,
) -> list[tuple[Callable[[dict[str, Any]], bool], tuple[str, str, str]]]:
    """Two or three crash regions, none covering the baseline, placed where values are good."""
    cats = [p for p in params if p["type"] == "categorical"]
    nums = [p for p in params if p["type"] in ("int", "float")]
    errors = rng.sample(ERRORS, k=len(ERRORS))
    out: list[tuple[Callable[[dict[str, Any]], bool], tuple[str, str, str]]] = []
    for error in errors[: rng.choice((2, 3, 3))]:
        for _ in range(20):  # a shape that spares the baseline
            hit = _region(cats, nums, rng)
            if hit is not None and not hit(baseline):
                out.append((hit, error))
                break
    return out


def _region(
    cats: list[dict[str, Any]], nums: list[dict[str, Any]], rng: random.Random
) -> Callable[[dict[str, Any]], bool] | None:
    kind = rng.choice(("cat_num", "cat_num", "bool_num", "cat_cat", "num", "num_num"))
    t = rng.uniform(0.55, 0.9)  # a threshold on the number's [0, 1] scale
    if kind == "cat_num" and cats and nums:
        cat, num = rng.choice(cats), rng.choice(nums)
        choice = rng.choice(cat["choices"][1:])
        return lambda c: c[cat["name"]] == choice and _pos(num, c[num["name"]]) > t
    if kind == "bool_num" and nums:
        num = rng.choice(nums)
        return lambda c: c["flag"] and _pos(num, c[num["name"]]) > t
    if kind == "cat_cat":
        pairs = [(a, b) for a in cats for b in cats if a is not b]
        if pairs:
            a, b = rng.choice(pairs)
            x, y = rng.choice(a["choices"][1:]), rng.choice(b["choices"][1:])
            return lambda c: c[a["name"]] == x and c[b["name"]] == y
        if cats:  # one categorical: a choice with the bool
            cat = cats[0]
            x = rng.choice(cat["choices"][1:])
            return lambda c: c[cat["name"]] == x and c["flag"]
    if kind == "num" and nums:
        num = rng.choice(nums)
        return lambda c: _pos(num, c[num["name"]]) > max(t, 0.75)
    if kind == "num_num" and len(nums) >= 2:
        a, b = rng.sample(nums, 2)
        return lambda c: _pos(a, c[a["name"]]) + _pos(b, c[b["name"]]) > 2 * t
    return None


def _levels(params: list[dict[str, Any]]) -> int:
    """Grid points per number fine enough for every parameter, at most about 200,000
    configurations (the optimum is searched on first use: ``like_hidden`` reads the shape
    first, so choosing among hundreds of landscapes costs seconds)."""
    numbers = sum(p["type"] in ("int", "float") for p in params)
    return {1: 129, 2: 65, 3: 33}.get(numbers, 17)


def parse(spec: str) -> list[int]:
    """``A:B`` (indices A..B-1) or a comma list."""
    if ":" in spec:
        a, b = spec.split(":")
        return list(range(int(a), int(b)))
    return [int(x) for x in spec.split(",")]


__all__ = ["HELD_OUT_FROM", "generated", "like_hidden", "parse", "partial"]
