"""An all-reduce micro-benchmark as a ``job`` engine: tune NCCL variables without a server.

Each trial runs ``torch.distributed.run --standalone`` with ``collective_bench`` on the
trial's GPUs and reads its ``AUTOTUNE_METRICS`` line. Options (``engine.options``):
``sizes`` (default ``42K``: SGLang's decode all-reduce for a hidden size of 7168 in bf16
at a small batch), ``dtype``, ``iters`` (all-reduces timed together per sample),
``samples`` (per size), ``warmup``, ``mode`` (``eager`` or ``graph``: the all-reduces of a
sample captured in a CUDA graph), ``allreduce`` (``nccl``, ``symm_mem_one_shot``,
``symm_mem_two_shot``; a space may search it as the ``--allreduce`` flag), ``nproc``
(processes when ``engine.gpus`` is 0, i.e. gloo on the CPU; default 2).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from autotune.engines.base import ENGINES, Engine
from autotune.engines.collective_bench import IMPLEMENTATIONS, NO_MULTICAST
from autotune.errors import ConfigError
from autotune.models import EngineSpec

# NVLink SHARP (NVLS) multicast must stay off on the lent machines; a space cannot turn it on
# (NCCL's, torch symmetric memory's and NVSHMEM's).
ENFORCED_ENV = dict(NO_MULTICAST)
DEFAULTS: dict[str, str] = {
    "sizes": "42K",
    "dtype": "bf16",
    "iters": "200",
    "samples": "20",
    "warmup": "20",
    "mode": "eager",
    "allreduce": "nccl",
}
BENCH_MODULE = "autotune.engines.collective_bench"


@ENGINES.register
class CollectiveEngine(Engine):
    """``torchrun`` + all-reduce latency benchmark; metrics such as ``latency_p50_us``."""

    name: ClassVar[str] = "collective"

    def __init__(self, spec: EngineSpec, *, simulate: bool = False) -> None:
        if simulate:
            raise ConfigError(
                "the collective benchmark runs for real (gloo on a CPU); drop --simulate",
                field="engine.name",
            )
        super().__init__(spec, simulate=simulate)
        unknown = sorted(set(spec.options) - {*DEFAULTS, "nproc"})
        if unknown:
            raise ConfigError(
                f"unknown options {unknown}; known: {sorted({*DEFAULTS, 'nproc'})}",
                field="engine.options",
            )
        choices = {"mode": ("eager", "graph"), "allreduce": IMPLEMENTATIONS}
        for key, allowed in choices.items():
            value = str(spec.options.get(key, DEFAULTS[key]))
            if value not in allowed:
                raise ConfigError(
                    f"{key} {value!r} is not one of {', '.join(allowed)}",
                    field=f"engine.options.{key}",
                )
            if spec.gpus == 0 and value in ("graph", "symm_mem_one_shot", "symm_mem_two_shot"):
                raise ConfigError(
                    f"{key} {value!r} needs CUDA GPUs and engine.gpus is 0 (gloo on the CPU); "
                    f"set engine.gpus or use {key} {DEFAULTS[key]!r}",
                    field=f"engine.options.{key}",
                )

    def nproc(self) -> int:
        """Processes per trial: one per GPU, or ``options.nproc`` (default 2) on the CPU."""
        if self.spec.gpus > 0:
            return self.spec.gpus
        value = int(self.spec.options.get("nproc", 2))
        if value < 1:
            raise ConfigError("nproc must be >= 1", field="engine.options.nproc")
        return value

    def base_command(self, model: str) -> list[str]:
        # The model is irrelevant to a collective benchmark; search args follow and win.
        opts = {key: str(self.spec.options.get(key, default)) for key, default in DEFAULTS.items()}
        return [
            self.spec.python, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", str(self.nproc()),
            "-m", BENCH_MODULE,
            "--sizes", opts["sizes"], "--dtype", opts["dtype"],
            "--iters", opts["iters"], "--samples", opts["samples"], "--warmup", opts["warmup"],
            "--mode", opts["mode"], "--allreduce", opts["allreduce"],
        ]  # fmt: skip

    def command(
        self, model: str, args: list[str], env: dict[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        # A searched option (``--allreduce``) replaces the default one instead of following
        # it, so the exported command says each option once.
        argv, full_env = super().command(model, args, env)
        cut = argv.index(BENCH_MODULE) + 1
        end = len(self.base_command(model))
        given = {a.split("=", 1)[0] for a in argv[end:] if a.startswith("--")}
        defaults = [x for i in range(cut, end, 2) if argv[i] not in given for x in argv[i : i + 2]]
        return argv[:cut] + defaults + argv[end:], full_env

    def default_env(self) -> dict[str, str]:
        # One thread per rank: torchrun's own default, stated so it does not warn.
        return {"OMP_NUM_THREADS": "1", **ENFORCED_ENV}

    def enforced_env(self) -> dict[str, str]:
        return dict(ENFORCED_ENV)

    def gpus(self, args: list[str]) -> int:
        return self.spec.gpus

    def mode(self) -> Literal["server", "job"]:
        return "job"

    def known_flags(self) -> set[str] | None:
        return {f"--{key}" for key in DEFAULTS} | {"--backend"}

    def help_command(self) -> list[str] | None:
        return [self.spec.python, "-m", BENCH_MODULE, "--help"]
