"""A workload -> the sessions of one measurement window: prompts, lengths, arrival times.

Everything is drawn from generators seeded by ``(workload.seed, kind)``, so every trial of a
study sends the same requests at the same offsets, and each window (``kind``) its own set (a
prefix cache warmed by one window does not flatter the next). Arrival gaps follow SGLang's
and vLLM's benchmarks: exponential at ``rate`` (Poisson), or gamma with shape
``burstiness`` and the same mean (burstier below 1); the first request starts at 0.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from autotune.models import PROMPT_WORDS, LengthDist, Workload, estimate_tokens

WORDS = PROMPT_WORDS  # generated prompts draw from these words


@dataclass(frozen=True, slots=True)
class Session:
    """One session: its user turns (one for a plain request), with lengths in tokens.

    ``prompt_lens``: tokens of each user turn as planned (generated words) or estimated
    (file text); ``at``: the arrival offset from the window's start, seconds (open loop).
    """

    index: int
    turns: tuple[str, ...]
    output_lens: tuple[int, ...]
    prompt_lens: tuple[int, ...]
    at: float = 0.0


def sessions_for(workload: Workload, requests: int) -> int:
    """Sessions that carry ``requests`` requests (a session is ``turns`` requests)."""
    return max(1, math.ceil(requests / workload.turns))


class Plan:
    """The sessions of one window, built in order and deterministically.

    Args:
        workload: what to send.
        kind: which prompt set (``bench``, ``bench-1``, ``warmup``, ``peak``).
        prompts: explicit single-turn prompts (the older call form): used in order, with the
            workload's output lengths, instead of its prompt source.
    """

    def __init__(self, workload: Workload, kind: str, prompts: Sequence[str] | None = None):
        self.workload = workload
        self.kind = kind
        seed = workload.seed
        self._text = random.Random(f"{seed}:{kind}")  # the same stream make_prompts used
        self._lengths = random.Random(f"{seed}:{kind}:lengths")
        self._prompts = list(prompts) if prompts is not None else None
        source = workload.prompts
        self._order: list[int] = []
        self._pool: list[tuple[int, int]] = []
        self._prefixes: list[str] = []
        if self._prompts is None and source.items:
            self._order = list(range(len(source.items)))
            random.Random(f"{seed}:{kind}:order").shuffle(self._order)
        elif self._prompts is None and source.source == "shared_prefix":
            prefix_rng = random.Random(f"{seed}:{kind}:prefix")
            self._prefixes = [
                " ".join(prefix_rng.choices(WORDS, k=source.prefix_len))
                for _ in range(source.groups)
            ]
            self._pool = [(g, q) for g in range(source.groups) for q in range(source.per_group)]
            random.Random(f"{seed}:{kind}:pool").shuffle(self._pool)
        elif self._prompts is None and source.source != "generated":
            raise ValueError(
                f"prompts from {source.source} are not in the spec (the space loader reads the "
                "file: autotune.space.workload.materialise)"
            )

    def _length(self, spec: int | str | LengthDist, dataset: int | None) -> int:
        if isinstance(spec, int):
            return spec
        if isinstance(spec, LengthDist):
            rng = self._lengths
            if spec.dist == "uniform":
                assert spec.low is not None and spec.high is not None
                return rng.randint(spec.low, spec.high)
            assert spec.mean is not None and spec.std is not None
            value = round(rng.gauss(spec.mean, spec.std))
            low = spec.low or 1
            high = spec.high if spec.high is not None else max(value, low)
            return min(max(value, low), high)
        if dataset is None:
            raise ValueError("output_len: dataset, but the prompt file gave no length")
        return dataset

    def _words(self, count: int) -> str:
        return " ".join(self._text.choices(WORDS, k=count))

    def session(self, index: int) -> Session:
        """Session ``index``; call in order (generated text comes from one stream)."""
        w = self.workload
        if self._prompts is not None:
            prompt = self._prompts[index % len(self._prompts)]
            out = self._length(w.output_len, None)
            return Session(index, (prompt,), (out,), (estimate_tokens(prompt),))
        turns: list[str] = []
        outs: list[int] = []
        lens: list[int] = []
        source = w.prompts
        if source.items:
            item = source.items[self._order[index % len(self._order)]]
            for k, text in enumerate(item.turns[: w.turns]):
                answer = item.answer_lens[k] if k < len(item.answer_lens) else None
                dataset_out = item.output_len if k == 0 else answer
                turns.append(text)
                outs.append(self._length(w.output_len, dataset_out or answer))
                lens.append(item.prompt_len if k == 0 else estimate_tokens(text))
            return Session(index, tuple(turns), tuple(outs), tuple(lens))
        for k in range(w.turns):
            length = self._length(w.prompt_len, None)
            if k == 0 and self._pool:
                group, _ = self._pool[index % len(self._pool)]
                question = self._words(length)
                turns.append(f"{self._prefixes[group]}\n\n{question}")
                lens.append(source.prefix_len + length)
            else:
                turns.append(self._words(length))
                lens.append(length)
            outs.append(self._length(w.output_len, None))
        return Session(index, tuple(turns), tuple(outs), tuple(lens))

    def sessions(self, count: int) -> list[Session]:
        """The first ``count`` sessions."""
        return [self.session(i) for i in range(count)]


def arrivals(
    workload: Workload, kind: str, *, count: int | None, duration_s: float | None
) -> list[float]:
    """Open-loop arrival offsets (seconds from the start): ``count`` of them, or every one
    before ``duration_s``.

    Raises:
        ValueError: a closed-loop workload, or neither count nor duration.
    """
    rate = workload.rate
    if rate is None:
        raise ValueError("a closed-loop workload has no arrival times")
    if count is None and duration_s is None:
        raise ValueError("arrivals need a count or a duration")
    rng = random.Random(f"{workload.seed}:{kind}:arrivals")
    shape = workload.burstiness

    def gap() -> float:
        if workload.arrival == "gamma":
            return rng.gammavariate(shape, 1.0 / (rate * shape))
        return rng.expovariate(rate)

    out: list[float] = []
    t = 0.0
    while True:
        if count is not None and len(out) >= count:
            return out
        if duration_s is not None and t >= duration_s:
            return out
        out.append(t)
        t += gap()


def iter_sessions(plan: Plan) -> Iterator[Session]:
    """Sessions in order, without end (a closed loop that runs for a duration)."""
    index = 0
    while True:
        yield plan.session(index)
        index += 1
