"""TPE with local moves: some proposals are the best configuration with a value or two moved."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import optuna
import pytest
from pytest import approx

from autotune.study.sampler import EDGE_RISK, LocalTPESampler
from autotune.study.swaps import CHOICE_FLOOR, CHOICE_RISK, SWAP_RISK

SPACE = {
    "a": optuna.distributions.IntDistribution(1, 1024, log=True),
    "b": optuna.distributions.FloatDistribution(0.0, 1.0),
    "c": optuna.distributions.CategoricalDistribution(["x", "y", "z"]),
}


def _ask(study: optuna.Study) -> dict[str, object]:
    trial = study.ask()
    return {
        "a": trial.suggest_int("a", 1, 1024, log=True),
        "b": trial.suggest_float("b", 0.0, 1.0),
        "c": trial.suggest_categorical("c", ["x", "y", "z"]),
    }


def _study(local: float, model: float = 0.0, **kw: Any) -> optuna.Study:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        tpe = optuna.samplers.TPESampler(seed=0, n_startup_trials=5, multivariate=True)
    study = optuna.create_study(
        direction="maximize",
        sampler=LocalTPESampler(tpe, local=local, model=model, design=0, after=4, seed=0, **kw),
    )
    best = {"a": 64, "b": 0.5, "c": "y"}
    study.add_trial(optuna.trial.create_trial(params=best, distributions=SPACE, value=10.0))
    for i in range(4):
        params = {"a": 2 + i, "b": 0.1 * i, "c": "x"}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=SPACE, value=1.0))
    return study


BASE = {"a": 16, "b": 0.3, "c": "x"}


def _start_sampler(**kw: Any) -> LocalTPESampler:
    """Only the one-at-a-time start, then random draws (no local moves, no model)."""
    return LocalTPESampler(
        optuna.samplers.RandomSampler(seed=0), local=0.0, model=0.0, seed=0, **kw
    )


def _model_sampler(**kw: Any) -> LocalTPESampler:
    """Every proposal the additive model's, from the fourth complete trial on."""
    return LocalTPESampler(
        optuna.samplers.RandomSampler(seed=0), local=0.0, model=1.0, design=0, after=4, seed=0, **kw
    )


def _after_baseline(
    sampler: LocalTPESampler,
    params: dict[str, object],
    distributions: dict[str, optuna.distributions.BaseDistribution] = SPACE,
) -> optuna.Study:
    """A study on ``sampler`` in which the baseline ``params`` ran."""
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.add_trial(
        optuna.trial.create_trial(
            params=params,
            distributions={n: distributions[n] for n in params},
            value=1.0,
            user_attrs={"baseline": True},
        )
    )
    return study


def _design_study(design: int) -> optuna.Study:
    """A study whose sampler makes ``design`` one-at-a-time launches from ``BASE``, run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        tpe = optuna.samplers.TPESampler(seed=0, n_startup_trials=5, multivariate=True)
    return _after_baseline(LocalTPESampler(tpe, local=0.0, model=0.0, design=design, seed=0), BASE)


def test_local_moves_change_one_or_two_values_of_the_best() -> None:
    study = _study(local=1.0)
    best = {"a": 64, "b": 0.5, "c": "y"}
    for _ in range(20):
        config = _ask(study)
        changed = [k for k in best if config[k] != best[k]]
        assert 1 <= len(changed) <= 2, config
        if "a" in changed:  # a small step on a log scale, not a jump across the range
            assert 8 <= int(config["a"]) <= 512  # type: ignore[call-overload]


@pytest.mark.parametrize("local_risk", [0.5, 1.0])
def test_a_local_move_the_crash_model_gives_an_even_chance_of_crashing_is_drawn_again(
    local_risk: float,
) -> None:
    """Above a = 64 the crash model says 0.9: such a move is drawn again (local moves used to
    be the one kind of proposal launched whatever the crash model said); with ``local_risk``
    1.0 it is not, and some moves go there."""
    study = _study(local=1.0, local_risk=local_risk)
    sampler = study.sampler
    assert isinstance(sampler, LocalTPESampler)
    sampler.crash_risk = lambda c: 0.9 if int(c["a"]) > 64 else 0.0
    configs = [_ask(study) for _ in range(30)]
    risky = [c for c in configs if int(c["a"]) > 64]  # type: ignore[call-overload]
    if local_risk < 1.0:
        assert not risky
        assert any(int(c["a"]) < 64 for c in configs)  # a itself still moves
    else:
        assert risky


def test_without_local_moves_it_is_tpe() -> None:
    study = _study(local=0.0)
    configs = [_ask(study) for _ in range(10)]
    near = [
        c for c in configs if sum(c[k] != v for k, v in {"a": 64, "b": 0.5, "c": "y"}.items()) <= 2
    ]
    assert len(near) < 10


def test_an_enqueued_trial_is_never_moved() -> None:
    study = _study(local=1.0)
    study.enqueue_trial({"a": 3, "b": 0.9, "c": "z"})
    assert _ask(study) == {"a": 3, "b": 0.9, "c": "z"}


def test_each_trial_keeps_the_kind_of_proposal_that_made_it() -> None:
    """The design's launches say so, then local moves, and a trial the sampler left to TPE
    says tpe; an enqueued trial (the baseline, a relaunch) is not the sampler's and has none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        tpe = optuna.samplers.TPESampler(seed=0, n_startup_trials=5, multivariate=True)
    study = _after_baseline(
        LocalTPESampler(tpe, local=0.5, model=0.0, design=3, after=1, seed=0), BASE
    )
    study.enqueue_trial({"a": 3, "b": 0.9, "c": "z"})
    for i in range(14):
        _ask(study)
        study.tell(study.trials[-1].number, 1.0 + i)
    kinds = [t.user_attrs.get("proposed_by") for t in study.trials]
    assert kinds[:5] == [None, None, "design", "design", "design"]
    assert set(kinds[5:]) == {"local", "tpe"}
    local = [t for t in study.trials[5:] if t.user_attrs["proposed_by"] == "local"]
    for t in local:  # a local move is one or two values of the best one moved
        best = max((u for u in study.trials if u.number < t.number), key=lambda u: u.value or 0)
        assert 1 <= sum(t.params[k] != best.params[k] for k in SPACE) <= 2


@pytest.mark.parametrize("endgame", [6, 0])
def test_the_last_launches_of_the_budget_leave_tpe_nothing(endgame: int) -> None:
    """In the budget's last ``endgame`` launches what would be TPE's draws are local moves
    (with no model share here); before them, and with no endgame, TPE still draws."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        tpe = optuna.samplers.TPESampler(seed=0, n_startup_trials=5, multivariate=True)
    sampler = LocalTPESampler(tpe, local=0.3, model=0.0, design=0, after=1, endgame=endgame)
    study = _after_baseline(sampler, BASE)
    kinds = []
    for i in range(24):
        sampler.left = 24 - i  # as the driver says before each ask
        _ask(study)
        study.tell(study.trials[-1].number, 1.0 + i % 5)
        kinds.append(study.trials[-1].user_attrs["proposed_by"])
    assert "tpe" in kinds[:18]
    if endgame:
        assert set(kinds[18:]) == {"local"}
    else:
        assert "tpe" in kinds[18:]


def test_the_design_moves_one_value_of_the_baseline_to_a_range_end_per_trial() -> None:
    study = _design_study(5)
    base = BASE
    configs = [_ask(study) for _ in range(5)]
    # First pass: each value to its far end (16 is nearer 1 than 1024 on the log scale; 0.3
    # nearer 0), a categorical to another choice; then its last choice, then the near ends.
    assert configs == [
        {**base, "a": 1024},
        {**base, "b": 1.0},
        {**base, "c": "y"},
        {**base, "c": "z"},
        {**base, "a": 1},
    ]


def test_the_whole_design_moves_every_value_once_and_tries_every_choice() -> None:
    """``design=-1`` (the default): each parameter once, then every other choice of each
    categorical, and no more; then it is another strategy's turn."""
    study = _design_study(-1)
    configs = [_ask(study) for _ in range(5)]
    assert configs[:4] == [
        {**BASE, "a": 1024},
        {**BASE, "b": 1.0},
        {**BASE, "c": "y"},
        {**BASE, "c": "z"},
    ]
    assert configs[4] != {**BASE, "a": 1}  # the near ends are not part of it


def test_a_number_whose_far_end_read_no_better_is_also_tried_half_way() -> None:
    """The two ends of a buffer size can read alike while its best lies inside: a number
    whose far end ran no better than the baseline is tried half-way there too (``mid``).
    One whose far end paid (``a``) is not: its trend is plain and the model follows it."""
    sampler = LocalTPESampler(
        optuna.samplers.RandomSampler(seed=0), local=0.0, model=0.0, design=-1, seed=0
    )
    study = _after_baseline(sampler, BASE)
    for value in (2.0, 1.0, 0.8, 0.9):  # a far: better; b far: as the baseline; c: worse
        _ask(study)
        study.tell(study.trials[-1].number, value)
    assert [study.trials[n].params for n in range(1, 5)] == [
        {**BASE, "a": 1024},
        {**BASE, "b": 1.0},
        {**BASE, "c": "y"},
        {**BASE, "c": "z"},
    ]
    half = _ask(study)
    assert half["b"] == pytest.approx(0.65) and {**half, "b": 0.3} == BASE
    study.tell(study.trials[-1].number, 1.5)
    after = _ask(study)  # the design is over: a is not tried half-way
    assert sampler._design.left == 0 and {**after, "a": 16} != BASE


def _partial_study(unset: bool = True) -> optuna.Study:
    """A study whose baseline names ``a`` and ``c`` and leaves ``b`` to the engine."""
    sampler = _start_sampler(unset=unset)
    sampler.space = SPACE  # what the driver sets: every parameter a configuration names
    return _after_baseline(sampler, {"a": 16, "c": "x"})


def test_a_partial_baseline_is_launched_with_reference_values_then_each_setting_moved() -> None:
    """The design's first launch gives the setting the baseline leaves unset a reference
    value (a float's middle); every move starts from there and the unset one is moved too."""
    study = _partial_study()
    ref = {"a": 16, "b": 0.5, "c": "x"}
    configs = [_ask(study) for _ in range(5)]
    assert configs == [
        ref,
        {**ref, "a": 1024},
        {**ref, "c": "y"},
        {**ref, "b": 1.0},  # 0.5 is the middle: the far end is the high one
        {**ref, "c": "z"},
    ]
    # Without it (``unset=False``) the unset setting is a fresh draw in every design launch.
    study = _partial_study(unset=False)
    drawn = {_ask(study)["b"] for _ in range(3)}
    assert len(drawn) == 3


def test_an_empty_baseline_starts_from_every_setting_at_its_reference_value() -> None:
    """``baseline: {}`` (the engine's defaults) names nothing to move from: the start is the
    reference configuration, then each setting moved from it."""
    sampler = _start_sampler()
    sampler.space = SPACE
    study = _after_baseline(sampler, {})
    ref = {"a": 32, "b": 0.5, "c": "x"}
    assert [_ask(study) for _ in range(3)] == [ref, {**ref, "a": 1024}, {**ref, "b": 1.0}]


def test_a_centred_start_moves_every_setting_from_its_reference_value() -> None:
    """``center`` (measured, off): the start ignores the baseline's values and moves each
    setting from the middle of the space."""
    sampler = _start_sampler(center=True)
    sampler.space = SPACE
    study = _after_baseline(sampler, BASE)
    ref = {"a": 32, "b": 0.5, "c": "x"}
    assert [_ask(study) for _ in range(3)] == [ref, {**ref, "a": 1024}, {**ref, "b": 1.0}]


def test_a_reference_launch_that_crashed_ends_the_start() -> None:
    """Every move from the reference would share its values, the crash's cause with them: the
    start goes on from a reference that served, and ends at one that crashed."""
    ref = {"a": 16, "b": 0.5, "c": "x"}
    moves = [{**ref, "a": 1024}, {**ref, "c": "y"}, {**ref, "b": 1.0}, {**ref, "c": "z"}]
    served = _partial_study()
    served.add_trial(optuna.trial.create_trial(params=ref, distributions=SPACE, value=1.0))
    assert _ask(served) == moves[0]
    crashed = _partial_study()
    crashed.add_trial(
        optuna.trial.create_trial(
            state=optuna.trial.TrialState.PRUNED,
            params=ref,
            distributions=SPACE,
            constraints={"crash": 1.0},
        )
    )
    assert not [c for c in (_ask(crashed) for _ in range(4)) if c in moves]


def test_reference_values_sit_in_the_middle_of_a_range_on_its_scale_and_grid() -> None:
    from autotune.study.design import reference as _reference

    assert _reference(optuna.distributions.IntDistribution(1, 1024, log=True)) == 32
    assert _reference(optuna.distributions.IntDistribution(64, 512, step=32)) == 288
    assert _reference(optuna.distributions.FloatDistribution(0.4, 0.7, step=0.05)) == approx(0.55)
    assert _reference(optuna.distributions.CategoricalDistribution(["LL", "Simple"])) == "LL"


def test_the_design_starts_while_the_baseline_is_still_running() -> None:
    """With several nodes the second launch is asked for before the baseline has a result:
    it is already the design's, not a random draw."""
    study = optuna.create_study(direction="maximize", sampler=_start_sampler())
    study.enqueue_trial(BASE, user_attrs={"baseline": True})
    baseline = _ask(study)  # running: asked, not told
    assert baseline == BASE
    assert _ask(study) == {**BASE, "a": 1024}


def test_moves_start_from_the_best_configuration_that_names_every_setting() -> None:
    """A partial baseline that stays the best is no place for a local move (the unset setting
    has no value to move): moves start from the best configuration that sets it."""
    study = _partial_study()
    study.sampler._design.left = 0  # type: ignore[attr-defined]
    study.sampler._local = 1.0  # type: ignore[attr-defined]
    study.sampler._after = 4  # type: ignore[attr-defined]
    best_full = {"a": 64, "b": 0.5, "c": "y"}
    study.add_trial(optuna.trial.create_trial(params=best_full, distributions=SPACE, value=0.9))
    for i in range(4):
        params = {"a": 2 + i, "b": 0.1 * i, "c": "x"}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=SPACE, value=0.5))
    for _ in range(10):
        config = _ask(study)
        assert 1 <= sum(config[k] != v for k, v in best_full.items()) <= 2, config


def test_the_whole_design_stops_at_its_most_launches() -> None:
    """A categorical of twelve choices would make the whole design 12 launches: it stops at
    ``DESIGN_MOST`` (8), and the ninth proposal is another strategy's."""
    from autotune.study.design import DESIGN_MOST

    choices = [f"k{i}" for i in range(12)]
    space = {
        "a": optuna.distributions.IntDistribution(1, 1024, log=True),
        "k": optuna.distributions.CategoricalDistribution(choices),
    }
    base = {"a": 16, "k": "k0"}
    study = _after_baseline(_start_sampler(design=-1), base, space)

    def ask() -> dict[str, object]:
        t = study.ask()
        config = {
            "a": t.suggest_int("a", 1, 1024, log=True),
            "k": t.suggest_categorical("k", choices),
        }
        study.tell(t, 1.0)
        return config

    design = [ask() for _ in range(DESIGN_MOST)]
    assert design == [{**base, "a": 1024}] + [{**base, "k": c} for c in choices[1:DESIGN_MOST]]
    assert ask() not in [{**base, "k": c} for c in choices[DESIGN_MOST:]]


def test_model_proposals_rank_by_expected_improvement() -> None:
    """Against the predicted value alone, expected improvement prefers a less certain
    candidate: here a batch beyond every launch of y over one between them."""
    from autotune.study.additive import AdditiveModel

    space = {
        "a": optuna.distributions.IntDistribution(1, 8),
        "c": optuna.distributions.CategoricalDistribution(["x", "y", "z"]),
    }
    runs = [({"a": a, "c": "x"}, 10.0 * (1.1 if a % 2 else 0.9)) for a in range(1, 9)]
    runs += [({"a": a, "c": "y"}, 9.9 * (1.1 if a % 2 else 0.9)) for a in range(1, 5)]
    runs += [({"a": 1, "c": "z"}, 8.0)]

    def pick(ei: bool) -> dict[str, object]:
        # the ridge this case was built on: at the default's the model fits the alternating
        # values so closely that expected improvement and value agree
        sampler = _model_sampler(ei=ei, ridge=0.3)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        for params, value in runs:
            study.add_trial(
                optuna.trial.create_trial(params=params, distributions=space, value=value)
            )
        t = study.ask()
        return {"a": t.suggest_int("a", 1, 8), "c": t.suggest_categorical("c", ["x", "y", "z"])}

    by_ei, by_value = pick(True), pick(False)
    model = AdditiveModel(space, ridge=0.3)
    assert model.fit([p for p, _ in runs], [math.log(v) for _, v in runs])
    assert by_ei != by_value
    assert model.std([by_ei])[0] > model.std([by_value])[0]
    assert model.predict([by_value])[0] >= model.predict([by_ei])[0]


def test_the_design_skips_what_a_resumed_study_launched_and_counts_it() -> None:
    study = _design_study(2)
    base = BASE
    launched = {**base, "a": 1024}  # the design's first launch, made before a restart
    study.add_trial(optuna.trial.create_trial(params=launched, distributions=SPACE, value=2.0))
    assert _ask(study) == {**base, "b": 1.0}
    third = _ask(study)  # the design's two launches are made: TPE's turn
    assert third not in ({**base, "c": "y"}, launched)


def test_a_model_proposal_pushes_every_value_where_it_paid_short_of_a_refusal() -> None:
    """The additive model's proposal: the values that paid, together, at the ends the runs
    point to, never one the crash model refuses and never one launched before."""

    def rate(c: dict[str, object]) -> float:
        a, b = int(c["a"]), float(c["b"])  # type: ignore[call-overload, arg-type]
        return (1 + 0.2 * math.log2(a)) * (1 + b) * {"x": 1.0, "y": 1.1, "z": 1.5}[str(c["c"])]

    sampler = LocalTPESampler(
        optuna.samplers.RandomSampler(seed=0), local=0.0, model=1.0, design=0, after=4, seed=0
    )
    sampler.refused = lambda config: int(config["a"]) >= 512
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for a, b, c in [(2, 0.2, "x"), (8, 0.4, "y"), (32, 0.3, "z"), (4, 0.7, "z"), (16, 0.6, "x")]:
        params = {"a": a, "b": b, "c": c}
        study.add_trial(
            optuna.trial.create_trial(params=params, distributions=SPACE, value=rate(params))
        )
    earlier = [t.params for t in study.trials]
    for _ in range(3):
        config = _ask(study)
        assert config not in earlier and int(config["a"]) < 512  # type: ignore[call-overload]
        assert config["c"] == "z" and float(config["b"]) >= 0.9  # type: ignore[arg-type]
        assert int(config["a"]) >= 64  # type: ignore[call-overload]
        study.tell(study.trials[-1].number, rate(config))
        earlier.append(config)


def test_a_model_proposal_minimizes_where_the_objective_is_minimized() -> None:
    def latency(c: dict[str, object]) -> float:
        a, b = int(c["a"]), float(c["b"])  # type: ignore[call-overload, arg-type]
        return 100.0 / ((1 + 0.2 * math.log2(a)) * (1 + b))

    sampler = LocalTPESampler(
        optuna.samplers.RandomSampler(seed=0), local=0.0, model=1.0, design=0, after=4, seed=0
    )
    study = optuna.create_study(direction="minimize", sampler=sampler)
    for a, b in [(2, 0.2), (8, 0.4), (32, 0.3), (4, 0.7), (16, 0.6)]:
        params = {"a": a, "b": b, "c": "x"}
        study.add_trial(
            optuna.trial.create_trial(params=params, distributions=SPACE, value=latency(params))
        )
    config = _ask(study)
    assert latency(config) < min(t.value for t in study.trials if t.value is not None)


def test_a_model_proposal_learns_from_what_pruned_trials_read() -> None:
    """The one-at-a-time start's worse settings are mostly stopped by the pruner after a
    window: what they read is the only word on those settings, and the model uses it."""
    sampler = LocalTPESampler(
        optuna.samplers.RandomSampler(seed=0), local=0.0, model=1.0, design=0, after=4, seed=0
    )
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for a in (2, 4, 8, 16, 32):  # complete trials all at b = 0.5
        params = {"a": a, "b": 0.5, "c": "x"}
        study.add_trial(
            optuna.trial.create_trial(
                params=params, distributions=SPACE, value=1 + 0.2 * math.log2(a)
            )
        )
    for a in (4, 16):  # b = 0 read far worse in its first window, and was stopped
        study.add_trial(
            optuna.trial.create_trial(
                params={"a": a, "b": 0.0, "c": "x"},
                distributions=SPACE,
                state=optuna.trial.TrialState.PRUNED,
                intermediate_values={0: 0.5 * (1 + 0.2 * math.log2(a))},
            )
        )
    config = _ask(study)
    assert float(config["b"]) >= 0.9  # type: ignore[arg-type]


def test_a_gain_floor_leaves_a_proposal_the_model_thinks_too_small_to_tpe() -> None:
    """``gain`` (measured, off by default): no model proposal when its predicted gain over the
    best is under the floor; the trial is the inner sampler's."""
    for gain, modelled in [(0.0, True), (10.0, False)]:
        sampler = _model_sampler(gain=gain)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        for a, b in [(2, 0.2), (8, 0.4), (32, 0.3), (4, 0.7), (16, 0.6)]:
            params = {"a": a, "b": b, "c": "x"}
            value = (1 + 0.2 * math.log2(a)) * (1 + b)
            study.add_trial(
                optuna.trial.create_trial(params=params, distributions=SPACE, value=value)
            )
        trial = study.ask()
        assert (trial.number in sampler._moves) is modelled


def _swap_study(sampler: LocalTPESampler) -> optuna.Study:
    """A study whose best configuration runs ``c=y`` at a large ``a``; ``z`` is better than
    ``y`` wherever both ran and ``x`` much worse."""

    def rate(a: int, b: float, c: str) -> float:
        return (1 + 0.2 * math.log2(a)) * (1 + b) * {"x": 0.5, "y": 1.0, "z": 1.1}[c]

    study = optuna.create_study(direction="maximize", sampler=sampler)
    for a, b, c in [(512, 0.5, "y"), (4, 0.5, "z"), (4, 0.5, "y"), (8, 0.4, "x"), (2, 0.3, "z")]:
        params = {"a": a, "b": b, "c": c}
        study.add_trial(
            optuna.trial.create_trial(params=params, distributions=SPACE, value=rate(a, b, c))
        )
    return study


def _swap_sampler(
    swap: int = 5, retry: bool = True, risk: float = SWAP_RISK, **more: Any
) -> LocalTPESampler:
    """Only swaps (from the fifth complete trial on), then random draws."""
    return LocalTPESampler(
        optuna.samplers.RandomSampler(seed=0),
        local=0.0,
        model=0.0,
        design=0,
        swap=swap,
        retry=retry,
        swap_risk=risk,
        seed=0,
        **more,
    )


def _crash_last(study: optuna.Study) -> None:
    """Tell the last asked trial as a crash, as the driver does."""
    trial = optuna.Trial(study, study.trials[-1]._trial_id)
    trial.set_constraint("crash", 1.0)
    study.tell(trial, state=optuna.trial.TrialState.PRUNED)


def test_a_swap_tries_another_choice_at_the_best_configuration() -> None:
    """A choice judged only at other settings (``z`` never ran at a large ``a``) is tried at
    the best configuration's; one the additive model calls clearly worse (``x``) is not."""
    study = _swap_study(_swap_sampler())
    assert _ask(study) == {"a": 512, "b": 0.5, "c": "z"}
    study.tell(study.trials[-1].number, 1.0)
    assert {"a": 512, "b": 0.5, "c": "x"} not in [_ask(study) for _ in range(3)]
    assert _ask(_swap_study(_swap_sampler(swap=0))) != {"a": 512, "b": 0.5, "c": "z"}


@pytest.mark.parametrize(
    ("cause", "at", "retest", "retested"),
    [
        ("cuda_graph_capture", 512, True, True),
        ("arch_unsupported", 512, True, False),
        ("cuda_graph_capture", 256, True, False),
        ("cuda_graph_capture", 512, False, False),
    ],
)
def test_a_choice_that_crashed_once_at_the_baseline_is_retested_at_the_best(
    cause: str, at: int, retest: bool, retested: bool
) -> None:
    """``z``'s one launch crashed with everything else at the baseline's values (a=512), and
    the crash model refuses ``z`` everywhere: the swap round launches the best configuration
    (a=64) with ``z`` as it is, once, as a retest the driver does not screen. Not where the
    crash said the value itself is never valid (no kernel for this GPU), nor where it came
    with another ``a`` (the crash model knows that company), nor without ``retest``."""
    sampler = _swap_sampler(retest=retest)
    sampler.refused = lambda c: c["c"] == "z"
    sampler.crash_share = lambda c: 1.0 if c["c"] == "z" else 0.0
    study = optuna.create_study(direction="maximize", sampler=sampler)
    runs = [(512, 0.5, "y", 2.0), (4, 0.5, "y", 1.5), (8, 0.4, "x", 0.8), (2, 0.3, "y", 1.2)]
    for a, b, c, value in [*runs, (64, 0.5, "y", 3.0)]:
        params = {"a": a, "b": b, "c": c}
        first = {"baseline": True} if a == 512 else {}
        study.add_trial(
            optuna.trial.create_trial(
                params=params, distributions=SPACE, value=value, user_attrs=first
            )
        )
    study.add_trial(
        optuna.trial.create_trial(
            params={"a": at, "b": 0.5, "c": "z"},
            distributions=SPACE,
            state=optuna.trial.TrialState.PRUNED,
            constraints={"crash": 1.0},
            user_attrs={"cause": cause},
        )
    )
    config = _ask(study)
    assert (config == {"a": 64, "b": 0.5, "c": "z"}) is retested
    assert (study.trials[-1].user_attrs.get("proposed_by") == "retest") is retested


def test_a_refused_swap_moves_one_number_the_least_way_out_of_the_crash() -> None:
    """``z`` crashes from a=100 (the crash model's verdict): the swap keeps ``z`` and moves
    ``a`` just below the edge, not to the other end of its range, and leaves ``b``."""
    sampler = _swap_sampler()
    region = lambda c: c["c"] == "z" and int(c["a"]) >= 100  # noqa: E731
    sampler.refused = region
    sampler.crash_share = lambda c: 1.0 if region(c) else 0.0
    config = _ask(_swap_study(sampler))
    assert config["c"] == "z" and config["b"] == 0.5
    assert 50 <= int(config["a"]) < 100  # type: ignore[call-overload]


def test_a_swap_that_crashed_is_tried_once_more_repaired_and_then_not_again() -> None:
    sampler = _swap_sampler()
    study = _swap_study(sampler)
    assert _ask(study) == {"a": 512, "b": 0.5, "c": "z"}
    _crash_last(study)
    # What the crash taught the crash model: z from a=100 on.
    region = lambda c: c["c"] == "z" and int(c["a"]) >= 100  # noqa: E731
    sampler.refused = region
    sampler.crash_share = lambda c: 1.0 if region(c) else 0.0
    again = _ask(study)
    assert again["c"] == "z" and 50 <= int(again["a"]) < 100  # type: ignore[call-overload]
    _crash_last(study)
    sampler.refused = lambda c: c["c"] == "z" and int(c["a"]) >= 40  # it crashed again
    later = [_ask(study) for _ in range(3)]
    assert not [c for c in later if c["c"] == "z" and c["b"] == 0.5]


def _big_a(c: dict[str, object]) -> bool:
    return c["c"] == "z" and int(c["a"]) >= 100  # type: ignore[call-overload]


def _big_b(c: dict[str, object]) -> bool:
    return c["c"] == "z" and float(c["b"]) >= 0.45  # type: ignore[arg-type]


@pytest.mark.parametrize("retry", [True, False])
def test_a_repaired_swap_that_crashed_is_made_once_more_with_the_other_number_moved(
    retry: bool,
) -> None:
    """``z``'s crash had two explanations, a large ``a`` and a large ``b``: moving ``b`` a
    little meets half of them, as moving ``a`` a long way does, and the least move is ``b``.
    It crashed, so ``b`` was not the cause: the swap is made once more from the best
    configuration with ``b`` left as it was and ``a`` moved below its edge instead
    (``retry``, the default; without it the swap is not made again)."""
    sampler = _swap_sampler(retry=retry)
    study = _swap_study(sampler)
    sampler.crash_share = lambda c: (_big_a(dict(c)) + _big_b(dict(c))) / 2
    sampler.refused = lambda c: _big_a(dict(c)) and _big_b(dict(c))
    first = _ask(study)
    assert first["c"] == "z" and first["a"] == 512 and float(first["b"]) < 0.45  # type: ignore[arg-type]
    _crash_last(study)
    sampler.crash_share = lambda c: float(_big_a(dict(c)))  # b is ruled out; a is left
    sampler.refused = lambda c: _big_a(dict(c))
    later = [_ask(study) for _ in range(3)]
    retried = [c for c in later if c["c"] == "z" and c["b"] == 0.5]
    if retry:
        assert retried == [later[0]] and 50 <= int(later[0]["a"]) < 100  # type: ignore[call-overload]
    else:
        assert not retried


def _three_of_four(c: Mapping[str, object]) -> float:
    """Four explanations of ``z``'s crash: three that no number's move leaves (``z`` with
    another choice, say) and a large ``a``."""
    return (3 + _big_a(dict(c))) / 4 if c["c"] == "z" else 0.0


@pytest.mark.parametrize("risk", [SWAP_RISK, 0.8])
def test_a_higher_swap_risk_applies_to_a_swap_made_again_only(risk: float) -> None:
    """``z`` at the best configuration crashed as it was, and its crash has four
    explanations: moving ``a`` below its edge still leaves three met. At ``swap_risk`` 0.8
    the swap is made once more so repaired; at the default limit it is dropped. A first swap
    is held to the default limit whatever ``swap_risk`` says: with the crash already known,
    no ``z`` swap is made at all."""
    sampler = _swap_sampler(risk=risk)
    study = _swap_study(sampler)
    assert _ask(study) == {"a": 512, "b": 0.5, "c": "z"}  # nothing known yet: as it is
    _crash_last(study)
    sampler.crash_share = _three_of_four
    sampler.refused = lambda c: _three_of_four(c) >= 1.0
    again = [c for c in (_ask(study) for _ in range(3)) if c["c"] == "z" and c["b"] == 0.5]
    if risk == SWAP_RISK:
        assert not again
    else:
        assert len(again) == 1 and 50 <= int(again[0]["a"]) < 100  # type: ignore[call-overload]
    first = _swap_sampler(risk=risk)  # the same crash known before the first swap
    first.crash_share = _three_of_four
    first.refused = lambda c: _three_of_four(c) >= 1.0
    study = _swap_study(first)
    assert not [c for c in (_ask(study) for _ in range(3)) if c["c"] == "z" and c["b"] == 0.5]


BACKENDS = {
    "backend": optuna.distributions.CategoricalDistribution(["triton", "cutlass", "deep_gemm"]),
    "compile": optuna.distributions.CategoricalDistribution([False, True]),
    "a": optuna.distributions.IntDistribution(1, 1024, log=True),
}


def _compile_explained(c: Mapping[str, object]) -> float:
    """A crash at (deep_gemm, compile, a=256), weighed: deep_gemm with compile (0.6), compile
    with a >= 64 (0.4)."""
    if not c["compile"]:
        return 0.0
    return 0.6 * (c["backend"] == "deep_gemm") + 0.4 * (int(c["a"]) >= 64)  # type: ignore[call-overload]


def _backend_study(
    sampler: LocalTPESampler, share: Callable[[Mapping[str, object]], float]
) -> optuna.Study:
    """deep_gemm is the best backend and compile helps (cutlass 4% below deep_gemm, triton
    30%); ``share`` is what the crash model says of compile's crash with deep_gemm."""

    def rate(backend: str, compile: bool, a: int) -> float:
        gain = {"triton": 1.0, "cutlass": 1.3, "deep_gemm": 1.35}[backend]
        return gain * (1.25 if compile else 1.0) * (1 + 0.1 * math.log2(a))

    sampler.crash_share = share
    sampler.refused = lambda c: share(c) >= 1.0
    study = optuna.create_study(direction="maximize", sampler=sampler)
    ran = [("triton", False, 16), ("cutlass", False, 16), ("deep_gemm", False, 16)]
    ran += [("triton", True, 16), ("deep_gemm", False, 256), ("cutlass", False, 2)]
    for backend, compile, a in ran:
        params = {"backend": backend, "compile": compile, "a": a}
        study.add_trial(
            optuna.trial.create_trial(
                params=params, distributions=BACKENDS, value=rate(backend, compile, a)
            )
        )
    return study


def _ask_backends(study: optuna.Study, n: int = 3) -> list[dict[str, object]]:
    asked = []
    for _ in range(n):
        trial = study.ask()
        asked.append({n: trial._suggest(n, d) for n, d in BACKENDS.items()})
        study.tell(trial, 1.0)
    return asked


@pytest.mark.parametrize("choices", [CHOICE_RISK, 0.0])
def test_a_swap_a_crash_pairs_with_another_choice_is_made_with_that_choice_moved(
    choices: float,
) -> None:
    """deep_gemm is the best backend and compile helps, but the two crashed together (at a
    large ``a``, so compile with a large ``a`` explains it too). Compile's swap at the best
    configuration meets every explanation, and moving ``a`` still leaves the pair's 0.6: no
    number repairs it. Moving the backend to the one the model rates next (cutlass, not
    triton) leaves 0.4, so the swap is made so (``swap_choices``, the default); with choice
    repairs off it is not made at all."""
    # the ridge the case was built on (the model's verdict on the repair is part of it)
    study = _backend_study(_swap_sampler(swap_choices=choices, ridge=0.3), _compile_explained)
    asked = _ask_backends(study)
    repaired = {"backend": "cutlass", "compile": True, "a": 256}
    if choices:
        assert asked[0] == repaired  # the first swap (triton is not tried: the model says worse)
    else:
        assert repaired not in asked


def _compile_with_two(c: Mapping[str, object]) -> float:
    """The crash's pair explanations: compile with deep_gemm or with cutlass (0.6), compile
    with a >= 64 (0.4)."""
    if not c["compile"]:
        return 0.0
    return 0.6 * (c["backend"] != "triton") + 0.4 * (int(c["a"]) >= 64)  # type: ignore[call-overload]


@pytest.mark.parametrize("floor", [CHOICE_FLOOR, "none"])
def test_a_choice_repair_the_model_calls_clearly_worse_than_the_best_is_not_made(
    floor: str,
) -> None:
    """Only triton leaves compile's crash explanations (cutlass meets them as deep_gemm
    does), and triton with compile reads 7% below the best: the repair would test compile
    where it cannot win. By default (``choice_floor`` "best") it is not made; without the
    floor it is."""
    study = _backend_study(_swap_sampler(choice_floor=floor), _compile_with_two)
    asked = _ask_backends(study)
    triton = {"backend": "triton", "compile": True, "a": 256}
    assert (triton in asked) is (floor == "none")


def _edge(sampler: LocalTPESampler, edge: dict[str, int]) -> None:
    """Give ``sampler`` a crash model that refuses ``z`` from ``edge["a"]`` on (the dict may
    change later, as the crash model's learned edge does)."""
    region = lambda c: c["c"] == "z" and int(c["a"]) >= edge["a"]  # noqa: E731
    sampler.refused = region
    sampler.crash_share = lambda c: 1.0 if region(c) else 0.0


def test_a_repaired_swap_that_did_well_goes_nearer_the_edge() -> None:
    """``z`` ran below its edge at least as well as ``y`` would there: the next swap moves
    ``a`` up to the edge the crash model has now (a bisection of it), keeping ``z``."""
    sampler = _swap_sampler(ridge=0.3)  # the ridge the case was built on
    study = _swap_study(sampler)
    edge = {"a": 100}
    _edge(sampler, edge)
    first = _ask(study)
    a = int(first["a"])  # type: ignore[call-overload]
    assert first["c"] == "z" and a < 100
    study.tell(study.trials[-1].number, (1 + 0.2 * math.log2(a)) * 1.5 * 1.1)
    edge["a"] = 200  # the run moved the learned edge up
    again = _ask(study)
    assert again["c"] == "z" and 100 <= int(again["a"]) < 200  # type: ignore[call-overload]
    # One that did clearly worse than y would there is not followed.
    sampler, edge["a"] = _swap_sampler(ridge=0.3), 100
    _edge(sampler, edge)
    study = _swap_study(sampler)
    _ask(study)
    study.tell(study.trials[-1].number, (1 + 0.2 * math.log2(a)) * 1.5 * 0.5)
    edge["a"] = 200
    assert not [c for c in (_ask(study) for _ in range(3)) if c["c"] == "z" and c["b"] == 0.5]


def test_a_repaired_swap_that_became_the_best_still_goes_nearer_the_edge() -> None:
    """The repaired ``z`` ran better than anything: it is the best configuration now, and the
    next swap still starts from the one it was made from (``a`` = 512), so ``a`` moves up
    to the edge the crash model has now instead of the swap being dropped as done."""
    sampler = _swap_sampler()
    study = _swap_study(sampler)
    edge = {"a": 100}
    _edge(sampler, edge)
    first = _ask(study)
    assert first["c"] == "z" and int(first["a"]) < 100  # type: ignore[call-overload]
    study.tell(study.trials[-1].number, 10.0)  # above the best (512, 0.5, y) at 4.2
    assert study.best_trial.params == first
    edge["a"] = 200
    again = _ask(study)
    assert again["c"] == "z" and 100 <= int(again["a"]) < 200  # type: ignore[call-overload]
    assert again["b"] == 0.5


def test_untried_pairs_count_a_choice_with_a_value_it_never_ran_with() -> None:
    from autotune.study.sampler import _untried_pairs

    ran = [{"a": 512, "b": 0.5, "c": "y"}, {"a": 4, "b": 0.5, "c": "z"}]
    configs = [
        {"a": 512, "b": 0.5, "c": "z"},  # z never ran with a large a
        {"a": 4, "b": 0.5, "c": "z"},  # ran
        {"a": 600, "b": 0.5, "c": "y"},  # 600 is near 512 on a's log scale
        {"a": 512, "b": 1.0, "c": "z"},  # nor with b at 1.0
        {"a": 512, "b": 1.0, "c": "y"},  # y with b at 1.0; a and b never so: not counted
    ]
    assert list(_untried_pairs(SPACE, configs, ran)) == [1, 0, 0, 2, 1]


def test_of_the_model_candidates_near_the_best_one_the_fewest_untried_pairs_is_launched() -> None:
    """The additive model's best candidate puts ``z`` with a large ``a`` (a pair no run had);
    with a wide margin the proposal is one whose every pair of a choice and a value ran."""
    from autotune.study.sampler import _untried_pairs

    def propose(novel: float) -> dict[str, object]:
        sampler = LocalTPESampler(
            optuna.samplers.RandomSampler(seed=0),
            local=0.0,
            model=1.0,
            design=0,
            after=4,
            swap=0,
            novel=novel,
            seed=0,
        )
        sampler.crash_risk = lambda c: 0.0
        study = _swap_study(sampler)
        return _ask(study)

    runs = [t.params for t in _swap_study(_swap_sampler(swap=0)).trials]
    assert _untried_pairs(SPACE, [propose(0.0)], runs)[0] >= 1
    assert _untried_pairs(SPACE, [propose(100.0)], runs)[0] == 0


def _below_edge(sampler: LocalTPESampler) -> optuna.Study:
    """A study whose best configuration (a=32, y) is the largest ``a`` that ran with ``y``,
    which crashed at a=256: the crash model's probability rises from 0 at 32 to 1 at 256
    on ``a``'s log scale, and the objective rises with ``a``."""
    sampler.refused = lambda c: c["c"] == "y" and int(c["a"]) >= 256
    sampler.crash_risk = lambda c: (
        min(1.0, max(0.0, math.log(int(c["a"]) / 32) / math.log(8))) if c["c"] == "y" else 0.0
    )
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for a, b, c in [(32, 0.5, "y"), (8, 0.5, "y"), (2, 0.3, "y"), (16, 0.2, "x"), (4, 0.6, "x")]:
        value = (1 + 0.2 * math.log2(a)) * (1 + b) * (1.0 if c == "y" else 0.8)
        params = {"a": a, "b": b, "c": c}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=SPACE, value=value))
    return study


@pytest.mark.parametrize("edge_step", [True, False])
def test_a_number_below_a_learned_edge_steps_toward_it_as_far_as_the_risk_is_low(
    edge_step: bool,
) -> None:
    """Once the swaps are over (here: off), a model draw moves ``a`` of the best
    configuration up toward the edge the crash model learned, as far as its crash
    probability stays within ``EDGE_RISK``, and leaves ``b`` and ``c``."""
    sampler = _model_sampler(swap=0, edge_step=edge_step)
    config = _ask(_below_edge(sampler))
    risk = sampler.crash_risk(config) or 0.0  # type: ignore[misc]
    stepped = config["b"] == 0.5 and config["c"] == "y" and 32 < int(config["a"])  # type: ignore[call-overload]
    assert stepped is edge_step
    if edge_step:
        assert 0.0 < risk <= EDGE_RISK
        # It went k sixteenths of the way to a's end (1024); k + 1 would have gone past it.
        k = round(16 * math.log(int(config["a"]) / 32) / math.log(1024 / 32))  # type: ignore[call-overload]
        further = {**config, "a": round(32 * (1024 / 32) ** ((k + 1) / 16))}
        assert k >= 1 and (sampler.crash_risk(further) or 0.0) > EDGE_RISK  # type: ignore[misc]


def test_an_edge_step_needs_its_gain_and_may_go_further_where_a_short_one_gains_too_little() -> (
    None
):
    """The step as far as ``edge_risk`` (0.25) predicts less than ``edge_gain`` here, the one
    as far as 0.5 more: no step is made, unless ``edge_far`` (0.5) lets the longer one be."""
    from autotune.study.history import fit

    def step(**kw: Any) -> dict[str, object]:
        return _ask(_below_edge(_model_sampler(swap=0, **kw)))

    near, far = step(), step(edge_risk=0.5)
    assert int(near["a"]) < int(far["a"])  # type: ignore[call-overload]
    study = _below_edge(_model_sampler(swap=0))
    model = fit(study, study.best_trial)[0]  # type: ignore[index]
    here, g_near, g_far = model.predict([study.best_trial.params, near, far])
    between = float((g_near + g_far) / 2 - here)
    assert step(edge_gain=between) != near
    assert step(edge_gain=between, edge_far=0.5) == far


@pytest.mark.parametrize("read", [2.9, 2.99])
def test_no_edge_step_goes_past_a_run_of_that_number_that_read_no_better(read: float) -> None:
    """A run had the best configuration (a=32, y; 3.0) with ``a`` moved up to 40 and read no
    better: the gains have levelled off there, so no edge step moves ``a`` up again (the
    additive model's curve, fitted across the range, would keep rising); without
    ``edge_stop`` the step is made."""

    def propose(edge_stop: bool) -> dict[str, object]:
        sampler = _model_sampler(swap=0, edge_stop=edge_stop)
        study = _below_edge(sampler)
        params = {"a": 40, "b": 0.5, "c": "y"}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=SPACE, value=read))
        return _ask(study)

    step = propose(False)
    assert step["b"] == 0.5 and step["c"] == "y" and 40 < int(step["a"])  # type: ignore[call-overload]
    assert propose(True) != step


def test_no_edge_step_is_made_before_the_swaps() -> None:
    """While the round of swaps has not been made (due after 12 complete trials here), a
    model draw is the additive model's own candidate: an edge reached for one choice first
    would put the best configuration where the others crash."""
    sampler = _model_sampler(swap=12)
    config = _ask(_below_edge(sampler))
    assert not (config["b"] == 0.5 and config["c"] == "y" and 32 < int(config["a"]))  # type: ignore[call-overload]


def test_the_model_proposals_use_finer_bends_where_they_predict_left_out_launches_better() -> None:
    """A study whose buffer reads best inside its range, between the coarse bends: its
    additive model is the finer one (``fine``, the default), and the coarse one without."""
    from autotune.study.additive import FINE_KNOTS, KNOTS
    from autotune.study.history import fit as _fit

    space = {"buf": optuna.distributions.IntDistribution(256, 65536, log=True), **SPACE}
    study = optuna.create_study(direction="maximize")
    for i in range(12):
        params = {
            "buf": int(256 * 256 ** (i / 11)),
            "a": [1, 8, 64, 512][i % 4],
            "b": 0.5,
            "c": "x",
        }
        peak = math.exp(-0.5 * (math.log2(int(params["buf"]) / 8192) / 1.5) ** 2)
        value = (1 + 0.3 * peak) * (1 + 0.1 * math.log2(int(params["a"])))
        study.add_trial(optuna.trial.create_trial(params=params, distributions=space, value=value))
    best = study.best_trial
    assert _fit(study, best)[0].knots == FINE_KNOTS  # type: ignore[index]
    assert _fit(study, best, fine=False)[0].knots == KNOTS  # type: ignore[index]
