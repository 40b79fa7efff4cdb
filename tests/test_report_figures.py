"""One source for every figure: a report rendered from a study with known launches says the
same numbers in its headline, its table and its baseline row, and so do ``status`` and the
summary MLflow receives; a single search launch is never set against a confirmed figure."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial

from autotune.cli import main
from autotune.core.records import StudyRecord, TrialRecord
from autotune.core.summary import Ablation, AblationStep
from autotune.models import Outcome
from autotune.report import write_report
from autotune.study.confirm import BASELINE, Candidate, Confirmation, Launch, decide
from autotune.study.ledger import Ledger, trial_attrs
from autotune.study.noise import gain

BASE, A, B, C = {"bs": 8}, {"bs": 16}, {"bs": 32}, {"bs": 64}
SEARCH = [(BASE, 100.0), (BASE, 104.0), (BASE, 96.0), (A, 150.0), (B, 140.0), (C, 90.0)]
ROUNDS = [  # confirmation, round by round: baseline, A, B
    (101.0, 121.0, 111.0),
    (99.0, 119.0, 112.0),
    (100.0, 120.0, 110.0),
]


def _add(study: optuna.Study, config: dict[str, Any], value: float, **extra: Any) -> None:
    record = TrialRecord(
        number=0,
        state="COMPLETE",
        outcome=Outcome.OK,
        config=config,
        metrics={"output_tok_s": value},
        baseline=config == BASE,
        **extra,
    )
    study.add_trial(
        create_trial(
            state=TrialState.COMPLETE,
            value=value,
            params=config,
            distributions={"bs": IntDistribution(1, 64)},
            user_attrs=trial_attrs(record),
        )
    )


@pytest.fixture
def study(tmp_path: Path) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    (tmp_path / "studies" / "known").mkdir(parents=True)
    s = optuna.create_study(
        storage=f"sqlite:///{tmp_path / 'studies' / 'known' / 'study.db'}",
        study_name="known",
        direction="maximize",
    )
    ledger = Ledger(s)
    ledger.write_study(StudyRecord(name="known", metric="output_tok_s", engine="sglang"))
    for config, value in SEARCH:
        _add(s, config, value)
    record = Confirmation(
        direction="maximize",
        candidates=[
            Candidate(key="trial 3", config=A, trial=3),
            Candidate(key="trial 4", config=B, trial=4),
        ],
    )
    for r, values in enumerate(ROUNDS, start=1):
        keys = (BASELINE, "trial 3", "trial 4")
        for key, config, value in zip(keys, (BASE, A, B), values, strict=True):
            _add(s, config, value, confirm_round=r, confirm_key=key)
            record.launches.append(Launch(round=r, key=key, value=value, server_s=10.0))
    record.rounds = 3
    decide(record, ["trial 3", "trial 4"], 2, 0.95)
    ledger.write_confirmation(record)
    return s


class _Page(HTMLParser):
    """The headline paragraph and every table row's cells, as text."""

    def __init__(self) -> None:
        super().__init__()
        self.headline = ""
        self.rows: list[list[str]] = []
        self._in: str | None = None
        self._cell: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "p" and ("class", "headline") in attrs:
            self._in = "headline"
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._in, self._cell = "cell", []

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self._in == "headline":
            self._in = None
        elif tag in ("td", "th") and self._in == "cell":
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "headline":
            self.headline += data
        elif self._in == "cell":
            self._cell.append(data)


def _page(study: optuna.Study, tmp_path: Path) -> tuple[str, _Page]:
    written = write_report(study, tmp_path / "report")
    text = written.page.read_text()
    parsed = _Page()
    parsed.feed(text)
    return text, parsed


def test_headline_table_and_baseline_row_say_the_same_figures(
    study: optuna.Study, tmp_path: Path
) -> None:
    s = Ledger(study).summary()
    # The answer is A, by its confirmed median; the baseline beside it from the same rounds.
    assert s.answer is not None and s.answer.trial == 3 and s.confirmed
    assert (s.best_value, s.baseline_value) == (120.0, 100.0)
    expected = gain([101.0, 99.0, 100.0], [121.0, 119.0, 120.0], "maximize", candidates=2)
    assert s.gain is not None and s.gain.pct == pytest.approx(expected.pct, abs=1e-3)

    text, page = _page(study, tmp_path)
    assert "Run trial #3" in page.headline
    assert "120 median of 3 confirmation launches" in page.headline
    assert "vs baseline 100 median of 3 confirmation launches" in page.headline
    rows = {r[1]: r for r in page.rows if r and r[0].isdigit()}
    answer = next(r for k, r in rows.items() if k.startswith("#3"))
    assert answer[2] == "150 1 search launch"  # its single search launch, shown as such
    assert answer[3] == "120 median of 3 confirmation launches"  # = the headline's
    assert answer[4] == s.gain.interval_text()  # = the verdict's gain and interval
    baseline = next(r for k, r in rows.items() if k.startswith("#0"))
    assert baseline[2] == "100 median of 3 search launches"
    assert baseline[3] == "100 median of 3 confirmation launches"  # = the headline's
    assert baseline[4] == "the reference"  # no "% vs baseline" on the baseline itself
    unconfirmed = next(r for k, r in rows.items() if k.startswith("#5"))
    assert unconfirmed[3] == "not confirmed" and unconfirmed[4] == "not confirmed: no gain stated"

    # Every gain printed anywhere on the page is one of the confirmed comparisons: the +50%
    # of A's single search launch over the baseline is never stated.
    allowed = set()
    for c in s.configurations:
        if c.gain is not None:
            allowed |= {f"{x:+.1f}%" for x in (c.gain.pct, *c.gain.ci95_pct)}
    stated = set(re.findall(r"[+-]\d+\.\d%", text))
    assert stated and stated <= allowed, stated - allowed
    assert "+50.0%" not in text


def test_status_and_mlflow_read_the_same_summary(
    study: optuna.Study, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "studies"
    assert main(["status", "--study", "known", "--study-root", str(root), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    # The summary the driver hands the tracker at the end (Ledger.summary) is the same one.
    assert shown["summary"] == Ledger(study).summary().model_dump(mode="json")
    assert (shown["summary"]["best_value"], shown["summary"]["baseline_value"]) == (120.0, 100.0)
    assert main(["status", "--study", "known", "--study-root", str(root)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "trial #3: output_tok_s = 120 (median of 3 confirmation launches)" in out
    assert "vs baseline trial #0: 100 (median of 3 confirmation launches)" in out


def test_the_ablation_is_a_table_with_intervals_or_one_line(
    study: optuna.Study, tmp_path: Path
) -> None:
    ledger = Ledger(study)
    ledger.write_ablation(Ablation(winner=3, skipped="not run: the budget does not allow it"))
    text, page = _page(study, tmp_path)
    section = text.split("What each change of the answer contributes</h2>")[1].split("<h2>")[0]
    assert section.strip() == "<p>not run: the budget does not allow it</p>"

    contribution = gain([60.0, 61.0, 59.0], [120.0, 121.0, 119.0], "maximize")
    step = AblationStep(
        param="bs",
        winner_value=16,
        baseline_value=8,
        config=BASE,
        values=[60.0, 61.0, 59.0],
        contribution=contribution,
    )
    ledger.write_ablation(Ablation(winner=3, rounds=3, winner_values=[120.0] * 3, steps=[step]))
    text, page = _page(study, tmp_path)
    row = next(r for r in page.rows if r and r[0] == "bs")
    assert row[1:] == ["16", "8", contribution.interval_text()]
    assert "-</td>" not in text.split("What each change")[1].split("<h2>")[0]
