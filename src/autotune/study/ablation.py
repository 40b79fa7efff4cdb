"""The winner's ablation: what each of its changes from the baseline contributes.

The search says which configuration wins, not which of its changes matter. For the winner,
each parameter whose value differs from the baseline's is reverted to the baseline's value
(unset, the engine's default, where the baseline leaves it unset), one at a time. The reverted
configurations are relaunched in rounds interleaved with the winner, in mirrored pairs as
confirmation's (winner, A, B, C, then C, B, A, winner; then rotated), and a change's
contribution is the winner's gain over its reverted configuration within rounds, with an
interval (``noise.blocked_gain``; Bonferroni over the changes), so a drifting machine cancels.
A reverted configuration that fails says so: the winner needs that change to run at all.

Reverting a switch reverts what hangs on it: a parameter that is inactive once the switch is
back at the baseline's value (``when:`` in the space) is dropped, as a launch would drop it.
A parameter of the winner that no revert can separate (it is inactive at the baseline's
values) is reverted with the switch it hangs on and is not listed alone.

It costs ``rounds x (changes + 1)`` launches on top of the budget; when that is more than the
ablation's budget, nothing is launched and the record says so in one line. Like
confirmation (``study/confirm.py``) it is written against a small ``measure`` callable, so
that the same code runs with an in-process fake in tests and with the executor in the driver.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from autotune.core.summary import Ablation, AblationStep
from autotune.models import Direction
from autotune.space.render import active, violations
from autotune.space.schema import StudySpec, config_key, same_value
from autotune.study.confirm import Sample, round_order
from autotune.study.noise import gain_in_rounds

WINNER = "winner"

# One launch of a configuration (``key``: WINNER or a parameter's name) in a given round.
Measure = Callable[[str, dict[str, Any], int], Sample]


@dataclass(frozen=True)
class Change:
    """One changed parameter of the winner, and the winner with it reverted."""

    param: str
    winner_value: Any
    baseline_value: Any  # None: unset at the baseline
    config: dict[str, Any]  # the winner, reverted (active values only)


def changes(
    spec: StudySpec, winner: Mapping[str, Any], baseline: Mapping[str, Any]
) -> list[Change]:
    """Each parameter of the winner that differs from the baseline, reverted alone.

    A revert that launches the winner itself (the parameter is inactive either way) or a
    configuration another revert already gives is left out.
    """
    mine = active(spec, winner)
    seen = {config_key(mine)}
    out = []
    for p in spec.parameters:
        name = p.name
        here, there = mine.get(name), baseline.get(name)
        if name in mine and name in baseline and same_value(here, there):
            continue
        if name not in mine and name not in baseline:
            continue
        reverted = dict(mine)
        if name in baseline:
            reverted[name] = baseline[name]
        else:
            reverted.pop(name, None)
        reverted = active(spec, reverted)
        key = config_key(reverted)
        if key in seen:
            continue
        seen.add(key)
        out.append(Change(name, here, there, reverted))
    return out


def skipped(reason: str, winner: int | None = None) -> Ablation:
    """An ablation that did not run, and why (one line)."""
    return Ablation(winner=winner, skipped=f"not run: {reason}")


def ablate(
    spec: StudySpec,
    winner_trial: int,
    winner: Mapping[str, Any],
    found: list[Change],
    measure: Measure,
    direction: Direction,
    rounds: int = 3,
) -> Ablation:
    """Relaunch the winner and each reverted configuration, interleaved, for ``rounds``
    rounds; each change's contribution is the winner's gain over its reverted configuration.

    A reverted configuration that breaks a constraint is not launched; one whose launch fails
    is not launched again (its step says why).
    """
    failed: dict[str, str] = {}
    by_param = {c.param: c for c in found}
    for c in found:
        broken = violations(spec, c.config)
        if broken:
            failed[c.param] = f"breaks constraint {broken[0]}: not launched"
    launches, server_s = 0, 0.0
    keys = [c.param for c in found]
    table: dict[int, dict[str, float]] = {}  # round -> key -> value
    for round_no in range(1, rounds + 1):
        for key in round_order(WINNER, keys, round_no):
            if key in failed:
                continue
            config = by_param[key].config if key != WINNER else dict(winner)
            s = measure(key, config, round_no)
            launches, server_s = launches + 1, server_s + s.server_s
            if s.value is not None and math.isfinite(s.value) and s.value > 0:
                table.setdefault(round_no, {})[key] = s.value
            elif key != WINNER:
                failed[key] = f"failed in round {round_no}: {s.reason or 'no value'}"
    values = {
        key: [row[key] for _, row in sorted(table.items()) if key in row] for key in [WINNER, *keys]
    }
    steps = []
    for c in found:
        contribution = None
        if values[c.param] and values[WINNER] and c.param not in failed:
            contribution = gain_in_rounds(table, c.param, WINNER, direction, candidates=len(found))
        steps.append(
            AblationStep(
                param=c.param,
                winner_value=c.winner_value,
                baseline_value=c.baseline_value,
                config=c.config,
                values=values[c.param],
                failed=failed.get(c.param, ""),
                contribution=contribution,
            )
        )
    return Ablation(
        winner=winner_trial,
        rounds=rounds,
        winner_values=values[WINNER],
        steps=steps,
        launches=launches,
        server_s=round(server_s, 3),
    )


__all__ = ["WINNER", "Change", "Measure", "ablate", "changes", "skipped"]
