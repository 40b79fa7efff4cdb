"""The classifier and the bundled rules, as table tests over real log lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotune.errors import ConfigError
from autotune.models import Cause, Milestone, Phase, Rule
from autotune.node.failures import (
    KILLED_HINT,
    blamed,
    classify,
    diagnose_file,
    phase_reached,
    strip_prefix,
)
from autotune.rules import load_rule_file, load_rules, user_rules

SCHED = "[2026-01-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):"
FRAME = '  File "/sglang/srt/managers/scheduler.py", line 2901, in run_scheduler_process'
SIGQUIT = "Received sigquit from a child process. It usually means the child failed."

# engine, log lines, exit code, argv, env -> cause, phase, rule id, blame
CASES = [
    (
        "sglang",
        [
            SCHED,
            FRAME,
            "RuntimeError: Not enough memory. Please try to increase "
            "--mem-fraction-static. Current value: 0.907",
            SIGQUIT,
        ],
        -9,
        [],
        {},
        Cause.KV_POOL_OOM,
        Phase.MEMORY_POOL,
        "common.kv_pool_oom",
        [],
    ),
    (
        "sglang",
        [
            SCHED,
            FRAME,
            "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB",
            SIGQUIT,
        ],
        -9,
        ["--cuda-graph-max-bs", "512"],
        {},
        Cause.CUDA_GRAPH_CAPTURE,
        Phase.GRAPH_CAPTURE,
        "common.graph_capture",
        [],
    ),
    (
        "sglang",
        ["[TP0] Prefill out of memory. Try to lower your batch size."],
        -9,
        [],
        {},
        Cause.KV_POOL_OOM,
        Phase.BENCHMARK,
        "common.runtime_kv_oom",
        [],
    ),
    (
        "sglang",
        ["Decode out of memory happened. #retracted_reqs: 3"],
        None,
        [],
        {},
        Cause.KV_POOL_OOM,
        Phase.BENCHMARK,
        "common.runtime_kv_oom",
        [],
    ),
    (
        "sglang",
        ["AssertionError: No space left for only one request, available_size()=0"],
        None,
        [],
        {},
        Cause.KV_POOL_OOM,
        Phase.BENCHMARK,
        "common.runtime_kv_oom",
        [],
    ),
    (
        "sglang",
        [SCHED, FRAME, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB"],
        -9,
        [],
        {},
        Cause.CUDA_OOM,
        Phase.BENCHMARK,
        "common.cuda_oom",
        [],
    ),
    (
        "sglang",
        [
            SCHED,
            FRAME,
            "RuntimeError: The memory capacity is unbalanced. Some GPUs may be "
            "occupied by other processes.",
        ],
        -9,
        [],
        {},
        Cause.GPU_NOT_CLEAN,
        Phase.MEMORY_POOL,
        "sglang.memory_unbalanced",
        [],
    ),
    (
        "sglang",
        [
            "AssertionError: Flashinfer MoE A2A is only supported with dp_size == tp_size and "
            "--enable-dp-attention"
        ],
        1,
        ["--moe-a2a-backend=flashinfer", "--tp-size", "8"],
        {},
        Cause.ASSERTION,
        Phase.LAUNCH,
        "sglang.moe_a2a_flashinfer",
        ["--moe-a2a-backend"],
    ),
    (
        "sglang",
        [SCHED, FRAME, "ModuleNotFoundError: No module named 'deep_ep'"],
        -9,
        ["--moe-a2a-backend", "deepep"],
        {},
        Cause.IMPORT_ERROR,
        Phase.BENCHMARK,
        "sglang.moe_a2a_missing",
        ["--moe-a2a-backend"],
    ),
    (
        "sglang",
        [
            "launch_server.py: error: ambiguous option: --cuda-graph-max-bs could match "
            "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"
        ],
        2,
        ["--cuda-graph-max-bs", "8"],
        {},
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "sglang.renamed_flag",
        [],
    ),
    (
        "sglang",
        [
            SCHED,
            FRAME,
            "RuntimeError: No supported CUDA architectures found for major versions [9, 10].",
        ],
        -9,
        ["--enable-flashinfer-allreduce-fusion"],
        {},
        Cause.ARCH_UNSUPPORTED,
        Phase.BENCHMARK,
        "sglang.flashinfer_arch",
        ["--enable-flashinfer-allreduce-fusion"],
    ),
    (
        "sglang",
        [
            "Exception: Capture cuda graph failed: No supported CUDA architectures found for "
            "major versions [9, 10]."
        ],
        -9,
        ["--flashinfer-allreduce-fusion-backend=auto"],
        {},
        Cause.ARCH_UNSUPPORTED,
        Phase.BENCHMARK,
        "sglang.flashinfer_arch",
        ["--flashinfer-allreduce-fusion-backend"],
    ),
    (
        "vllm",
        ["RuntimeError: No supported CUDA architectures found for major versions [9, 10]."],
        1,
        ["--enable-flashinfer-allreduce-fusion"],
        {},
        Cause.ARCH_UNSUPPORTED,
        Phase.BENCHMARK,
        "common.flashinfer_arch",
        ["--enable-flashinfer-allreduce-fusion"],
    ),
    (
        "sglang",
        [
            "host:1:1 [0] enqueue.cc:170 NCCL WARN Unrecognized element token LL129 when "
            "parsing NCCL_PROTO",
            SCHED,
            "RuntimeError: NCCL error: invalid usage",
        ],
        -9,
        [],
        {"NCCL_PROTO": "LL129", "NCCL_BUFFSIZE": "8388608"},
        Cause.NCCL_ERROR,
        Phase.LOAD,
        "common.nccl_bad_token",
        ["NCCL_PROTO"],
    ),
    (
        "sglang",
        [SCHED, "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO)"],
        -9,
        [],
        {},
        Cause.NCCL_ERROR,
        Phase.BENCHMARK,
        "common.nccl_error",
        [],
    ),
    (
        "sglang",
        [SCHED, "RuntimeError: CUDASymmetricMemory rendezvous failed: multicast not supported"],
        -9,
        ["--enable-torch-symm-mem"],
        {},
        Cause.ARCH_UNSUPPORTED,
        Phase.LOAD,
        "common.torch_symm_mem",
        ["--enable-torch-symm-mem"],
    ),
    (
        "sglang",
        [
            SCHED,
            '  File "/sglang/srt/distributed/parallel_state.py", line 301, in __init__',
            "    self.torch_symm_mem_comm = TorchSymmMemCommunicator(",
            '  File "/sglang/srt/distributed/device_communicators/torch_symm_mem.py", line 71',
            "    not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]",
            "KeyError: 12",
            SIGQUIT,
        ],
        -9,
        ["--tp-size", "8", "--enable-torch-symm-mem"],
        {},
        Cause.ARCH_UNSUPPORTED,
        Phase.LOAD,
        "common.torch_symm_mem",
        ["--enable-torch-symm-mem"],
    ),
    (
        "sglang",
        [
            "OSError: [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): "
            "address already in use"
        ],
        1,
        [],
        {},
        Cause.PORT_IN_USE,
        Phase.BENCHMARK,
        "common.port_in_use",
        [],
    ),
    (
        "vllm",
        [
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.",
            "RuntimeError: Engine core initialization failed. See root cause above.",
        ],
        1,
        [],
        {},
        Cause.KV_POOL_OOM,
        Phase.MEMORY_POOL,
        "common.kv_pool_oom",
        [],
    ),
    (
        "vllm",
        ["serve: error: unrecognized arguments: --max-num-seq 8"],
        2,
        [],
        {},
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "common.argparse",
        [],
    ),
    (
        "transformers",
        [
            'ValueError: Specified `attn_implementation="flash_attention_9"` is not supported. '
            'The only possible arguments are `attn_implementation="eager"`'
        ],
        1,
        ["--attn-implementation", "flash_attention_9"],
        {},
        Cause.INVALID_ARGUMENT,
        Phase.LOAD,
        "transformers.attn_implementation",
        ["--attn-implementation"],
    ),
    (
        "transformers",
        ["MemoryError: Memory footprint 99999999999 is more than available memory 1000"],
        1,
        ["--cb-num-blocks=100000"],
        {},
        Cause.KV_POOL_OOM,
        Phase.MEMORY_POOL,
        "transformers.cb_cache_too_big",
        ["--cb-num-blocks"],
    ),
    (
        "transformers",
        ["CBWorkerDeadError: CB worker is dead and cannot accept request r1: CUDA out of memory"],
        None,
        ["--cb-num-blocks", "4096"],
        {},
        Cause.CUDA_OOM,
        Phase.BENCHMARK,
        "transformers.cb_worker_oom",
        ["--cb-num-blocks"],
    ),
    (
        "transformers",
        ["Error: No such option: --cb-blocks (Possible options: --cb-block-size)"],
        2,
        [],
        {},
        Cause.INVALID_ARGUMENT,
        Phase.LAUNCH,
        "common.click_usage",
        [],
    ),
    (
        "nosuchengine",
        ["Traceback (most recent call last):", "ImportError: cannot import name 'x' from 'y'"],
        1,
        [],
        {},
        Cause.IMPORT_ERROR,
        Phase.BENCHMARK,
        "common.import_error",
        [],
    ),
    (
        "nosuchengine",
        ["Traceback (most recent call last):", '  File "a.py"', "AssertionError: topk must be 1"],
        1,
        [],
        {},
        Cause.ASSERTION,
        Phase.BENCHMARK,
        "common.assertion",
        [],
    ),
]


@pytest.mark.parametrize(
    ("engine", "lines", "code", "argv", "env", "cause", "phase", "rule", "blame"), CASES
)
def test_classify_table(
    engine: str,
    lines: list[str],
    code: int | None,
    argv: list[str],
    env: dict[str, str],
    cause: Cause,
    phase: Phase,
    rule: str,
    blame: list[str],
) -> None:
    failure = classify(
        lines, load_rules(engine), phase=Phase.BENCHMARK, exit_code=code, argv=argv, env=env
    )
    assert (failure.cause, failure.phase, failure.rule) == (cause, phase, rule)
    assert failure.blame == blame
    assert failure.exit_code == code
    assert failure.hint
    assert failure.message and "\n" not in failure.message
    pattern_hits = [line for line in failure.evidence if line in lines]
    assert pattern_hits, "evidence holds the log lines themselves"


def test_kv_pool_oom_hint_is_not_sglangs_advice() -> None:
    failure = classify(
        ["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."],
        load_rules("sglang"),
        phase=Phase.LOAD,
        exit_code=-9,
        argv=[],
        env={},
    )
    hint = failure.hint
    assert "LOWER" in hint and "--cuda-graph-max-bs" in hint and "NCCL" in hint
    assert "only helps when the weights fit" in hint
    assert "leftover process" in hint


def test_first_rule_in_order_wins_and_user_rules_come_first() -> None:
    lines = [
        SCHED,
        FRAME,
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static",
    ]
    engine_rules = load_rules("sglang")
    assert (
        classify(lines, engine_rules, phase=Phase.LOAD, exit_code=-9, argv=[], env={}).rule
        == "common.kv_pool_oom"
    )
    mine = Rule(id="user.sched", pattern="Scheduler hit", cause=Cause.ASSERTION, hint="mine")
    failure = classify(
        lines, [mine, *engine_rules], phase=Phase.LOAD, exit_code=-9, argv=[], env={}
    )
    assert (failure.rule, failure.cause, failure.hint) == ("user.sched", Cause.ASSERTION, "mine")


def test_frame_match_reports_the_exception() -> None:
    lines = [SCHED, "    self.torch_symm_mem_comm = TorchSymmMemCommunicator(", "KeyError: 12"]
    failure = classify(lines, load_rules("sglang"), phase=Phase.LOAD, exit_code=-9, argv=[], env={})
    assert (failure.rule, failure.message) == ("common.torch_symm_mem", "KeyError: 12")


@pytest.mark.usefixtures("rules_alone")
def test_symm_mem_warning_is_not_a_failure() -> None:
    lines = [
        "[TP0] TorchSymmMemCommunicator: Device capability 8.6 not supported, communicator "
        "is not available."
    ]
    failure = classify(
        lines, load_rules("sglang"), phase=Phase.READY, exit_code=None, argv=[], env={}
    )
    assert failure.cause == Cause.UNKNOWN and failure.rule is None


@pytest.mark.usefixtures("rules_alone")
def test_catch_all_rule_reports_the_traceback_message() -> None:
    lines = [SCHED, FRAME, "KeyError: 'rope_theta'", SIGQUIT]
    failure = classify(lines, load_rules("sglang"), phase=Phase.LOAD, exit_code=-9, argv=[], env={})
    assert failure.rule == "common.scheduler_exception"
    assert failure.cause == Cause.UNKNOWN
    assert failure.message == "KeyError: 'rope_theta'"


def test_fallback_argparse_exit_2() -> None:
    lines = ["usage: x [-h] --tp-size N", "x: error: argument --tp-size: invalid int value: 'a'"]
    failure = classify(lines, [], phase=Phase.LOAD, exit_code=2, argv=[], env={})
    assert (failure.cause, failure.phase) == (Cause.INVALID_ARGUMENT, Phase.LAUNCH)
    assert "invalid int value" in failure.message


def test_fallback_sigkill_points_above() -> None:
    lines = [
        "Load weight begin",
        "Traceback (most recent call last):",
        "  File 'a'",
        "ValueError: bad rope",
        "Received sigquit",
    ]
    failure = classify(lines, [], phase=Phase.LOAD, exit_code=-9, argv=[], env={})
    assert failure.cause == Cause.KILLED
    assert failure.hint == KILLED_HINT
    assert "look above" in failure.hint and "OOM killer" in failure.hint
    assert failure.message == "ValueError: bad rope"


@pytest.mark.usefixtures("rules_alone")
def test_fallback_traceback_and_plain_unknown() -> None:
    failure = classify(
        ["Traceback (most recent call last):", '  File "a.py", line 1', "KeyError: 'x'", "bye"],
        [],
        phase=Phase.LOAD,
        exit_code=1,
        argv=[],
        env={},
    )
    assert (failure.cause, failure.message) == (Cause.UNKNOWN, "KeyError: 'x'")
    plain = classify(["hello"], [], phase=Phase.LOAD, exit_code=3, argv=[], env={})
    assert (plain.cause, plain.phase, plain.message) == (
        Cause.UNKNOWN,
        Phase.LOAD,
        "exited with code 3",
    )
    # After readiness, a death no rule explains is a runtime crash (as a trial reports it).
    died = classify(["hello"], [], phase=Phase.READY, exit_code=3, argv=[], env={})
    assert (died.cause, died.phase, died.message) == (
        Cause.RUNTIME_CRASH,
        Phase.READY,
        "exited with code 3",
    )
    empty = classify([], [], phase=Phase.LAUNCH, exit_code=None, argv=[], env={})
    assert empty.cause == Cause.UNKNOWN and empty.evidence == []


def test_blame_only_what_is_present() -> None:
    names = ["--enable-torch-symm-mem", "--moe-a2a-backend", "NCCL_PROTO", "NCCL_ALGO"]
    argv = ["python", "--moe-a2a-backend=deepep", "--enable-torch-symm-mem-x"]
    assert blamed(names, argv, {"NCCL_ALGO": "Ring"}) == ["--moe-a2a-backend", "NCCL_ALGO"]


def test_evidence_is_trimmed_and_bounded() -> None:
    long = (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static " + "x" * 900
    )
    lines = [f"line {i}" for i in range(50)] + [long] + [f"after {i}" for i in range(50)]
    failure = classify(lines, load_rules("sglang"), phase=Phase.LOAD, exit_code=1, argv=[], env={})
    assert len(failure.evidence) <= 12
    assert all(len(line) <= 300 for line in failure.evidence + failure.log_tail)
    assert failure.evidence[0] == "line 48"  # two lines of context before the match
    assert failure.log_tail[-1] == "after 49"


def test_diagnose_file_infers_phase(tmp_path: Path, milestones: list[Milestone]) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "Load weight begin. avail mem=70 GB\nLoad weight end. mem usage=10 GB\n"
        "Capture cuda graph begin. This can take up to several minutes.\n"
        "Traceback (most recent call last):\nKeyError: 'x'\n"
    )
    # An exception no rule names, raised while graphs are being captured, is the capture's
    # (with SGLang's own SIGKILL after it too: the traceback is the first fatal event).
    failure = diagnose_file(str(log), load_rules("sglang"))
    assert (failure.cause, failure.phase) == (Cause.CUDA_GRAPH_CAPTURE, Phase.GRAPH_CAPTURE)
    failure = diagnose_file(str(log), load_rules("sglang"), exit_code=-9, milestones=milestones)
    assert (failure.cause, failure.phase) == (Cause.CUDA_GRAPH_CAPTURE, Phase.GRAPH_CAPTURE)


def test_phase_reached_never_goes_back(milestones: list[Milestone]) -> None:
    lines = ["fired up and ready to roll", "Load weight begin"]
    phase, labels = phase_reached(lines, milestones)
    assert phase == Phase.READY
    assert labels == ["ready", "load_begin"]


def test_unknown_engine_gets_common_rules_only() -> None:
    ids = [r.id for r in load_rules("nosuchengine")]
    assert ids and all(i.startswith("common.") for i in ids)
    assert [r.id for r in load_rules("../sglang")] == ids
    sglang = [r.id for r in load_rules("sglang")]
    # engine rules, then common rules, then the engine's catch-alls, then common catch-alls
    assert sglang.index("common.kv_pool_oom") < sglang.index("common.cuda_oom")
    assert sglang.index("common.assertion") < sglang.index("common.scheduler_exception")
    assert sglang.index("common.nccl_error") < sglang.index("common.scheduler_exception")
    assert sglang.index("common.scheduler_exception") < sglang.index("common.nccl_remote")


def test_every_bundled_rule_file_loads() -> None:
    rules_dir = Path(__file__).resolve().parents[2] / "src" / "autotune" / "rules"
    files = sorted(rules_dir.glob("*.yaml"))
    assert {f.stem for f in files} >= {"common", "sglang", "vllm", "transformers", "collective"}
    for path in files:
        assert all(isinstance(r, Rule) for r in load_rule_file(path))


@pytest.mark.parametrize(
    ("text", "fragment", "line"),
    [
        (
            "rules:\n  - id: a\n    pattern: '(unclosed'\n    cause: unknown\n",
            "regular expression",
            2,
        ),
        ("rules:\n  - id: a\n    pattern: x\n    cause: melted\n", "cause", 2),
        ("rules:\n  - id: a\n    pattern: x\n    cause: unknown\n    colour: red\n", "colour", 2),
        (
            "rules:\n  - id: a\n    pattern: x\n    cause: unknown\n  - id: a\n    pattern: y\n"
            "    cause: unknown\n",
            "duplicate",
            5,
        ),
        ("rules: [\n", "YAML", None),
        ("extras: []\n", "unknown section", None),
        ("rules: 3\n", "list", None),
    ],
)
def test_rule_file_errors_name_the_place(
    tmp_path: Path, text: str, fragment: str, line: int | None
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_rule_file(path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)
    if line is not None:
        assert info.value.line == line


def test_user_rules_convert() -> None:
    from autotune.space.schema import UserRule

    rule = UserRule(id="u1", pattern="boom", cause=Cause.ASSERTION, blame=["--x"])
    (converted,) = user_rules([rule])
    assert converted.blame == ("--x",) and converted.fatal and converted.cause == Cause.ASSERTION


def test_transformers_517_unknown_attention_is_invalid_argument_and_blames_the_flag() -> None:
    """The line transformers 5.17 printed on the H200 for --attn-implementation nonexistent_attn."""
    from autotune.rules import load_rules

    line = (
        "ValueError: Unsupported attention implementation: 'nonexistent_attn'. Must be one of "
        "{'flash_attention_2', 'sdpa', 'eager', 'flash_attention_3', 'flex_attention'} or a hub "
        "kernel (e.g. 'kernels-community/flash-attn2')."
    )
    failure = classify(
        ["Traceback (most recent call last):", line],
        load_rules("transformers"),
        phase=Phase.LOAD,
        exit_code=1,
        argv=["serve", "--attn-implementation", "nonexistent_attn"],
        env={},
    )
    assert failure.cause is Cause.INVALID_ARGUMENT
    assert failure.blame == ["--attn-implementation"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[2025-01-01 10:00:00 TP0] RuntimeError: boom", "RuntimeError: boom"),
        ("[2025-07-02 07:41:59 DP1 TP1] Load weight end.", "Load weight end."),
        (
            "(VllmWorker rank=0 pid=1) ERROR 01-01 12:00:00 [engine.py:1] ValueError: x",
            "ValueError: x",
        ),
        (
            '(EngineCore_DP0 pid=9) ERROR 03-10 14:43:46 [core.py:1100]   File "a.py"',
            '  File "a.py"',
        ),
        (
            "ERROR 11-18 18:07:28 engine.py:366] ValueError: No available",
            "ValueError: No available",
        ),
        ("(pid=123) ray.exceptions.RayTaskError: x", "ray.exceptions.RayTaskError: x"),
        (
            "(raylet) [2025-12-07 09:57:19,206 E 393 393] (raylet) node_manager.cc:3277: x",
            "node_manager.cc:3277: x",
        ),
        ("[rank0]:[E626 06:24:44.9 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog", "Watchdog"),
        ("vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: y", "ValueError: y"),
        (
            "2024-04-27 10:13:05 | ERROR | stderr | Traceback (most recent call last):",
            "Traceback (most recent call last):",
        ),
        (
            "host:123:456 [0] enqueue.cc:170 NCCL WARN Unrecognized",
            "enqueue.cc:170 NCCL WARN Unrecognized",
        ),
        ("RuntimeError: no prefix", "RuntimeError: no prefix"),
        # a paste's elision of what came before, on the line it kept
        (
            "... EngineDeadError: EngineCore encountered an issue.",
            "EngineDeadError: EngineCore encountered an issue.",
        ),
        ("\u2026 ValueError: x", "ValueError: x"),
        ("2025-01-01 12:00:00 | RuntimeError: x", "RuntimeError: x"),
        # a stamp before a table's row: the row's columns are no compose prefixes
        (
            "2025-01-01T00:00:00.123Z | tensorrt_llm     | 1       | UNAVAILABLE |",
            "| tensorrt_llm     | 1       | UNAVAILABLE |",
        ),
    ],
)
def test_prefixes_of_multi_process_engines_are_stripped(line: str, message: str) -> None:
    assert strip_prefix(line) == message


def test_anchored_rules_match_prefixed_lines() -> None:
    lines = [
        '(VllmWorker rank=1 pid=7) ERROR 01-01 12:00:00 [x.py:1]   File "y.py", line 2',
        "(VllmWorker rank=1 pid=7) ERROR 01-01 12:00:00 [x.py:1] AssertionError: topk must be 1",
    ]
    failure = classify(lines, load_rules("vllm"), phase=Phase.LOAD, exit_code=1, argv=[], env={})
    assert (failure.cause, failure.rule) == (Cause.ASSERTION, "common.assertion")
    assert failure.message == "AssertionError: topk must be 1"


def test_a_pattern_can_span_lines() -> None:
    rule = Rule(
        id="two", pattern=r"ImportError: \n\[sgl_kernel\] CRITICAL", cause=Cause.IMPORT_ERROR
    )
    lines = ["noise", "[2026-01-01 10:00:00] ImportError: ", "[sgl_kernel] CRITICAL: no ops", "x"]
    failure = classify(lines, [rule], phase=Phase.LAUNCH, exit_code=1, argv=[], env={})
    assert failure.rule == "two"
    assert failure.evidence[0] == "noise" and lines[1] in failure.evidence
    assert (
        classify(
            ["ImportError: ", "other"], [rule], phase=Phase.LAUNCH, exit_code=1, argv=[], env={}
        ).rule
        is None
    )


def test_near_needs_the_context_line() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB"
    rules = load_rules("command")
    alloc = classify(
        ['  File "mem_cache/memory_pool.py", line 9, in _create_buffers', oom],
        rules,
        phase=Phase.LOAD,
        exit_code=1,
        argv=[],
        env={},
    )
    assert (alloc.cause, alloc.rule) == (Cause.KV_POOL_OOM, "common.kv_pool_alloc_oom")
    serving = classify(
        ['  File "scheduler.py", line 9, in run_batch', oom],
        rules,
        phase=Phase.BENCHMARK,
        exit_code=1,
        argv=[],
        env={},
    )
    assert (serving.cause, serving.rule, serving.phase) == (
        Cause.CUDA_OOM,
        "common.cuda_oom",
        Phase.BENCHMARK,
    )


def test_a_rule_with_near_must_not_be_fatal(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - id: a\n    pattern: x\n    near: y\n    cause: unknown\n")
    with pytest.raises(ConfigError, match="fatal: false"):
        load_rule_file(bad)


@pytest.mark.usefixtures("rules_alone")
def test_no_rule_evidence_is_the_last_exception_and_the_phase_its_frames() -> None:
    core = "(EngineCore_DP0 pid=1) ERROR 01-01 12:00:00 [core.py:1] "
    lines = [
        core + "Traceback (most recent call last):",
        core + '  File "gpu_worker.py", in determine_available_memory',
        core + '  File "runner.py", in profile_run',
        core + "KeyError: 'rope_theta'",
        "(APIServer pid=2) INFO 01-01 12:00:01 [api.py:1] shutting down",
    ]
    failure = classify(lines, load_rules("vllm"), phase=Phase.LAUNCH, exit_code=1, argv=[], env={})
    assert (failure.cause, failure.phase, failure.rule) == (Cause.UNKNOWN, Phase.MEMORY_POOL, None)
    assert failure.message == "KeyError: 'rope_theta'"
    assert lines[3] in failure.evidence


@pytest.mark.usefixtures("rules_alone")
def test_last_exception_without_a_traceback_header() -> None:
    lines = ["INFO starting", "ValueError: something odd in the config", "INFO bye"]
    failure = classify(
        lines, load_rules("command"), phase=Phase.LAUNCH, exit_code=1, argv=[], env={}
    )
    assert failure.message == "ValueError: something odd in the config"


def test_healthy_log_is_no_failure(tmp_path: Path) -> None:
    log = tmp_path / "ok.log"
    log.write_text(
        "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=70.00 GB\n"
        "WARNING 01-01 12:00:00 [_custom_ops.py:21] Failed to import from vllm._C with "
        "ImportError('x.so: undefined symbol: y')\n"
        "INFO 09-27 11:18:22 model_runner.py:795] CUDA graphs can take additional 1~3 GiB "
        "memory per GPU. If you are running out of memory, consider decreasing it.\n"
        "[2026-01-01 10:00:09] The server is fired up and ready to roll!\n"
    )
    assert diagnose_file(str(log), load_rules("sglang")) is None
    assert diagnose_file(str(log), load_rules("command"), exit_code=0) is None
    failed = diagnose_file(str(log), load_rules("command"), exit_code=3)
    assert failed is not None and failed.message == "exited with code 3"


@pytest.mark.usefixtures("rules_alone")
def test_a_line_wrapped_mid_word_still_matches() -> None:
    lines = [
        "ERROR 01-01 12:00:00 [core.py:1] ValueError: No available memory for the cache bl",
        "ocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
    ]
    failure = classify(lines, load_rules("vllm"), phase=Phase.LOAD, exit_code=1, argv=[], env={})
    assert (failure.cause, failure.rule) == (Cause.KV_POOL_OOM, "common.kv_pool_oom")
    short = ["x: No available memory for the cache bl", "ocks."]  # too short to be a wrap
    assert (
        classify(short, load_rules("vllm"), phase=Phase.LOAD, exit_code=1, argv=[], env={}).rule
        is None
    )


# One line (or a few) per common rule, written like the engines write them: every family the
# common rules know is recognised with the common rules alone (the `command` engine).
COMMON_EXAMPLES: dict[str, list[str]] = {
    "common.nccl_bad_token": ["h:1:1 [0] enqueue.cc:170 NCCL WARN Unrecognized element token LL9"],
    "common.nccl_invalid_usage": ["RuntimeError: NCCL error: invalid usage"],
    "common.flashinfer_arch": ["RuntimeError: No supported CUDA architectures found for [9]"],
    "common.torch_symm_mem": ["RuntimeError: CUDASymmetricMemory rendezvous failed"],
    "common.torch_arch_warning": [
        "GPU with CUDA capability sm_120 is not compatible with the current PyTorch installation."
    ],
    "common.arch_unsupported": [
        "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    ],
    "common.graph_capture": ["RuntimeError: operation not permitted when stream is capturing"],
    "common.graph_capture_crash": [
        '  File "vllm/worker/model_runner.py", line 1, in capture_model',
        "Fatal Python error: Segmentation fault",
    ],
    "common.kv_pool_oom": ["ValueError: No available memory for the cache blocks."],
    "common.kv_pool_alloc_oom": [
        '  File "sglang/srt/mem_cache/memory_pool.py", line 1, in _create_buffers',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.00 GiB",
    ],
    "common.model_unsupported": [
        "ValueError: Model architectures ['X'] are not supported for now."
    ],
    "common.model_type_unknown": [
        '  File "transformers/models/auto/configuration_auto.py", line 1, in from_pretrained',
        '    config_class = CONFIG_MAPPING[config_dict["model_type"]]',
        "KeyError: 'qwen9'",
    ],
    "common.argparse": ["api_server.py: error: argument --max-model-len: invalid int value: 'x'"],
    "common.click_usage": ["Error: No such option: --tp-size"],
    "common.usage": ["usage: api_server.py [-h] [--host HOST] [--port PORT]"],
    "common.cpu_arch": ["/entrypoint.sh: line 3:    42 Illegal instruction (core dumped) server"],
    "common.attn_implementation": [
        "ValueError: FooModel does not support Flash Attention 2.0 yet."
    ],
    "common.more_ranks_than_gpus": [
        "ValueError: tensor parallel size 8 is greater than the number of available GPUs (4)"
    ],
    "common.attention_backend_gpu": [
        "ValueError: Selected backend FLASH_ATTN is not valid for this configuration. "
        "Reason: ['compute capability not supported']"
    ],
    "common.attention_backend_unfit": ["ValueError: No valid attention backend found for cuda"],
    "common.quantization_method": ["ValueError: Cannot find the config file for awq"],
    "common.parallel_divisible": [
        "ValueError: Total number of attention heads (28) must be divisible by tp size (8)."
    ],
    "common.host_oom_ray": [
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."
    ],
    "common.host_oom_kernel": ["Out of memory: Killed process 123 (python3) total-vm:1kB"],
    "common.host_oom": ["RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried 9"],
    "common.runtime_kv_oom": ["[TP0] Decode out of memory happened. #retracted_reqs: 3"],
    "common.cuda_oom": ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB"],
    "common.cuda_fault": ["RuntimeError: CUDA error: an illegal memory access was encountered"],
    "common.store_timeout": [
        "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms"
    ],
    "common.watchdog_timeout": [
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)"
    ],
    "common.rpc_timeout": [
        '  File "vllm/distributed/device_communicators/shm_broadcast.py", line 1, in acquire_read',
        "TimeoutError",
    ],
    "common.startup_timeout": [
        "TimeoutError: Timed out waiting for engine core processes to start."
    ],
    "common.node_lost": [
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."
    ],
    "common.port_in_use": ["OSError: [Errno 98] Address already in use"],
    "common.import_error": ["ImportError: /x/_C.abi3.so: undefined symbol: _ZN5torch3jit"],
    "common.no_device": ["RuntimeError: No CUDA GPUs are available"],
    "common.kv_pool_full": ["decode: failed to find a memory slot for batch of size 512"],
    "common.error_answer": [
        'data: {"object": "error", "message": "x", "type": "InternalServerError", "code": 500}'
    ],
    "common.nccl_error": ["RuntimeError: NCCL Error 2: unhandled system error"],
    "common.dist_socket": [
        '  File "torch/distributed/distributed_c10d.py", line 1, in init_process_group',
        "RuntimeError: Connection reset by peer",
    ],
    "common.config_value_error": [
        '  File "vllm/engine/arg_utils.py", line 1, in create_engine_config',
        "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (4096).",
    ],
    "common.bench_client": [
        "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host 0.0.0.0:30000"
    ],
    "common.out_of_memory": ["Error: failed to allocate the workspace: out of memory"],
    "common.assertion": ["[TensorRT-LLM][ERROR] Assertion failed: input length too long"],
    "common.scheduler_exception": [
        "[TP0] Scheduler hit an exception: Traceback (most recent call last):"
    ],
    "common.rank_dead": ["Rank 3 scheduler is dead. Please check if there are relevant logs."],
    "common.init_failed": ["RuntimeError: Engine process failed to start. See stack trace."],
    "common.child_failed": [
        "Received sigquit from a child process. It usually means the child failed."
    ],
    "common.engine_dead": [
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."
    ],
    "common.nccl_remote": [
        "ProcessGroupNCCL.cpp:1691, remote process exited or there was a network error"
    ],
    "common.killed": ["Loading checkpoint shards:  50%|#####     | 1/2", "Killed"],
    "common.sigkill": [
        "torch.distributed.elastic.multiprocessing.api: Signal 9 (SIGKILL) received by PID 8"
    ],
    "common.native_crash": ["Fatal Python error: Aborted"],
}


def test_every_common_rule_has_an_example() -> None:
    assert set(COMMON_EXAMPLES) == {r.id for r in load_rules("command")}


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize("rule_id", sorted(COMMON_EXAMPLES))
def test_common_rule_recognises_its_family(rule_id: str) -> None:
    rules = load_rules("command")
    failure = classify(
        COMMON_EXAMPLES[rule_id], rules, phase=Phase.LAUNCH, exit_code=1, argv=[], env={}
    )
    assert failure.rule == rule_id, failure.message
    want = next(r for r in rules if r.id == rule_id).cause
    assert failure.cause == want
