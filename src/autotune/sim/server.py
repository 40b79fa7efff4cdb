"""The stand-in server process: start-up script, HTTP endpoints, real-time token streaming.

The port is bound at once and every endpoint answers 503 until the simulated Uvicorn starts;
``/health`` stays 503 until the warm-up request passed (SGLang binds only then, so a client
that polls ``/health`` sees the same thing: not ready, then ready).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from autotune.sim.args import Launch, build_parser, to_launch
from autotune.sim.logs import BANNER, SRT, SglangLog, frame, traceback_text
from autotune.sim.model import (
    allreduce_path,
    expected_accept_length,
    max_running_requests,
    memory_plan,
    nccl_allreduce,
    prefill_ms,
    spec_cycle_ms,
    stream_tok_s,
    token_interval_ms,
    verify_ms,
)
from autotune.sim.nccl import NcclEnvError, parse_nccl_env
from autotune.sim.plan import FAST_SCALE, plan_startup
from autotune.sim.profiles import HardwareProfile, profile_from_env
from autotune.sim.settings import SettingError, SimSettings, next_launch, settings_from_env

SEED_ENV = "AUTOTUNE_SIM_SEED"
STARTUP_ENV = "AUTOTUNE_SIM_STARTUP"
NOISE_CLAMP = 2.5  # a launch factor stays within exp(+-2.5 sigma)
VOCAB = (
    "the model runs on eight GPUs and every layer waits for an allreduce across the bus while "
    "tokens stream out one by one to the client that measures them"
).split()


def startup_scale(env: dict[str, str]) -> float:
    """Seconds of this run per realistic second: ``fast`` (default), ``realistic`` or a number."""
    raw = env.get(STARTUP_ENV, "fast").strip().lower()
    if raw in ("", "fast"):
        return FAST_SCALE
    if raw == "realistic":
        return 1.0
    try:
        return max(float(raw), 0.0)
    except ValueError:  # a malformed setting: the default
        return FAST_SCALE


def launch_seed(argv: list[str], env: dict[str, str], launch: int | None = None) -> int:
    """Seed of this launch: AUTOTUNE_SIM_SEED + the configuration (+ the launch number from
    the counter file, when one is set); random without the variable."""
    base = env.get(SEED_ENV)
    if base is None:
        return int.from_bytes(os.urandom(8), "big")
    if launch is not None:
        base = f"{base}:launch{launch}"
    skip = {"--host", "--port"}
    parts, i = [], 0
    while i < len(argv):
        if argv[i] in skip:
            i += 2
            continue
        parts.append(argv[i])
        i += 1
    nccl = sorted(f"{k}={v}" for k, v in env.items() if k.startswith(("NCCL_", "SGLANG_")))
    digest = hashlib.sha256("\0".join([base, *parts, *nccl]).encode()).digest()
    return int.from_bytes(digest[:8], "big")


class SimState:
    """Shared state of the running server: readiness, the batch in flight, speculative stats."""

    def __init__(
        self,
        launch: Launch,
        prof: HardwareProfile,
        seed: int,
        log: SglangLog,
        settings: SimSettings | None = None,
    ) -> None:
        self.launch, self.prof, self.log, self.seed = launch, prof, log, seed
        self.settings = settings or SimSettings()
        self.cfg = launch.config
        rng = random.Random(seed)
        sigma = self.settings.launch_sigma
        bound = math.exp(NOISE_CLAMP * sigma)
        self.noise = min(max(math.exp(rng.gauss(0.0, sigma)), 1 / bound), bound)
        self.phase = "starting"  # -> serving (HTTP up) -> ready (warm-up passed)
        self.lock = threading.Lock()
        self.active = 0
        self.inflight = 0  # requests received and not finished (queued ones included)
        self.t0 = time.monotonic()
        slots = max_running_requests(self.cfg, prof)
        # A fixed-rate stream's truth must not depend on load: no admission limit then.
        self.slots = threading.Semaphore(slots if self.settings.fixed_rate is None else 1 << 20)
        self.spec_tokens = 0
        self.spec_cycles = 0
        self.decoded = 0
        self.requests = 0

    # ---- the model, at the current batch

    def window_factor(self) -> float:
        """The within-launch factor now: redrawn every ``window_period_s`` simulated seconds."""
        sigma = self.settings.window_sigma
        if sigma <= 0:
            return 1.0
        sim_now = (time.monotonic() - self.t0) * self.settings.time_scale
        epoch = int(sim_now // self.settings.window_period_s)
        bound = math.exp(NOISE_CLAMP * sigma)
        draw = math.exp(random.Random(f"{self.seed}:window{epoch}").gauss(0.0, sigma))
        return min(max(draw, 1 / bound), bound)

    # Simulated seconds (what the server reports); the stream divides them by the time scale.
    def interval_s(self, batch: int) -> float:
        if self.settings.fixed_rate is not None:
            return 1.0 / self.settings.fixed_rate
        ms = token_interval_ms(batch, self.cfg, self.prof)
        return ms * self.noise * self.window_factor() / 1000.0

    def cycle_s(self, batch: int) -> float:
        return (
            spec_cycle_ms(batch, self.cfg, self.prof) * self.noise * self.window_factor() / 1000.0
        )

    def ttft_s(self, prompt_tokens: int) -> float:
        if self.settings.fixed_rate is not None:
            return self.settings.fixed_ttft_ms / 1000.0
        ms = prefill_ms(prompt_tokens, self.cfg, self.prof)
        return ms * self.noise * self.window_factor() / 1000.0

    def accept_length(self) -> float:
        with self.lock:
            if self.spec_cycles:
                return self.spec_tokens / self.spec_cycles
        assert self.cfg.spec is not None
        return expected_accept_length(self.cfg.spec)

    def generate(self, prompt_tokens: int, max_new: int, rid: str) -> Iterator[list[str]]:
        """Yield the new tokens of each step, at the modelled times (blocking)."""
        rng = random.Random(f"{self.seed}:{rid}")
        oom = self.settings.oom_above
        with self.lock:
            self.inflight += 1
            over = oom is not None and self.inflight > oom
        if over:
            self._die_of_oom()
        self.slots.acquire()
        with self.lock:
            self.active += 1
            self.requests += 1
        scale = self.settings.time_scale
        fixed = self.settings.fixed_rate is not None
        try:
            start = time.monotonic()
            deadline = start + self.ttft_s(prompt_tokens) / scale
            _sleep_until(deadline)
            produced = 0
            if max_new > 0:
                produced = 1
                yield [self._token(rng)]
            spec = None if fixed else self.cfg.spec
            while produced < max_new:
                with self.lock:
                    batch = self.active
                jitter = 1.0 if fixed else rng.uniform(0.97, 1.03)
                if spec is None:
                    deadline += self.interval_s(batch) * jitter / scale
                    n = 1
                else:
                    deadline += self.cycle_s(batch) * jitter / scale
                    n = _sample_accept(rng, spec)
                    with self.lock:
                        self.spec_tokens += n
                        self.spec_cycles += 1
                n = min(n, max_new - produced)
                _sleep_until(deadline)
                produced += n
                self._count(n, batch)
                yield [self._token(rng) for _ in range(n)]
        finally:
            with self.lock:
                self.active -= 1
                self.inflight -= 1
            self.slots.release()

    def _die_of_oom(self) -> None:
        """SGLang's runtime KV exhaustion: the scheduler raises, the parent SIGKILLs itself."""
        sched = f"{SRT}/managers/scheduler.py"
        frames = [
            frame(sched, 2950, "run_scheduler_process", "scheduler.event_loop_overlap()"),
            frame(sched, 1012, "event_loop_overlap", "batch = self.get_next_batch_to_run()"),
            frame(sched, 1820, "update_running_batch", "raise RuntimeError("),
        ]
        self.log.line(
            "Scheduler hit an exception: "
            + traceback_text(
                frames, "RuntimeError: Decode out of memory. Try to lower your batch size."
            ),
            rank="TP0",
            level="error",
        )
        self.log.line(
            "Received sigquit from a child process. It usually means the child failed.",
            rank=None,
            level="error",
        )
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def _token(self, rng: random.Random) -> str:
        return " " + rng.choice(VOCAB)

    def _count(self, n: int, batch: int) -> None:
        with self.lock:
            before = self.decoded
            self.decoded += n
            crossed = self.decoded // 40 != before // 40
        if crossed:
            gen = batch * 1.0 / self.interval_s(batch)
            extra = f", accept len: {self.accept_length():.2f}" if self.cfg.spec else ""
            self.log.line(
                f"Decode batch. #running-req: {batch}, #token: {self.decoded}, token usage: 0.00, "
                f"cuda graph: {self.cfg.graphs}, gen throughput (token/s): {gen:.2f}{extra}, "
                "#queue-req: 0",
                rank="TP0",
            )

    # ---- /get_server_info

    def server_info(self) -> dict[str, Any]:
        cfg, prof = self.cfg, self.prof
        mem = memory_plan(cfg, prof)
        nccl = {}
        for name, tokens in (
            ("decode", 1),
            ("verify", cfg.spec.num_draft_tokens if cfg.spec else 1),
        ):
            us, algo, proto = nccl_allreduce(tokens * prof.hidden_bytes, cfg.nccl, prof)
            nccl[name] = {
                "bytes": tokens * prof.hidden_bytes,
                "us": round(us, 1),
                "algo": algo,
                "proto": proto,
            }
        modelled: dict[str, Any] = {
            "stream_tok_s": round(stream_tok_s(cfg, prof) / self.noise, 3),
            "stream_tok_s_noiseless": round(stream_tok_s(cfg, prof), 3),
            "allreduce_path": allreduce_path(cfg, prof),
            "nccl_allreduce": nccl,
            "max_total_num_tokens": mem.max_total_num_tokens,
        }
        state: dict[str, Any] = {
            "memory_usage": {"weight": mem.weights_gb, "kvcache": round(mem.kv_gb, 2)}
        }
        info: dict[str, Any] = {k: v for k, v in vars(self.launch.ns).items()}
        if cfg.spec is not None:
            accept = round(self.accept_length(), 4)
            info["avg_spec_accept_length"] = accept
            state["avg_spec_accept_length"] = accept
            modelled["expected_accept_length"] = round(expected_accept_length(cfg.spec), 4)
            modelled["verify_ms"] = round(verify_ms(cfg, prof) * self.noise, 3)
            info.update(
                speculative_num_steps=cfg.spec.num_steps,
                speculative_eagle_topk=cfg.spec.topk,
                speculative_num_draft_tokens=cfg.spec.num_draft_tokens,
            )
        info.update(
            simulated=True,
            version="0.5.9 (autotune.sim)",
            max_total_num_tokens=mem.max_total_num_tokens,
            max_running_requests=max_running_requests(cfg, prof),
            mem_fraction_static=mem.mem_fraction_static,
            internal_states=[state],
            simulation={
                "profile": prof.name,
                "gpu": prof.gpu_name,
                "noise_factor": round(self.noise, 5),
                "modelled": modelled,
                "time_scale": self.settings.time_scale,
                "launch_noise_sigma": self.settings.launch_sigma,
                "window_noise_sigma": self.settings.window_sigma,
                "flags_ignored": self.settings.flags_ignored,
                "fixed_rate_tok_s": self.settings.fixed_rate,
                "fixed_ttft_ms": self.settings.fixed_ttft_ms
                if self.settings.fixed_rate is not None
                else None,
            },
        )
        return info


def _sample_accept(rng: random.Random, spec: Any) -> int:
    from autotune.sim.model import accept_depth, accept_probability

    p, n = accept_probability(spec), 1
    for _ in range(accept_depth(spec)):
        if rng.random() >= p:
            break
        n += 1
    return n


def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _prompt_tokens(prompt: Any) -> int:
    if isinstance(prompt, list):
        if prompt and isinstance(prompt[0], int):
            return len(prompt)
        if prompt and isinstance(prompt[0], list):
            return len(prompt[0])
        prompt = prompt[0] if prompt else ""
    return max(1, math.ceil(len(str(prompt)) / 4))


class Handler(BaseHTTPRequestHandler):
    """SGLang's HTTP API, enough of it for benchmarks and readiness checks."""

    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sim: SimState  # set on the subclass built by serve()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # request lines are logged the uvicorn way in _log_request

    def setup(self) -> None:
        super().setup()
        # As uvicorn does: without it, Nagle holds the first token behind the header block
        # until the client's delayed ACK (up to 40 ms), a TTFT no real server has.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _log_request(self, code: int) -> None:
        host, port = self.client_address[:2]
        self.sim.log.line(
            f'INFO:     {host}:{port} - "{self.command} {self.path} HTTP/1.1" {code} '
            f"{'OK' if code == 200 else 'Error'}",
            rank=None,
        )

    def _json(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self._log_request(code)

    def _empty(self, code: int) -> None:
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
        if self.sim.phase != "starting":  # SGLang's port is not even open then: nothing to log
            self._log_request(code)

    def _body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:  # answered 400 by the caller
            return None
        return body if isinstance(body, dict) else None

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        phase, path = self.sim.phase, self.path.split("?")[0]
        if phase == "starting":
            return self._empty(503)
        if path in ("/health", "/health_generate"):
            return self._empty(200 if phase == "ready" else 503)
        if path in ("/get_server_info", "/server_info"):
            return self._json(200, self.sim.server_info())
        if path in ("/get_model_info", "/model_info"):
            ns = self.sim.launch.ns
            return self._json(
                200,
                {
                    "model_path": ns.model_path,
                    "tokenizer_path": ns.model_path,
                    "is_generation": True,
                    "simulated": True,
                },
            )
        if path == "/v1/models":
            name = self.sim.launch.served_name
            return self._json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": name,
                            "object": "model",
                            "created": int(time.time()),
                            "owned_by": "sglang",
                            "root": name,
                            "max_model_len": self.sim.cfg.context_length,
                        }
                    ],
                },
            )
        return self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        if self.sim.phase == "starting":
            return self._empty(503)
        path = self.path.split("?")[0]
        body = self._body()
        if body is None:
            return self._json(400, {"error": {"message": "invalid JSON body"}})
        if path == "/generate":
            return self._generate(body)
        if path == "/v1/completions":
            return self._completions(body)
        return self._json(404, {"detail": "Not Found"})

    # ---- streaming helpers

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: str) -> None:
        raw = data.encode()
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self._log_request(200)

    # ---- endpoints

    def _generate(self, body: dict[str, Any]) -> None:
        params = body.get("sampling_params") or {}
        try:
            max_new = int(params.get("max_new_tokens", 128))
        except (TypeError, ValueError):  # a client error, answered
            return self._json(400, {"error": {"message": "max_new_tokens must be an integer"}})
        prompt = (
            body.get("input_ids") if body.get("input_ids") is not None else body.get("text", "")
        )
        n_prompt, rid = _prompt_tokens(prompt), body.get("rid") or uuid.uuid4().hex
        started = time.monotonic()

        def meta(done: int, final: bool) -> dict[str, Any]:
            info: dict[str, Any] = {
                "id": rid,
                "prompt_tokens": n_prompt,
                "completion_tokens": done,
                "cached_tokens": 0,
                "finish_reason": None,
            }
            if final:
                info["finish_reason"] = {"type": "length", "length": done}
                info["e2e_latency"] = time.monotonic() - started
            if self.sim.cfg.spec is not None:
                info["spec_verify_ct"] = max(1, done)
            return info

        text, done = "", 0
        try:
            if body.get("stream"):
                self._start_stream()
            for tokens in self.sim.generate(n_prompt, max_new, rid):
                text += "".join(tokens)
                done += len(tokens)
                if body.get("stream"):
                    out = {"text": text, "meta_info": meta(done, done >= max_new)}
                    self._chunk(f"data: {json.dumps(out)}\n\n")
            if body.get("stream"):
                if max_new <= 0:
                    self._chunk(f"data: {json.dumps({'text': '', 'meta_info': meta(0, True)})}\n\n")
                self._chunk("data: [DONE]\n\n")
                return self._end_stream()
            return self._json(200, {"text": text, "meta_info": meta(done, True)})
        except (BrokenPipeError, ConnectionResetError):  # the client left
            return None

    def _completions(self, body: dict[str, Any]) -> None:
        prompt = body.get("prompt", "")
        if isinstance(prompt, list) and len(prompt) > 1 and not isinstance(prompt[0], int):
            return self._json(
                400, {"error": {"message": "the simulator serves one prompt per request"}}
            )
        try:
            raw = body.get("max_tokens")
            max_new = int(raw if raw is not None else 16)
        except (TypeError, ValueError):  # a client error, answered
            return self._json(400, {"error": {"message": "max_tokens must be an integer"}})
        n_prompt, rid = _prompt_tokens(prompt), f"cmpl-{uuid.uuid4().hex}"
        model, created = body.get("model") or self.sim.launch.served_name, int(time.time())

        def chunk(
            text: str, finish: str | None, usage: dict[str, int] | None = None, choices: bool = True
        ) -> str:
            out = {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}]
                if choices
                else [],
                "usage": usage,
            }
            return f"data: {json.dumps(out)}\n\n"

        def usage(done: int) -> dict[str, int]:
            return {
                "prompt_tokens": n_prompt,
                "completion_tokens": done,
                "total_tokens": n_prompt + done,
            }

        text, done, stream = "", 0, bool(body.get("stream"))
        try:
            if stream:
                self._start_stream()
            for tokens in self.sim.generate(n_prompt, max_new, rid):
                delta = "".join(tokens)
                text += delta
                done += len(tokens)
                if stream:
                    self._chunk(chunk(delta, "length" if done >= max_new else None))
            if stream:
                self._chunk(chunk("", None, usage(done), choices=False))
                self._chunk("data: [DONE]\n\n")
                return self._end_stream()
            return self._json(
                200,
                {
                    "id": rid,
                    "object": "text_completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}
                    ],
                    "usage": usage(done),
                },
            )
        except (BrokenPipeError, ConnectionResetError):  # the client left
            return None


class _Stop:
    """A stop request set by a signal handler, without a lock.

    ``threading.Event.set()`` from a handler deadlocks when the signal lands while the main
    thread holds the event's own lock (inside ``Event.wait``); and a bare wait is never woken
    when the kernel delivers the signal to another thread. Seen as 10 s teardowns (the grace
    period, then SIGKILL) in about 1 launch in 15.
    """

    def __init__(self) -> None:
        self.requested = False

    def request(self, *_: object) -> None:
        self.requested = True

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` in short slices; True as soon as a stop was requested."""
        deadline = time.monotonic() + seconds
        while not self.requested:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, 0.05))
        return True


class _Server(ThreadingHTTPServer):
    # socketserver's listen backlog is 5: 64 clients connecting at once would see SYNs dropped
    # and retried a second later, a TTFT no real server (uvicorn: 2048) has.
    request_queue_size = 2048


def _main_process_error(log: SglangLog, error: str, where: tuple[int, str]) -> int:
    frames = [
        frame(
            "/sgl-workspace/sglang/python/sglang/launch_server.py",
            24,
            "<module>",
            "server_args = prepare_server_args(sys.argv[1:])",
        ),
        frame(
            f"{SRT}/server_args.py",
            3650,
            "prepare_server_args",
            "return ServerArgs.from_cli_args(raw_args)",
        ),
        frame(f"{SRT}/server_args.py", where[0], "__post_init__", where[1]),
    ]
    log.raw(traceback_text(frames, error))
    return 1


def main(argv: list[str] | None = None) -> int:
    """Run the stand-in server; returns an exit code (a crash SIGKILLs the process instead)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
    sys.stderr.write(BANNER + "\n")
    ns = build_parser().parse_args(argv)  # exits 2 on a bad flag, as SGLang
    try:
        prof = profile_from_env(env)
    except KeyError as exc:
        sys.stderr.write(f"error: {exc.args[0]}\n")
        return 2
    try:
        settings = settings_from_env(env)
    except SettingError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    log = SglangLog(ns.log_level)
    nccl_error: NcclEnvError | None = None
    try:
        nccl = parse_nccl_env(env)
    except NcclEnvError as exc:
        nccl_error, nccl = exc, parse_nccl_env({})
    try:
        launch = to_launch(ns, env, nccl)
    except AssertionError as exc:
        return _main_process_error(
            log, f"AssertionError{': ' + str(exc) if str(exc) else ''}", (1211, "assert (")
        )
    except ValueError as exc:
        return _main_process_error(log, f"ValueError: {exc}", (1248, "raise ValueError("))
    args_text = ", ".join(
        f"{k}={v!r}" for k, v in sorted(vars(ns).items()) if v not in (None, False)
    )
    log.line(f"server_args=ServerArgs({args_text})", rank=None)
    for warning in launch.warnings:
        log.line(warning, rank=None, level="warning")

    if settings.flags_ignored:
        # Performance from the default configuration whatever the flags: only noise differs.
        default = build_parser().parse_args(["--model-path", ns.model_path])
        launch = Launch(
            ns=ns,
            config=to_launch(default, {}, parse_nccl_env({})).config,
            warnings=launch.warnings,
        )
    number = next_launch(settings.launches) if settings.launches else None
    state = SimState(launch, prof, launch_seed(argv, env, number), log, settings)
    handler = type("SimHandler", (Handler,), {"sim": state})
    try:
        httpd = _Server((ns.host, ns.port), handler)
    except OSError as exc:
        log.line(
            f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
            f"('{ns.host}', {ns.port}): {exc.strerror.lower() if exc.strerror else exc}",
            rank=None,
            level="error",
        )
        return 1
    httpd.daemon_threads = True
    # shutdown() waits for the next poll: 0.5 s by default, the whole of a teardown.
    threading.Thread(target=httpd.serve_forever, args=(0.05,), name="http", daemon=True).start()
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop.request)
    signal.signal(signal.SIGINT, stop.request)

    plan = plan_startup(
        launch,
        prof,
        scale=startup_scale(env) / settings.time_scale,
        nccl_error=nccl_error,
        port=ns.port,
        pid=os.getpid(),
    )
    for event in plan.events:
        if stop.wait(event.wait_s):
            httpd.shutdown()
            return 0
        if event.raw:
            log.raw(event.text)
        else:
            log.line(event.text, rank=event.rank, level=event.level)
        if event.text.startswith("INFO:     Uvicorn running"):
            state.phase = "serving"
    if plan.crash is not None:
        # SGLang: the failing scheduler SIGQUITs the parent, which kills its tree and itself.
        log.line(
            "Received sigquit from a child process. It usually means the child failed.",
            rank=None,
            level="error",
        )
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    state.phase = "ready"
    while not stop.wait(3600.0):
        pass
    log.line("INFO:     Shutting down", rank=None)
    httpd.shutdown()
    return 0
