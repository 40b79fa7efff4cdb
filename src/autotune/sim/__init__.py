"""A stand-in SGLang server for dry runs and tests: ``python -m autotune.sim [SGLang flags]``.

It parses SGLang's launch flags and the NCCL environment, logs like SGLang (milestones, the
ready line, SGLang's real error strings, exit -9 on a crash), serves /health, /generate,
/v1/completions and /v1/chat/completions with real-time streaming through a continuous-batching
scheduler with a prefix cache, and takes the time of each forward from a performance model of
the campaign's machine (docs/simulator.md). Everything it reports is simulated.
"""

from autotune.sim.args import Launch, build_parser, to_launch
from autotune.sim.model import (
    MemoryPlan,
    SimConfig,
    SpecConfig,
    aggregate_tok_s,
    allreduce_us,
    expected_accept_length,
    memory_plan,
    nccl_allreduce,
    stream_tok_s,
    verify_ms,
)
from autotune.sim.nccl import NcclConfig, NcclEnvError, parse_nccl_env
from autotune.sim.plan import StartupPlan, plan_startup
from autotune.sim.profiles import PROFILES, HardwareProfile, profile_from_env
from autotune.sim.radix import PrefixCache
from autotune.sim.replay import Result, run_closed, run_open, scheduler_for
from autotune.sim.scheduler import Scheduler, SchedulerConfig, SimRequest

__all__ = [
    "PROFILES",
    "HardwareProfile",
    "Launch",
    "MemoryPlan",
    "NcclConfig",
    "NcclEnvError",
    "PrefixCache",
    "Result",
    "Scheduler",
    "SchedulerConfig",
    "SimConfig",
    "SimRequest",
    "SpecConfig",
    "StartupPlan",
    "aggregate_tok_s",
    "allreduce_us",
    "build_parser",
    "expected_accept_length",
    "memory_plan",
    "nccl_allreduce",
    "parse_nccl_env",
    "plan_startup",
    "profile_from_env",
    "run_closed",
    "run_open",
    "scheduler_for",
    "stream_tok_s",
    "to_launch",
    "verify_ms",
]
