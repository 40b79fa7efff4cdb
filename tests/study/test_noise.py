"""The gain interval: Student's t, the noise model, and calibration on synthetic launches."""

from __future__ import annotations

import math
import random

import pytest

from autotune.study.noise import (
    Gain,
    NoiseModel,
    better,
    blocked_gain,
    blocked_log_ratio,
    gain,
    launch_value,
    t_quantile,
)


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 1, 12.7062),
        (0.975, 4, 2.7764),
        (0.975, 10, 2.2281),
        (0.995, 3, 5.8409),
        (0.9, 30, 1.3104),
        (0.025, 4, -2.7764),
    ],
)
def test_t_quantile_matches_published_tables(p: float, df: float, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=2e-4)


def _launches(n: int, ratio: float, noise: float, rng: random.Random) -> list[float]:
    return [1000.0 * ratio * math.exp(rng.gauss(0.0, noise)) for _ in range(n)]


def test_null_interval_covers_zero_about_95_percent_with_8pct_launch_noise() -> None:
    reps = 800
    rng = random.Random(7)
    cover = 0
    for _ in range(reps):
        g = gain(_launches(4, 1.0, 0.08, rng), _launches(4, 1.0, 0.08, rng), "maximize")
        cover += g.ci95_pct[0] <= 0.0 <= g.ci95_pct[1]
    assert 0.92 <= cover / reps <= 0.985


def test_a_real_3x_gain_is_significant_with_three_launches_a_side() -> None:
    rng = random.Random(3)
    for _ in range(50):
        g = gain(_launches(3, 1.0, 0.08, rng), _launches(3, 3.0, 0.08, rng), "maximize")
        assert g.significant and g.ci95_pct[0] > 50.0


def test_minimize_flips_the_sign_so_a_lower_latency_is_a_gain() -> None:
    g = gain([100.0, 102.0, 98.0], [50.0, 51.0, 49.0], "minimize")
    assert g.pct == pytest.approx(50.0, abs=1.0) and g.significant
    lo, hi = g.ci95_pct
    assert lo < g.pct < hi


def test_one_launch_a_side_is_never_significant() -> None:
    g = gain([100.0], [300.0], "maximize")
    assert not g.significant and g.ci95_pct[1] == math.inf
    assert g.model_dump(mode="json")["ci95_pct"] == [-100.0, None]


def test_one_launch_a_side_says_there_is_no_interval_in_words() -> None:
    g = gain([100.0], [213.0], "maximize")
    text = g.sentence()  # not "no configuration beat the baseline: +113%", a contradiction
    assert text.startswith("too few launches to tell from noise: +113.0% (1 vs 1 launches")
    assert "inf" not in text
    assert "no interval: 1 vs 1 launches" in g.interval_text()


def test_one_side_with_one_launch_borrows_the_other_sides_spread() -> None:
    g = gain([100.0, 104.0, 96.0, 101.0], [300.0], "maximize")
    assert g.significant and math.isfinite(g.ci95_pct[1])


def test_bonferroni_widens_the_interval_with_more_candidates() -> None:
    b, c = [100.0, 104.0, 97.0], [108.0, 112.0, 105.0]
    one, three = gain(b, c, "maximize"), gain(b, c, "maximize", candidates=3)
    assert three.ci95_pct[0] < one.ci95_pct[0] and three.ci95_pct[1] > one.ci95_pct[1]
    assert three.level == pytest.approx(1 - 0.05 / 3)


def test_json_round_trip_and_the_status_shape() -> None:
    g = gain([100.0, 104.0, 96.0], [150.0, 149.0, 155.0], "maximize")
    data = g.model_dump(mode="json")
    assert set(data) >= {"pct", "ci95_pct", "significant", "launches"}
    assert data["launches"] == {"baseline": 3, "best": 3}
    back = Gain.model_validate(data)
    assert back.significant and back.pct == pytest.approx(g.pct, abs=1e-3)


def test_sentence_says_no_gain_in_plain_words() -> None:
    g = gain([100.0, 108.0, 93.0], [104.0, 97.0, 110.0], "maximize")
    assert not g.significant
    assert g.sentence().startswith("no configuration beat the baseline beyond noise")


def test_non_positive_values_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        gain([0.0, 1.0], [1.0, 2.0], "maximize")


def test_noise_model_separates_launch_and_window_spread() -> None:
    rng = random.Random(1)
    groups = []
    for _ in range(3):  # three configurations, four launches each, eight windows each
        launches = []
        for _ in range(4):
            level = 1000.0 * math.exp(rng.gauss(0.0, 0.08))
            launches.append([level * math.exp(rng.gauss(0.0, 0.01)) for _ in range(8)])
        groups.append(launches)
    model = NoiseModel.from_launches(groups)
    assert model.launches == 12 and model.windows == 96
    assert model.launch_cv is not None and 0.04 < model.launch_cv < 0.14
    assert model.window_cv is not None and 0.006 < model.window_cv < 0.016
    small = model.detectable_pct(3, 3)
    large = model.detectable_pct(8, 8)
    assert small is not None and large is not None and small > large > 0


def test_noise_model_without_repeats_knows_nothing() -> None:
    model = NoiseModel.from_launches([[[100.0]], [[120.0]]])
    assert model.launch_cv is None and model.detectable_pct(3, 3) is None


def test_launch_value_is_the_median_of_windows() -> None:
    assert launch_value([10.0, 100.0, 101.0]) == 100.0


def test_better_needs_a_clear_separation() -> None:
    assert better([200.0, 205.0, 198.0], [100.0, 101.0, 99.0], "maximize", 0.95)
    assert not better([101.0, 99.0, 103.0], [100.0, 101.0, 99.0], "maximize", 0.95)
    assert better([50.0, 51.0, 49.0], [100.0, 101.0, 99.0], "minimize", 0.95)


def test_a_gain_within_rounds_stands_out_of_a_drift_that_hides_it_across_launches() -> None:
    # The baseline rises 15% a round (a machine warming up); the candidate measures 4-6% above
    # it in every round. Across launches the drift is the spread; within rounds it cancels.
    base = [100.0, 115.0, 132.0]
    best = [105.0, 120.8, 137.3]
    assert not gain(base, best, "maximize").significant
    rounds = {
        r + 1: {"baseline": b, "A": c} for r, (b, c) in enumerate(zip(base, best, strict=True))
    }
    g = blocked_gain(rounds, "baseline", "A", "maximize")
    assert g is not None and g.significant and 4 < g.pct < 6 and g.launches.best == 3
    assert g.method != gain(base, best, "maximize").method


def test_rounds_as_blocks_pool_the_noise_of_every_configuration_measured_in_them() -> None:
    rounds = {1: {"baseline": 100.0, "A": 104.0}, 2: {"baseline": 101.0, "A": 103.0}}
    pair = blocked_log_ratio(rounds, "baseline", "A")
    assert pair is not None and pair[3] == 2
    # A third configuration in both rounds adds degrees of freedom: a narrower interval.
    wider = {
        r: {**row, "B": row["baseline"] * (1.01 if r == 1 else 0.99)} for r, row in rounds.items()
    }
    three = blocked_log_ratio(wider, "baseline", "A")
    assert three is not None and three[0] == pytest.approx(pair[0])
    assert three[2] - three[1] < pair[2] - pair[1]
    # Fewer than two rounds holding both: no blocked interval.
    assert (
        blocked_log_ratio({1: {"baseline": 100.0, "A": 104.0}, 2: {"A": 1.0}}, "baseline", "A")
        is None
    )


def test_a_blocked_gain_ignores_a_third_configuration_that_measured_nothing() -> None:
    rounds = {r: {"baseline": 100.0 + r, "A": 110.0 + r, "B": 0.0} for r in (1, 2, 3)}
    g = blocked_gain(rounds, "baseline", "A", "maximize")
    assert g is not None and g.significant
    with pytest.raises(ValueError, match="positive"):
        blocked_gain(rounds, "baseline", "B", "maximize")
