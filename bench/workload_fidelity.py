"""Workload fidelity: autotune's load generator against SGLang's bench_serving, same server,
same prompts, same arrival times, for every prompt source and arrival mode.

The server is this file's own (``--serve``), whose behaviour is known and depends on the
load, so a client that sends at other times reads other figures: TTFT is ``--ttft-ms`` plus
``--prefill-us`` per prompt token (four characters a token), then one token a chunk every
``--itl-ms x (1 + streams decoding / --batch-k)``, each step scheduled from the last one. It
speaks ``/generate``, ``/v1/completions`` and ``/v1/chat/completions`` and reports no prompt
token count, so both clients count input tokens the same way (the plan's estimate).

For each prompt source (generated words with uniform lengths, the JSONL and ShareGPT-format
sample files of ``tests/data/workloads/``, shared-prefix groups) and each arrival mode
(closed loop, Poisson rate, gamma rate with burstiness 0.5), the plan of
``autotune.node.workload`` (prompts, output lengths, arrival offsets) is sent once by
``autotune.node.bench.run_load`` and once by bench_serving's own request function, driven
with the same schedule (its ``get_request`` draws Poisson gaps with numpy and has no gamma
mode, and its CLI needs a Hugging Face tokenizer this machine cannot fetch). bench_serving's
figures come from its own ``calculate_metrics`` (with a four-characters-a-token stand-in for
the tokenizer it uses only to re-count output text). Clients run on one core, the server on
another where the OS allows.

    pip download 'sglang==0.4.6.post5' --no-deps -d /tmp/sgl && \\
        unzip -o /tmp/sgl/sglang-*.whl 'sglang/bench_serving.py' -d /tmp/sgl
    .venv/bin/python bench/workload_fidelity.py --bench-serving /tmp/sgl/sglang/bench_serving.py

Last, chat sessions of 3 turns from the ShareGPT file (``--only session`` alone), which
bench_serving 0.4.6 cannot send: each turn's TTFT against the server's own for the history
the turn must carry.

The figures depend on the machine's load: run it on a quiet machine, or several times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from autotune.models import LengthDist, Prompts, Workload
from autotune.node import bench
from autotune.node.process import free_port
from autotune.node.workload import Plan, Session, arrivals, sessions_for
from autotune.space.workload import materialise

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "workloads"
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

# ---- the server ----------------------------------------------------------------------------


class Server:
    """Streams each request at the load-dependent pace the module docstring gives."""

    def __init__(self, ttft_ms: float, prefill_us: float, itl_ms: float, batch_k: float):
        self.ttft_s, self.prefill_s = ttft_ms / 1000, prefill_us / 1e6
        self.itl_s, self.batch_k = itl_ms / 1000, batch_k
        self.decoding = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = json.loads(await reader.readexactly(length)) if length else {}
                path = head.split(b" ", 2)[1].decode()
                if path == "/health":
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                    await writer.drain()
                    continue
                await self.stream(path, body, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection: nothing to answer
        finally:
            writer.close()

    async def stream(self, path: str, body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        if path == "/generate":
            prompt, n = body["text"], int(body["sampling_params"]["max_new_tokens"])
        elif path == "/v1/chat/completions":
            prompt = "".join(m["content"] for m in body["messages"])
            n = int(body["max_tokens"])
        else:
            prompt, n = body["prompt"], int(body["max_tokens"])
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        loop = asyncio.get_running_loop()
        due = loop.time() + self.ttft_s + self.prefill_s * math.ceil(len(prompt) / 4)
        self.decoding += 1
        try:
            for k in range(1, n + 1):
                await asyncio.sleep(max(0.0, due - loop.time()))
                if path == "/generate":
                    obj: dict[str, Any] = {
                        "text": " tok" * k,
                        "meta_info": {"completion_tokens": k},
                    }
                elif path == "/v1/chat/completions":
                    obj = {"choices": [{"index": 0, "delta": {"content": " tok"}}]}
                else:
                    obj = {"choices": [{"index": 0, "text": " tok", "finish_reason": None}]}
                event = b"data: " + json.dumps(obj).encode() + b"\n\n"
                writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                await writer.drain()
                due += self.itl_s * (1 + self.decoding / self.batch_k)
        finally:
            self.decoding -= 1
        done = b"data: [DONE]\n\n"
        writer.write(f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")
        await writer.drain()


async def _serve(port: int, server: Server) -> None:
    listener = await asyncio.start_server(server.handle, HOST, port, backlog=4096)
    async with listener:
        await listener.serve_forever()


def launch(args: argparse.Namespace) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port(HOST)
    argv = [sys.executable, __file__, "--serve", str(port)]
    argv += ["--ttft-ms", str(args.ttft_ms), "--prefill-us", str(args.prefill_us)]
    argv += ["--itl-ms", str(args.itl_ms), "--batch-k", str(args.batch_k)]
    proc = subprocess.Popen(argv)
    if len(CPUS) > 1:
        os.sched_setaffinity(proc.pid, set(CPUS[1:]))
    url = f"http://{HOST}:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2, trust_env=False).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the fidelity server did not start")


# ---- the cases -----------------------------------------------------------------------------


def sources() -> dict[str, Workload]:
    """One workload per prompt source (closed loop; the arrival mode is set per case)."""
    generated = Workload(
        prompt_len=LengthDist(dist="uniform", low=64, high=512),
        output_len=LengthDist(dist="uniform", low=32, high=128),
    )
    jsonl = materialise(
        Workload(prompts=Prompts(source="jsonl", path=str(DATA / "prompts.jsonl"))), DATA
    )
    sharegpt = materialise(
        Workload(prompts=Prompts(source="sharegpt", path=str(DATA / "sharegpt_small.json"))),
        DATA,
    )
    shared = Workload(
        prompts=Prompts(source="shared_prefix", prefix_len=512, groups=4, per_group=8),
        prompt_len=32,
        output_len=64,
    )
    return {"generated": generated, "jsonl": jsonl, "sharegpt": sharegpt, "shared_prefix": shared}


def modes(concurrency: int, rate: float) -> dict[str, dict[str, Any]]:
    return {
        f"closed c={concurrency}": {"concurrency": concurrency},
        f"poisson {rate:g}/s": {"rate": rate},
        f"gamma {rate:g}/s b=0.5": {"rate": rate, "arrival": "gamma", "burstiness": 0.5},
    }


# ---- the two clients -----------------------------------------------------------------------

KEYS = ("output_tok_s", "input_tok_s", "request_s", "ttft_p50", "ttft_p99", "itl_p50", "e2e_p50")


def autotune_run(url: str, workload: Workload) -> dict[str, float]:
    result = bench.run_load(url, workload)
    m = result.metrics()
    if m.failed:
        raise SystemExit(f"autotune: {m.failed} requests failed: {result.errors()}")
    assert m.ttft_ms and m.itl_ms and m.e2e_ms
    return {
        "output_tok_s": m.output_tok_s,
        "input_tok_s": m.input_tok_s,
        "request_s": m.request_s,
        "ttft_p50": m.ttft_ms.p50,
        "ttft_p99": m.ttft_ms.p99,
        "itl_p50": m.itl_ms.p50,
        "e2e_p50": m.e2e_ms.p50,
        "lag_p99": m.extra.get("send_lag_p99_ms", 0.0),
    }


class _CharTokenizer:
    """bench_serving re-counts output text with a tokenizer; four characters a token here."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [0] * math.ceil(len(text) / 4)


async def _sglang(module: Any, url: str, workload: Workload) -> dict[str, float]:
    module.args = argparse.Namespace(
        disable_ignore_eos=False, disable_stream=False, return_logprob=False, warmup_requests=0
    )
    func = (
        module.async_request_sglang_generate
        if workload.endpoint == "/generate"
        else module.async_request_openai_completions
    )
    count = sessions_for(workload, workload.num_requests)
    sessions: list[Session] = Plan(workload, "bench").sessions(count)
    rows = [
        module.DatasetRow(
            prompt=s.turns[0], prompt_len=s.prompt_lens[0], output_len=s.output_lens[0]
        )
        for s in sessions
    ]
    inputs = [
        module.RequestFuncInput(
            prompt=r.prompt,
            api_url=url + workload.endpoint,
            prompt_len=r.prompt_len,
            output_len=r.output_len,
            model="m",
            lora_name=None,
            image_data=None,
            extra_request_body={},
        )
        for r in rows
    ]
    start = time.perf_counter()
    if workload.rate is None:  # as its benchmark() with --max-concurrency and an infinite rate
        sem = asyncio.Semaphore(workload.concurrency)

        async def limited(request: Any) -> Any:
            async with sem:
                return await func(request_func_input=request)

        tasks = [asyncio.create_task(limited(i)) for i in inputs]
    else:  # the plan's arrival times, each from the start
        tasks = []
        for request, at in zip(
            inputs, arrivals(workload, "bench", count=count, duration_s=None), strict=True
        ):
            delay = start + at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(func(request_func_input=request)))
    outputs = await asyncio.gather(*tasks)
    duration = time.perf_counter() - start
    failed = [o.error for o in outputs if not o.success]
    if failed:
        raise SystemExit(f"bench_serving: {len(failed)} requests failed: {failed[0][-300:]}")
    m, _ = module.calculate_metrics(
        input_requests=rows,
        outputs=outputs,
        dur_s=duration,
        tokenizer=_CharTokenizer(),
        backend="sglang",
    )
    return {
        "output_tok_s": m.output_throughput,
        "input_tok_s": m.input_throughput,
        "request_s": m.request_throughput,
        "ttft_p50": m.median_ttft_ms,
        "ttft_p99": m.p99_ttft_ms,
        "itl_p50": m.median_itl_ms,
        "e2e_p50": m.median_e2e_latency_ms,
    }


def sglang_run(module: Any, url: str, workload: Workload) -> dict[str, float]:
    return asyncio.run(_sglang(module, url, workload))


def load_bench_serving(path: str | None) -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import loadgen

    return loadgen.load_bench_serving(path)


# ---- main ----------------------------------------------------------------------------------


def truth_ttft(workload: Workload, args: argparse.Namespace) -> tuple[float, float]:
    """The server's own TTFT for the plan's prompts, p50 and p99 in ms (it does not depend
    on the load: this server does not queue prefills)."""
    count = sessions_for(workload, workload.num_requests)
    values = sorted(
        args.ttft_ms + args.prefill_us / 1000 * math.ceil(len(s.turns[0]) / 4)
        for s in Plan(workload, "bench").sessions(count)
    )
    return bench.percentile(values, 50), bench.percentile(values, 99)


def sessions_check(url: str, args: argparse.Namespace) -> list[str]:
    """Chat sessions of 3 turns from the ShareGPT file, Poisson: each turn's TTFT against the
    server's own for the history it must get (bench_serving 0.4.6 has neither chat nor
    sessions). A client that did not resend the history would read the first turn's."""
    base = sources()["sharegpt"]
    workload = base.model_copy(
        update={
            "endpoint": "/v1/chat/completions",
            "model": "m",
            "turns": 3,
            "rate": args.rate / 3,
            "num_requests": args.requests,
        }
    )
    result = bench.run_load(url, workload)
    if result.failed:
        raise SystemExit(f"sessions: {result.failed} requests failed: {result.errors()}")
    truth: dict[int, list[float]] = {}
    plan = Plan(workload, "bench")
    sessions = {s.index: s for s in plan.sessions(sessions_for(workload, workload.num_requests))}
    for record in result.records:
        s = sessions[record.session]
        # What the server reads: every user turn and streamed answer so far, then this turn.
        text = "".join(
            s.turns[k] + (" tok" * s.output_lens[k] if k < record.turn else "")
            for k in range(record.turn + 1)
        )
        ms = args.ttft_ms + args.prefill_us / 1000 * math.ceil(len(text) / 4)
        truth.setdefault(record.turn, []).append(ms)
    out = []
    for turn in sorted(truth):
        m = result.metrics(turn=turn)
        assert m.ttft_ms is not None
        p50 = bench.percentile(sorted(truth[turn]), 50)
        out.append(
            f"| turn {turn + 1} | {m.completed} | {m.input_tokens / max(1, m.completed):.0f} | "
            f"{p50:.1f} | {m.ttft_ms.p50 - p50:+.1f} |"
        )
    return out


def _diff(ours: float, theirs: float) -> float:
    return ours / theirs - 1 if theirs else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--prefill-us", type=float, default=50.0, help="per prompt token")
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--batch-k", type=float, default=32.0)
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--endpoint", default="/generate", choices=["/generate", "/v1/completions"])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case")
    parser.add_argument("--only", default=None, help="run the sources whose name contains this")
    parser.add_argument("--bench-serving", default=None, help="a standalone bench_serving.py")
    args = parser.parse_args(argv)
    if args.serve is not None:
        server = Server(args.ttft_ms, args.prefill_us, args.itl_ms, args.batch_k)
        asyncio.run(_serve(args.serve, server))
        return
    module = load_bench_serving(args.bench_serving)
    if isinstance(module, str):
        raise SystemExit(f"SGLang bench_serving not available: {module}")
    if CPUS:
        os.sched_setaffinity(0, {CPUS[0]})
    proc, url = launch(args)
    print(
        f"server: TTFT {args.ttft_ms:g} ms + {args.prefill_us:g} us/prompt token, ITL "
        f"{args.itl_ms:g} ms x (1 + decoding/{args.batch_k:g}); {args.requests} requests a run, "
        f"{args.endpoint}; each cell: autotune, bench_serving, difference"
    )
    head = ("out tok/s", "in tok/s", "req/s", "TTFT p50", "TTFT p99", "ITL p50", "e2e p50")
    rows: list[str] = []
    truths: list[str] = []
    worst: dict[str, float] = {}
    try:
        for source, base in sources().items():
            if args.only and args.only not in source:
                continue
            for mode, update in modes(args.concurrency, args.rate).items():
                workload = base.model_copy(
                    update={
                        "num_requests": args.requests,
                        "endpoint": args.endpoint,
                        "model": "m",
                        **update,
                    }
                )
                for _ in range(args.repeat):
                    ours = autotune_run(url, workload)
                    theirs = sglang_run(module, url, workload)
                    diffs = [_diff(ours[k], theirs[k]) for k in KEYS]
                    for key, d in zip(KEYS, diffs, strict=True):
                        worst[key] = max(worst.get(key, 0.0), abs(d))
                    label = f"{source}, {mode}"
                    rows.append(
                        f"| {label} | {ours['output_tok_s']:.1f} | "
                        + " | ".join(f"{d:+.2%}" for d in diffs)
                        + f" | {ours['lag_p99']:.2f} |"
                    )
                    p50, p99 = truth_ttft(workload, args)
                    truths.append(
                        f"| {label} | {p50:.1f} | {ours['ttft_p50'] - p50:+.1f} | "
                        f"{theirs['ttft_p50'] - p50:+.1f} | {p99:.1f} | "
                        f"{ours['ttft_p99'] - p99:+.1f} | {theirs['ttft_p99'] - p99:+.1f} |"
                    )
                    print(rows[-1], flush=True)
        session_rows = sessions_check(url, args) if not args.only or "session" in args.only else []
    finally:
        proc.terminate()
        proc.wait()
    print("\nautotune against bench_serving (autotune / bench_serving - 1):\n")
    print("| case | autotune out tok/s | " + " | ".join(head) + " | send lag p99 ms |")
    print("| --- " * (len(head) + 3) + "|")
    print("\n".join(rows))
    print("\nTTFT against the server's own (ms; the clients' figures as over the truth):\n")
    print("| case | truth p50 | autotune | bench_serving | truth p99 | autotune | bench_serving |")
    print("| --- " * 7 + "|")
    print("\n".join(truths))
    if session_rows:
        print(
            f"\nChat sessions of 3 turns from the ShareGPT file, Poisson {args.rate / 3:.3g} "
            "sessions/s (no bench_serving counterpart): TTFT against the server's own\n"
        )
        print("| turn | requests | mean input tokens | truth TTFT p50 ms | autotune, over |")
        print("| --- " * 5 + "|")
        print("\n".join(session_rows))
    print("\nlargest difference: " + ", ".join(f"{k} {v:.2%}" for k, v in worst.items()))


if __name__ == "__main__":
    main()
