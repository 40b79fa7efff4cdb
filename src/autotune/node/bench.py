"""The load generator: streamed requests in a closed or an open loop, and their metrics.

Requests go through ``node/stream.py``, a minimal HTTP/1.1 client: each piece of a response
is time-stamped on arrival, before parsing, and no per-chunk framework cost sits between the
socket and the clock (bench/loadgen.py measures it against a raw-socket client).

A closed loop keeps ``concurrency`` requests in flight (each that ends starts the next); an
open loop starts sessions at the arrival times of ``node/workload.py``, each scheduled from
the window's start (a late send does not push the next one later), whatever the server does.
Request bodies are encoded before the clock starts; a multi-turn session builds each later
turn from the answer it just streamed.

Three endpoints are understood: ``/v1/completions`` (OpenAI SSE, ``choices[0].text``),
``/v1/chat/completions`` (``choices[0].delta.content``) and ``/generate`` (SGLang native,
cumulative ``meta_info.completion_tokens``); on the OpenAI endpoints ``usage`` is asked for
(``stream_options.include_usage``) and its counts override chunk counts when the server sends
them. Metrics follow SGLang's bench_serving: TTFT is the first non-empty chunk,
ITL a chunk gap divided by the tokens it brought, TPOT ``(e2e - ttft) / (tokens - 1)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from autotune.models import PIECES_COUNTED, Metrics, Stats, Workload
from autotune.node import stream
from autotune.node.workload import Plan, Session, arrivals, iter_sessions, sessions_for

_ERRORS_KEPT = 5
# OpenAI servers send a stream's token counts only when asked (SGLang, vLLM, and
# `transformers serve` from 5.25; earlier versions ignore the field with a warning).
_USAGE = {"include_usage": True}
POLL_S = 0.05


def make_prompts(workload: Workload, count: int, *, kind: str = "bench") -> list[str]:
    """The first-turn prompts of the first ``count`` sessions of window ``kind``.

    ``kind`` separates warm-up prompts from measured ones, so a prefix cache warmed by the
    warm-up does not flatter the benchmark.
    """
    return [s.turns[0] for s in Plan(workload, kind).sessions(count)]


def request_body(
    workload: Workload,
    prompt: str,
    output_len: int | None = None,
    history: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """The JSON body of one streaming request for ``workload.endpoint``.

    Args:
        workload: endpoint, model, extra fields.
        prompt: this turn's user text.
        output_len: tokens to ask for (default: the workload's fixed output length).
        history: earlier ``(user, answer)`` turns of the session, resent in order.
    """
    if output_len is None:
        if not isinstance(workload.output_len, int):
            raise ValueError("output_len is a distribution: pass the drawn length")
        output_len = workload.output_len
    if workload.endpoint == "/v1/chat/completions":
        messages: list[dict[str, str]] = []
        for user, answer in history:
            messages += [
                {"role": "user", "content": user},
                {"role": "assistant", "content": answer},
            ]
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "messages": messages,
            "max_tokens": output_len,
            "stream": True,
            "stream_options": dict(_USAGE),
            "temperature": 0,
        }
        if workload.model is not None:
            body["model"] = workload.model
        body.update(workload.extra_body)
        return body
    if history:
        # Text endpoints have no roles: the history as plain labelled text (the chat
        # endpoint applies the model's own template instead).
        past = "".join(f"User: {u}\nAssistant: {a}\n" for u, a in history)
        prompt = f"{past}User: {prompt}\nAssistant:"
    if workload.endpoint == "/generate":
        body = {
            "text": prompt,
            "sampling_params": {
                "temperature": 0,
                "max_new_tokens": output_len,
                "ignore_eos": True,
            },
            "stream": True,
        }
    else:
        # No ignore_eos here: `transformers serve` rejects unknown fields with 422.
        body = {
            "prompt": prompt,
            "max_tokens": output_len,
            "stream": True,
            "stream_options": dict(_USAGE),
            "temperature": 0,
        }
        if workload.model is not None:
            body["model"] = workload.model
    body.update(workload.extra_body)
    return body


@dataclass
class RequestRecord:
    """One request's timings (seconds) and tokens; one per turn of a session."""

    ok: bool = False
    error: str = ""
    ttft_s: float | None = None
    e2e_s: float = 0.0
    output_tokens: int = 0
    input_tokens: int = 0  # the server's count (usage) when it sent one, else the estimate
    counted: bool = False  # output_tokens is the server's count, not the stream pieces seen
    itl_s: list[float] = field(default_factory=list)
    start: float = 0.0  # time.perf_counter() when it was sent
    end: float = 0.0  # time.perf_counter() at the end
    session: int = 0
    turn: int = 0
    text: str = ""  # the answer, kept only for sessions of several turns


@dataclass
class BenchResult:
    """The outcome of one load run: ``done``, ``aborted`` (by the caller), ``timeout``, or
    ``hopeless`` (stopped once it could no longer reach a floor it was given: ``gave_up``
    names the metric).

    ``lag_s``: open loop, how late each session was sent after its scheduled time.
    """

    records: list[RequestRecord]
    duration_s: float
    state: str = "done"
    requested: int = 0
    lag_s: list[float] = field(default_factory=list)
    start: float = 0.0  # time.perf_counter() when the window began (arrivals count from it)
    gave_up: str = ""
    streamed_tokens: int = 0  # output tokens streamed, by requests cut short too

    @property
    def completed(self) -> int:
        return sum(1 for r in self.records if r.ok)

    @property
    def failed(self) -> int:
        return sum(1 for r in self.records if not r.ok)

    def errors(self, limit: int = _ERRORS_KEPT) -> list[str]:
        """The first distinct error messages."""
        out: list[str] = []
        for record in self.records:
            if not record.ok and record.error and record.error not in out:
                out.append(record.error)
            if len(out) >= limit:
                break
        return out

    def metrics(self, turn: int | None = None) -> Metrics:
        """The benchmark's metrics (zero throughput, no stats, when nothing completed).

        Args:
            turn: only the requests of this turn of their session (0: the first); rates are
                still per second of the whole run.
        """
        records = [r for r in self.records if turn is None or r.turn == turn]
        done = [r for r in records if r.ok]
        tokens = sum(r.output_tokens for r in done)
        prompt_tokens = sum(r.input_tokens for r in done)
        duration = self.duration_s
        tpot = [
            (r.e2e_s - r.ttft_s) / (r.output_tokens - 1)
            for r in done
            if r.ttft_s is not None and r.output_tokens > 1
        ]
        extra: dict[str, float] = {}
        if self.lag_s and turn is None:
            extra["send_lag_p99_ms"] = percentile(self.lag_s, 99) * 1000.0
        uncounted = sum(1 for r in done if not r.counted)
        if uncounted:  # a piece may carry several tokens: tok/s then reads low
            extra[PIECES_COUNTED] = 100.0 * uncounted / len(done)
        return Metrics(
            output_tok_s=tokens / duration if duration > 0 else 0.0,
            request_s=len(done) / duration if duration > 0 else 0.0,
            input_tok_s=prompt_tokens / duration if duration > 0 else 0.0,
            ttft_ms=stats_ms([r.ttft_s for r in done if r.ttft_s is not None]),
            itl_ms=stats_ms([x for r in done for x in r.itl_s]),
            e2e_ms=stats_ms([r.e2e_s for r in done]),
            tpot_ms=stats_ms(tpot),
            completed=len(done),
            failed=len(records) - len(done),
            output_tokens=tokens,
            input_tokens=prompt_tokens,
            duration_s=duration,
            extra=extra,
        )


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def aggregate(windows: Sequence[Metrics]) -> Metrics:
    """One Metrics for several windows on the same server: median rates and latency statistics
    (each field of each distribution on its own), summed counts and durations.

    Raises:
        ValueError: no windows.
    """
    if not windows:
        raise ValueError("no windows")
    if len(windows) == 1:
        return windows[0]

    def stats(name: str) -> Stats | None:
        present: list[Stats] = [s for w in windows if (s := getattr(w, name)) is not None]
        if not present:
            return None
        return Stats(
            **{k: _median([getattr(s, k) for s in present]) for k in ("mean", "p50", "p90", "p99")}
        )

    accepts = [w.accept_length for w in windows if w.accept_length is not None]
    keys = sorted({k for w in windows for k in w.extra})
    return Metrics(
        output_tok_s=_median([w.output_tok_s for w in windows]),
        request_s=_median([w.request_s for w in windows]),
        input_tok_s=_median([w.input_tok_s for w in windows]),
        ttft_ms=stats("ttft_ms"),
        itl_ms=stats("itl_ms"),
        e2e_ms=stats("e2e_ms"),
        tpot_ms=stats("tpot_ms"),
        completed=sum(w.completed for w in windows),
        failed=sum(w.failed for w in windows),
        output_tokens=sum(w.output_tokens for w in windows),
        input_tokens=sum(w.input_tokens for w in windows),
        duration_s=sum(w.duration_s for w in windows),
        accept_length=accepts[-1] if accepts else None,
        extra={k: _median([w.extra[k] for w in windows if k in w.extra]) for k in keys},
    )


def unscale(metrics: Metrics, scale: float) -> Metrics:
    """Metrics of a time-scaled stand-in in the seconds it simulates.

    A stand-in running ``scale`` times faster than the time it simulates streams ``scale``
    times more tokens per wall second: rates are divided by ``scale``, times multiplied.
    """
    if scale == 1.0:
        return metrics

    def slow(stats: Stats | None) -> Stats | None:
        if stats is None:
            return None
        return Stats(
            mean=stats.mean * scale,
            p50=stats.p50 * scale,
            p90=stats.p90 * scale,
            p99=stats.p99 * scale,
        )

    return metrics.model_copy(
        update={
            "output_tok_s": metrics.output_tok_s / scale,
            "request_s": metrics.request_s / scale,
            "input_tok_s": metrics.input_tok_s / scale,
            "ttft_ms": slow(metrics.ttft_ms),
            "itl_ms": slow(metrics.itl_ms),
            "e2e_ms": slow(metrics.e2e_ms),
            "tpot_ms": slow(metrics.tpot_ms),
            "duration_s": metrics.duration_s * scale,
        }
    )


def in_server_time(workload: Workload, scale: float) -> Workload:
    """The workload as sent to a stand-in running ``scale`` times faster than the time it
    simulates: an open loop's rate times ``scale``, its duration divided by it (the seeded
    gaps scale exactly, so the schedule is the same in simulated seconds)."""
    if scale == 1.0:
        return workload
    update: dict[str, Any] = {}
    if workload.rate is not None:
        update["rate"] = workload.rate * scale
    if workload.duration_s is not None:
        update["duration_s"] = workload.duration_s / scale
    return workload.model_copy(update=update) if update else workload


def sim_time_scale(info: dict[str, Any] | None) -> float:
    """The time scale a stand-in server reports (1.0 for any other server)."""
    if not info or info.get("simulated") is not True:
        return 1.0
    sim = info.get("simulation")
    scale = sim.get("time_scale") if isinstance(sim, dict) else None
    if isinstance(scale, int | float) and not isinstance(scale, bool) and scale > 0:
        return float(scale)
    return 1.0


def percentile(values: Sequence[float], q: int) -> float:
    """The ``q``-th percentile (1-99) of ``values``, linearly interpolated between the two
    nearest ranks (``statistics.quantiles``' inclusive method, numpy's default)."""
    return _percentiles(values, (q,))[0]


def _percentiles(values: Sequence[float], qs: Sequence[int]) -> list[float]:
    if not values:
        raise ValueError("no values")
    if any(not 1 <= q <= 99 for q in qs):
        raise ValueError(f"percentiles are whole numbers from 1 to 99, got {list(qs)}")
    if len(values) == 1:
        return [float(values[0])] * len(qs)
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return [cuts[q - 1] for q in qs]


def stats_ms(seconds: Sequence[float]) -> Stats | None:
    """Mean and percentiles in milliseconds; None for no values."""
    if not seconds:
        return None
    values = [s * 1000.0 for s in seconds]
    p50, p90, p99 = _percentiles(values, (50, 90, 99))
    return Stats(mean=statistics.fmean(values), p50=p50, p90=p90, p99=p99)


def _chunk_tokens(kind: str, obj: dict[str, Any], state: dict[str, Any]) -> int:
    """New tokens one SSE chunk brought; keeps usage counts and, when asked, the text."""
    if kind == "generate":
        meta = obj.get("meta_info") or {}
        if isinstance(meta.get("prompt_tokens"), int):
            state["prompt"] = meta["prompt_tokens"]
        if "text" in state and isinstance(obj.get("text"), str):
            state["text"] = obj["text"]  # cumulative
        cumulative = meta.get("completion_tokens")
        if isinstance(cumulative, int):
            new = max(0, cumulative - int(state.get("total", 0)))
            state["total"] = max(cumulative, state.get("total", 0))
            state["usage"] = True
            return new
        return 1 if obj.get("text") else 0
    usage = obj.get("usage")
    if isinstance(usage, dict):
        if isinstance(usage.get("completion_tokens"), int):
            state["total"] = usage["completion_tokens"]
            state["usage"] = True
        if isinstance(usage.get("prompt_tokens"), int):
            state["prompt"] = usage["prompt_tokens"]
    choices = obj.get("choices") or []
    first = choices[0] if choices and isinstance(choices[0], dict) else None
    if first is None:
        return 0
    if kind == "chat":
        delta = first.get("delta")
        text = delta.get("content") if isinstance(delta, dict) else None
    else:
        text = first.get("text")
    if not text:
        return 0
    if "text" in state:
        state["text"] += text
    return 1


def _kind(workload: Workload) -> str:
    if workload.endpoint == "/generate":
        return "generate"
    return "chat" if workload.endpoint == "/v1/chat/completions" else "completions"


async def _one(
    pool: stream.Pool,
    workload: Workload,
    body: bytes,
    *,
    keep_text: bool = False,
    streamed: list[int] | None = None,
) -> RequestRecord:
    record = RequestRecord()
    chunks = 0
    state: dict[str, Any] = {"text": ""} if keep_text else {}
    kind = _kind(workload)
    start = time.perf_counter()
    record.start = start
    last = start
    try:
        async with pool.post(workload.endpoint, body) as response:
            if response.status != 200:
                text = (await response.read()).decode("utf-8", errors="replace")
                record.error = f"HTTP {response.status}: {' '.join(text.split())[:200]}"
                return record
            pending = b""
            async for now, piece in response.pieces():
                pending += piece
                if b"\n" not in pending:
                    continue
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    line = raw.strip()
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        break
                    try:
                        obj = json.loads(data)
                    except ValueError:  # recorded as this request's error
                        record.error = f"bad stream chunk: {data[:120].decode(errors='replace')}"
                        return record
                    if not isinstance(obj, dict):
                        continue
                    if obj.get("error"):
                        record.error = f"error in stream: {str(obj['error'])[:200]}"
                        return record
                    new = _chunk_tokens(kind, obj, state)
                    if new <= 0:
                        continue
                    if streamed is not None:  # the window's tokens so far, finished or not
                        streamed[0] += new
                    # ``now``: when the bytes arrived, before any parsing.
                    chunks += 1
                    if record.ttft_s is None:
                        record.ttft_s = now - start
                    elif new == 1:
                        record.itl_s.append(now - last)
                    else:
                        record.itl_s.extend([(now - last) / new] * new)
                    last = now
    except stream.StreamError as exc:
        record.error = str(exc)
        return record
    record.end = time.perf_counter()
    record.e2e_s = record.end - start
    record.counted = bool(state.get("usage"))
    record.output_tokens = int(state["total"]) if record.counted else chunks
    record.input_tokens = int(state.get("prompt", 0))
    record.text = state.get("text", "")
    if record.output_tokens <= 0:
        record.error = "the response had no output tokens"
        return record
    record.ok = True
    return record


class _Window:
    """One load run's sending: sessions, their turns, the records."""

    def __init__(self, pool: stream.Pool, workload: Workload) -> None:
        self.pool, self.workload = pool, workload
        self.records: list[RequestRecord] = []
        self.requested = 0
        self.streamed = [0]  # output tokens streamed so far, by every request
        self.multi = workload.turns > 1

    def encode(self, session: Session) -> bytes:
        body = request_body(self.workload, session.turns[0], session.output_lens[0])
        return json.dumps(body).encode()

    async def run(self, session: Session, first: bytes) -> None:
        """Send the session's turns one after another, each with the history so far."""
        self.requested += len(session.turns)
        history: list[tuple[str, str]] = []
        estimate = 0  # prompt tokens of the history, as sent
        for turn, user in enumerate(session.turns):
            if turn == 0:
                body = first
            else:
                payload = request_body(self.workload, user, session.output_lens[turn], history)
                body = json.dumps(payload).encode()
            record = await _one(
                self.pool, self.workload, body, keep_text=self.multi, streamed=self.streamed
            )
            record.session, record.turn = session.index, turn
            estimate += session.prompt_lens[turn]
            if record.input_tokens <= 0:
                record.input_tokens = estimate
            self.records.append(record)
            if not record.ok:
                return
            history.append((user, record.text))
            estimate += record.output_tokens


async def run_load_async(
    base_url: str,
    workload: Workload,
    prompts: Sequence[str] | None = None,
    *,
    kind: str = "bench",
    concurrency: int | None = None,
    count: int | None = None,
    abort: Callable[[], bool] | None = None,
    limit_s: float | None = None,
    give_up_below: Mapping[str, float] | None = None,
) -> BenchResult:
    """One window of ``workload`` against ``base_url``; stops early on ``abort()``.

    Args:
        base_url: ``http://host:port``.
        workload: what to send and how (closed loop at ``concurrency``, or open loop at
            ``rate``; ``num_requests`` or ``duration_s``).
        prompts: explicit single-turn prompts instead of the workload's source (one request
            each, unless ``count`` says otherwise).
        kind: the window's prompt and arrival set (``bench``, ``bench-1``, ``warmup``...).
        concurrency: a closed loop at this concurrency, whatever the workload says (the
            warm-up, the peak window).
        count: this many requests instead of the workload's ``num_requests``/``duration_s``.
        abort: polled every 50 ms; True cancels the requests still running.
        limit_s: wall-clock limit of the whole run (state ``timeout`` when reached).
        give_up_below: ``{metric: floor}`` for ``models.BOUNDED_RATES``: a
            window of a fixed number of requests stops (state ``hopeless``) as soon as even
            its planned total over the time already spent is below the floor; no ending
            could reach it. (A duration window is not bounded.)
    """
    pool = stream.Pool(
        base_url,
        read_timeout_s=workload.request_timeout_s,
        connect_timeout_s=min(30.0, workload.request_timeout_s),
    )
    plan = Plan(workload, kind, prompts)
    window = _Window(pool, workload)
    if count is None and prompts is not None:
        count = len(prompts)
    closed = concurrency is not None or not workload.open_loop
    duration = workload.duration_s if count is None else None
    lag: list[float] = []
    sessions: list[Session] = []
    if closed and duration is None:
        sessions = plan.sessions(sessions_for(workload, count or workload.num_requests))
    elif not closed:
        times = arrivals(
            workload,
            kind,
            count=None
            if duration is not None
            else sessions_for(workload, count or workload.num_requests),
            duration_s=duration,
        )
        sessions = [
            Session(s.index, s.turns, s.output_lens, s.prompt_lens, at)
            for s, at in zip(plan.sessions(len(times)), times, strict=True)
        ]
    # Encoded before the clock starts: request building is not the server's time.
    bodies = [window.encode(s) for s in sessions]
    planned = {  # the totals that bound BOUNDED_RATES
        "output_tok_s": float(sum(sum(s.output_lens) for s in sessions)),
        "request_s": float(sum(len(s.turns) for s in sessions)),
    }
    floors = {m: f for m, f in (give_up_below or {}).items() if m in planned and duration is None}

    def hopeless(elapsed: float) -> str:
        for metric, floor in floors.items():
            if elapsed > 0 and planned[metric] / elapsed < floor:
                return metric
        return ""

    gave_up = ""
    start = time.perf_counter()

    async def closed_loop(width: int) -> None:
        source = iter(zip(sessions, bodies, strict=True)) if duration is None else None
        fresh = iter_sessions(plan)

        async def worker() -> None:
            while True:
                if source is not None:
                    nxt = next(source, None)
                    if nxt is None:
                        return
                    session, body = nxt
                else:
                    assert duration is not None
                    if time.perf_counter() - start >= duration:
                        return
                    session = next(fresh)
                    body = window.encode(session)
                await window.run(session, body)

        await asyncio.gather(*(worker() for _ in range(width)))

    async def open_loop() -> None:
        cap = asyncio.Semaphore(workload.max_concurrency) if workload.max_concurrency else None

        async def one(session: Session, body: bytes) -> None:
            if cap is None:
                await window.run(session, body)
                return
            async with cap:
                await window.run(session, body)

        tasks: list[asyncio.Task[None]] = []
        try:
            for session, body in zip(sessions, bodies, strict=True):
                due = start + session.at
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                lag.append(max(0.0, time.perf_counter() - due))
                tasks.append(asyncio.create_task(one(session, body)))
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    width = concurrency or workload.concurrency
    state = "done"
    try:
        main = asyncio.create_task(closed_loop(width) if closed else open_loop())
        while not main.done():
            await asyncio.wait({main}, timeout=POLL_S)
            if main.done():
                break
            if abort is not None and abort():
                state = "aborted"
            elif limit_s is not None and time.perf_counter() - start > limit_s:
                state = "timeout"
            elif floors and (gave_up := hopeless(time.perf_counter() - start)):
                state = "hopeless"
            if state != "done":
                main.cancel()
                with contextlib.suppress(asyncio.CancelledError):  # ours: records so far stand
                    await main
                break
        if state == "done":
            main.result()  # a bug in the sending raises here
    finally:
        await pool.aclose()
    ends = [r.end for r in window.records if r.ok]
    finish = max(ends) if ends and state == "done" else time.perf_counter()
    return BenchResult(
        window.records,
        max(0.0, finish - start),
        state,
        # Planned requests (all of them, when the window was cut short), or those started
        # when it ran for a duration.
        requested=max(window.requested, sum(len(s.turns) for s in sessions)),
        lag_s=lag,
        start=start,
        gave_up=gave_up,
        streamed_tokens=window.streamed[0],
    )


def run_load(
    base_url: str,
    workload: Workload,
    prompts: Sequence[str] | None = None,
    *,
    kind: str = "bench",
    concurrency: int | None = None,
    count: int | None = None,
    abort: Callable[[], bool] | None = None,
    limit_s: float | None = None,
    give_up_below: Mapping[str, float] | None = None,
) -> BenchResult:
    """Blocking wrapper of :func:`run_load_async` (runs its own event loop)."""
    return asyncio.run(
        run_load_async(
            base_url,
            workload,
            prompts,
            kind=kind,
            concurrency=concurrency,
            count=count,
            abort=abort,
            limit_s=limit_s,
            give_up_below=give_up_below,
        )
    )


_ACCEPT_KEYS = ("avg_spec_accept_length", "spec_accept_length", "accept_length")


def accept_length(info: Any) -> float | None:
    """The speculative-decoding accept length anywhere in a server-info document."""
    if isinstance(info, dict):
        for key in _ACCEPT_KEYS:
            value = info.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
        children: list[Any] = list(info.values())
    elif isinstance(info, list):
        children = info
    else:
        return None
    for child in children:
        found = accept_length(child)
        if found is not None:
            return found
    return None


def fetch_server_info(base_url: str, *, timeout_s: float = 5.0) -> dict[str, Any] | None:
    """``GET /get_server_info`` once; None on any error (not every server has it)."""
    try:
        response = httpx.get(
            base_url.rstrip("/") + "/get_server_info", timeout=timeout_s, trust_env=False
        )
        if response.status_code != 200:
            return None
        data = response.json()
    except (httpx.HTTPError, ValueError):  # server info is optional extra metadata
        return None
    return data if isinstance(data, dict) else None
