"""The workload generator (node/workload.py) and the runner's loops, endpoints and sessions.

Schedules and prompts are checked exactly or statistically on seeded draws (no flakiness);
the runner against the fixture server, which records each request body it gets.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from autotune.models import DatasetItem, LengthDist, Prompts, Workload
from autotune.node import bench
from autotune.node.workload import WORDS, Plan, arrivals

Start = Callable[..., str]


def test_fixed_lengths_keep_the_historical_prompts() -> None:
    import random

    w = Workload(prompt_len=7, seed=5)
    rng = random.Random("5:bench")
    expected = [" ".join(rng.choices(WORDS, k=7)) for _ in range(3)]
    assert bench.make_prompts(w, 3) == expected


def test_length_distributions_are_seeded_and_bounded() -> None:
    uniform = Workload(prompt_len=LengthDist(dist="uniform", low=5, high=9), output_len=3)
    lens = [s.prompt_lens[0] for s in Plan(uniform, "bench").sessions(400)]
    assert set(lens) == set(range(5, 10))
    assert [len(s.turns[0].split()) for s in Plan(uniform, "bench").sessions(400)] == lens
    normal = Workload(output_len=LengthDist(dist="normal", mean=100, std=30, low=60, high=130))
    outs = [s.output_lens[0] for s in Plan(normal, "bench").sessions(2000)]
    assert min(outs) == 60 and max(outs) == 130  # clipped at both ends
    assert 95 < statistics.fmean(outs) < 105
    assert outs == [s.output_lens[0] for s in Plan(normal, "bench").sessions(2000)]


def test_shared_prefix_groups_and_fan_out() -> None:
    prompts = Prompts(source="shared_prefix", prefix_len=20, groups=3, per_group=4)
    w = Workload(prompts=prompts, prompt_len=5)
    sessions = Plan(w, "bench").sessions(12)
    prefixes = {s.turns[0].split("\n\n")[0] for s in sessions}
    assert len(prefixes) == 3 and all(len(p.split()) == 20 for p in prefixes)
    by_prefix = [sum(s.turns[0].startswith(p) for s in sessions) for p in prefixes]
    assert by_prefix == [4, 4, 4]
    assert len({s.turns[0] for s in sessions}) == 12
    assert all(s.prompt_lens[0] == 25 for s in sessions)
    # Another window gets other prefixes (a cache warmed by one does not flatter the next).
    other = {s.turns[0].split("\n\n")[0] for s in Plan(w, "bench-1").sessions(12)}
    assert not other & prefixes


def test_dataset_sessions_take_turns_and_answer_lengths() -> None:
    item = DatasetItem(turns=("a b", "c d e f"), prompt_len=2, output_len=7, answer_lens=(7, 11))
    prompts = Prompts(source="sharegpt", path="/x.json", items=(item,))
    w = Workload(prompts=prompts, turns=2)
    session = Plan(w, "bench").session(0)
    assert session.turns == ("a b", "c d e f")
    assert session.output_lens == (7, 11)
    assert session.prompt_lens == (2, 2)
    fixed = Workload(prompts=prompts, output_len=5, turns=1)
    assert Plan(fixed, "bench").session(0).output_lens == (5,)


def test_a_file_source_without_its_sample_is_refused() -> None:
    w = Workload(prompts=Prompts(source="jsonl", path="/nowhere.jsonl"), output_len=4)
    with pytest.raises(ValueError, match="materialise"):
        Plan(w, "bench")


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def test_poisson_and_gamma_arrivals() -> None:
    poisson = arrivals(Workload(rate=4.0), "bench", count=20000, duration_s=None)
    gaps = _gaps(poisson)
    assert poisson[0] == 0.0
    assert statistics.fmean(gaps) == pytest.approx(0.25, rel=0.03)
    assert statistics.stdev(gaps) / statistics.fmean(gaps) == pytest.approx(1.0, rel=0.05)
    bursty = Workload(rate=4.0, arrival="gamma", burstiness=0.25)
    gaps = _gaps(arrivals(bursty, "bench", count=20000, duration_s=None))
    assert statistics.fmean(gaps) == pytest.approx(0.25, rel=0.05)
    assert statistics.stdev(gaps) / statistics.fmean(gaps) == pytest.approx(2.0, rel=0.08)
    timed = arrivals(Workload(rate=10.0), "bench", count=None, duration_s=30.0)
    assert max(timed) < 30.0 and 250 < len(timed) < 350
    assert timed == arrivals(Workload(rate=10.0), "bench", count=None, duration_s=30.0)
    assert timed != arrivals(Workload(rate=10.0), "bench-1", count=None, duration_s=30.0)


def test_a_time_scaled_stand_in_gets_the_same_schedule_in_its_seconds() -> None:
    w = Workload(rate=2.0, arrival="gamma", burstiness=0.5, duration_s=10.0)
    fast = bench.in_server_time(w, 4.0)
    assert (fast.rate, fast.duration_s) == (8.0, 2.5)
    slow = arrivals(w, "bench", count=None, duration_s=w.duration_s)
    quick = arrivals(fast, "bench", count=None, duration_s=fast.duration_s)
    assert quick == pytest.approx([t / 4.0 for t in slow])


def _bodies(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_chat_endpoint_counts_deltas_and_usage(fixture_server: Start, tmp_path: Path) -> None:
    record = tmp_path / "bodies.jsonl"
    url = fixture_server("--usage", "--chunk", "2", "--record", str(record))
    w = Workload(endpoint="/v1/chat/completions", model="m", num_requests=4, output_len=6)
    result = bench.run_load(url, w)
    metrics = result.metrics()
    assert (metrics.completed, metrics.output_tokens) == (4, 24)
    sent = _bodies(record)
    assert {b["path"] for b in sent} == {"/v1/chat/completions"}
    first = sent[0]["body"]
    assert isinstance(first, dict) and first["messages"][0]["role"] == "user"  # type: ignore[index]
    # The server's usage.prompt_tokens (characters, in this fixture) is the input count.
    chars = sum(len(b["body"]["messages"][0]["content"]) for b in sent)  # type: ignore[index]
    assert metrics.input_tokens == chars
    assert metrics.input_tok_s == pytest.approx(chars / metrics.duration_s)


@pytest.mark.parametrize("endpoint", ["/v1/chat/completions", "/generate"])
def test_sessions_resend_their_history(
    fixture_server: Start, tmp_path: Path, endpoint: str
) -> None:
    record = tmp_path / "bodies.jsonl"
    url = fixture_server("--record", str(record))
    w = Workload(endpoint=endpoint, turns=3, num_requests=6, concurrency=2, output_len=3)
    result = bench.run_load(url, w)
    assert (result.completed, result.requested) == (6, 6)
    assert sorted((r.session, r.turn) for r in result.records) == [
        (s, t) for s in range(2) for t in range(3)
    ]
    sent = [b["body"] for b in _bodies(record)]
    if endpoint == "/generate":
        last = [b for b in sent if str(b["text"]).count("User:") == 3]  # type: ignore[index]
        assert len(last) == 2
        assert all(str(b["text"]).count("Assistant:  tok tok tok") == 2 for b in last)  # type: ignore[index]
    else:
        last = [b for b in sent if len(b["messages"]) == 5]  # type: ignore[arg-type,index]
        assert len(last) == 2
        for body in last:
            roles = [m["role"] for m in body["messages"]]  # type: ignore[index]
            assert roles == ["user", "assistant", "user", "assistant", "user"]
            assert body["messages"][1]["content"] == " tok tok tok"  # type: ignore[index]
    # Input grows with the history; per-turn metrics split it.
    turn0, turn2 = result.metrics(turn=0), result.metrics(turn=2)
    assert turn0.completed == turn2.completed == 2
    assert turn2.input_tokens > turn0.input_tokens


def test_open_loop_sends_on_schedule_without_waiting(fixture_server: Start) -> None:
    url = fixture_server("--rate", "10")  # 10 tokens: about a second a request
    w = Workload(rate=40.0, num_requests=10, output_len=10)
    result = bench.run_load(url, w)
    assert result.completed == 10
    times = arrivals(w, "bench", count=10, duration_s=None)
    for record in result.records:
        assert record.start - result.start >= times[record.session]  # never early
    assert len(result.lag_s) == 10
    # Open loop: every request was sent before the first answer ended.
    assert max(r.start for r in result.records) < min(r.end for r in result.records)
    assert "send_lag_p99_ms" in result.metrics().extra


def test_open_loop_cap_on_requests_in_flight(fixture_server: Start) -> None:
    url = fixture_server("--rate", "100")
    w = Workload(rate=500.0, max_concurrency=2, num_requests=8, output_len=5)
    result = bench.run_load(url, w)
    assert result.completed == 8
    events = sorted([(r.start, 1) for r in result.records] + [(r.end, -1) for r in result.records])
    inflight, peak = 0, 0
    for _, step in events:
        inflight += step
        peak = max(peak, inflight)
    assert peak <= 2


def test_closed_loop_for_a_duration(fixture_server: Start) -> None:
    url = fixture_server("--rate", "200")
    w = Workload(duration_s=0.5, concurrency=3, output_len=4)
    result = bench.run_load(url, w)
    assert result.state == "done" and result.completed >= 3
    assert result.requested == result.completed
    # No request starts once the duration is over. The deadline is checked before a request
    # is built and sent, so a loaded machine can stamp a start a little after 0.5 s; a loop
    # that ignored the duration would go on starting requests well past it.
    assert all(r.start - result.start < 0.5 + 0.25 for r in result.records)


def test_a_trial_sends_a_file_sample_in_an_open_loop_of_sessions(
    make_spec: Callable[..., object], tmp_path: Path
) -> None:
    from node_helpers import server_argv

    from autotune.models import Outcome, TrialSpec
    from autotune.node import run_trial

    record = tmp_path / "bodies.jsonl"
    items = tuple(
        DatasetItem(turns=(f"first {i}", f"second {i}"), prompt_len=3, answer_lens=(4, 5))
        for i in range(3)
    )
    workload = {
        "endpoint": "/v1/chat/completions",
        "rate": 50.0,
        "arrival": "gamma",
        "burstiness": 0.5,
        "turns": 2,
        "num_requests": 6,
        "windows": 2,
        "warmup_requests": 1,
        "output_len": "dataset",
        "prompts": Prompts(source="sharegpt", path="/elsewhere.json", items=items),
    }
    spec = make_spec(server_argv("--record", str(record)), workload=workload)
    assert isinstance(spec, TrialSpec)
    # What a Ray node gets: the spec as JSON, prompts included.
    result = run_trial(TrialSpec.model_validate_json(spec.model_dump_json()))
    assert result.outcome == Outcome.OK, result.failure
    assert result.metrics is not None and result.metrics.completed == 2 * 6
    assert result.metrics.output_tokens == 2 * 3 * (4 + 5)
    assert "send_lag_p99_ms" in result.metrics.extra
    sent = [json.loads(line)["body"] for line in record.read_text().splitlines()]
    asked = {m["content"] for b in sent for m in b["messages"] if m["role"] == "user"}
    assert asked == {f"{w} {i}" for w in ("first", "second") for i in range(3)}
