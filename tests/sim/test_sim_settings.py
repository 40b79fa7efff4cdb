"""The stand-in's own settings: time scale, launch and window noise, flags that change
nothing, a fixed-rate stream, an OOM under load."""

from __future__ import annotations

import concurrent.futures
import functools
import math
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.sim.conftest import Running, run_to_exit

from autotune.sim.args import Launch, build_parser, to_launch
from autotune.sim.logs import SglangLog
from autotune.sim.nccl import parse_nccl_env
from autotune.sim.profiles import PROFILES
from autotune.sim.server import SimState, launch_seed
from autotune.sim.settings import SettingError, SimSettings, next_launch, settings_from_env


@functools.cache
def _launch() -> Launch:
    ns = build_parser().parse_args(["--model-path", "m", "--tp-size", "8"])
    return to_launch(ns, {}, parse_nccl_env({}))


def _state(seed: int, **settings: Any) -> SimState:
    prof = next(iter(PROFILES.values()))
    return SimState(_launch(), prof, seed, SglangLog("error"), SimSettings(**settings))


def _completion(server: Running, tokens: int) -> list[float]:
    """Arrival times (monotonic) of the token chunks of one streamed completion."""
    body = {"model": "m", "prompt": "p", "max_tokens": tokens, "stream": True}
    times: list[float] = []
    with httpx.stream("POST", f"{server.url}/v1/completions", json=body, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: {") and '"text": "' in line and '"text": ""' not in line:
                times.append(time.monotonic())
    return times


def test_settings_parse_and_name_a_bad_variable() -> None:
    assert settings_from_env({}) == SimSettings()
    parsed = settings_from_env(
        {
            "AUTOTUNE_SIM_TIME_SCALE": "20",
            "AUTOTUNE_SIM_LAUNCH_NOISE": "0.08",
            "AUTOTUNE_SIM_WINDOW_NOISE": "0.03",
            "AUTOTUNE_SIM_FLAGS_IGNORED": "1",
            "AUTOTUNE_SIM_FIXED_RATE": "50",
            "AUTOTUNE_SIM_OOM_ABOVE": "16",
        }
    )
    assert (parsed.time_scale, parsed.launch_sigma, parsed.window_sigma) == (20.0, 0.08, 0.03)
    assert parsed.flags_ignored and parsed.fixed_rate == 50.0 and parsed.oom_above == 16
    for name, value in (
        ("AUTOTUNE_SIM_TIME_SCALE", "0"),
        ("AUTOTUNE_SIM_LAUNCH_NOISE", "-1"),
        ("AUTOTUNE_SIM_FIXED_RATE", "fast"),
        ("AUTOTUNE_SIM_FLAGS_IGNORED", "yes"),
    ):
        with pytest.raises(SettingError, match=name):
            settings_from_env({name: value})


def test_bad_setting_exits_2_before_serving() -> None:
    done = run_to_exit(AUTOTUNE_SIM_TIME_SCALE="-3")
    assert done.returncode == 2
    assert "AUTOTUNE_SIM_TIME_SCALE='-3': must be a number > 0" in done.stderr


def test_launch_noise_has_the_asked_spread() -> None:
    logs = [math.log(_state(seed, launch_sigma=0.08).noise) for seed in range(400)]
    assert 0.065 < statistics.pstdev(logs) < 0.095
    assert abs(statistics.mean(logs)) < 0.015
    assert _state(1, launch_sigma=0.0).noise == 1.0


def test_launch_counter_gives_each_launch_its_own_reproducible_seed(tmp_path: Path) -> None:
    counter = str(tmp_path / "launches")
    assert [next_launch(counter) for _ in range(3)] == [0, 1, 2]
    argv = ["--model-path", "m", "--tp-size", "8"]
    env = {"AUTOTUNE_SIM_SEED": "5"}
    seeds = [launch_seed(argv, env, n) for n in range(3)]
    assert len(set(seeds)) == 3
    assert seeds == [launch_seed(argv, env, n) for n in range(3)]


def test_window_noise_moves_with_simulated_time() -> None:
    state = _state(3, window_sigma=0.05, window_period_s=1.0, time_scale=10.0)
    factors = []
    for epoch in range(40):
        state.t0 = time.monotonic() - (epoch + 0.5) / 10.0  # mid-epoch, in wall seconds
        factors.append(state.window_factor())
    assert len(set(factors)) > 30
    assert 0.03 < statistics.pstdev(math.log(f) for f in factors) < 0.07
    assert _state(3).window_factor() == 1.0


def test_fixed_rate_stream_ignores_load_and_noise() -> None:
    state = _state(9, fixed_rate=40.0, fixed_ttft_ms=80.0, launch_sigma=0.3, window_sigma=0.3)
    assert state.interval_s(1) == state.interval_s(64) == 1 / 40.0
    assert state.ttft_s(4000) == 0.08


def test_time_scale_and_fixed_rate_on_a_server(launch_sim) -> None:  # type: ignore[no-untyped-def]
    # 40 tokens at 20 tok/s after 100 ms: 2.05 simulated seconds, 0.205 s at scale 10.
    server = launch_sim(
        AUTOTUNE_SIM_FIXED_RATE="20", AUTOTUNE_SIM_FIXED_TTFT_MS="100", AUTOTUNE_SIM_TIME_SCALE="10"
    )
    sim = server.info()["simulation"]
    assert isinstance(sim, dict)
    assert (sim["time_scale"], sim["fixed_rate_tok_s"], sim["fixed_ttft_ms"]) == (10.0, 20.0, 100.0)
    start = time.monotonic()
    times = _completion(server, 40)
    assert len(times) == 40
    # Absolute deadlines: never earlier than the scaled schedule; far below the unscaled one.
    assert times[-1] - start >= 0.205
    assert times[-1] - start < 1.0


def test_flags_change_nothing(launch_sim) -> None:  # type: ignore[no-untyped-def]
    from autotune.sim.model import stream_tok_s

    prof = PROFILES["pcie-blackwell"]
    flags = ["--cuda-graph-max-bs", "128"]
    ns = build_parser().parse_args(["--model-path", "m", "--tp-size", "8", *flags])
    tuned = stream_tok_s(to_launch(ns, {}, parse_nccl_env({})).config, prof)
    default = stream_tok_s(_launch().config, prof)
    assert tuned != default  # the flag matters to the model...
    info = launch_sim(*flags, AUTOTUNE_SIM_FLAGS_IGNORED="1").info()["simulation"]
    # ...and not to a server told to ignore flags.
    assert info["modelled"]["stream_tok_s_noiseless"] == round(default, 3)  # type: ignore[index]
    assert info["flags_ignored"] is True  # type: ignore[index]


def test_oom_above_load_kills_the_server(launch_sim) -> None:  # type: ignore[no-untyped-def]
    server = launch_sim(AUTOTUNE_SIM_OOM_ABOVE="2", AUTOTUNE_SIM_TIME_SCALE="10")
    assert len(_completion(server, 5)) == 5  # one stream: fine

    def one(_: int) -> None:
        try:
            _completion(server, 200)
        except (httpx.HTTPError, AssertionError):
            pass

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(4)))
    assert server.proc.wait(timeout=10) == -9
    log = server.log()
    assert "RuntimeError: Decode out of memory. Try to lower your batch size." in log
    assert "Received sigquit from a child process" in log


def test_simulate_runs_the_stand_in_time_scaled() -> None:
    from autotune.engines import get_engine
    from autotune.engines.sglang import SIM_TIME_SCALE_ENV, SIMULATE_TIME_SCALE
    from autotune.sim.settings import TIME_SCALE_ENV
    from autotune.space.schema import EngineSpec

    assert SIM_TIME_SCALE_ENV == TIME_SCALE_ENV  # the engine names the stand-in's variable

    spec = EngineSpec(name="sglang")
    _, env = get_engine(spec, simulate=True).command("m", [], {})
    assert env["AUTOTUNE_SIM_TIME_SCALE"] == SIMULATE_TIME_SCALE
    assert "AUTOTUNE_SIM_TIME_SCALE" not in get_engine(spec).command("m", [], {})[1]
    # A space may still ask for real time.
    _, env = get_engine(spec, simulate=True).command("m", [], {"AUTOTUNE_SIM_TIME_SCALE": "1"})
    assert env["AUTOTUNE_SIM_TIME_SCALE"] == "1"


def test_sigterm_to_any_thread_stops_the_server(launch_sim) -> None:  # type: ignore[no-untyped-def]
    # The kernel may hand a process-wide SIGTERM to any thread; send it to a non-main thread
    # on purpose (tgkill) and the server must still shut down.
    import ctypes
    import os
    import platform
    import signal

    numbers = {"x86_64": 234, "aarch64": 131}
    if platform.machine() not in numbers:
        pytest.skip(f"tgkill syscall number unknown on {platform.machine()}")
    server = launch_sim()
    pid = server.proc.pid
    threads = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    assert threads, "the server runs an HTTP thread"
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(numbers[platform.machine()], pid, threads[0], signal.SIGTERM) == 0
    assert server.proc.wait(timeout=5) == 0
    assert "Shutting down" in server.log()


def test_stop_request_takes_no_lock_and_ends_a_wait() -> None:
    import threading

    from autotune.sim.server import _Stop

    stop = _Stop()
    assert stop.wait(0.01) is False
    threading.Timer(0.05, stop.request).start()
    start = time.monotonic()
    assert stop.wait(10.0) is True and time.monotonic() - start < 2.0
    # A signal handler may run while the main thread is anywhere, locks held included: the
    # request is a plain attribute write.
    assert not any(isinstance(v, type(threading.Lock())) for v in vars(stop).values())
