"""The stand-in server process: arguments, the start-up script, serving until stopped.

The port is bound at once and every endpoint answers 503 until the simulated Uvicorn starts;
``/health`` stays 503 until the warm-up request passed (SGLang binds only then, so a client
that polls ``/health`` sees the same thing: not ready, then ready).
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import threading
import time
from http.server import ThreadingHTTPServer

from autotune.sim.args import Launch, build_parser, to_launch
from autotune.sim.endpoints import Handler
from autotune.sim.logs import BANNER, SRT, SglangLog, frame, traceback_text
from autotune.sim.nccl import parse_nccl_env, read_nccl_env
from autotune.sim.plan import FAST_SCALE, plan_startup
from autotune.sim.profiles import profile_from_env
from autotune.sim.settings import SettingError, next_launch, settings_from_env
from autotune.sim.state import SimState

__all__ = ["Handler", "SimState", "launch_seed", "main", "startup_scale"]

SEED_ENV = "AUTOTUNE_SIM_SEED"
STARTUP_ENV = "AUTOTUNE_SIM_STARTUP"


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
    nccl, nccl_error = read_nccl_env(env)
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
        log.sigquit_and_die()
    state.phase = "ready"
    while not stop.wait(3600.0):
        pass
    log.line("INFO:     Shutting down", rank=None)
    httpd.shutdown()
    return 0
