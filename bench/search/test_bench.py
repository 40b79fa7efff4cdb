"""Checks of the search benchmark itself: its harness, its families and its outputs.

The suite collects them (pyproject.toml's testpaths): a family changed by accident, or a harness
that no longer runs, would otherwise show only in the next round's figures. The quick run of
every strategy is in the slow tier (``pytest -q --slow``); named alone, the file runs all of them:

    .venv/bin/python -m pytest -q bench/search/test_bench.py
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from bench.search import families as fam
from bench.search.__main__ import main


@pytest.mark.slow
def test_quick_run_prints_each_family_and_the_worst(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    for name in ("box", "five", "mixed7"):
        assert f"| {name} | autotune |" in out and f"| {name} | random |" in out
    assert "worst family for autotune:" in out


def test_scores_written_apart_are_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs.jsonl"
    common = ["--families", "interact", "--instances", "0:1", "--seeds", "1", "--trials", "12"]
    assert main([*common, "--strategies", "random", "--out", str(out)]) == 0
    assert main([*common, "--strategies", "tpe", "--out", str(out)]) == 0
    written = capsys.readouterr().out
    assert len(out.read_text().splitlines()) == 2
    assert main(["--read", str(out), "--strategies", "random,tpe"]) == 0
    read = capsys.readouterr().out
    row = next(line for line in written.splitlines() if line.startswith("| interact | random |"))
    assert row in read
    assert json.loads(out.read_text().splitlines()[0])["family"] == "interact"


def test_the_families_are_the_same_every_time_and_their_optimum_is_not_beaten() -> None:
    """An instance is a pure function of its family and index; its baseline serves; no random
    configuration beats the optimum the family computes; tuning and held-out families are
    apart."""
    assert not set(fam.MANIFEST["tuning"]) & set(fam.MANIFEST["held_out"])
    assert set(fam.MANIFEST["tuning"]) | set(fam.MANIFEST["held_out"]) == set(fam.FAMILIES)
    for name in fam.FAMILIES:
        a, b = fam.shape(name, 0), fam.shape(name, 0)
        assert a.params == b.params and a.baseline == b.baseline
        base = fam.truth(a, a.baseline)
        land = fam.family(name, 0)
        assert base is not None and land.optimum() >= base
        assert land.held_out == (name in fam.MANIFEST["held_out"])
        rng = random.Random(0)
        for _ in range(500):
            c = {p["name"]: rng.choice(fam.values(p, 200)) for p in a.params}
            assert (fam.truth(a, c) or 0.0) <= land.optimum() + 1e-9, (name, c)


def test_generated_landscapes_are_the_same_every_time_and_spare_the_baseline() -> None:
    from bench.search.generated import HELD_OUT_FROM, generated

    for i in range(6):
        a, b = generated(i), generated(i)
        assert a.parameters == b.parameters and a.baseline == b.baseline
        assert a.evaluate(dict(a.baseline), random.Random(0)).truth is not None
    assert generated(HELD_OUT_FROM).held_out


def test_a_plain_loop_can_tell_crashes_as_a_broken_constraint_at_the_worst_value() -> None:
    """``gpc``'s loop: a crash is told complete, at the worst value measured before it, with
    its constraint broken; every launch that served keeps its own value and its constraint."""
    import optuna
    from bench.search.__main__ import _crashed, _plain

    studies: list[optuna.Study] = []

    class Recording(optuna.samplers.TPESampler):
        def after_trial(self, study, trial, state, values):  # type: ignore[no-untyped-def]
            studies.append(study)
            super().after_trial(study, trial, state, values)

    run = _plain(lambda s: Recording(seed=s, constraints_func=_crashed), worst=True)
    land = fam.family("loadcrash", 0)
    launches = run(land, 0, 20)
    trials = studies[0].get_trials()
    assert any(la.crashed for la in launches) and len(trials) == len(launches)
    for i, (la, t) in enumerate(zip(launches, trials, strict=True)):
        assert t.state == optuna.trial.TrialState.COMPLETE
        broken = t.system_attrs["constraints"][0] > 0
        assert broken == la.crashed
        if la.crashed:
            assert t.value == min(x.value for x in launches[:i] if x.value is not None)
        else:
            assert t.value == la.value


def test_a_trace_accounts_for_every_launch_of_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--trace`` keeps each study's launches in order; the allocation table counts the
    budget's launches by kind (they sum to the budget), the confirmation's apart, and finds the
    launch where the reported configuration first ran."""
    from bench.search import allocation

    trace = tmp_path / "trace.jsonl"
    args = ["--families", "interact", "--instances", "0:1", "--seeds", "1", "--trials", "14"]
    assert main([*args, "--strategies", "autotune", "--trace", str(trace)]) == 0
    row = json.loads(trace.read_text())
    one = allocation.study(row)
    assert sum(one["n"].values()) == 14 and one["n"]["baseline"] == 1 and one["n"]["design"] > 0
    assert one["extra"]["confirm"] > 0
    answer = next(la for la in row["launches"] if la["kind"] == "answer")
    first = [la for la in row["launches"] if la["kind"] == "search"][one["answer_at"] - 1]
    assert first["config"] == answer["config"] and first["source"] == one["answer_by"]
    assert one["curve"] == sorted(one["curve"])
    capsys.readouterr()
    assert allocation.main([str(trace)]) == 0
    assert "| interact | autotune | 1 |" in capsys.readouterr().out


def test_a_strategy_may_set_several_knobs(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--families", "interact", "--instances", "0:1", "--seeds", "1", "--trials", "8"]
    assert main([*args, "--strategies", "autotune[design=3,pairs=1],random"]) == 0
    out = capsys.readouterr().out
    assert "| interact | autotune[design=3,pairs=1] | 1 |" in out and "| interact | random |" in out


def test_the_others_get_as_many_launches_as_autotune_made(tmp_path: Path) -> None:
    """The issue's bar is "at the same launch count": by default a plain loop is given the
    launches autotune's driver made on the same landscape and seed (its search, the baseline
    again and the confirmation rounds), whatever order the strategies are named in;
    ``--launches trials`` gives each ``--trials``."""
    args = ["--families", "interact", "--instances", "0:1", "--seeds", "2", "--trials", "10"]
    equal, given = tmp_path / "equal.jsonl", tmp_path / "given.jsonl"
    assert main([*args, "--strategies", "random,autotune", "--out", str(equal)]) == 0
    assert main([*args, "--strategies", "random", "--launches", "trials", "--out", str(given)]) == 0
    rows = [json.loads(line) for line in equal.read_text().splitlines()]
    made = {r["seed"]: r["launches"] for r in rows if r["strategy"] == "autotune"}
    assert all(n > 10 for n in made.values())  # the driver adds launches to the search's
    assert {r["seed"]: r["launches"] for r in rows if r["strategy"] == "random"} == made
    assert [json.loads(line)["launches"] for line in given.read_text().splitlines()] == [10, 10]


def test_paired_differences_match_studies_by_landscape_and_seed() -> None:
    from bench.search.allocation import paired

    def row(strategy: str, land: str, seed: int, answer: float, crashes: int) -> dict[str, object]:
        return dict(
            family="f", landscape=land, seed=seed, strategy=strategy, answer=answer, crashes=crashes
        )

    rows = [
        row("a", "x", 0, 70.0, 2),
        row("a", "x", 1, 80.0, 2),
        row("b", "x", 1, 84.0, 3),  # paired with a's seed 1, not its seed 0
        row("b", "x", 0, 72.0, 2),
        row("b", "y", 0, 99.0, 0),  # nothing of a's to pair it with
    ]
    out = paired(rows, "a")
    assert "| b | f | 2 | 78.0 | +3.0 (1.0) | 2.5 (+0.5) |" in out
    assert "| b | pooled | 2 | | +3.00 (1.00) | |" in out


def test_fit_quality_auc() -> None:
    """The crash model's AUC: ties count half; one kind missing gives NaN."""
    from bench.search.fit_quality import _auc

    bad = np.array([True, False, False, True])
    assert _auc(np.array([0.9, 0.1, 0.2, 0.8]), bad) == 1.0
    assert _auc(np.array([0.1, 0.9, 0.8, 0.2]), bad) == 0.0
    assert _auc(np.array([0.5, 0.5, 0.1, 0.5]), bad) == 0.75
    assert math.isnan(_auc(np.array([0.1, 0.2]), np.array([False, False])))


@pytest.mark.filterwarnings("ignore")  # the peers' own warnings (BoTorch's on its inputs)
@pytest.mark.parametrize("name", ["cmaes", "botorch", "smac", "hebo", "ngopt"])
def test_a_peer_launches_the_baseline_first_and_only_configurations_of_the_space(
    name: str,
) -> None:
    """Each installed peer (``peers.py``; skipped where its package is missing) spends exactly
    the budget, the baseline first; every configuration it launches is one ``space.suggest``
    could give: each number on its range and step, each choice one of the space's, and a
    parameter present exactly when its ``when`` holds."""
    from bench.search import peers
    from bench.search.__main__ import _crashed, _plain

    if not peers.installed(name):
        pytest.skip(f"{name}: {peers.PACKAGES[name]} is not installed")
    land = fam.family("kvcliff", 0)  # swap_gb (a step of 4) only when preemption is swap
    launches = peers.strategies(_plain, _crashed)[name](land, 0, 12)
    assert len(launches) == 12 and launches[0].config == land.baseline
    for la in launches:
        for p in land.parameters:
            v = la.config.get(p["name"])
            if p["name"] == "swap_gb":
                assert (v is not None) == (la.config["preemption"] == "swap")
            if v is None:
                continue
            if p["type"] in ("int", "float"):
                assert p["low"] <= v <= p["high"]
                assert math.isclose(peers.snap(p, v), v, abs_tol=1e-9)
            else:
                assert v in ([False, True] if p["type"] == "bool" else p["choices"])
        assert la.crashed == (la.value is None)


def test_peers_snap_values_and_read_a_when() -> None:
    from bench.search.peers import parent, snap

    step = {"name": "m", "type": "float", "low": 0.5, "high": 0.95, "step": 0.01}
    assert snap(step, 0.9149) == 0.91 and snap(step, 2.0) == 0.95
    assert snap({"name": "k", "type": "int", "low": 0, "high": 32, "step": 4}, 9.9) == 8
    assert snap({"name": "c", "type": "categorical", "choices": [8, 16]}, "16") == 16
    assert parent("prefetch") == ("prefetch", True)
    assert parent("preemption == 'swap'") == ("preemption", "swap")
    assert parent("a > 3") is None


def test_without_any_peer_installed_the_registry_is_empty_and_the_bench_runs() -> None:
    """With every peer's package made unimportable, no peer is registered, a peer named is
    refused as unknown, and the bench's own strategies still run."""
    import subprocess
    import sys

    from bench.search import peers

    code = (
        "import sys\n"
        f"for m in {sorted({*peers.PACKAGES.values(), 'botorch'})!r}: sys.modules[m] = None\n"
        "from bench.search import peers\n"
        "from bench.search.__main__ import STRATEGIES, main\n"
        "assert not set(peers.PACKAGES) & set(STRATEGIES), STRATEGIES\n"
        "args = ['--families', 'interact', '--instances', '0:1', '--seeds', '1', '--trials', '8']\n"
        "assert main([*args, '--strategies', 'smac']) == 2\n"
        "sys.exit(main([*args, '--strategies', 'random']))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": f"{root / 'src'}:{root}", "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert "| interact | random | 1 |" in run.stdout


def test_the_budget_table_reads_the_best_launched_by_each_launch_count() -> None:
    from bench.search.allocation import budget

    def row(strategy: str, seed: int, pcts: list[float]) -> dict[str, object]:
        launches = [{"kind": "search", "pct": p, "crashed": p == 0.0} for p in pcts]
        extra = {"kind": "extra", "pct": 100.0, "crashed": False}
        return {"family": "f", "strategy": strategy, "landscape": "f0", "seed": seed,
                "launches": [*launches, extra]}  # fmt: skip

    rows = [
        row("autotune", 0, [50.0, 0.0, 96.0, 60.0]),
        row("autotune", 1, [40.0, 70.0, 0.0, 0.0]),
        row("tpe", 0, [50.0, 80.0, 90.0, 99.0]),
        row("tpe", 1, [40.0, 40.0, 40.0, 40.0]),
    ]
    out = budget(rows, [2, 4], "autotune")
    # by launch 2: 50 and 70 (mean 60, lowest 50); by 4: 96 and 70, one study at 95%; the extra
    # (confirmation) launch is no launch of the budget
    assert "| f | autotune | 60.0 (50; 0) / 83.0 (70; 1) | +0.0 (0.0) / +0.0 (0.0) | 1.5 |" in out
    # tpe by 2: 80 and 40 (paired +30, -30); by 4: 99 and 40 (paired +3, -30); no crash
    assert "| f | tpe | 60.0 (40; 0) / 69.5 (40; 1) | +0.0 (30.0) / -13.5 (16.5) | 0.0 |" in out
