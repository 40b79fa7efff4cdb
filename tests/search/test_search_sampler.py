"""The search's sampler as a plain Optuna user meets it: ``optuna.create_study(sampler=
autotune.search.Sampler(...))`` on an ordinary objective, crashes told through a trial
attribute, everything it knows read from the study's trials."""

from __future__ import annotations

import math
from typing import Any

import optuna
import pytest

from autotune.search import CRASH, DEFAULTS, KIND, REFUSED, Sampler

pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
BASE = {"kernel": "a", "batch": 16, "mem": 0.6, "fused": False}


def server(trial: optuna.Trial) -> float:
    """A server-like objective: throughput rises with the batch and memory, kernel c pays
    only with fusion; kernel b crashes above batch 128, memory above 0.9 crashes."""
    kernel = trial.suggest_categorical("kernel", ["a", "b", "c"])
    batch = trial.suggest_int("batch", 4, 1024, log=True)
    mem = trial.suggest_float("mem", 0.5, 0.95, step=0.01)
    fused = trial.suggest_categorical("fused", [False, True])
    if (kernel == "b" and batch > 128) or mem > 0.9:
        trial.set_user_attr(CRASH, "out of memory")
        raise optuna.TrialPruned()
    v = 100 * {"a": 1.0, "b": 1.3, "c": 1.1}[kernel] * (1 + 0.1 * math.log2(batch))
    v *= 1 + (mem - 0.5) * (0.4 if kernel == "c" and fused else 1.0) ** 0
    return v * (1.25 if kernel == "c" and fused else 0.95 if fused else 1.0)


def study_of(sampler: optuna.samplers.BaseSampler, n: int, baseline: bool = True) -> optuna.Study:
    study = optuna.create_study(direction="maximize", sampler=sampler)
    if baseline:
        study.enqueue_trial(BASE)
    study.optimize(server, n_trials=n)
    return study


def crashes(study: optuna.Study) -> int:
    return sum(CRASH in t.user_attrs for t in study.trials)


def test_a_plain_optuna_study_finds_more_and_crashes_less_than_random_search() -> None:
    ours = [study_of(Sampler(seed=s), 30) for s in range(2)]
    theirs = [study_of(optuna.samplers.RandomSampler(seed=s), 30) for s in range(2)]
    assert min(s.best_value for s in ours) > max(s.best_value for s in theirs) * 0.98
    assert sum(map(crashes, ours)) < sum(map(crashes, theirs))
    for study in ours:  # never the same configuration twice
        keys = [tuple(sorted(t.params.items())) for t in study.trials]
        assert len(keys) == len(set(keys))


def test_it_starts_by_moving_one_setting_at_a_time_from_the_enqueued_baseline() -> None:
    study = study_of(Sampler(seed=0), 6)
    moves = study.trials[1:]
    assert all(t.user_attrs[KIND] == "design" for t in moves)
    for t in moves:
        assert sum(t.params[k] != v for k, v in BASE.items()) == 1, t.params
    assert {k for t in moves for k, v in BASE.items() if t.params[k] != v} == set(BASE)


def test_each_proposal_comes_from_the_trials_alone_whatever_sampler_instance_asks() -> None:
    """A fresh sampler on the same trials (a resumed study) proposes what the first would."""
    study = study_of(Sampler(seed=3), 14)
    first = study.sampler
    nxt = study.ask()
    plan = dict(first._plans[nxt.number])  # type: ignore[attr-defined]
    study.tell(nxt, state=optuna.trial.TrialState.FAIL)  # ignored: failed for no reason
    again = optuna.create_study(direction="maximize", sampler=Sampler(seed=3))
    for t in study.trials:
        if t.state != optuna.trial.TrialState.FAIL:
            again.add_trial(t)
    fresh = again.ask()
    assert again.sampler._plans[fresh.number] == plan  # type: ignore[attr-defined]


def test_a_refused_configuration_and_an_infeasible_one_are_never_proposed() -> None:
    refused: list[dict[str, Any]] = []

    def objective(trial: optuna.Trial) -> float:
        value = server(trial)
        if trial.params["kernel"] == "c":  # refused before launch, as a driver would
            refused.append(dict(trial.params))
            trial.set_user_attr(REFUSED, "dead_end")
            raise optuna.TrialPruned()
        return value

    sampler = Sampler(seed=0, feasible=lambda c: not c.get("fused") or c.get("mem", 0) < 0.8)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.enqueue_trial(BASE)
    study.optimize(objective, n_trials=25, catch=())
    keys = [tuple(sorted(t.params.items())) for t in study.trials]
    assert len(keys) == len(set(keys))  # none refused is proposed again as it was
    # what looks the same to the refusal (kernel c, whatever else) is learned: refusals stay
    # rare (kernel c is still tried now and then where nothing else is left to gain: the
    # search before the line step refused it again at trials 18, 27 and 31 of 32)
    assert 1 <= len(refused) <= 3
    first = next(t.number for t in study.trials if t.params["kernel"] == "c")
    assert all(t.params["kernel"] != "c" for t in study.trials[first + 1 : first + 11])
    assert not [t for t in study.trials if t.params.get("fused") and t.params["mem"] >= 0.8]


def test_a_feature_switched_on_starts_at_its_least_and_its_settings_follow_it() -> None:
    def objective(trial: optuna.Trial) -> float:
        spec = trial.suggest_categorical("spec", [False, True])
        base = trial.suggest_float("mem", 0.5, 0.9, step=0.05)
        if not spec:
            return 100 * base
        steps = trial.suggest_int("steps", 1, 8)
        return 100 * base * (1.5 - 0.05 * (steps - 4) ** 2)

    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial({"spec": False, "mem": 0.6})
    study.optimize(objective, n_trials=20)
    on = [t for t in study.trials if t.params["spec"]]
    assert on[0].params["steps"] == 1  # its least
    assert all(("steps" in t.params) == t.params["spec"] for t in study.trials)
    assert any(t.params["steps"] > 1 for t in on)  # and moved from there


def test_a_bound_taken_from_another_setting_keeps_every_proposal_inside() -> None:
    def objective(trial: optuna.Trial) -> float:
        hi = trial.suggest_int("max_ch", 1, 32, log=True)
        lo = trial.suggest_int("min_ch", 1, hi, log=True)
        return 100 / (1 + abs(math.log2(lo) - 2)) + math.log2(hi)

    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=1))
    study.enqueue_trial({"max_ch": 8, "min_ch": 2})
    study.optimize(objective, n_trials=15)
    assert all(t.params["min_ch"] <= t.params["max_ch"] for t in study.trials)


def test_configurations_still_running_are_not_proposed_again() -> None:
    """Several workers: each asks while the others' trials run (a constant liar)."""
    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial(BASE)
    study.optimize(server, n_trials=12)
    running = [study.ask() for _ in range(2)]  # asked, no values yet (between ask and suggest)
    for t in running:
        server(t)  # suggests its values; not told: still running
    for _ in range(2):
        running.append(study.ask())
        server(running[-1])
    keys = {tuple(sorted(t.params.items())) for t in running}
    assert len(keys) == 4
    done = {
        tuple(sorted(t.params.items())) for t in study.trials if t.params and t.state.is_finished()
    }
    assert not keys & done


def test_a_failed_trial_without_a_crash_attribute_teaches_nothing() -> None:
    """An interrupted launch (failed, no CRASH) is not a crash: its configuration is not
    avoided, as a crash's region is."""
    from autotune.search import read

    study = study_of(Sampler(seed=0), 8)
    t = study.ask({"kernel": optuna.distributions.CategoricalDistribution(["a", "b", "c"])})
    study.tell(t, state=optuna.trial.TrialState.FAIL)
    h = read(study, study.trials)
    assert all(c != {"kernel": t.params["kernel"]} for c, _ in h.launches)
    assert h.told == len(study.trials) - 1


def test_a_number_whose_far_end_crashed_is_tried_halfway_next() -> None:
    """A line per number: where moving it to the far end crashed, the edge lies between, and
    the next point on its line is halfway (on its scale)."""

    def objective(trial: optuna.Trial) -> float:
        batch = trial.suggest_int("batch", 4, 1024, log=True)
        mode = trial.suggest_categorical("mode", ["a", "b"])
        if batch > 300:
            trial.set_user_attr(CRASH, "out of memory")
            raise optuna.TrialPruned()
        return 100 * math.log2(batch) * (1.1 if mode == "b" else 1.0)

    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial({"batch": 16, "mode": "a"})
    study.optimize(objective, n_trials=5)
    lines = [t for t in study.trials if t.user_attrs.get(KIND) == "line"]
    assert [t.params for t in lines][:1] == [{"batch": 128, "mode": "a"}]  # 16 * sqrt(64)


def test_a_feature_s_numbers_are_tried_at_their_middle_together() -> None:
    """Two numbers that exist only when a feature is on, best inside their ranges and only
    together: a centre point of the feature's numbers finds what moving each alone from
    its least does not."""

    def objective(trial: optuna.Trial) -> float:
        if not trial.suggest_categorical("spec", [False, True]):
            return 100.0
        s, k = trial.suggest_int("steps", 1, 8), trial.suggest_int("topk", 1, 8)
        return 90.0 * (1 + 0.6 * math.exp(-((s - 4) ** 2 + (k - 4) ** 2) / 4))

    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial({"spec": False})
    study.optimize(objective, n_trials=6)
    on = [t.params for t in study.trials if t.params["spec"]]
    assert on[0] == {"spec": True, "steps": 1, "topk": 1}  # the feature at its least
    assert {"spec": True, "steps": 4, "topk": 4} in on[1:3]  # then its centre
    assert study.best_value > 130


def _unset_by_the_baseline(trial: optuna.Trial) -> float:
    """Trial 0 (the enqueued baseline) sets the kernel only and leaves the rest to the
    system, as the study driver does; the others set all three."""
    kernel = trial.suggest_categorical("kernel", ["a", "b"])
    if trial.number == 0:
        return 100.0
    running = trial.suggest_int("running", 8, 1024, log=True)
    mem = trial.suggest_float("mem", 0.1, 0.95, step=0.05)
    return 100.0 * min(running, 256) / 256 * (1.0 if kernel == "a" else 1.1) * mem


def test_the_screen_starts_from_the_defaults_the_system_chose_for_unset_settings() -> None:
    """SGLang's baseline leaves the memory share and the running-request limit to SGLang,
    which chose 0.83 and 4096 on an H100 (its log, 2026-12-06). Started from each range's
    middle instead (0.5, 91 running requests under 256 streams), every move of the screen
    ran at half the baseline's throughput. With the chosen values on the baseline trial
    (``DEFAULTS``), the screen starts from them, the nearest its ranges allow."""
    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial({"kernel": "a"}, user_attrs={DEFAULTS: {"running": 4096, "mem": 0.83}})
    study.optimize(_unset_by_the_baseline, n_trials=6)
    # The first move (the kernel) runs with the unset settings at the system's values (not at
    # their least: 8 running requests, 0.1 of the memory), then the start itself, then one
    # setting moved at a time from it.
    first, start, *moves = [t.params for t in study.trials[1:]]
    assert first == {"kernel": "b", "running": 1024, "mem": 0.85}, first
    assert start == {"kernel": "a", "running": 1024, "mem": 0.85}, start
    for moved in moves:
        assert sum(moved[k] != start[k] for k in start) == 1, (start, moved)


def test_a_baseline_whose_chosen_values_the_ranges_hold_is_the_start_itself() -> None:
    """Where every value the system chose lies on its range, the baseline ran at the screen's
    start: it is not launched again, and each move changes one setting from it."""
    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial({"kernel": "a"}, user_attrs={DEFAULTS: {"running": 256, "mem": 0.85}})
    study.optimize(_unset_by_the_baseline, n_trials=6)
    start = {"kernel": "a", "running": 256, "mem": 0.85}
    moves = [t.params for t in study.trials[1:]]
    assert start not in moves, moves
    for moved in moves[:3]:
        assert sum(moved[k] != start[k] for k in start) == 1, (start, moved)


def _all_left_to_the_system(trial: optuna.Trial) -> float:
    """Trial 0 (an empty enqueued baseline: every setting left to the system, as
    search_spaces/sglang-512.yaml's is) asks for nothing; the others set all three."""
    if trial.number == 0:
        return 85.0  # what the system chose: kernel a, 256 running, 0.85 of the memory
    kernel = trial.suggest_categorical("kernel", ["a", "b"])
    running = trial.suggest_int("running", 8, 1024, log=True)
    mem = trial.suggest_float("mem", 0.1, 0.95, step=0.05)
    return 100.0 * min(running, 256) / 256 * (1.0 if kernel == "a" else 1.1) * mem


def test_an_empty_baseline_whose_chosen_values_the_ranges_hold_is_the_start_itself() -> None:
    """The SGLang study at 512 streams on an H100 (2026-12-07) left every setting to SGLang:
    its second launch ran exactly what SGLang had chosen, the baseline again (8,116 against
    8,119 tok/s, 2m50s of the GPU). A baseline that sets nothing ran at the values it marks:
    it is the screen's start, and each move changes one setting from it."""
    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    chosen = {"kernel": "a", "running": 256, "mem": 0.85}
    study.enqueue_trial({}, user_attrs={DEFAULTS: chosen})
    study.optimize(_all_left_to_the_system, n_trials=5)
    moves = [t.params for t in study.trials[1:]]
    assert chosen not in moves, moves
    for moved in moves:
        assert sum(moved[k] != chosen[k] for k in chosen) == 1, (chosen, moved)


def test_an_empty_baselines_first_move_refused_moves_the_next_setting() -> None:
    """The first setting's move is one ``feasible`` refuses: the trial moves the next setting
    instead, never the baseline again."""
    chosen = {"kernel": "a", "running": 256, "mem": 0.85}
    sampler = Sampler(seed=0, feasible=lambda config: config.get("kernel") != "b")
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.enqueue_trial({}, user_attrs={DEFAULTS: chosen})
    study.optimize(_all_left_to_the_system, n_trials=2)
    moved = study.trials[1].params
    assert moved["kernel"] == "a"
    assert sum(moved[k] != v for k, v in chosen.items()) == 1, moved


def test_an_empty_baseline_gives_parallel_workers_different_first_moves() -> None:
    """Two trials asked before either ran (two workers): each moves a different setting."""
    chosen = {"kernel": "a", "running": 256, "mem": 0.85}
    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial({}, user_attrs={DEFAULTS: chosen})
    study.optimize(_all_left_to_the_system, n_trials=1)
    asked = [study.ask(), study.ask()]
    configs = [
        {
            "kernel": t.suggest_categorical("kernel", ["a", "b"]),
            "running": t.suggest_int("running", 8, 1024, log=True),
            "mem": t.suggest_float("mem", 0.1, 0.95, step=0.05),
        }
        for t in asked
    ]
    assert configs[0] != configs[1], configs
    for config in configs:
        assert sum(config[k] != v for k, v in chosen.items()) == 1, config


def test_an_empty_baseline_moves_a_setting_the_system_named() -> None:
    """The first setting asked has no chosen value (the system's log did not name it): it
    starts at its least, and the next setting, which has one, moves."""
    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial({}, user_attrs={DEFAULTS: {"running": 256, "mem": 0.85}})
    study.optimize(_all_left_to_the_system, n_trials=2)
    moved = study.trials[1].params
    assert moved["kernel"] == "a"  # its least: nothing named it
    assert (moved["running"] != 256) + (moved["mem"] != 0.85) == 1, moved


def test_every_pair_of_flags_is_screened_together_whatever_each_did_alone() -> None:
    """Four flags that do nothing alone (two of them pay only together): the screen of pairs
    meets every pair of them switched on together, in its own launches (rows of a covering
    array), not only the pairs of settings that moved the objective alone."""
    names = ["f0", "f1", "f2", "f3"]

    def flags(trial: optuna.Trial) -> float:
        on = {n: trial.suggest_categorical(n, [False, True]) for n in names}
        return 100.0 * (1.3 if on["f1"] and on["f3"] else 1.0)

    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial({n: False for n in names})
    study.optimize(flags, n_trials=16)
    rows = [t.params for t in study.trials if t.user_attrs.get(KIND) == "pairs"]
    met = {(a, b) for r in rows for a in names for b in names if a < b and r[a] and r[b]}
    assert met == {(a, b) for a in names for b in names if a < b}, rows
