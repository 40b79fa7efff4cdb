"""The report of a study with scenarios and sweeps: a table per scenario, the sweep curve."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial
from tests.test_report import make_study

from autotune.core.records import TrialRecord
from autotune.models import ScenarioResult, SweepStep
from autotune.report import write_report
from autotune.report.plots import write_plots
from autotune.report.sweep import scenario_rows
from autotune.study.ledger import Ledger, trial_attrs


def _swept(capacity: float) -> dict[str, object]:
    steps = [
        SweepStep(
            load=load,
            metrics={"output_tok_s": 10.0 * load, "ttft_p99_ms": 20.0 * load},
            meets_slo=load <= capacity,
        )
        for load in (4.0, 64.0, 16.0, 8.0)
    ]
    best = max(s.load for s in steps if s.meets_slo)
    metrics = {"output_tok_s": 10.0 * best, "max_concurrency_under_slo": best}
    return ScenarioResult(name="chat", metrics=metrics, over="concurrency", steps=steps).model_dump(
        mode="json"
    )


def _study(tmp_path: Path, baseline_first: bool = False) -> optuna.Study:
    study = make_study(tmp_path, simulated=True)
    plan = [(1, 8.0, baseline_first), (2, 16.0, False)]
    for number, (bs, capacity, baseline) in enumerate(plan):
        record = TrialRecord(
            number=number,
            state="COMPLETE",
            outcome="ok",  # type: ignore[arg-type]
            config={"bs": bs},
            baseline=baseline,
            metrics={"output_tok_s": 10.0 * capacity, "chat.max_concurrency_under_slo": capacity},
            scenarios=[_swept(capacity)],
        )
        study.add_trial(
            create_trial(
                state=TrialState.COMPLETE,
                value=10.0 * capacity,
                params={"bs": bs},
                distributions={"bs": IntDistribution(1, 4)},
                user_attrs=trial_attrs(record),
            )
        )
    return study


def test_the_best_trials_scenarios_are_tabled(tmp_path: Path) -> None:
    rows = scenario_rows(Ledger(_study(tmp_path)).view())
    assert ["best (trial 1)", "chat", "max_concurrency_under_slo", "16"] in rows
    assert ["best (trial 1)", "chat", "output_tok_s", "160"] in rows
    assert all(r[0] == "best (trial 1)" for r in rows)  # no baseline in this study


def test_the_sweep_curve_is_plotted_and_in_the_html(tmp_path: Path) -> None:
    written = write_report(_study(tmp_path), tmp_path / "r")
    assert "sweep_curve.png" in {p.name for p in written.plots}
    page = written.page.read_text()
    assert "Scenarios and load sweeps" in page and "max_concurrency_under_slo" in page
    assert 'alt="throughput and latency against load"' in page


def test_a_study_without_scenarios_has_no_sweep_plot(tmp_path: Path) -> None:
    view = Ledger(make_study(tmp_path)).view()
    assert scenario_rows(view) == []
    assert "sweep_curve.png" not in {p.name for p in write_plots(view, {}, tmp_path / "r")}


def test_status_lines_show_each_scenario_and_its_sweep(tmp_path: Path) -> None:
    from autotune.report.sweep import scenario_lines

    record = TrialRecord(number=0, state="COMPLETE", scenarios=[_swept(8.0)])
    assert scenario_lines(record) == [
        "chat: output_tok_s 80 · max_concurrency_under_slo 8",
        "  concurrency sweep: 4 ok · 8 ok · 16 miss · 64 miss",
    ]


def test_the_searchs_best_is_shown_when_noise_keeps_the_baseline(tmp_path: Path) -> None:
    # One launch each cannot beat the baseline beyond noise: the answer stays the baseline,
    # and the search's best is shown beside it.
    rows = scenario_rows(Ledger(_study(tmp_path, baseline_first=True)).view())
    assert ["best (trial 0)", "chat", "max_concurrency_under_slo", "8"] in rows
    assert ["search's best (trial 1)", "chat", "max_concurrency_under_slo", "16"] in rows
