"""The progress view: the best so far survives events that carry none; phases; an ETA."""

from __future__ import annotations

import io
import threading
from pathlib import Path

from rich.console import Console

from autotune.cli.progress import ProgressView
from autotune.models import PIECES_COUNTED, Metrics, Outcome, Phase, Timings, TrialResult
from autotune.node.readiness import LogWatcher
from autotune.study.events import Event, EventKind


def _view() -> ProgressView:
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    return ProgressView(console, "output_tok_s", simulated=False)


def test_status_keeps_best_and_shows_phase_and_eta() -> None:
    view = _view()
    view(Event(EventKind.START, launched=0, target=4, best=None))
    view(Event(EventKind.LAUNCH, 0, {"x": 1}))
    assert "#0 launching" in view._status()
    view(Event(EventKind.PHASE, 0, message=Phase.BENCHMARK.value))
    assert "#0 benchmarking" in view._status()
    done = TrialResult(study="s", number=0, outcome=Outcome.OK, timings=Timings(total_s=60.0))
    view(
        Event(
            EventKind.RESULT,
            0,
            result=done,
            outcome=Outcome.OK,
            value=100.0,
            launched=1,
            target=4,
            best=100.0,
            baseline=80.0,
        )
    )
    view(Event(EventKind.LAUNCH, 1, {"x": 2}))  # carries no best: the view keeps its own
    status = view._status()
    assert "best output_tok_s 100" in status and "+25.0% vs baseline" in status
    assert "best -" not in status
    assert "ETA 3m00s" in status  # 3 trials left at 60 s each, one at a time
    view(Event(EventKind.PHASE, 1, message=Phase.WARMUP.value))
    assert "#1 warming up" in view._status()


def test_a_server_without_token_counts_is_told_once() -> None:
    out = io.StringIO()
    view = ProgressView(Console(file=out, width=300), "output_tok_s", simulated=False)
    for number, share in ((0, None), (1, 100.0), (2, 100.0)):
        extra = {} if share is None else {PIECES_COUNTED: share}
        metrics = Metrics(output_tok_s=10.0, completed=4, extra=extra)
        result = TrialResult(study="s", number=number, outcome=Outcome.OK, metrics=metrics)
        view(Event(EventKind.RESULT, number, result=result, outcome=Outcome.OK, value=10.0))
    notes = [line for line in out.getvalue().splitlines() if "stream pieces" in line]
    assert len(notes) == 1 and notes[0].startswith("note: #1: 100% of requests")


def test_launch_lines_show_the_whole_configuration() -> None:
    out = io.StringIO()
    # Soft wrap, as the CLI's console: the view must wrap its lines itself.
    console = Console(file=out, width=80, soft_wrap=True)
    view = ProgressView(console, "output_tok_s", simulated=False)
    config = {f"NCCL_PARAMETER_{i}": 0.6000000000000001 * i for i in range(8)}
    with view:
        view(Event(EventKind.LAUNCH, 7, config))
    text = out.getvalue()
    words = text.split()
    for key in config:
        assert any(w.startswith(f"{key}=") for w in words), key
    assert "0.6000000000000001" not in text and "…" not in text
    assert "NCCL_PARAMETER_1=0.6" in words
    assert max(len(line) for line in text.splitlines()) <= 80


def test_the_node_notes_each_phase_beside_the_log(tmp_path: Path) -> None:
    log = tmp_path / "trial-0003-a0.log"
    log.write_text("")
    watcher = LogWatcher(log, lambda: None, [], [], None, threading.Event())
    watcher.advance(Phase.WARMUP)
    assert (tmp_path / "trial-0003-a0.phase").read_text() == "warmup"
    watcher.advance(Phase.LOAD)  # never back
    assert (tmp_path / "trial-0003-a0.phase").read_text() == "warmup"


def test_an_early_stopped_trial_says_what_it_read_and_why() -> None:
    out = io.StringIO()
    view = ProgressView(Console(file=out, width=120), "output_tok_s", simulated=False)
    r = TrialResult(
        study="s",
        number=4,
        outcome=Outcome.PRUNED,
        timings=Timings(total_s=22.0),
        windows=[{"output_tok_s": 93.06}],
    )
    with view:
        view(Event(EventKind.RESULT, 4, result=r, outcome=Outcome.PRUNED))
    line = next(x for x in out.getvalue().splitlines() if "#4" in x)
    assert "stopped after 1 window(s): output_tok_s=93.06 cannot beat the best" in line
