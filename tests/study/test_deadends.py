from __future__ import annotations

from autotune.models import Cause, Failure, Phase
from autotune.space.schema import StudySpec
from autotune.study.deadends import DeadEnd, DeadEnds

SPACE = StudySpec.model_validate(
    {
        "engine": {"name": "sglang"},
        "model": "m",
        "parameters": [
            {
                "name": "bs",
                "type": "int",
                "flag": "--cuda-graph-max-bs",
                "low": 8,
                "high": 512,
                "memory": "increasing",
            },
            {
                "name": "buf",
                "type": "int",
                "env": "NCCL_BUFFSIZE",
                "low": 1,
                "high": 64,
                "memory": "increasing",
            },
            {
                "name": "policy",
                "type": "categorical",
                "flag": "--schedule-policy",
                "choices": ["lpm", "fcfs"],
            },
            {
                "name": "allreduce",
                "type": "categorical",
                "choices": ["nccl", "fusion"],
                "map": {
                    "nccl": {"args": ["--disable-custom-all-reduce"]},
                    "fusion": {"args": ["--enable-flashinfer-allreduce-fusion"]},
                },
            },
        ],
    }
)


def _fail(cause: Cause, blame: list[str] | None = None, permanent: bool = True) -> Failure:
    return Failure(cause=cause, phase=Phase.MEMORY_POOL, blame=blame or [], permanent=permanent)


def test_exact_configuration_is_remembered() -> None:
    d = DeadEnds(SPACE)
    cfg = {"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "nccl"}
    d.add(3, cfg, _fail(Cause.ASSERTION))
    assert d.why(cfg) is not None and "trial 3" in d.why(cfg)  # type: ignore[operator]
    assert d.why({**cfg, "policy": "fcfs"}) is None


def test_blamed_value_blocks_every_configuration_with_it() -> None:
    d = DeadEnds(SPACE)
    cfg = {"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "fusion"}
    rec = d.add(1, cfg, _fail(Cause.ARCH_UNSUPPORTED, ["--enable-flashinfer-allreduce-fusion"]))
    assert rec is not None and rec.blame == {"allreduce": "fusion"}
    other = {"bs": 16, "buf": 32, "policy": "fcfs", "allreduce": "fusion"}
    assert "allreduce='fusion'" in (d.why(other) or "")
    assert d.why({**other, "allreduce": "nccl"}) is None


def test_memory_failure_blocks_dominating_configurations_only() -> None:
    d = DeadEnds(SPACE)
    cfg = {"bs": 128, "buf": 8, "policy": "lpm", "allreduce": "nccl"}
    d.add(2, cfg, _fail(Cause.KV_POOL_OOM))
    assert d.why({**cfg, "bs": 256}) is not None  # more graph memory: cannot fit either
    assert d.why({**cfg, "bs": 256, "buf": 16}) is not None
    assert d.why({**cfg, "bs": 64}) is None  # less memory: may fit
    assert d.why({**cfg, "bs": 256, "buf": 4}) is None  # mixed: unknown
    assert d.why({**cfg, "bs": 256, "policy": "fcfs"}) is None  # another non-monotone value


def test_transient_failures_are_not_remembered_and_records_round_trip() -> None:
    d = DeadEnds(SPACE)
    cfg = {"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "nccl"}
    assert d.add(1, cfg, _fail(Cause.PORT_IN_USE, permanent=False)) is None
    d.add(2, cfg, _fail(Cause.CUDA_OOM))
    stored = [r.model_dump(mode="json") for r in d.records]
    again = DeadEnds(SPACE, [DeadEnd.model_validate(r) for r in stored])
    assert again.why({**cfg, "bs": 128}) == d.why({**cfg, "bs": 128}) is not None


def test_a_categorical_memory_order_dominates() -> None:
    spec = StudySpec.model_validate(
        {
            "engine": {"name": "sglang"},
            "model": "m",
            "parameters": [
                {
                    "name": "kv",
                    "type": "categorical",
                    "flag": "--kv-cache-dtype",
                    "choices": ["fp8", "bf16", "fp32"],
                    "memory": "increasing",
                },
                {
                    "name": "bs",
                    "type": "int",
                    "flag": "--bs",
                    "low": 8,
                    "high": 512,
                    "memory": "increasing",
                },
            ],
        }
    )
    d = DeadEnds(spec)
    d.add(2, {"kv": "bf16", "bs": 64}, _fail(Cause.KV_POOL_OOM))
    assert d.why({"kv": "fp32", "bs": 64}) is not None
    assert d.why({"kv": "fp32", "bs": 128}) is not None
    assert d.why({"kv": "fp8", "bs": 512}) is None


def test_doom_stops_on_a_broken_baseline_and_on_a_cause_every_launch_repeats() -> None:
    from autotune.study.deadends import SAME_CAUSE_STOP, Doom

    bad = Failure(
        cause=Cause.INVALID_ARGUMENT,
        phase=Phase.LAUNCH,
        message="error: unrecognized arguments: --max-batchh 8",
    )
    doom = Doom()
    reason = doom.observe(baseline=True, failure=bad, crashed=True)
    assert reason is not None and "baseline failed with invalid_argument" in reason
    assert "--max-batchh" in reason and "\n" not in reason

    doom = Doom()
    oom = _fail(Cause.CUDA_OOM)
    for _ in range(SAME_CAUSE_STOP - 1):
        assert doom.observe(baseline=False, failure=oom, crashed=True) is None
    assert "cuda_oom" in (doom.observe(baseline=False, failure=oom, crashed=True) or "")

    doom = Doom()  # one success in between: the cause does not repeat whatever the values
    doom.observe(baseline=True, failure=None, crashed=False)
    for _ in range(SAME_CAUSE_STOP + 2):
        assert doom.observe(baseline=False, failure=oom, crashed=True) is None


def test_an_import_error_blames_the_choices_no_run_had() -> None:
    """A missing module is the value's own: the choice that only the crash had is a dead end
    in any company (fa3 on a real H100 was launched again after an import_error)."""
    d = DeadEnds(SPACE)
    ran = [{"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "nccl"}]
    crashed = {"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "fusion"}
    rec = d.add(5, crashed, _fail(Cause.IMPORT_ERROR), ran=ran)
    assert rec is not None and rec.blame == {"allreduce": "fusion"}
    elsewhere = {"bs": 512, "buf": 64, "policy": "fcfs", "allreduce": "fusion"}
    assert "allreduce='fusion' caused import_error in trial 5" == d.why(elsewhere)
    assert d.why({**elsewhere, "allreduce": "nccl"}) is None


def test_an_import_error_of_choices_that_ran_blames_only_its_configuration() -> None:
    d = DeadEnds(SPACE)
    ran = [
        {"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "fusion"},
        {"bs": 64, "buf": 4, "policy": "fcfs", "allreduce": "nccl"},
    ]
    crashed = {"bs": 64, "buf": 4, "policy": "fcfs", "allreduce": "fusion"}
    rec = d.add(6, crashed, _fail(Cause.IMPORT_ERROR), ran=ran)
    assert rec is not None and rec.blame == {}
    assert d.why({**crashed, "bs": 128}) is None


def test_a_crash_of_another_cause_blames_no_choice_that_ran_nowhere() -> None:
    d = DeadEnds(SPACE)
    ran = [{"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "nccl"}]
    crashed = {"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "fusion"}
    rec = d.add(7, crashed, _fail(Cause.ASSERTION), ran=ran)
    assert rec is not None and rec.blame == {}


def test_a_learnt_guess_makes_no_rule_of_its_cause() -> None:
    """A cause learnt from words (node/learned.py), where the rules said ``unknown``, marks its
    own configuration only: no memory rule, no blamed choice, no stop on the baseline."""
    from autotune.models import LEARNT_RULE
    from autotune.study.deadends import Doom

    d = DeadEnds(SPACE)
    ran = [{"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "nccl"}]
    crashed = {"bs": 64, "buf": 4, "policy": "lpm", "allreduce": "fusion"}
    guess = Failure(cause=Cause.IMPORT_ERROR, phase=Phase.LAUNCH, rule=LEARNT_RULE)
    assert guess.learnt and not _fail(Cause.IMPORT_ERROR).learnt
    rec = d.add(5, crashed, guess, ran=ran)
    assert rec is not None and rec.blame == {} and not rec.memory
    assert d.why(crashed) is not None
    assert d.why({**crashed, "bs": 512}) is None

    oom = Failure(cause=Cause.CUDA_OOM, phase=Phase.LOAD, rule=LEARNT_RULE)
    d.add(6, {"bs": 64, "buf": 8, "policy": "lpm", "allreduce": "nccl"}, oom)
    assert d.why({"bs": 128, "buf": 16, "policy": "lpm", "allreduce": "nccl"}) is None

    doom = Doom()
    assert doom.observe(baseline=True, failure=guess, crashed=True) is None
