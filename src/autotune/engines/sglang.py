"""SGLang (``python -m sglang.launch_server``), the primary engine, and its stand-in.

SGLang renamed launch flags between releases, so the engine knows its version: a space
written for 0.5.9 is rewritten for 0.5.14+ (and must be for 0.5.23, where the old
``--cuda-graph-max-bs`` fails with ``ambiguous option``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from autotune.engines._args import has_flag, int_flag, is_flag, logged_flags
from autotune.engines.base import ENGINES, Engine
from autotune.engines.flagtable import parse_version
from autotune.models import EngineSpec

# The version assumed when the space does not name one (preflight warns about it).
DEFAULT_VERSION = "0.5.9"
SIMULATE_TIME_SCALE = "20"  # --simulate: simulated seconds per wall second (docs/simulator.md)
# The stand-in's sim.settings.TIME_SCALE_ENV, spelt out: engines must not import the stand-in
# (it is a separate server process; tests/test_layers.py), a test keeps the two equal.
SIM_TIME_SCALE_ENV = "AUTOTUNE_SIM_TIME_SCALE"

_TP = ("--tp-size", "--tensor-parallel-size")
_DP = ("--dp-size", "--data-parallel-size")
_PP = ("--pp-size", "--pipeline-parallel-size")
# What a launch's log says SGLang chose (``resolved_flags``).
_SERVER_ARGS = re.compile(r"server_args=ServerArgs\((.*)\)\s*$", re.MULTILINE)
_POOL_LINE = re.compile(r"max_total_num_tokens=\d+, chunked_prefill_size=.*")
_DECODE_GRAPHS = re.compile(
    r"Capture (?:target decode )?(?:cuda|CUDA) graph (?:begin\..*?)?bs[= ]?\[([\d, ]+)\]"
)


@dataclass(frozen=True)
class Rename:
    """A flag renamed from ``since`` on.

    ``new`` is the replacement tokens; ``{value}`` stands for the old flag's value(s)
    (``arity`` 0: a store_true flag, 1: one value, -1: one or more values).
    """

    old: str
    new: tuple[str, ...]
    since: tuple[int, ...]
    arity: int = 1
    note: str = ""


RENAMES: tuple[Rename, ...] = (
    Rename(
        "--cuda-graph-max-bs",
        ("--cuda-graph-max-bs-decode", "{value}"),
        (0, 5, 14),
        note="in 0.5.23 the old name fails: 'ambiguous option'",
    ),
    Rename(
        "--disable-cuda-graph",
        ("--cuda-graph-backend-decode", "disabled", "--cuda-graph-backend-prefill", "disabled"),
        (0, 5, 14),
        arity=0,
    ),
    Rename(
        "--enable-flashinfer-allreduce-fusion",
        ("--flashinfer-allreduce-fusion-backend", "auto"),
        (0, 5, 14),
        arity=0,
    ),
    Rename("--cuda-graph-bs", ("--cuda-graph-bs-decode", "{value}"), (0, 5, 23), arity=-1),
)


def renames_for(version: str | None) -> dict[str, Rename]:
    """The renames that apply to ``version`` (none when the version is unknown: 0.5.9 names)."""
    wanted = parse_version(version or DEFAULT_VERSION)
    return {r.old: r for r in RENAMES if wanted >= r.since}


def rewrite(
    args: list[str], renames: dict[str, Rename], engine: str, version: str
) -> tuple[list[str], list[str]]:
    """Apply ``renames`` to ``args`` (``--flag value`` and ``--flag=value`` forms)."""
    out: list[str] = []
    warnings: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        name, sep, inline = token.partition("=")
        rename = renames.get(name) if is_flag(token) else None
        if rename is None:
            out.append(token)
            i += 1
            continue
        values: list[str] = []
        i += 1
        if sep:
            values = [inline]
        elif rename.arity == 1 and i < len(args):
            values = [args[i]]
            i += 1
        elif rename.arity == -1:
            while i < len(args) and not is_flag(args[i]):
                values.append(args[i])
                i += 1
        for part in rename.new:
            if part == "{value}":
                out.extend(values)
            else:
                out.append(part)
        new = " ".join(p for p in rename.new if p != "{value}")
        note = f" ({rename.note})" if rename.note else ""
        warnings.append(f"{name} is {new} in {engine} {version}; rewritten{note}")
    return out, warnings


@ENGINES.register
class SGLangEngine(Engine):
    """SGLang's HTTP server; with ``simulate`` the stand-in ``python -m autotune.sim``.

    Its log (ready line, milestones, failure rules) is described in ``rules/sglang.yaml``.
    """

    name: ClassVar[str] = "sglang"
    flags_name: ClassVar[str | None] = "sglang"  # the stand-in (``sim``) takes SGLang's flags
    can_simulate: ClassVar[bool] = True
    dummy_weights_args: ClassVar[tuple[str, ...]] = ("--load-format", "dummy")
    versioned: ClassVar[bool] = True

    @property
    def module(self) -> str:
        return "autotune.sim" if self.simulate else "sglang.launch_server"

    @property
    def version(self) -> str:
        """The version flags are written for (the default when the space names none)."""
        return self.spec.version or DEFAULT_VERSION

    def base_command(self, model: str) -> list[str]:
        return [
            self.spec.python, "-m", self.module,
            "--model-path", model, "--host", "{host}", "--port", "{port}",
        ]  # fmt: skip

    def translate(self, args: list[str]) -> tuple[list[str], list[str]]:
        return rewrite(list(args), renames_for(self.spec.version), "sglang", self.version)

    def gpus(self, args: list[str]) -> int:
        """tp x pp x dp (dp not counted with ``--enable-dp-attention``: it splits the tp group)."""
        tp, dp, pp = int_flag(args, _TP), int_flag(args, _DP), int_flag(args, _PP)
        if tp is None and dp is None and pp is None:
            return self.spec.gpus or 1
        if has_flag(args, ("--enable-dp-attention",)):
            dp = 1
        return (tp or 1) * (pp or 1) * (dp or 1)

    def default_env(self) -> dict[str, str]:
        # The stand-in runs SIMULATE_TIME_SCALE times faster than the time it simulates, so
        # a simulated study takes minutes; the node reports its figures unscaled.
        return {SIM_TIME_SCALE_ENV: SIMULATE_TIME_SCALE} if self.simulate else {}

    def request_fields(self) -> dict[str, Any]:
        return {"ignore_eos": True}

    def resolved_flags(self, log_text: str) -> dict[str, str]:
        # ``server_args=ServerArgs(...)`` at start (None where SGLang decides later), then
        # the values it decided: the pool line, and the decode graphs' batch sizes.
        dump = _SERVER_ARGS.search(log_text)
        out = logged_flags(dump.group(1)) if dump else {}
        pool = _POOL_LINE.search(log_text)
        if pool:
            out.update(logged_flags(pool.group(0)))
        graphs = _DECODE_GRAPHS.search(log_text)
        if graphs:
            most = str(max(int(b) for b in graphs.group(1).split(",") if b.strip()))
            out.setdefault("--cuda-graph-max-bs-decode", most)
            out.setdefault("--cuda-graph-max-bs", most)  # its name before 0.5.14
        return out

    def help_command(self) -> list[str] | None:
        return [self.spec.python, "-m", self.module, "--help"]


@ENGINES.register
class SimEngine(SGLangEngine):
    """Engine name ``sim``: always the stand-in server, with SGLang's flags and log."""

    name: ClassVar[str] = "sim"
    rules_name: ClassVar[str | None] = "sglang"

    def __init__(self, spec: EngineSpec, *, simulate: bool = True) -> None:
        super().__init__(spec, simulate=True)
