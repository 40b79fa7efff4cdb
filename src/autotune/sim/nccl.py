"""The NCCL environment the stand-in server reads, parsed the way NCCL 2.28 parses it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PROTOS = ("LL", "LL128", "Simple")
ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
P2P_LEVELS = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS")
DEFAULT_BUFFSIZE = 1 << 22  # 4 MiB
DEFAULT_NTHREADS = 512
MAX_CHANNELS = 64


class NcclEnvError(ValueError):
    """A variable NCCL refuses at communicator init (``ncclInvalidUsage``).

    Attributes:
        warn: the line NCCL prints (``NCCL WARN ...``), without the host/pid prefix.
    """

    def __init__(self, warn: str) -> None:
        super().__init__(warn)
        self.warn = warn


@dataclass(frozen=True)
class NcclConfig:
    """The NCCL knobs that move the simulated allreduce; None means NCCL's default."""

    min_channels: int | None = None
    max_channels: int | None = None
    buffsize: int = DEFAULT_BUFFSIZE
    nthreads: int = DEFAULT_NTHREADS
    protos: frozenset[str] | None = None  # allowed protocols; None: the machine's default set
    algos: frozenset[str] | None = None
    p2p_level: str | None = None
    warnings: tuple[str, ...] = ()  # NCCL WARN lines for values NCCL ignores

    def channels(self, default: int) -> int:
        """Channels a collective uses: the default clamped by NCCL_MIN/MAX_NCHANNELS."""
        high = MAX_CHANNELS if self.max_channels is None else self.max_channels
        low = 1 if self.min_channels is None else min(self.min_channels, high)
        return max(1, low, min(default, high))


def _int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw, 0)
    except ValueError:
        # NCCL's ncclGetEnv + strtoll: garbage reads as 0, then the variable's own clamp.
        return 0


def _parse_list(name: str, value: str, elems: tuple[str, ...]) -> frozenset[str]:
    """NCCL's parseList: comma list, case-insensitive, a leading ``^`` excludes."""
    text = value.strip()
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    chosen: set[str] = set()
    for token in text.split(","):
        token = token.strip()
        match = next((e for e in elems if e.lower() == token.lower()), None)
        if match is None:
            raise NcclEnvError(f'Unrecognized element token "{token}" when parsing "{value}"')
        chosen.add(match)
    if exclude:
        return frozenset(e for e in elems if e not in chosen)
    return frozenset(chosen)


def read_nccl_env(env: Mapping[str, str]) -> tuple[NcclConfig, NcclEnvError | None]:
    """``parse_nccl_env``, or NCCL's defaults and the error when a token is bad: the server
    still starts and fails at its communicator's init, as NCCL does."""
    try:
        return parse_nccl_env(env), None
    except NcclEnvError as exc:
        return parse_nccl_env({}), exc


def parse_nccl_env(env: Mapping[str, str]) -> NcclConfig:
    """Read the NCCL variables the model uses (channels, buffer, threads, protocol, algorithm, P2P).

    Out-of-range numbers are clamped silently as NCCL does; a bad protocol or algorithm token
    raises, as it fails NCCL's communicator init.

    Raises:
        NcclEnvError: an unrecognized NCCL_PROTO/NCCL_ALGO token.
    """
    min_ch = _int(env, "NCCL_MIN_NCHANNELS")
    max_ch = _int(env, "NCCL_MAX_NCHANNELS")
    if min_ch is not None:
        min_ch = min(max(min_ch, 0), MAX_CHANNELS) or None
    if max_ch is not None:
        max_ch = min(max(max_ch, 1), MAX_CHANNELS)
    buffsize = _int(env, "NCCL_BUFFSIZE")
    if buffsize is None or buffsize <= 0:
        buffsize = DEFAULT_BUFFSIZE
    nthreads = _int(env, "NCCL_NTHREADS")
    if nthreads is None or nthreads % 32 or not 64 <= nthreads <= 512:
        # NCCL ignores a value that is not a multiple of the warp size within 64..512.
        nthreads = DEFAULT_NTHREADS
    protos = algos = None
    if env.get("NCCL_PROTO", "").strip():
        protos = _parse_list("NCCL_PROTO", env["NCCL_PROTO"], PROTOS)
    if env.get("NCCL_ALGO", "").strip():
        algos = _parse_list("NCCL_ALGO", env["NCCL_ALGO"], ALGOS)
    warnings: list[str] = []
    p2p = env.get("NCCL_P2P_LEVEL", "").strip().upper() or None
    if p2p is not None and p2p not in P2P_LEVELS:
        if p2p.isdigit():
            p2p = P2P_LEVELS[min(int(p2p), len(P2P_LEVELS) - 1)]
        else:
            # NCCL warns and keeps its default for an unknown level; it does not fail.
            warnings.append(f"Invalid value {p2p} for NCCL_P2P_LEVEL, using default")
            p2p = None
    return NcclConfig(
        min_channels=min_ch,
        max_channels=max_ch,
        buffsize=buffsize,
        nthreads=nthreads,
        protos=protos,
        algos=algos,
        p2p_level=p2p,
        warnings=tuple(warnings),
    )
