"""A stand-in SGLang server for dry runs and tests: ``python -m autotune.sim [SGLang flags]``.

It parses SGLang's launch flags and the NCCL environment, logs like SGLang (milestones, the
ready line, SGLang's real error strings, exit -9 on a crash), serves /health, /generate and
/v1/completions with real-time streaming, and takes its throughput from a performance model of
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

__all__ = [
    "PROFILES",
    "HardwareProfile",
    "Launch",
    "MemoryPlan",
    "NcclConfig",
    "NcclEnvError",
    "SimConfig",
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
    "stream_tok_s",
    "to_launch",
    "verify_ms",
]
