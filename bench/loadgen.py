"""Load generator fidelity: what autotune's client reads against a server whose truth is known.

Launches the stand-in server in its fixed-rate mode (every stream: a fixed TTFT, then a fixed
number of tokens per second, whatever the load), drives it with autotune's load generator
(``autotune.node.bench``), with a minimal raw-socket client, and with SGLang's
``bench_serving`` when it can be imported, all in the same run against the same server, and
prints each one's output tok/s, TTFT and ITL next to the truth. Then the client's capacity:
streamed tokens per second it can take on one core from a server that streams as fast as it
can; and its open loop's timing against that server: how late sends are at 100-1000
requests/s.

    .venv/bin/python bench/loadgen.py                      # 64 streams, 20 tok/s each
    .venv/bin/python bench/loadgen.py --streams 64 --rate 20 --ttft-ms 100 --tokens 200
    .venv/bin/python bench/loadgen.py --capacity-only
    python bench/loadgen.py --url http://127.0.0.1:30000 --model M --tokenizer DIR \
        --engine-bench sglang --repeat 3          # a live engine: autotune's client against
                                                  # the engine's own benchmark, alternated

The figures depend on the machine's load: run it on a quiet machine, or several times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from autotune.models import LengthDist, Workload
from autotune.node import bench
from autotune.node.process import free_port
from autotune.node.workload import arrivals

HOST = "127.0.0.1"
ALL_CPUS = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()


@dataclass
class Reading:
    """One client's figures over one run."""

    client: str
    output_tok_s: float
    ttft_p50_ms: float
    itl_p50_ms: float
    itl_mean_ms: float
    completed: int
    notes: list[str] = field(default_factory=list)


def launch_fixed_rate(rate: float, ttft_ms: float) -> tuple[subprocess.Popen[bytes], str]:
    """The stand-in in fixed-rate mode; returns the process and its base URL once healthy."""
    port = free_port(HOST)
    env = {
        **os.environ,
        "AUTOTUNE_SIM_STARTUP": "0.001",
        "AUTOTUNE_SIM_FIXED_RATE": str(rate),
        "AUTOTUNE_SIM_FIXED_TTFT_MS": str(ttft_ms),
        "PYTHONUNBUFFERED": "1",
    }
    argv = [sys.executable, "-m", "autotune.sim", "--model-path", "m", "--tp-size", "8"]
    argv += ["--log-level", "error"]
    argv += ["--host", HOST, "--port", str(port)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://{HOST}:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2, trust_env=False).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the stand-in did not become ready")


# ---- autotune's client --------------------------------------------------------------------


def autotune_client(url: str, workload: Workload) -> Reading:
    prompts = bench.make_prompts(workload, workload.num_requests)
    result = bench.run_load(url, workload, prompts, concurrency=workload.concurrency)
    m = result.metrics()
    itl = [x for r in result.records if r.ok for x in r.itl_s]
    return Reading(
        "autotune (node/bench.py)",
        m.output_tok_s,
        m.ttft_ms.p50 if m.ttft_ms else float("nan"),
        m.itl_ms.p50 if m.itl_ms else float("nan"),
        statistics.fmean(itl) * 1000 if itl else float("nan"),
        m.completed,
        result.errors(),
    )


# ---- a minimal raw-socket client ------------------------------------------------------------


async def _raw_one(port: int, request: bytes) -> tuple[float, list[float], int, float] | None:
    start = time.perf_counter()
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(request)
    arrivals: list[float] = []
    tail = b""
    try:
        while True:
            data = await reader.read(65536)
            now = time.perf_counter()
            if not data:
                break
            text = tail + data
            # Token events carry a non-empty text delta; the usage chunk has "choices": [].
            tokens = text.count(b'"text": "') - text.count(b'"text": ""')
            arrivals.extend([now] * tokens)
            tail = text[-16:]
            if tail.endswith(b"0\r\n\r\n"):
                break
    finally:
        writer.close()
    if not arrivals:
        return None
    end = time.perf_counter()
    itl = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    return arrivals[0] - start, itl, len(arrivals), end


async def _raw_run(port: int, workload: Workload) -> Reading:
    prompts = bench.make_prompts(workload, workload.num_requests)
    sem = asyncio.Semaphore(workload.concurrency)
    out: list[tuple[float, list[float], int, float]] = []

    async def run(prompt: str) -> None:
        body = json.dumps(bench.request_body(workload, prompt)).encode()
        head = (
            f"POST {workload.endpoint} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        async with sem:
            got = await _raw_one(port, head + body)
        if got is not None:
            out.append(got)

    start = time.perf_counter()
    await asyncio.gather(*(run(p) for p in prompts))
    duration = max(e for *_, e in out) - start
    tokens = sum(n for _, _, n, _ in out)
    itl = [x for _, i, _, _ in out for x in i]
    return Reading(
        "minimal raw socket",
        tokens / duration,
        statistics.median(t for t, *_ in out) * 1000,
        statistics.median(itl) * 1000,
        statistics.fmean(itl) * 1000,
        len(out),
    )


def raw_client(url: str, workload: Workload) -> Reading:
    return asyncio.run(_raw_run(int(url.rsplit(":", 1)[1]), workload))


# ---- SGLang's bench_serving -----------------------------------------------------------------


def load_bench_serving(path: str | None) -> Any:
    """SGLang's ``bench_serving`` module: ``sglang.bench_serving`` if it imports standalone,
    else the file at ``path`` (a single-file version: v0.4.6.post5's imports only aiohttp,
    numpy, requests, tqdm and transformers). Returns why not, as a string, when neither."""
    if path is None:
        try:
            import sglang.bench_serving as module  # type: ignore[import-not-found]
        except Exception as exc:  # noqa: BLE001 - any import failure is the answer
            return f"sglang.bench_serving cannot be imported: {type(exc).__name__}: {exc}"
        return module
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_serving", path)
    if spec is None or spec.loader is None:
        return f"{path}: not a Python module"
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        return f"{path} does not import here: {type(exc).__name__}: {exc}"
    return module


async def _sglang_run(module: Any, url: str, workload: Workload) -> Reading:
    # Its request function reads the CLI's global ``args``; its CLI itself needs a Hugging
    # Face tokenizer (prompt sampling, retokenised output lengths) that cannot be fetched
    # here, so its request function is driven at the same concurrency, as its benchmark()
    # does with --max-concurrency.
    module.args = argparse.Namespace(
        disable_ignore_eos=False, disable_stream=False, return_logprob=False
    )
    sem = asyncio.Semaphore(workload.concurrency)
    prompts = bench.make_prompts(workload, workload.num_requests)

    async def one(prompt: str) -> Any:
        request = module.RequestFuncInput(
            prompt=prompt,
            api_url=url + "/generate",
            prompt_len=workload.prompt_len,
            output_len=workload.output_len,
            model="m",
            lora_name=None,
            image_data=None,
            extra_request_body={},
        )
        async with sem:
            return await module.async_request_sglang_generate(request)

    start = time.perf_counter()
    outputs = await asyncio.gather(*(one(p) for p in prompts))
    duration = time.perf_counter() - start
    ok = [o for o in outputs if o.success]
    itl = [x for o in ok for x in o.itl]
    return Reading(
        "SGLang bench_serving",
        sum(o.output_len for o in ok) / duration,
        statistics.median(o.ttft for o in ok) * 1000,
        statistics.median(itl) * 1000,
        statistics.fmean(itl) * 1000,
        len(ok),
        sorted({o.error.splitlines()[-1] for o in outputs if not o.success and o.error})[:3],
    )


def sglang_client(module: Any, url: str, workload: Workload) -> Reading:
    return asyncio.run(_sglang_run(module, url, workload))


# ---- capacity ------------------------------------------------------------------------------


async def _blast_server(port_box: list[int], tokens: int, ready: asyncio.Event) -> None:
    """An asyncio server that streams OpenAI SSE chunks as fast as the socket takes them."""
    event = (
        b'data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":" the",'
        b'"logprobs":null,"finish_reason":null}]}\n\n'
    )
    chunk = f"{len(event):x}\r\n".encode() + event + b"\r\n"
    done = b"data: [DONE]\n\n"
    final = f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                for _ in range(tokens):
                    writer.write(chunk)
                    await writer.drain()
                writer.write(final)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, HOST, 0)
    port_box.append(server.sockets[0].getsockname()[1])
    ready.set()
    async with server:
        await server.serve_forever()


def _serve_blast(tokens: int) -> tuple[subprocess.Popen[bytes], int]:
    code = (
        "import asyncio, sys; sys.path.insert(0, sys.argv[1]); import loadgen\n"
        "box = []\n"
        "async def main():\n"
        "    ready = asyncio.Event()\n"
        f"    task = asyncio.create_task(loadgen._blast_server(box, {tokens}, ready))\n"
        "    await ready.wait(); print(box[0], flush=True); await task\n"
        "asyncio.run(main())\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__))],
        stdout=subprocess.PIPE,
    )
    if hasattr(os, "sched_setaffinity"):  # the server may use every core; the client one
        os.sched_setaffinity(proc.pid, ALL_CPUS)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def capacity(streams: int, tokens: int, requests: int) -> tuple[float, float]:
    """Streamed tok/s autotune's client took, and its CPU seconds per wall second (one core:
    the client runs in this process, pinned to one CPU where the OS allows)."""
    proc, port = _serve_blast(tokens)
    try:
        workload = Workload(
            concurrency=streams, num_requests=requests, output_len=tokens, warmup_requests=0
        )
        prompts = bench.make_prompts(workload, requests)
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = bench.run_load(f"http://{HOST}:{port}", workload, prompts, concurrency=streams)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
        m = result.metrics()
        if m.completed != requests:
            raise SystemExit(f"capacity run: {m.failed} requests failed: {result.errors()}")
        return m.output_tokens / wall, cpu / wall
    finally:
        proc.kill()
        proc.wait()


def open_loop_timing(rate: float, requests: int, tokens: int) -> tuple[float, float, float]:
    """Open loop at ``rate`` requests/s against the as-fast-as-it-can server: how late the
    sends were (p50, p99 ms), and the rate they were started at against the schedule's own
    (a fraction: 0 is on schedule)."""
    proc, port = _serve_blast(tokens)
    try:
        workload = Workload(rate=rate, num_requests=requests, output_len=tokens, warmup_requests=0)
        result = bench.run_load(f"http://{HOST}:{port}", workload)
        if result.failed:
            raise SystemExit(f"open loop: {result.failed} requests failed: {result.errors()}")
        lags = sorted(result.lag_s)
        starts = sorted(r.start for r in result.records)
        achieved = (len(starts) - 1) / (starts[-1] - starts[0])
        plan = arrivals(workload, "bench", count=requests, duration_s=None)
        planned = (len(plan) - 1) / plan[-1]
        return (
            bench.percentile(lags, 50) * 1000,
            bench.percentile(lags, 99) * 1000,
            achieved / planned - 1,
        )
    finally:
        proc.kill()
        proc.wait()


def _print(readings: Sequence[Reading], truth: dict[str, float]) -> None:
    print(f"{'client':28} {'out tok/s':>10} {'vs truth':>9} {'TTFT p50':>9} {'+over':>7} "
          f"{'ITL p50':>8} {'ITL mean':>9} {'vs truth':>9} {'done':>5}")  # fmt: skip
    print(
        f"{'truth (fixed-rate stand-in)':28} {truth['tok_s']:10.1f} {'':>9} "
        f"{truth['ttft_ms']:9.1f} {'':>7} {truth['itl_ms']:8.2f} {truth['itl_ms']:9.2f}"
    )
    for r in readings:
        print(
            f"{r.client:28} {r.output_tok_s:10.1f} {r.output_tok_s / truth['tok_s'] - 1:+9.2%} "
            f"{r.ttft_p50_ms:9.1f} {r.ttft_p50_ms - truth['ttft_ms']:+7.1f} "
            f"{r.itl_p50_ms:8.2f} {r.itl_mean_ms:9.2f} "
            f"{r.itl_mean_ms / truth['itl_ms'] - 1:+9.2%} {r.completed:5d}"
        )


# ---- a live engine: autotune's client against the engine's own benchmark CLI -----------------

# SGLang's bench_serving, run as `python -m sglang.bench_serving` would, except that where
# Hugging Face `datasets` is not installed (the GPU machine's carried part: it would bring
# pyarrow) a module that refuses to load any dataset stands in for it: bench_serving imports it
# at start for its MMMU and LongBench datasets, and the random-ids dataset used here never
# calls it.
SGLANG_BENCH_SERVING = """
import runpy, sys, types
try:
    import datasets
except ImportError:
    stub = types.ModuleType("datasets")
    def load_dataset(*args, **kwargs):
        raise ImportError("Hugging Face datasets is not installed here")
    stub.load_dataset = load_dataset
    sys.modules["datasets"] = stub
sys.argv[0] = "sglang.bench_serving"
runpy.run_module("sglang.bench_serving", run_name="__main__", alter_sys=True)
"""

ENGINE_BENCH = {
    # engine -> argv of its own serving benchmark (random token ids: nothing to download)
    "sglang": [sys.executable, "-c", SGLANG_BENCH_SERVING, "--backend", "sglang-oai",
               "--dataset-name", "random-ids"],
    "vllm": [sys.executable, "-m", "vllm.entrypoints.cli.main", "bench", "serve",
             "--dataset-name", "random", "--ignore-eos"],
}  # fmt: skip


def _bounds(length: int | str | LengthDist) -> tuple[int, int]:
    if isinstance(length, LengthDist):
        assert length.low is not None and length.high is not None
        return length.low, length.high
    if isinstance(length, str):
        raise SystemExit("the engines' benchmarks draw lengths; a dataset's are not theirs")
    return length, length


def engine_lengths(engine: str, w: Workload) -> list[str]:
    """The engine benchmark's length arguments for ``w``'s uniform lengths (both benchmarks
    take one range ratio for prompts and outputs: SGLang's draws from ``[ratio * L, L]``,
    vLLM's from ``[L * (1 - ratio), L * (1 + ratio)]``).

    Raises:
        SystemExit: prompts and outputs vary by different ratios.
    """
    (p_lo, p_hi), (o_lo, o_hi) = _bounds(w.prompt_len), _bounds(w.output_len)
    if abs(p_lo / p_hi - o_lo / o_hi) > 1e-9:
        raise SystemExit(
            "--prompt-min/--prompt-len and --tokens-min/--tokens must have the same ratio: "
            "the engines' benchmarks take one range ratio for both"
        )
    if engine == "sglang":
        lengths, ratio = (p_hi, o_hi), p_lo / p_hi
        extra = ["--random-range-ratio", f"{ratio:g}"]
    else:
        lengths = ((p_lo + p_hi) // 2, (o_lo + o_hi) // 2)
        extra = ["--random-range-ratio", repr((p_hi - p_lo) / (p_hi + p_lo))]
    return [*extra, "--random-input-len", str(lengths[0]), "--random-output-len", str(lengths[1])]


def engine_bench(engine: str, url: str, model: str, tokenizer: str, w: Workload) -> Reading:
    """One run of the engine's own benchmark CLI against ``url``, read from its result file."""
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "result.json")
        argv = [*ENGINE_BENCH[engine], "--base-url", url, "--model", model,
                "--tokenizer", tokenizer, "--num-prompts", str(w.num_requests),
                "--max-concurrency", str(w.concurrency), *engine_lengths(engine, w)]  # fmt: skip
        if engine == "sglang":
            argv += ["--output-file", result]
        else:
            argv += ["--save-result", "--result-dir", tmp, "--result-filename", "result.json"]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not os.path.exists(result):
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            return Reading(f"{engine} benchmark", float("nan"), float("nan"), float("nan"),
                           float("nan"), 0, tail)  # fmt: skip
        with open(result) as fh:
            data = json.loads(fh.read().strip().splitlines()[-1])
    return Reading(
        f"{engine}'s own benchmark",
        data["output_throughput"],
        data["median_ttft_ms"],
        data["median_itl_ms"],
        data["mean_itl_ms"],
        int(data.get("completed", w.num_requests)),
    )


def live(args: argparse.Namespace) -> None:
    """Alternate autotune's client and the engine's benchmark on one live server."""

    def length(low: int | None, high: int) -> int | LengthDist:
        return LengthDist(dist="uniform", low=low, high=high) if low and low < high else high

    workload = Workload(
        concurrency=args.streams, num_requests=args.requests,
        prompt_len=length(args.prompt_min, args.prompt_len),
        output_len=length(args.tokens_min, args.tokens), warmup_requests=0, model=args.model,
        extra_body={"ignore_eos": True},  # as a study of either engine sends, and both benchmarks
    )  # fmt: skip
    engine_lengths(args.engine_bench, workload)  # both sides can send it, before any run

    def ours() -> Reading:
        return autotune_client(args.url, workload)

    def theirs() -> Reading:
        return engine_bench(args.engine_bench, args.url, args.model, args.tokenizer, workload)

    # The first run after a start pays the server's own warm-up (kernels compiled for new batch
    # shapes): one run that is not counted, then ABBA order so neither client always goes first.
    for _ in range(args.warmup):
        warm = ours()
        print(f"warm-up run (not counted): {warm.output_tok_s:.1f} tok/s")
    readings: list[Reading] = []
    for i in range(args.repeat):
        for run in (ours, theirs) if i % 2 == 0 else (theirs, ours):
            started = time.strftime("%H:%M:%S")
            readings.append(run())
            print(f"{started} {readings[-1].client}: {readings[-1].output_tok_s:.1f} tok/s")
    p_lo, o_lo = args.prompt_min or args.prompt_len, args.tokens_min or args.tokens
    print(f"{args.url}: {args.requests} requests, {args.streams} streams, prompt "
          f"{p_lo}-{args.prompt_len}, output {o_lo}-{args.tokens} tokens (uniform); runs "
          "alternated ABBA")  # fmt: skip
    print(f"{'client':28} {'tok/s':>10} {'TTFT p50':>9} {'ITL p50':>8} {'ITL mean':>9} {'done':>5}")
    for r in readings:
        print(f"{r.client:28} {r.output_tok_s:10.1f} {r.ttft_p50_ms:9.1f} {r.itl_p50_ms:8.2f} "
              f"{r.itl_mean_ms:9.2f} {r.completed:5d} {' '.join(r.notes)}")  # fmt: skip
    by: dict[str, list[float]] = {}
    for r in readings:
        by.setdefault(r.client, []).append(r.output_tok_s)
    ours, theirs = (
        by.get("autotune (node/bench.py)", []),
        by.get(f"{args.engine_bench}'s own benchmark", []),
    )
    if ours and theirs:
        gap = statistics.median(ours) / statistics.median(theirs) - 1
        print(
            f"autotune's median over the engine's: {gap:+.2%} "
            f"(runs: {min(ours):.0f}-{max(ours):.0f} vs {min(theirs):.0f}-{max(theirs):.0f})"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--rate", type=float, default=20.0, help="tok/s per stream")
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--tokens", type=int, default=200, help="output tokens per request")
    parser.add_argument("--waves", type=int, default=2, help="requests = waves x streams")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each client, alternated")
    parser.add_argument(
        "--warmup", type=int, default=1, help="uncounted runs of autotune's client first (--url)"
    )
    parser.add_argument(
        "--bench-serving", default=None, help="path of a standalone SGLang bench_serving.py"
    )
    parser.add_argument("--capacity-only", action="store_true")
    parser.add_argument("--url", help="a live server to measure instead of the stand-in")
    parser.add_argument("--engine-bench", choices=sorted(ENGINE_BENCH), default="sglang")
    parser.add_argument("--model", default="m", help="--url: the model name to request")
    parser.add_argument("--tokenizer", default="", help="--url: the engine benchmark's tokenizer")
    parser.add_argument("--requests", type=int, default=256, help="--url: requests a run")
    parser.add_argument("--prompt-len", type=int, default=512, help="--url: prompt tokens")
    parser.add_argument(
        "--prompt-min", type=int, default=None, help="--url: prompts uniform in min..len"
    )
    parser.add_argument(
        "--tokens-min", type=int, default=None, help="--url: outputs uniform in min..tokens"
    )
    args = parser.parse_args(argv)
    if args.url:
        live(args)
        return
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(ALL_CPUS)[0]})  # the clients: one core
    if not args.capacity_only:
        request_s = args.ttft_ms / 1000 + (args.tokens - 1) / args.rate
        truth = {
            "tok_s": args.streams * args.tokens / request_s,
            "ttft_ms": args.ttft_ms,
            "itl_ms": 1000 / args.rate,
        }
        sg = load_bench_serving(args.bench_serving)
        proc, url = launch_fixed_rate(args.rate, args.ttft_ms)
        print(
            f"fixed-rate stand-in: {args.streams} streams x {args.rate:g} tok/s, TTFT "
            f"{args.ttft_ms:g} ms, {args.tokens} tokens, {args.streams * args.waves} requests "
            "a run (truth: a closed loop with no gap between requests)"
        )
        try:
            for endpoint in ("/v1/completions", "/generate"):
                workload = Workload(
                    concurrency=args.streams,
                    num_requests=args.streams * args.waves,
                    output_len=args.tokens,
                    warmup_requests=0,
                    model="m",
                    endpoint=endpoint,
                )
                readings: list[Reading] = []
                for _ in range(args.repeat):
                    readings.append(raw_client(url, workload))
                    readings.append(autotune_client(url, workload))
                    if endpoint == "/generate" and not isinstance(sg, str):
                        readings.append(sglang_client(sg, url, workload))
                print(f"\n{endpoint}")
                _print(readings, truth)
                for r in readings:
                    if r.notes:
                        print(f"  {r.client} errors: {r.notes}")
            # Per-request overhead alone: one stream, short answers, no contention.
            probe = Workload(
                concurrency=1, num_requests=16, output_len=8, warmup_requests=0, model="m",
                endpoint="/generate",
            )  # fmt: skip
            print("\nTTFT over the truth at 1 stream (16 requests of 8 tokens, /generate):")
            for _ in range(args.repeat):
                clients = [raw_client(url, probe), autotune_client(url, probe)]
                if not isinstance(sg, str):
                    clients.append(sglang_client(sg, url, probe))
                print(
                    "  "
                    + ", ".join(
                        f"{r.client} +{r.ttft_p50_ms - args.ttft_ms:.2f} ms" for r in clients
                    )
                )
        finally:
            proc.terminate()
            proc.wait()
        if isinstance(sg, str):
            print(f"\nSGLang bench_serving not run: {sg}")
    tok_s, cores = capacity(64, 400, 256)
    print(
        f"\ncapacity: autotune's client took {tok_s:,.0f} streamed tok/s using {cores:.2f} of "
        "its one core (64 streams from a local asyncio server that sends as fast as it can)"
    )
    for rate in (100.0, 400.0, 1000.0):
        p50, p99, achieved = open_loop_timing(rate, int(rate * 2), 32)
        print(
            f"open loop at {rate:g} requests/s (Poisson, {int(rate * 2)} requests of 32 tokens, "
            f"same server): sends late by p50 {p50:.2f} ms, p99 {p99:.2f} ms; start rate "
            f"{achieved:+.2%} against the schedule's"
        )


if __name__ == "__main__":
    main()
