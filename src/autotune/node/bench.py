"""The load generator: streaming requests at a fixed concurrency, and their metrics.

Requests go through ``node/stream.py``, a minimal HTTP/1.1 client: each piece of a response
is time-stamped on arrival, before parsing, and no per-chunk framework cost sits between the
socket and the clock (bench/loadgen.py measures it against a raw-socket client).

Two endpoints are understood: ``/v1/completions`` (OpenAI SSE, ``choices[0].text`` chunks,
optional ``usage.completion_tokens``, optional ``[DONE]``) and ``/generate`` (SGLang native,
cumulative ``meta_info.completion_tokens``). Metrics follow SGLang's bench_serving: TTFT is
the first non-empty chunk, ITL a chunk gap divided by the tokens it brought, TPOT
``(e2e - ttft) / (tokens - 1)``.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from autotune.models import Metrics, Stats, Workload
from autotune.node import stream

# Common short English words: about one token each in the usual BPE vocabularies.
_WORDS = (
    "the of and to in is that it for was on are as with his they at be this have from or one "
    "had by word but not what all were we when your can said there use an each which she do how "
    "their if will up other about out many then them these so some her would make like him into "
    "time has look two more write go see number no way could people my than first water been "
    "call who oil its now find long down day did get come made may part over new sound take only "
    "little work know place year live me back give most very after thing our just name good "
    "sentence man think say great where help through much before line right too mean old any "
    "same tell boy follow came want show also around form three small set put end does another "
    "well large must big even such because turn here why ask went men read need land different "
    "home us move try kind hand picture again change off play spell air away animal house point"
).split()

_ERRORS_KEPT = 5


def make_prompts(workload: Workload, count: int, *, kind: str = "bench") -> list[str]:
    """``count`` deterministic prompts of about ``workload.prompt_len`` tokens each.

    ``kind`` separates warm-up prompts from measured ones, so a prefix cache warmed by the
    warm-up does not flatter the benchmark.
    """
    rng = random.Random(f"{workload.seed}:{kind}")
    return [" ".join(rng.choices(_WORDS, k=workload.prompt_len)) for _ in range(count)]


def request_body(workload: Workload, prompt: str) -> dict[str, Any]:
    """The JSON body of one streaming request for ``workload.endpoint``."""
    if workload.endpoint == "/generate":
        body: dict[str, Any] = {
            "text": prompt,
            "sampling_params": {
                "temperature": 0,
                "max_new_tokens": workload.output_len,
                "ignore_eos": True,
            },
            "stream": True,
        }
    else:
        # No ignore_eos here: `transformers serve` rejects unknown fields with 422.
        body = {
            "prompt": prompt,
            "max_tokens": workload.output_len,
            "stream": True,
            "temperature": 0,
        }
        if workload.model is not None:
            body["model"] = workload.model
    body.update(workload.extra_body)
    return body


@dataclass
class RequestRecord:
    """One request's timings (seconds) and tokens."""

    ok: bool = False
    error: str = ""
    ttft_s: float | None = None
    e2e_s: float = 0.0
    output_tokens: int = 0
    itl_s: list[float] = field(default_factory=list)
    end: float = 0.0  # time.perf_counter() at the end


@dataclass
class BenchResult:
    """The outcome of one load run: ``done``, ``aborted`` (by the caller) or ``timeout``."""

    records: list[RequestRecord]
    duration_s: float
    state: str = "done"
    requested: int = 0

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

    def metrics(self) -> Metrics:
        """The benchmark's metrics (zero throughput, no stats, when nothing completed)."""
        done = [r for r in self.records if r.ok]
        tokens = sum(r.output_tokens for r in done)
        duration = self.duration_s
        tpot = [
            (r.e2e_s - r.ttft_s) / (r.output_tokens - 1)
            for r in done
            if r.ttft_s is not None and r.output_tokens > 1
        ]
        return Metrics(
            output_tok_s=tokens / duration if duration > 0 else 0.0,
            request_s=len(done) / duration if duration > 0 else 0.0,
            ttft_ms=stats_ms([r.ttft_s for r in done if r.ttft_s is not None]),
            itl_ms=stats_ms([x for r in done for x in r.itl_s]),
            e2e_ms=stats_ms([r.e2e_s for r in done]),
            tpot_ms=stats_ms(tpot),
            completed=len(done),
            failed=self.failed,
            output_tokens=tokens,
            duration_s=duration,
        )


def _median(values: Sequence[float]) -> float:
    return percentile(sorted(values), 50)


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
        ttft_ms=stats("ttft_ms"),
        itl_ms=stats("itl_ms"),
        e2e_ms=stats("e2e_ms"),
        tpot_ms=stats("tpot_ms"),
        completed=sum(w.completed for w in windows),
        failed=sum(w.failed for w in windows),
        output_tokens=sum(w.output_tokens for w in windows),
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
            "ttft_ms": slow(metrics.ttft_ms),
            "itl_ms": slow(metrics.itl_ms),
            "e2e_ms": slow(metrics.e2e_ms),
            "tpot_ms": slow(metrics.tpot_ms),
            "duration_s": metrics.duration_s * scale,
        }
    )


def sim_time_scale(info: dict[str, Any] | None) -> float:
    """The time scale a stand-in server reports (1.0 for any other server)."""
    if not info or info.get("simulated") is not True:
        return 1.0
    sim = info.get("simulation")
    scale = sim.get("time_scale") if isinstance(sim, dict) else None
    if isinstance(scale, int | float) and not isinstance(scale, bool) and scale > 0:
        return float(scale)
    return 1.0


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile ``q`` (0-100) of already sorted values."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def stats_ms(seconds: Sequence[float]) -> Stats | None:
    """Mean and percentiles in milliseconds; None for no values."""
    if not seconds:
        return None
    values = sorted(s * 1000.0 for s in seconds)
    return Stats(
        mean=sum(values) / len(values),
        p50=percentile(values, 50),
        p90=percentile(values, 90),
        p99=percentile(values, 99),
    )


def _chunk_tokens(generate: bool, obj: dict[str, Any], state: dict[str, Any]) -> int:
    """New tokens one SSE chunk brought; updates ``state['total']`` from usage when present."""
    if generate:
        meta = obj.get("meta_info") or {}
        cumulative = meta.get("completion_tokens")
        if isinstance(cumulative, int):
            new = max(0, cumulative - int(state.get("total", 0)))
            state["total"] = max(cumulative, state.get("total", 0))
            state["usage"] = True
            return new
        return 1 if obj.get("text") else 0
    usage = obj.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        state["total"] = usage["completion_tokens"]
        state["usage"] = True
    choices = obj.get("choices") or []
    text = choices[0].get("text") if choices and isinstance(choices[0], dict) else None
    return 1 if text else 0


async def _one(pool: stream.Pool, workload: Workload, body: bytes) -> RequestRecord:
    record = RequestRecord()
    chunks = 0
    state: dict[str, Any] = {}
    generate = workload.endpoint == "/generate"
    start = time.perf_counter()
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
                    new = _chunk_tokens(generate, obj, state)
                    if new <= 0:
                        continue
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
    record.output_tokens = int(state["total"]) if state.get("usage") else chunks
    if record.output_tokens <= 0:
        record.error = "the response had no output tokens"
        return record
    record.ok = True
    return record


async def run_load_async(
    base_url: str,
    workload: Workload,
    prompts: Sequence[str],
    *,
    concurrency: int,
    abort: Callable[[], bool] | None = None,
    limit_s: float | None = None,
) -> BenchResult:
    """Send every prompt, at most ``concurrency`` at a time; stop early on ``abort()``.

    Args:
        base_url: ``http://host:port``.
        workload: endpoint, lengths, model, timeouts.
        prompts: one request per prompt.
        concurrency: requests in flight at once.
        abort: polled every 50 ms; True cancels the requests still running.
        limit_s: wall-clock limit of the whole run (state ``timeout`` when reached).
    """
    pool = stream.Pool(
        base_url,
        read_timeout_s=workload.request_timeout_s,
        connect_timeout_s=min(30.0, workload.request_timeout_s),
    )
    # Encoded before the clock starts: request building is not the server's time.
    bodies = [json.dumps(request_body(workload, p)).encode() for p in prompts]
    sem = asyncio.Semaphore(concurrency)
    records: list[RequestRecord] = []
    state = "done"

    async def run(body: bytes) -> None:
        async with sem:
            records.append(await _one(pool, workload, body))

    start = time.perf_counter()
    try:
        tasks = [asyncio.create_task(run(b)) for b in bodies]
        everything = asyncio.gather(*tasks, return_exceptions=True)
        while not everything.done():
            await asyncio.wait({everything}, timeout=0.05)
            if everything.done():
                break
            if abort is not None and abort():
                state = "aborted"
            elif limit_s is not None and time.perf_counter() - start > limit_s:
                state = "timeout"
            if state != "done":
                for task in tasks:
                    task.cancel()
                await asyncio.gather(everything, return_exceptions=True)
                break
        for outcome in everything.result() if not everything.cancelled() else []:
            if isinstance(outcome, Exception):
                raise outcome
    finally:
        await pool.aclose()
    ends = [r.end for r in records if r.ok]
    finish = max(ends) if ends and state == "done" else time.perf_counter()
    return BenchResult(records, max(0.0, finish - start), state, requested=len(prompts))


def run_load(
    base_url: str,
    workload: Workload,
    prompts: Sequence[str],
    *,
    concurrency: int,
    abort: Callable[[], bool] | None = None,
    limit_s: float | None = None,
) -> BenchResult:
    """Blocking wrapper of :func:`run_load_async` (runs its own event loop)."""
    return asyncio.run(
        run_load_async(
            base_url,
            workload,
            prompts,
            concurrency=concurrency,
            abort=abort,
            limit_s=limit_s,
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
