"""The report over a real Optuna SQLite study: the ledger's best and summary, the tables, the
plots and the page, each reading the study once (``Ledger.view``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState, create_trial
from rich.console import Console

from autotune.core.records import StudyRecord, TrialRecord, gain_pct
from autotune.core.summary import StudyView
from autotune.report import insights
from autotune.report import tables as report
from autotune.report.plots import write_plots
from autotune.study.ledger import Ledger, trial_attrs


def view(study: optuna.Study) -> StudyView:
    return Ledger(study).view()


def plots(study: optuna.Study, out: Path) -> list[Path]:
    v = view(study)
    return write_plots(v, insights.importances(study, v), out)


DISTS = {
    "chunked_prefill_size": IntDistribution(1024, 16384, step=1024),
    "attention_backend": CategoricalDistribution(["fa3", "flashinfer", "triton"]),
}


def make_study(
    path: Path, *, direction: str = "maximize", simulated: bool = False, name: str = "demo"
) -> optuna.Study:
    study = optuna.create_study(
        storage=f"sqlite:///{path / 'study.db'}", study_name=name, direction=direction
    )
    Ledger(study).write_study(
        StudyRecord(
            name=name,
            metric="output_tok_s",
            direction=direction,  # type: ignore[arg-type]
            simulated=simulated,
            engine="sglang",
        )
    )
    return study


def add(
    study: optuna.Study,
    outcome: str | None,
    *,
    value: float | None = None,
    told: float | None = None,
    params: dict[str, Any] | None = None,
    cause: str | None = None,
    phase: str | None = None,
    hint: str = "",
    baseline: bool = False,
    state: TrialState | None = None,
    total_s: float = 30.0,
) -> None:
    """Add a trial the way the driver stores one (through the ledger's encoding)."""
    params = params or {"chunked_prefill_size": 4096, "attention_backend": "fa3"}
    fields: dict[str, Any] = {
        "config": params,
        "baseline": baseline,
        "timings": {"total_s": total_s},
        "outcome": outcome,
    }
    if value is not None:
        fields["metrics"] = {"output_tok_s": value, "ttft_p99_ms": 120.0}
    if cause:
        fields.update(cause=cause, phase=phase, hint=hint, message=f"{cause} in {phase}")
    ua = trial_attrs(TrialRecord(number=0, state="COMPLETE", **fields))
    if state is None:
        by_outcome = {"pruned": TrialState.PRUNED, None: TrialState.FAIL}
        state = by_outcome.get(outcome, TrialState.COMPLETE)
    trial_value = None
    if state == TrialState.COMPLETE:
        trial_value = told if told is not None else (value if value is not None else 0.0)
    study.add_trial(
        create_trial(
            state=state,
            value=trial_value,
            params=params,
            distributions={k: DISTS[k] for k in params},
            user_attrs=ua,
        )
    )


@pytest.fixture
def study(tmp_path: Path) -> optuna.Study:
    s = make_study(tmp_path)
    add(s, "ok", value=1000.0, baseline=True)  # 0
    add(s, "ok", value=1300.0, params={"chunked_prefill_size": 8192, "attention_backend": "fa3"})
    # A crash told COMPLETE with a penalty (how early studies told them) that would win if believed.
    add(
        s,
        "crashed",
        told=1e9,
        cause="kv_pool_oom",
        phase="memory_pool",
        hint="lower it",
        params={"chunked_prefill_size": 16384, "attention_backend": "triton"},
    )  # 2
    add(s, "ok", value=1300.0, params={"chunked_prefill_size": 2048, "attention_backend": "triton"})
    add(
        s,
        "slo_violated",
        value=5000.0,
        params={"chunked_prefill_size": 1024, "attention_backend": "flashinfer"},
    )  # 4
    add(
        s,
        "crashed",
        told=1e9,
        cause="kv_pool_oom",
        phase="memory_pool",
        params={"chunked_prefill_size": 16384, "attention_backend": "fa3"},
    )  # 5
    add(s, "pruned", cause="dead_end", phase="launch")  # 6
    add(s, None, state=TrialState.RUNNING)  # 7
    return optuna.load_study(study_name="demo", storage=s._storage)


def test_rows_follow_outcome_not_optuna_value(study: optuna.Study) -> None:
    rs = Ledger(study).trials()
    assert [r.number for r in rs] == list(range(8))
    assert [r.label for r in rs] == [
        "ok",
        "ok",
        "crashed",
        "ok",
        "slo_violated",
        "crashed",
        "pruned",
        "running",
    ]
    assert rs[2].value is None  # never the penalty
    assert rs[4].value == 5000.0  # measured, though infeasible
    assert rs[0].baseline and not rs[1].baseline
    assert rs[2].cause == "kv_pool_oom" and rs[2].phase == "memory_pool"
    assert rs[1].config == {"chunked_prefill_size": 8192, "attention_backend": "fa3"}
    assert rs[1].duration_s == 30.0


def more_baseline(study: optuna.Study) -> None:
    """Two more launches of the baseline (8, 9): the launch noise becomes known (about 1%)."""
    add(study, "ok", value=990.0, baseline=True)
    add(study, "ok", value=1010.0, baseline=True)


def test_best_is_ok_only_and_ties_go_to_lower_number(study: optuna.Study) -> None:
    more_baseline(study)
    top = Ledger(study).best()
    assert top is not None and top.number == 1 and top.value == 1300.0
    gain = Ledger(study).summary().gain
    assert gain is not None and gain.significant is True


def test_one_launch_each_cannot_beat_the_baseline(study: optuna.Study) -> None:
    """One launch of the baseline says nothing about noise: the baseline stays the answer."""
    top = Ledger(study).best()
    assert top is not None and top.number == 0 and top.baseline
    s = Ledger(study).summary()
    assert s.gain is not None and s.gain.significant is False and not s.beats_baseline
    assert s.verdict.startswith("too few launches to tell from noise")


def test_a_configuration_that_failed_once_cannot_win(study: optuna.Study) -> None:
    more_baseline(study)
    add(
        study,
        "crashed",
        told=1e9,
        cause="cuda_oom",
        phase="load",
        params={"chunked_prefill_size": 8192, "attention_backend": "fa3"},
    )  # trial 1's config
    top = Ledger(study).best()
    assert top is not None and top.number == 3


def test_best_is_the_median_of_a_configurations_launches(study: optuna.Study) -> None:
    more_baseline(study)
    again = {"chunked_prefill_size": 8192, "attention_backend": "fa3"}
    add(study, "ok", value=1100.0, params=again)  # trial 1 again: median 1100 < 1300
    add(study, "ok", value=1100.0, params=again)
    top = Ledger(study).best()
    assert top is not None and top.number == 3


def test_best_minimize(tmp_path: Path) -> None:
    s = make_study(tmp_path, direction="minimize")
    add(s, "ok", value=50.0)
    add(s, "ok", value=20.0, params={"chunked_prefill_size": 2048, "attention_backend": "fa3"})
    add(
        s,
        "crashed",
        told=-1.0,
        cause="cuda_oom",
        phase="load",
        params={"chunked_prefill_size": 1024, "attention_backend": "fa3"},
    )
    top = Ledger(s).best()
    assert top is not None and top.number == 1


def test_best_none_without_ok(tmp_path: Path) -> None:
    s = make_study(tmp_path)
    add(s, "crashed", told=1.0, cause="cuda_oom", phase="load")
    assert Ledger(s).best() is None
    assert Ledger(s).summary().gain_pct is None


def test_summary(study: optuna.Study) -> None:
    s = Ledger(study).summary()
    assert s.trials == 8
    assert s.outcomes == {"ok": 3, "crashed": 2, "slo_violated": 1, "pruned": 1, "running": 1}
    assert s.causes == {"kv_pool_oom": 2, "dead_end": 1}
    # One launch each: the +30% of trial 1 cannot be told from noise, the baseline stays.
    assert (s.best_trial, s.best_value, s.baseline_trial, s.baseline_value) == (
        0,
        1000.0,
        0,
        1000.0,
    )
    assert s.search_best_trial == 1
    assert s.gain_pct == pytest.approx(30.0)
    assert s.gain is not None and (s.gain.launches.baseline, s.gain.launches.best) == (1, 1)
    assert s.simulated is False
    assert s.metric == "output_tok_s" and s.direction == "maximize"


def test_status_data_is_json(study: optuna.Study) -> None:
    import json

    more_baseline(study)
    data = json.loads(json.dumps(report.status_data(view(study))))
    assert data["summary"]["best_trial"] == 1
    gain = data["summary"]["gain"]
    assert gain["significant"] is True and gain["launches"] == {"baseline": 3, "best": 1}
    lo, hi = gain["ci95_pct"]
    assert 0 < lo < gain["pct"] < hi and gain["pct"] == pytest.approx(30.0, abs=0.1)
    assert [t["outcome"] for t in data["trials"]][:3] == ["ok", "ok", "crashed"]
    assert data["trials"][2]["cause"] == "kv_pool_oom" and data["trials"][2]["value"] is None


@pytest.mark.parametrize(
    ("best", "base", "direction", "gain"),
    [
        (130.0, 100.0, "maximize", 30.0),
        (80.0, 100.0, "minimize", 20.0),
        (120.0, 100.0, "minimize", -20.0),
        (1.0, 0.0, "maximize", None),
        (1.0, None, "maximize", None),
    ],
)
def test_gain_pct(best: float, base: float | None, direction: str, gain: float | None) -> None:
    got = gain_pct(best, base, direction)
    assert got == (pytest.approx(gain) if gain is not None else None)


def _render(renderable: Any) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_status_table_marks_best(study: optuna.Study) -> None:
    more_baseline(study)
    text = _render(report.status_table(view(study)))
    lines = text.splitlines()
    best_line = next(line for line in lines if "1,300" in line and "8192" in line)
    assert "1*" in best_line
    assert not any("3*" in line for line in lines)
    assert "(baseline)" in text and "kv_pool_oom" in text and "running" in text
    assert "SIMULATED" not in text


def test_tables_say_simulated(tmp_path: Path) -> None:
    s = make_study(tmp_path, simulated=True)
    add(s, "ok", value=10.0)
    assert "SIMULATED" in _render(report.status_table(view(s)))
    add(s, "crashed", cause="cuda_oom", phase="load")
    assert "SIMULATED" in _render(report.failure_table(view(s)))
    assert "SIMULATED" in report.headline(view(s))


def test_failure_table_groups_by_cause(study: optuna.Study) -> None:
    text = _render(report.failure_table(view(study)))
    kv = next(line for line in text.splitlines() if "kv_pool_oom" in line)
    assert " 2 " in kv and "memory_pool" in kv and "lower it" in kv and "#2" in kv
    assert "dead_end" in text


def test_failure_table_none_without_failures(tmp_path: Path) -> None:
    s = make_study(tmp_path)
    add(s, "ok", value=1.0)
    assert report.failure_table(view(s)) is None


def test_headline(study: optuna.Study) -> None:
    line = report.headline(view(study))
    assert "trial 0" in line and "+30.0% (1 vs 1 launches" in line and "8 trials" in line
    assert "too few launches to tell from noise" in line


def test_ok_study_holds_only_ok_trials(study: optuna.Study) -> None:
    good = insights.ok_study(study, view(study))
    assert sorted(t.value for t in good.trials if t.value is not None) == [1000.0, 1300.0, 1300.0]


def test_plots_write_pngs(study: optuna.Study, tmp_path: Path) -> None:
    out = tmp_path / "plots"
    files = plots(study, out)
    assert {f.name for f in files} == {
        "optimization_history.png",
        "param_importances.png",
        "outcomes.png",
    }
    for f in files:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fanova = insights.importances(study, view(study))
    assert set(fanova) == {"chunked_prefill_size", "attention_backend"}


def test_plots_skip_importances_with_one_ok_trial(tmp_path: Path) -> None:
    s = make_study(tmp_path, simulated=True)
    add(s, "ok", value=10.0)
    add(
        s,
        "crashed",
        told=0.0,
        cause="cuda_oom",
        phase="load",
        params={"chunked_prefill_size": 1024, "attention_backend": "triton"},
    )
    files = plots(s, tmp_path / "p")
    assert {f.name for f in files} == {"optimization_history.png", "outcomes.png"}
    assert insights.importances(s, view(s)) == {}


def test_plots_empty_study(tmp_path: Path) -> None:
    assert plots(make_study(tmp_path), tmp_path / "p") == []


def test_failure_groups_by_cause_and_phase_keep_every_hint(tmp_path: Path) -> None:
    s = make_study(tmp_path)
    add(s, "ok", value=1.0, baseline=True)
    for phase, hint in (
        ("load", "lower the static fraction"),
        ("warmup", "smaller batches"),
        ("warmup", "smaller batches"),
        ("warmup", "fewer graphs"),
    ):
        add(
            s,
            "crashed",
            told=0.0,
            cause="cuda_oom",
            phase=phase,
            hint=hint,
            params={"chunked_prefill_size": 2048, "attention_backend": "triton"},
        )
    groups = {(g.cause, g.phase): g for g in report.failure_groups(view(s))}
    assert set(groups) == {("cuda_oom", "load"), ("cuda_oom", "warmup")}
    assert groups[("cuda_oom", "warmup")].trials == [2, 3, 4]
    assert groups[("cuda_oom", "warmup")].hints == ["smaller batches", "fewer graphs"]
    text = _render(report.failure_table(view(s)))
    assert "fewer graphs" in text and "lower the static" in text


def _quickstart_like(tmp_path: Path) -> optuna.Study:
    """Continuous batching is the 4x switch; other parameters exist only on one side of it."""
    from optuna.distributions import CategoricalDistribution as Cat

    s = make_study(tmp_path, name="qs")
    dists = {
        "cb": Cat([False, True]),
        "dtype": Cat(["f32", "bf16"]),
        "attn": Cat(["sdpa", "eager"]),
        "block": Cat([16, 64]),
    }
    configs = [{"cb": False, "dtype": "f32", "attn": "sdpa"}]  # the baseline
    for i in range(11):
        cb = i % 2 == 0
        c: dict[str, Any] = {"cb": cb, "dtype": ["f32", "bf16"][i % 3 == 0]}
        c.update({"block": [16, 64][i % 4 < 2]} if cb else {"attn": ["sdpa", "eager"][i % 3 == 1]})
        configs.append(c)
    configs.append({"cb": True, "dtype": "f32", "block": 16})  # the baseline + the switch alone
    for n, c in enumerate(configs):
        value = (40.0 if c["cb"] else 10.0) + (1.0 if c["dtype"] == "bf16" else 0.0) + n * 0.01
        s.add_trial(
            create_trial(
                state=TrialState.COMPLETE,
                value=value,
                params=c,
                distributions={k: dists[k] for k in c},
                user_attrs={
                    "config": c,
                    "outcome": "ok",
                    "baseline": n == 0,
                    "metrics": {"output_tok_s": value},
                },
            )
        )
    return s


def test_marginal_effect_ranks_the_big_switch_first(tmp_path: Path) -> None:
    from autotune.report import insights

    s = _quickstart_like(tmp_path)
    effects = insights.marginal_effects(view(s))
    assert effects[0].param == "cb" and effects[0].best_setting == "True"
    assert effects[0].spread == pytest.approx(30.0, abs=1.5)
    # Conditional parameters are judged where they are set: not credited with cb's effect.
    assert all(e.spread < 5 for e in effects if e.param in ("attn", "block"))
    assert "cb" in insights.importances(s, view(s))  # assessable: every ok trial holds it
    assert "only 13 successful" in (insights.trust_note(view(s)) or "")


def test_history_plots_by_trial_number_and_no_empty_failure_panel(tmp_path: Path) -> None:
    from autotune.report import plots as report_plots

    s = _quickstart_like(tmp_path)
    fig = report_plots._history(view(s))
    ax = fig.axes[0]
    assert ax.get_xlabel() == "trial number"
    xs = sorted(x for coll in ax.collections for x, _y in coll.get_offsets())
    assert xs == list(range(13))
    outcomes = report_plots._outcomes(view(s))
    assert len(outcomes.axes) == 1  # nothing failed: no failure-cause panel


def test_history_shows_pruned_launches_at_their_first_windows(tmp_path: Path) -> None:
    """A pruned launch was measured (its first windows): the plot shows it, marked, so that a
    study whose search launches were mostly pruned (the real vLLM study) does not look empty."""
    from optuna.distributions import CategoricalDistribution as Cat

    from autotune.report import plots as report_plots

    s = make_study(tmp_path, name="pr")
    for n, (outcome, value) in enumerate([("ok", 9200.0), ("pruned", 5265.0), ("ok", 9100.0)]):
        s.add_trial(
            create_trial(
                state=TrialState.COMPLETE if outcome == "ok" else TrialState.PRUNED,
                value=value if outcome == "ok" else None,
                params={"x": n},
                distributions={"x": Cat([0, 1, 2])},
                user_attrs={
                    "config": {"x": n},
                    "outcome": outcome,
                    "baseline": n == 0,
                    "metrics": {"output_tok_s": value},
                    "windows": [{"output_tok_s": value}],
                },
            )
        )
    ax = report_plots._history(view(s)).axes[0]
    points = {(x, y) for coll in ax.collections for x, y in coll.get_offsets()}
    assert (1, 5265.0) in points
    labels = ax.get_legend_handles_labels()[1]
    assert any(label.startswith("pruned") for label in labels), labels
    # The best-so-far line is the completed launches' only.
    best = next(line for line in ax.get_lines() if line.get_label().startswith("best"))
    assert min(best.get_ydata()) == 9200.0


def test_html_report_is_self_contained(study: optuna.Study, tmp_path: Path) -> None:
    from autotune.report.html import write_html

    out = tmp_path / "r"
    v = view(study)
    fanova = insights.importances(study, v)
    page = write_html(v, fanova, out, write_plots(v, fanova, out)).read_text()
    assert page.count("data:image/png;base64,") == 3
    assert "http://" not in page and "https://" not in page and "<script" not in page
    for section in (
        "Best configurations",
        "What each change of the answer contributes",
        "History by trial number",
        "What the parameters are worth",
        "Failures by cause and phase",
    ):
        assert section in page
    assert "kv_pool_oom" in page and "lower it" in page


def test_report_command_prints_no_third_party_warnings(study: optuna.Study, tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(sys.executable).with_name("autotune")
    proc = subprocess.run(
        [
            str(script),
            "report",
            "--study",
            "demo",
            "--storage",
            f"sqlite:///{tmp_path}/study.db",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert (tmp_path / "out" / "report.html").is_file()


def test_a_study_whose_baseline_beat_every_candidate_says_why_nothing_was_confirmed(
    tmp_path: Path,
) -> None:
    """The SGLang study on an H100 (docs/gpu/2026-12-06-sglang-h100-256, real storage): its
    best candidate ran 29% below the baseline; the report must not tell the reader to run
    with confirmation, which now skips such a candidate."""
    import shutil

    from autotune.cli import main

    src = Path(__file__).resolve().parents[1] / "docs" / "gpu" / "2026-12-06-sglang-h100-256"
    shutil.copy(src / "study.db", tmp_path / "study.db")
    out = tmp_path / "report"
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    args = ["report", "--study", "sglang-gpu", "--storage", storage, "--out", str(out)]
    assert main(args) == 0
    html = (out / "report.html").read_text()
    assert "the baseline beat every candidate beyond noise" in html
    assert "Run with confirmation" not in html


REAL_SGLANG = Path(__file__).parent.parent / "docs/gpu/2026-12-06-sglang-h100-seed7/study.db"


def test_one_change_moves_read_the_real_sglang_study() -> None:
    """On the SGLang 0.5.17 study of an H100 (docs/gpu-results.md): the screen's launches each
    changed one setting of the baseline (SGLang's own choices included). The moves that hurt
    most were pruned after one window, so the marginal effects, which read whole launches
    only, never showed them; the moves do, with the crash and its cause."""
    s = optuna.load_study(study_name="sglang-gpu", storage=f"sqlite:///{REAL_SGLANG}")
    moves = {m.param: m for m in insights.one_change_moves(view(s))}
    assert set(moves) >= {"attention_backend", "chunked_prefill_size", "cuda_graph",
                          "cuda_graph_max_bs", "max_running_requests", "speculative",
                          "mem_fraction_static", "schedule_policy"}  # fmt: skip
    graphs_off = moves["cuda_graph"]
    assert (graphs_off.before, graphs_off.after, graphs_off.trial) == (True, False, 4)
    assert graphs_off.outcome == "pruned" and graphs_off.windows == 1
    assert graphs_off.gain_pct == pytest.approx(-17.7, abs=0.2)  # 7,890 vs the median 9,589
    assert moves["max_running_requests"].gain_pct == pytest.approx(-88.2, abs=0.2)
    assert (moves["max_running_requests"].before, moves["max_running_requests"].after) == (4096, 8)
    crash = moves["mem_fraction_static"]
    assert crash.outcome == "crashed" and crash.cause == "kv_pool_oom" and crash.gain_pct is None
    assert moves["schedule_policy"].after == "lpm" and moves["schedule_policy"].windows == 2
    assert moves["speculative"].along == {"draft_tokens": 2}  # the draft length came with it
    # Resumed in the ninth session: graphs to 362 (trial 12, -0.4%) and a memory share of 0.46
    # (trial 13) served, torch.compile (trial 11) timed out in graph capture.
    moved = [(m.param, m.trial) for m in insights.one_change_moves(view(s))]
    assert moved[0] == ("cuda_graph_max_bs", 12)  # the least harm first
    assert moved[-2:] == [("mem_fraction_static", 7), ("torch_compile", 11)]  # failures last
    # The baseline's own launches and the interrupted torch.compile launch are no move.
    assert all(m.trial not in (0, 1, 10) for m in moves.values())


def test_the_report_shows_the_real_studys_one_change_moves(tmp_path: Path) -> None:
    from autotune.report.html import write_html

    s = optuna.load_study(study_name="sglang-gpu", storage=f"sqlite:///{REAL_SGLANG}")
    v = view(s)
    page = write_html(v, {}, tmp_path, []).read_text()
    section = page.split("One change at a time from the baseline", 1)[1].split("<h2>", 1)[0]
    assert "4096 → 8" in section and "1,127.2 (pruned after 1 window" in section
    assert "9,588.6 (median of 2 launches)" in section and "%" not in section  # no gain stated
    assert "none → ngram" in section and "draft_tokens=2" in section


def test_without_the_engines_choices_only_a_launch_that_changed_one_setting_is_a_move(
    tmp_path: Path,
) -> None:
    """No record of what the engine chose, no space: a launch that also set a setting the
    baseline left unset changed two things, not one; the space's ``when`` says which
    settings come and go with a switch, and then the switch alone is a move."""
    s = _quickstart_like(tmp_path)
    moves = {(m.param, m.trial) for m in insights.one_change_moves(view(s))}
    # Trials 2, 8: attention changed alone; 4, 10: dtype alone; 6 is the baseline again; the
    # last (the switch, with block in and attn out) is no move without the space.
    assert moves == {("attn", 2), ("dtype", 4), ("attn", 8), ("dtype", 10)}
    s.set_user_attr("space", {"parameters": [
        {"name": "cb"}, {"name": "dtype"},
        {"name": "attn", "when": "not cb"}, {"name": "block", "when": "cb"}]})  # fmt: skip
    switch = [m for m in insights.one_change_moves(view(s)) if m.param == "cb"]
    # The switch with any block size (block comes with it), never with dtype changed too.
    assert [(m.trial, m.before, m.after) for m in switch] == [
        (n, False, True) for n in (12, 11, 9, 5, 3)
    ]
    assert switch[0].gain_pct == pytest.approx(301.2, abs=0.1)  # 40.12 against 10.0
