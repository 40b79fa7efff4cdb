"""Capture an engine's whole flag table from its own argument parser.

    python -m autotune.engines.flagdump sglang > src/autotune/engines/flags/sglang-0.5.17.json
    python -m autotune.engines.flagdump vllm   > src/autotune/engines/flags/vllm-0.26.0.json

Run it with the engine installed (the GPU machine, or any machine where the engine imports).
It builds the parser the engine's launcher builds and writes every option: its spellings, its
type, its choices, and for a deprecated alias the flag that replaces it. A captured table is
``complete``: preflight then treats a flag missing from it as an error, as argparse would.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
from typing import Any


def sglang_parser() -> tuple[argparse.ArgumentParser, str]:
    """SGLang's launch_server parser and the installed version."""
    import sglang
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return parser, str(sglang.__version__)


def vllm_parser() -> tuple[argparse.ArgumentParser, str]:
    """vLLM's ``vllm serve`` parser and the installed version.

    vLLM computes flag defaults from its platform and refuses to build the parser where it
    finds none; ``AUTOTUNE_FLAGDUMP_PLATFORM=cpu`` assumes its CPU platform on a machine
    without a GPU (the flags are the same; some defaults differ, and no default is kept).
    """
    import os

    import vllm

    if os.environ.get("AUTOTUNE_FLAGDUMP_PLATFORM") == "cpu":
        import vllm.platforms
        from vllm.platforms.cpu import CpuPlatform

        vllm.platforms._current_platform = CpuPlatform()
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    return parser, str(vllm.__version__)


PARSERS = {"sglang": sglang_parser, "vllm": vllm_parser}


def entry(action: argparse.Action) -> tuple[str, dict[str, Any]] | None:
    """One action as a table entry: (primary spelling, {type, choices, aliases, deprecated})."""
    if not action.option_strings or isinstance(action, argparse._HelpAction):
        return None
    longs = [o for o in action.option_strings if o.startswith("--")] or action.option_strings
    primary, aliases = longs[0], [o for o in action.option_strings if o != longs[0]]
    if action.nargs == 0:
        kind = "store_true"
    elif action.nargs in ("+", "*") or isinstance(action.nargs, int):
        kind = "list"
    elif action.type is int:
        kind = "int"
    elif action.type is float:
        kind = "float"
    else:
        kind = "str"
    out: dict[str, Any] = {"type": kind}
    if action.choices is not None and not isinstance(action.choices, range):
        out["choices"] = sorted(str(c) for c in action.choices)
    if aliases:
        out["aliases"] = aliases
    new = getattr(action, "new_flag", None) or getattr(action, "deprecated_replacement", None)
    if isinstance(new, str):
        out["deprecated"] = new
    return primary, out


def capture(engine: str) -> dict[str, Any]:
    parser, version = PARSERS[engine]()
    flags: dict[str, Any] = {}
    for action in parser._actions:
        item = entry(action)
        if item is not None:
            flags.setdefault(item[0], item[1])
    return {
        "engine": engine,
        "version": version,
        "complete": True,
        "source": (
            f"captured from {engine} {version}'s own argument parser by "
            f"autotune.engines.flagdump on {datetime.date.today().isoformat()}"
        ),
        "flags": dict(sorted(flags.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("engine", choices=sorted(PARSERS))
    args = parser.parse_args(argv)
    # Engines log to stdout while they import (vLLM does): keep stdout for the table alone.
    with contextlib.redirect_stdout(sys.stderr):
        table = capture(args.engine)
    json.dump(table, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
