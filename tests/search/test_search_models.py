"""The search's two models: where crashes lie (``crashes.py``) and what the objective does,
one setting at a time and in pairs (``model.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autotune.search import CrashModel
from autotune.search.model import AdditiveGP
from autotune.search.space import Param, encode

BATCH = Param("batch", (), 1, 1024, True, None, True)
MEM = Param("mem", (), 0.5, 0.95, False, 0.01)
KERNEL = Param("kernel", ("a", "b", "c"))
FLAG = Param("flag", (False, True))
PARAMS = [BATCH, MEM, KERNEL, FLAG]


def run(**kw: object) -> dict[str, object]:
    return {"batch": 16, "mem": 0.6, "kernel": "a", "flag": False, **kw}


def p(model: CrashModel, **kw: object) -> float:
    return float(model.probability(encode(PARAMS, [run(**kw)]))[0])


def test_a_threshold_is_a_ramp_between_the_nearest_run_and_the_crash() -> None:
    launches = [(run(), None), (run(mem=0.7), None), (run(mem=0.9), "oom")]
    model = CrashModel(PARAMS, launches, start=run())
    assert p(model, mem=0.7) < 0.05  # ran
    low, mid, high = p(model, mem=0.75), p(model, mem=0.8), p(model, mem=0.9)
    assert low < mid < high
    assert model.certain(encode(PARAMS, [run(mem=0.95)]))[0]
    assert not model.certain(encode(PARAMS, [run(mem=0.8)]))[0]


def test_crashes_that_failed_alike_are_explained_together() -> None:
    """Kernel b crashed at batch 512 and at 300 with other memory, and kernel a ran at 1024: one
    cause (b with a large batch), so b past both with memory between theirs is certain to
    crash, b at a batch below every crash is less likely to, another kernel unlikely."""
    launches = [
        (run(), None),
        (run(batch=1024), None),
        (run(kernel="b"), None),
        (run(kernel="b", batch=512), "graph"),
        (run(kernel="b", batch=300, mem=0.8), "graph"),
    ]
    model = CrashModel(PARAMS, launches, start=run())
    assert len(model.regions["graph"]) == 1
    assert model.certain(encode(PARAMS, [run(kernel="b", batch=700, mem=0.7)]))[0]
    assert p(model, kernel="b", batch=64) < p(model, kernel="b", batch=256)
    assert p(model, kernel="c", batch=512) < 0.5  # another kernel: not this cause


def test_numbers_that_fill_one_pool_crash_past_a_weighted_sum() -> None:
    """Memory and batch crash together along a diagonal that no single threshold draws: a
    configuration past the weighted sum of the crashes is certain to crash, one under every
    run's is not."""
    launches = [
        (run(), None),
        (run(batch=1024, mem=0.6), None),
        (run(batch=16, mem=0.95), None),
        (run(batch=512, mem=0.9), "oom"),
        (run(batch=1024, mem=0.8), "oom"),
    ]
    model = CrashModel(PARAMS, launches, start=run())
    (group,) = model.regions["oom"]
    assert any(t[1] == "sum" for e in group for t in e.terms)
    assert model.certain(encode(PARAMS, [run(batch=1024, mem=0.92)]))[0]
    assert p(model, batch=256, mem=0.6) < 0.2


def test_a_refusal_is_a_region_too_and_new_pairs_of_moved_values_carry_a_risk() -> None:
    launches = [(run(), None), (run(kernel="b"), None), (run(flag=True), None)]
    model = CrashModel(PARAMS, launches, [(run(kernel="c"), "refused: dead_end")], run())
    assert p(model, kernel="c", flag=True) > 0.3
    # kernel b with the flag: a pair of moved values no run had together, at the study's rate
    assert 0 < p(model, kernel="b", flag=True) == pytest.approx(model.novel_rate)
    assert p(model, kernel="b") == 0.0  # ran
    crashy = CrashModel(PARAMS, [*launches, (run(kernel="b", flag=True), "x")], start=run())
    assert crashy.novel_rate > model.novel_rate  # new pairs crashed here: likelier


def test_the_model_of_the_objective_learns_a_pair_and_ignores_a_setting_that_does_nothing() -> None:
    """The flag pays only with kernel c; the batch does nothing. The pair is predicted where
    no launch had it alone more nearly than by the sum of each one's own effect."""
    rng = np.random.default_rng(0)
    configs, y = [], []
    for _ in range(40):
        c = run(
            kernel=["a", "b", "c"][rng.integers(3)],
            flag=bool(rng.integers(2)),
            batch=int(2 ** rng.integers(0, 11)),
            mem=round(float(rng.uniform(0.5, 0.95)), 2),
        )
        v = 1.0 + 0.3 * (c["mem"] - 0.5) + (0.3 if c["kernel"] == "c" and c["flag"] else 0.0)
        configs.append(c)
        y.append(math.log(v))
    numeric = np.array([q.numeric for q in PARAMS])
    gp = AdditiveGP(encode(PARAMS, configs), np.array(y), numeric)
    weights = dict(zip(["batch", "mem", "kernel", "flag"], gp.weights, strict=True))
    assert weights["batch"] < weights["mem"] and weights["batch"] < weights["kernel"]
    mean, sd = gp.predict(encode(PARAMS, [run(kernel="c", flag=True), run(kernel="a", flag=True)]))
    assert mean[0] - mean[1] > 0.15  # the pair's own gain (log 1.3 = 0.26 over the same mem)
    assert (sd > 0).all()


def test_the_fit_follows_the_exact_gradient_of_every_hyperparameter() -> None:
    """The gradient the fit climbs is the loss's own, the pairs' share included (a wrong
    one leaves that share at its prior)."""
    rng = np.random.default_rng(3)
    configs = [
        run(
            batch=int(rng.integers(1, 1024)),
            mem=round(float(rng.uniform(0.5, 0.95)), 2),
            kernel=str(rng.choice(["a", "b", "c"])),
            flag=bool(rng.integers(2)),
        )
        for _ in range(12)
    ]
    x = encode(PARAMS, configs)
    y = rng.normal(size=len(configs)) + 2.0 * (x[:, 2] == 1) * x[:, 3]
    gp = AdditiveGP(x, y, np.array([p.numeric for p in PARAMS]))
    theta = np.array([-1.0, -0.5, 0.2, -2.0, -0.7, -2.5])
    _, grad = gp._loss(theta)
    for i in range(len(theta)):
        step = np.zeros_like(theta)
        step[i] = 1e-5
        numeric = (gp._loss(theta + step)[0] - gp._loss(theta - step)[0]) / 2e-5
        assert grad[i] == pytest.approx(numeric, rel=1e-3, abs=1e-5), i
