"""The additive model behind model proposals: per-parameter effects, fitted and ranked."""

from __future__ import annotations

import math
import random

import numpy as np
import optuna
import pytest

from autotune.study.additive import FINE_KNOTS, KNOTS, AdditiveModel, candidates, scaled

SPACE = {
    "bs": optuna.distributions.IntDistribution(1, 1024, log=True),
    "mem": optuna.distributions.FloatDistribution(0.5, 0.95, step=0.01),
    "kernel": optuna.distributions.CategoricalDistribution(["a", "b", "c"]),
    "fuse": optuna.distributions.CategoricalDistribution([False, True]),
}


def _rate(c: dict[str, object]) -> float:
    """Separable: more batch and memory help, kernel b is best, fusion adds 10%."""
    bs, mem = int(c["bs"]), float(c["mem"])  # type: ignore[call-overload, arg-type]
    r = (1 + 0.2 * math.log2(bs)) * (1 + (mem - 0.5)) * {"a": 1.0, "b": 1.4, "c": 1.1}[c["kernel"]]  # type: ignore[index]
    return r * (1.1 if c["fuse"] else 1.0)


def test_the_model_ranks_a_separable_objective_and_finds_its_best_corner() -> None:
    rng = random.Random(1)
    seen = [
        {
            "bs": rng.choice([2, 8, 32, 128]),
            "mem": rng.choice([0.5, 0.6, 0.7, 0.8]),
            "kernel": rng.choice("abc"),
            "fuse": rng.random() < 0.5,
        }
        for _ in range(14)
    ]
    model = AdditiveModel(SPACE)
    assert model.fit(seen, [math.log(_rate(c)) for c in seen])
    pool = candidates(SPACE, [max(seen, key=_rate)], rng)
    best = pool[int(model.predict(pool).argmax())]
    # Beyond anything it saw: the largest batch and memory, kernel b, fusion on.
    assert best["kernel"] == "b" and best["fuse"] is True
    assert int(best["bs"]) >= 512 and float(best["mem"]) >= 0.9  # type: ignore[call-overload, arg-type]
    assert _rate(best) > max(_rate(c) for c in seen)


def test_too_few_launches_say_nothing() -> None:
    model = AdditiveModel(SPACE)
    assert not model.fit([{"bs": 1, "mem": 0.5, "kernel": "a", "fuse": False}] * 3, [0.0] * 3)
    with pytest.raises(RuntimeError):
        model.predict([{"bs": 1, "mem": 0.5, "kernel": "a", "fuse": False}])


def test_candidates_stay_on_the_grid_and_within_reach() -> None:
    top = {"bs": 32, "mem": 0.7, "kernel": "a", "fuse": False}
    for c in candidates(SPACE, [top], random.Random(0), n=200, reach=0.25, most=2):
        assert sum(c[k] != top[k] for k in top) <= 2
        assert isinstance(c["bs"], int) and 1 <= c["bs"] <= 1024
        assert round(float(c["mem"]) * 100) == pytest.approx(float(c["mem"]) * 100)  # type: ignore[arg-type]
        for name in ("bs", "mem"):
            assert (
                abs(scaled(SPACE[name], c[name]) - scaled(SPACE[name], top[name])) <= 0.25 + 0.05
            )  # a grid step


def test_the_spread_is_wider_where_the_launches_say_less() -> None:
    """The posterior spread of a prediction: a kernel never launched is less certain than the
    one most launches had; what the spread feeds is expected improvement."""
    from autotune.study.sampler import _expected_improvement

    rng = random.Random(3)
    seen = [
        {
            "bs": rng.choice([2, 8, 32, 128]),
            "mem": rng.choice([0.5, 0.6, 0.7, 0.8]),
            "kernel": "a" if i % 5 else "b",
            "fuse": rng.random() < 0.5,
        }
        for i in range(15)
    ]
    model = AdditiveModel(SPACE)
    assert model.fit(seen, [math.log(_rate(c)) for c in seen])
    a, b, c = ({**seen[1], "kernel": k} for k in "abc")
    spread = model.std([a, b, c])
    assert spread[0] < spread[1] < spread[2]
    # E[max(0, f - ref)], f ~ N(mu, sd): sd * pdf(0) at mu = ref; mu - ref far above it.
    ei = _expected_improvement(np.array([0.0, 5.0, -5.0]), np.array([1.0, 1.0, 1.0]), 0.0)
    assert ei[0] == pytest.approx(1 / math.sqrt(2 * math.pi))
    assert ei[1] == pytest.approx(5.0, abs=1e-5) and 0 < ei[2] < 1e-5


BUFFER = {
    "buf": optuna.distributions.IntDistribution(256, 65536, log=True),
    "bs": optuna.distributions.IntDistribution(1, 1024, log=True),
}


def _peaked(c: dict[str, object]) -> float:
    """log rate: a buffer best at 8 MiB (a quarter of its log range above the middle, between
    the coarse bends at 0 and 0.5), and larger batches help."""
    buf, bs = int(c["buf"]), int(c["bs"])  # type: ignore[call-overload]
    return math.log(
        1 + 0.3 * math.exp(-0.5 * (math.log2(buf / 8192) / 1.5) ** 2)
    ) + 0.1 * math.log2(bs)


def _linear(c: dict[str, object]) -> float:
    return 0.05 * math.log2(int(c["buf"])) + 0.1 * math.log2(int(c["bs"]))  # type: ignore[call-overload]


def _spread(n: int) -> list[dict[str, object]]:
    """``n`` launches evenly across the buffer's log range, the batch size cycling."""
    return [
        {"buf": int(256 * 256 ** (i / (n - 1))), "bs": [1, 8, 64, 512][i % 4]} for i in range(n)
    ]


def _fits(seen: list[dict[str, object]], rate: object) -> list[AdditiveModel]:
    models = [AdditiveModel(BUFFER, k) for k in (KNOTS, FINE_KNOTS)]
    for m in models:
        assert m.fit(seen, [rate(c) for c in seen])  # type: ignore[operator]
    return models


def test_finer_bends_predict_left_out_launches_of_a_peak_between_the_coarse_ones_better() -> None:
    """Launches across a buffer's range: the finer model's leave-one-out error is the
    smaller, and it puts the best buffer near 8 MiB where the coarse one, whose bends are at
    4 and 16 MiB, puts it at 16 MiB."""
    coarse, fine = _fits(_spread(12), _peaked)
    assert fine.loo < coarse.loo
    grid = [{"buf": int(256 * 256 ** (i / 200)), "bs": 64} for i in range(201)]
    tops = [grid[int(m.predict(grid).argmax())]["buf"] for m in (coarse, fine)]
    assert 8192 / 1.5 < tops[1] < 8192 * 1.5  # type: ignore[operator]
    assert not 8192 / 1.5 < tops[0] < 8192 * 1.5  # type: ignore[operator]


def _narrow(c: dict[str, object]) -> float:
    """log rate: a buffer best at 2.6 MiB, between the finer bends at 1.7 and 4 MiB (0.3 and
    0 on its scale), within about an octave of it; larger batches help."""
    buf, bs = int(c["buf"]), int(c["bs"])  # type: ignore[call-overload]
    return math.log(
        1 + 0.3 * math.exp(-0.5 * (math.log2(buf / 2702) / 1.2) ** 2)
    ) + 0.1 * math.log2(bs)


@pytest.mark.parametrize("n", [8, 10, 12, 16])
def test_a_square_term_puts_a_peak_between_two_bends_where_the_bends_alone_put_it_on_one(
    n: int,
) -> None:
    """A piecewise-linear effect is best at a bend or an end of the range, never between:
    on generated landscape 5961 the studies stayed at 2896 (the bend at -0.3) of a number
    whose peak is at 4767. With a square term too, the best buffer it predicts is within 1.3x
    of the true one."""
    seen = _spread(n)
    grid = [{"buf": int(256 * 256 ** (i / 400)), "bs": 64} for i in range(401)]
    bends = [256 * 256 ** ((k + 1) / 2) for k in FINE_KNOTS] + [256, 65536]
    for square in (False, True):
        m = AdditiveModel(BUFFER, FINE_KNOTS, square=square)
        assert m.fit(seen, [_narrow(c) for c in seen])
        top = grid[int(m.predict(grid).argmax())]["buf"]
        on_a_bend = min(abs(math.log(top / b)) for b in bends) < 0.03  # type: ignore[operator]
        assert on_a_bend != square, (square, top)
        if square:
            assert 2702 / 1.3 < top < 2702 * 1.3  # type: ignore[operator]


def test_only_a_number_that_peaks_inside_its_range_is_found_peaked() -> None:
    """The buffer's hill is inside its range, the batch keeps paying to its top: the fitted
    model finds the buffer peaked and not the batch; with no hill, neither."""
    seen = _spread(12)
    for rate, peaked in ((_narrow, {"buf"}), (_linear, set())):
        m = AdditiveModel(BUFFER, FINE_KNOTS)
        assert m.fit(seen, [rate(c) for c in seen])
        assert m.peaked() == peaked


def test_on_a_trend_without_a_peak_the_finer_bends_change_nothing() -> None:
    """Launches of an effect that keeps rising: both models predict left-out launches to
    within a hundredth of the values' variance (neither is clearly better), and both put the
    best buffer at the top of its range."""
    grid = [{"buf": int(256 * 256 ** (i / 200)), "bs": 64} for i in range(201)]
    for n in (8, 12, 16):
        coarse, fine = _fits(_spread(n), _linear)
        spread = float(np.var([_linear(c) for c in _spread(n)]))
        assert max(fine.loo, coarse.loo) < 0.01 * spread
        tops = [grid[int(m.predict(grid).argmax())]["buf"] for m in (coarse, fine)]
        assert tops == [65536, 65536]


def test_slides_move_two_numbers_apart_and_keep_the_sum_of_their_places() -> None:
    top = {"bs": 32, "mem": 0.7, "kernel": "a", "fuse": False}
    plain = candidates(SPACE, [top], random.Random(0), n=0)
    slid = candidates(SPACE, [top], random.Random(0), n=0, slides=(0.2,))
    extra = [c for c in slid if c not in plain]
    assert len(extra) == 2  # bs down and mem up, mem down and bs up
    for c in extra:
        assert c["kernel"] == "a" and c["fuse"] is False
        moves = {n: scaled(SPACE[n], c[n]) - scaled(SPACE[n], top[n]) for n in ("bs", "mem")}
        assert moves["bs"] * moves["mem"] < 0
        assert abs(moves["bs"] + moves["mem"]) <= 0.05  # a grid step of either
        assert {round(abs(m), 1) for m in moves.values()} == {0.2}


def test_slides_only_for_the_pairs_given() -> None:
    space = {**SPACE, "ctx": optuna.distributions.IntDistribution(512, 8192, log=True)}
    top = {"bs": 32, "mem": 0.7, "ctx": 2048, "kernel": "a", "fuse": False}
    plain = candidates(space, [top], random.Random(0), n=0)

    def moved(pairs: list[frozenset[str]] | None) -> set[frozenset[str]]:
        slid = candidates(space, [top], random.Random(0), n=0, slides=(0.2,), pairs=pairs)
        return {frozenset(k for k in top if c[k] != top[k]) for c in slid if c not in plain}

    assert moved(None) == {frozenset(p) for p in (("bs", "mem"), ("bs", "ctx"), ("mem", "ctx"))}
    assert moved([frozenset(("bs", "ctx"))]) == {frozenset(("bs", "ctx"))}
    assert moved([]) == set()


@pytest.mark.parametrize("ridge", [0.03, 0.1, 0.3])
def test_a_smaller_ridge_keeps_more_of_an_effect_one_launch_shows(ridge: float) -> None:
    """A one-at-a-time start: the baseline and each setting moved once, fusion worth +10%.
    The fitted effect of fusion is shrunk toward none by the ridge, less the smaller it is,
    and never past what the launch showed (at 0.3 a quarter of it is left)."""
    base = {"bs": 8, "mem": 0.7, "kernel": "a", "fuse": False}
    moves = [{"bs": 1024}, {"mem": 0.95}, {"kernel": "b"}, {"kernel": "c"}, {"fuse": True}]
    seen = [base] + [{**base, **m} for m in moves]
    values = [math.log(_rate(c)) for c in seen]

    def effect(r: float) -> float:
        model = AdditiveModel(SPACE, ridge=r)
        assert model.fit(seen, values)
        on, off = model.predict([{**base, "fuse": True}, base])
        return float(on - off)

    shown = math.log(1.1)
    assert 0.0 < effect(ridge) < shown
    assert effect(ridge / 3) > effect(ridge) > effect(ridge * 3)


@pytest.mark.parametrize("center", [True, False])
def test_a_value_no_launch_had_is_predicted_as_the_launches_own_mix(center: bool) -> None:
    """Fusion never ran (it crashed): centred, the model predicts it neither better nor worse
    than the launches it has; uncentred, the level fusion off carries part of the offset
    (the other levels and the curves take the rest), and fusion on reads off by it (3% here;
    37% worse on a black box's DP attention, which then no swap tried)."""
    base = {"bs": 8, "mem": 0.7, "kernel": "a", "fuse": False}
    moves = [{"bs": 1024}, {"mem": 0.95}, {"kernel": "b"}, {"kernel": "c"}, {"bs": 64}]
    seen = [base] + [{**base, **m} for m in moves]
    model = AdditiveModel(SPACE, center=center)
    assert model.fit(seen, [math.log(_rate(c)) for c in seen])
    on, off = model.predict([{**base, "fuse": True}, base])
    assert bool(abs(on - off) < 1e-6) == center


@pytest.mark.parametrize("square", [None, "off", "all"])
def test_the_sampler_fits_a_square_term_for_a_number_whose_hill_lies_inside_its_range(
    square: str | None,
) -> None:
    """Launches of a buffer whose hill lies between two bends, with a batch that keeps
    paying: by default (``peaks``) the additive model the proposals come from has a square
    term for the buffer alone; ``off``: for none; ``all``: for both."""
    from autotune.study.sampler import LocalTPESampler

    kw = {} if square is None else {"square": square}
    sampler = LocalTPESampler(optuna.samplers.RandomSampler(seed=0), seed=0, **kw)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for c in _spread(12):
        value = math.exp(_narrow(c))
        study.add_trial(optuna.trial.create_trial(params=c, distributions=BUFFER, value=value))
    fitted = sampler._fit(study, study.best_trial)
    assert fitted is not None
    assert fitted[0].square == {None: {"buf"}, "off": set(), "all": {"buf", "bs"}}[square]
