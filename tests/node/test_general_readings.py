"""Mechanisms every engine shares, read by what they are (issue 51, fourteenth round).

Written from the mechanisms that failed on the tuning part of batch s (the fifth blind set,
tests/data/crashlogs/MANIFEST.md), each case in the shape such logs take, not copied from
the corpus:

- a server that **lists the HTTP routes it serves** (`Route: /health, Methods: GET`, one line
  per route) has built its application and started: the list is no start-up cut short;
- a benchmark client's **argument dump** names it a client in a subcommand's words too
  (`subparser='bench'`, `bench_type=`): a client's log that stops before its report failed its
  run (`benchmark_errors`), it is no server's start-up cut short;
- a traceback's **frame header wrapped** at the terminal's width (`File "...", line 103, in`
  with the function's name, or the rest of it, alone on the next line) is read whole, so its
  frames place the failure as any other's; an engine's serving loop is named in more ways
  (`loop_for_forward`);
- **Open MPI's output tags** (`[1,0]<stderr>:`, with `--timestamp-output` a date before them)
  are a dress like a container's prefix: the lines under them read as without them;
- a **notebook's traceback cut above its header** (the excerpt begins at an IPython 8 frame,
  `File /path.py:722, in Runner.load_model(self)`, with `--> 722 code` below it) is read as a
  traceback all the same: a traceback cut before its exception, not a start-up cut short;
- a backtrace cut before its message whose frames **bind a listening socket** (a Rust server's
  `TcpListener::bind` / `Server::bind`, Python's `socket.bind` under asyncio's
  `create_server`) failed to take its address: `port_in_use`;
- a native library that **aborts the process in its own words** ("Abort was called at 250 line
  in file:", a C library's `abort() called`) crashed it, as a SIGABRT does: `runtime_crash`;
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_phase

ROUTES = [
    "(Frontend pid=311) INFO 02-11 09:00:02 [routes.py:58] Route: /healthz, Methods: GET",
    "(Frontend pid=311) INFO 02-11 09:00:02 [routes.py:58] Route: /v1/models, Methods: GET",
    "(Frontend pid=311) INFO 02-11 09:00:02 [routes.py:58] Route: /v1/embeddings, Methods: POST",
    "(Frontend pid=311) INFO 02-11 09:00:02 [routes.py:58] Route: /tokenize, Methods: POST",
]


def test_a_server_that_lists_its_routes_has_started() -> None:
    assert cause_phase(ROUTES) is None
    loading = "INFO 02-11 08:59:40 [loader.py:12] Loading weights took 31.20 seconds"
    assert cause_phase([loading, *ROUTES]) is None
    # a failure after the list is still read
    crash = [
        *ROUTES,
        "Traceback (most recent call last):",
        '  File "/srv/app/engine.py", line 40, in step',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    assert cause_phase(crash) == ("runtime_crash", "benchmark")
    # a log that stops while loading is still a start-up cut short
    assert cause_phase([loading]) == ("startup_timeout", "load")


def test_a_benchmark_subcommands_argument_dump_is_a_clients() -> None:
    dump = (
        "Namespace(subparser='bench', bench_type='throughput', dispatch_function=<function "
        "ThroughputSubcommand.cmd at 0x7f3a2c1d0e50>, host='10.0.0.7', port=30000"
    )
    started = "INFO 07-14 10:02:11 [__init__.py:30] Automatically detected platform rocm."
    assert cause_phase([started, dump]) == ("benchmark_errors", "benchmark")
    # the same client with its report, every request served: a healthy run
    report = [
        "Successful requests:                     64",
        "Benchmark duration (s):                  12.50",
        "Output token throughput (tok/s):         2210.04",
    ]
    assert cause_phase([started, dump + ")", *report]) is None
    # a program's own subcommand that is no benchmark is no client
    serve = "Namespace(subparser='serve', model_tag='m', dispatch_function=<function Serve"
    assert cause_phase([started, serve]) != ("benchmark_errors", "benchmark")


def _wrapped(cut: int, frames: list[tuple[str, int, str]]) -> list[str]:
    """A traceback's frame headers as a terminal prints them when each is ``cut`` columns
    wider than it: the last ``cut`` characters alone on the next line."""
    out = []
    for path, line, name in frames:
        header = f'  File "{path}", line {line}, in {name}'
        out += [header[:-cut], header[-cut:]] if cut else [header]
        out.append("    pass")
    return out


SERVE_LOOP = [
    (
        "/opt/conda/lib/python3.10/site-packages/fastserve/runtime/controller_process.py",
        88,
        "run_controller",
    ),
    (
        "/opt/conda/lib/python3.10/site-packages/fastserve/runtime/controller_process.py",
        140,
        "loop_for_forward",
    ),
    (
        "/opt/conda/lib/python3.10/site-packages/fastserve/runtime/model_worker_process.py",
        97,
        "forward_step_tensors",
    ),
]


@pytest.mark.usefixtures("rules_alone")
def test_a_frame_header_wrapped_at_the_terminals_width_is_read_whole() -> None:
    head = ["Exception in Controller:", "Traceback (most recent call last):"]
    whole = cause_phase([*head, *_wrapped(0, SERVE_LOOP)])
    assert whole == ("runtime_crash", "benchmark")
    # cut before the name (" loop_for_forward" alone), or inside it ("forward" alone)
    for cut in (len(" loop_for_forward"), len("forward"), len("_step_tensors")):
        assert cause_phase([*head, *_wrapped(cut, SERVE_LOOP)]) == whole, cut
    # a frame's code line that is one word stays a code line
    code = ['  File "/srv/app/loader.py", line 12, in load_all', "    return"]
    assert cause_phase(["Traceback (most recent call last):", *code]) != whole


RANK_LOOP = [
    "Traceback (most recent call last):",
    '  File "/srv/engine/managers/worker.py", line 412, in run_worker',
    "    worker.event_loop_overlap()",
    '  File "/srv/engine/managers/worker.py", line 300, in event_loop_overlap',
    "    batch = self.get_next_batch_to_run()",
]
BAD_IMPORT = [
    "Traceback (most recent call last):",
    '  File "/srv/engine/kernels/__init__.py", line 3, in <module>',
    "    from fastkern import ops",
    "ImportError: /srv/env/fastkern/ops.so: undefined symbol: _ZN3c1017SetDeviceEa",
]


def test_open_mpis_output_tags_are_a_dress() -> None:
    for tag in ("Mon Feb  3 09:12:44 2025[1,0]<stderr>:", "[0,3]<stdout>:"):
        for lines in (RANK_LOOP, BAD_IMPORT):
            tagged = [f"{tag}{line}" for line in lines]
            assert cause_phase(tagged) == cause_phase(lines), (tag, lines[-1])
    assert cause_phase(RANK_LOOP) == ("runtime_crash", "benchmark")
    assert cause_phase(BAD_IMPORT)[0] == "import_error"  # type: ignore[index]


NOTEBOOK_FRAMES = [
    "File ~/venv/lib/python3.11/site-packages/fastserve/runner.py:318, in Runner.load(self)",
    "    316 started = time.time()",
    "    317 with self.memory_meter():",
    "--> 318     self.model = build_model(self.config,",
    "    319                              device=self.device)",
    "",
    "File ~/venv/lib/python3.11/site-packages/fastserve/loader/__init__.py:40, in build_model"
    "(config, device)",
    "     38 def build_model(config, device):",
    "---> 40     return pick_loader(config).load_model(config, device)",
]


def test_a_notebooks_traceback_cut_above_its_header_is_a_traceback() -> None:
    got = cause_phase(NOTEBOOK_FRAMES)
    assert got is not None and got != ("startup_timeout", "load")
    assert got[1] == "load"
    # the same frames in Python's own form are read the same way
    plain = [
        '  File "/venv/lib/python3.11/site-packages/fastserve/runner.py", line 318, in load',
        "    self.model = build_model(self.config,",
        '  File "/venv/lib/python3.11/site-packages/fastserve/loader/__init__.py", line 40, '
        "in build_model",
        "    return pick_loader(config).load_model(config, device)",
    ]
    assert cause_phase(plain) == got


AT = " " * 31 + "at /root/.cargo/registry/src/"
RUST_BIND = [
    "  11:     0x55d0c2a1b3f0 - tokio::net::tcp::listener::TcpListener::bind::{{closure}}"
    "::h0a1b2c3d4e5f6a7b",
    AT + "tokio-1.38.0/src/net/tcp/listener.rs:117:25",
    "  12:     0x55d0c2a1b3f0 - api_gateway::http::start::{{closure}}::h1122334455667788",
    "                               at /build/gateway/src/http.rs:210:9",
    "  13:     0x55d0c29f8a11 - tokio::runtime::park::CachedParkThread::block_on"
    "::h99aabbccddeeff00",
    AT + "tokio-1.38.0/src/runtime/park.rs:281:63",
]
PY_BIND = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.11/asyncio/base_events.py", line 1536, in create_server',
    "    sock.bind(sa)",
]


def test_a_backtrace_cut_in_a_socket_bind_is_the_port() -> None:
    assert cause_phase(RUST_BIND)[0] == "port_in_use"  # type: ignore[index]
    assert cause_phase(PY_BIND)[0] == "port_in_use"  # type: ignore[index]
    # binding a function's arguments (inspect's Signature.bind) binds no socket
    args = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/inspect.py", line 3212, in bind',
        "    return self._bind(args, kwargs)",
    ]
    assert cause_phase(args)[0] != "port_in_use"  # type: ignore[index]


def test_a_native_librarys_own_abort_report_is_a_crash() -> None:
    start = [
        "[I 2025-04-02 10:02:11] loading model to xpu:0",
        "[I 2025-04-02 10:02:19] model loaded, 7.61 GiB",
    ]
    for abort in (
        ["Abort was called at 250 line in file:", "../../shared/source/built_ins/built_ins.cpp"],
        ["mpool: abort() called from release_block"],
    ):
        assert cause_phase([*start, *abort])[0] == "runtime_crash", abort  # type: ignore[index]
