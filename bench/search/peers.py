"""Peers: generic optimizers a serving engineer could pip-install, as bench strategies.

Each runs as its authors intend, with the same 30 launches as autotune, the baseline as the
first launch, and crashes told in the way it supports:

- ``cmaes``: Optuna's ``CmaEsSampler`` (``with_margin``, the baseline as ``x0``; categoricals
  go to its independent sampler); a crash told at the worst value measured so far;
- ``botorch``: ``optuna-integration``'s ``BoTorchSampler``; a crash told at the worst value
  and as a broken constraint (``constraints_func``), like ``gpc``;
- ``smac``: SMAC3's hyperparameter-optimization facade, ask/tell over a ConfigSpace built
  from the space (``when`` as a condition where it names one parent), the baseline told
  first, cost the negated value, a crash told as ``CRASHED`` at the scenario's crash cost 0
  (a server that crashed serves nothing), ``deterministic`` (one launch a configuration);
- ``hebo``: HEBO's ``HEBO`` (its GP and MACE), ask/tell; the baseline observed first; a crash
  observed at the worst value measured so far (it has no constraint input);
- ``ngopt``: nevergrad's ``NGOpt`` over an ``Instrumentation`` whose values start at the
  baseline, which is suggested first; a crash told at the worst value with a constraint
  violation of 1 (nevergrad's penalty).

Each is registered only when its package is installed; nothing here is a project dependency.
Install them apart from the project's venv, then put them on the path:

    .venv/bin/pip install --target /tmp/peers-site \\
        cmaes optuna-integration botorch smac HEBO nevergrad
    PYTHONPATH=src:/tmp/peers-site .venv/bin/python -m bench.search --prune \\
        --families curve10 --strategies autotune,cmaes,botorch,smac,hebo,ngopt

(``--no-deps`` and the dependencies pip's resolver names against the venv keep its numpy,
scipy and torch; HEBO's GPy is not needed by ``HEBO`` with its default GP.)

An ask/tell peer sees every parameter in every proposal (conditional ones included, except
SMAC's); a value is snapped to its parameter's range and step, and a parameter whose ``when``
is false is dropped before the launch, as ``space.suggest`` drops it.
"""

from __future__ import annotations

import importlib.util
import math
import random
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import optuna
import yaml
from bench.search.landscapes import Landscape
from tests.search.inprocess import Launch

Strategy = Callable[[Landscape, int, int], list[Launch]]
Plain = Callable[..., Strategy]

# strategy name -> the module that must be installed for it
PACKAGES = {
    "cmaes": "cmaes",
    "botorch": "optuna_integration",
    "smac": "smac",
    "hebo": "hebo",
    "ngopt": "nevergrad",
}
_ALSO = {"botorch": "botorch"}  # a second module the strategy needs


def installed(name: str) -> bool:
    """Whether the peer ``name``'s packages are installed (found, not imported: importing
    BoTorch alone takes seconds)."""
    mods = [PACKAGES[name], *([_ALSO[name]] if name in _ALSO else [])]
    try:
        return all(importlib.util.find_spec(m) is not None for m in mods)
    except (ImportError, ValueError):
        return False


def strategies(plain: Plain, crashed: Callable[[Any], list[float]]) -> dict[str, Strategy]:
    """The peers whose packages are installed. ``plain`` and ``crashed`` are the bench's plain
    Optuna loop and its constraint on crashes (``__main__._plain``, ``_crashed``)."""
    made: dict[str, Strategy] = {
        "cmaes": lambda land, s, n: plain(lambda seed: _cmaes(land, seed), worst=True)(land, s, n),
        "botorch": plain(lambda seed: _botorch(seed, crashed), worst=True),
        "smac": asktell(_Smac),
        "hebo": asktell(_Hebo),
        "ngopt": asktell(_NGOpt),
    }
    return {name: run for name, run in made.items() if installed(name)}


def _cmaes(land: Landscape, seed: int) -> optuna.samplers.BaseSampler:
    x0 = {
        p["name"]: land.baseline.get(p["name"], _mid(p))
        for p in land.parameters
        if p["type"] in ("int", "float")
    }
    with warnings.catch_warnings():  # x0 is deprecated in Optuna 4.9, still supported
        warnings.simplefilter("ignore", FutureWarning)
        return optuna.samplers.CmaEsSampler(
            x0=x0, seed=seed, with_margin=True, warn_independent_sampling=False
        )


def _botorch(seed: int, crashed: Callable[[Any], list[float]]) -> optuna.samplers.BaseSampler:
    from optuna_integration import BoTorchSampler

    return BoTorchSampler(constraints_func=crashed, seed=seed)


class Peer(Protocol):
    """One study of an ask/tell optimizer (maximizing)."""

    def ask(self) -> tuple[Any, dict[str, Any]]:
        """A handle to tell back and the proposed values (every parameter, raw)."""
        ...

    def tell(self, handle: Any, values: dict[str, Any], value: float | None, worst: float) -> None:
        """What the launch of ``values`` measured (``None``: it crashed; ``worst``: the lowest
        value measured so far). ``handle`` is ``None`` for the baseline, never asked."""
        ...

    def close(self) -> None: ...


def asktell(make: Callable[[list[dict[str, Any]], dict[str, Any], int, int], Peer]) -> Strategy:
    """A strategy from an ask/tell optimizer: the baseline launched and told first, then each
    proposal (snapped to the space, inactive parameters dropped) launched and told."""

    def run(land: Landscape, seed: int, trials: int) -> list[Launch]:
        from autotune.space.load import load_text
        from autotune.space.suggest import suggest

        spec = load_text(yaml.safe_dump(land.space(trials), sort_keys=False), f"<{land.name}>")
        rng = random.Random(seed * 7919 + 1)
        full = {p["name"]: land.baseline.get(p["name"], _mid(p)) for p in land.parameters}
        peer = make(land.parameters, full, seed, trials)
        out: list[Launch] = []
        try:
            while len(out) < trials:
                handle, raw = peer.ask() if out else (None, full)
                snapped = {p["name"]: snap(p, raw[p["name"]]) for p in land.parameters}
                config = suggest(optuna.trial.FixedTrial(snapped), spec)
                if not out:
                    config = dict(land.baseline)
                p = land.evaluate(config, rng)
                clock = (out[-1].end if out else 0.0) + p.seconds
                out.append(Launch(config, p.value, p.truth, p.value is None, p.seconds, end=clock))
                worst = min((la.value for la in out if la.value is not None), default=0.0)
                peer.tell(handle, snapped, p.value, worst)
        finally:
            peer.close()
        return out

    return run


def snap(p: dict[str, Any], v: Any) -> Any:
    """``v`` as a valid value of parameter ``p``: numbers clipped to the range and rounded to
    the step (ints to whole numbers); a choice given back as the space's own object."""
    if p["type"] == "bool":
        return bool(v)
    if p["type"] == "categorical":
        return next(c for c in p["choices"] if c == v or str(c) == str(v))
    low, high = float(p["low"]), float(p["high"])
    x = min(max(float(v), low), high)
    step = p.get("step") or (1 if p["type"] == "int" else None)
    if step:
        x = min(low + round((x - low) / step) * step, high)
    return int(round(x)) if p["type"] == "int" else round(x, 10)


def _mid(p: dict[str, Any]) -> Any:
    if p["type"] == "bool":
        return False
    if p["type"] == "categorical":
        return p["choices"][0]
    low, high = float(p["low"]), float(p["high"])
    x = math.sqrt(low * high) if p.get("log") else (low + high) / 2
    return snap(p, x)


def parent(when: str) -> tuple[str, Any] | None:
    """The one parameter and value a ``when`` names (``flag``, ``name == 'v'``), else None."""
    if m := re.fullmatch(r"\s*(\w+)\s*", when):
        return m.group(1), True
    if m := re.fullmatch(r"\s*(\w+)\s*==\s*(?:'([^']*)'|\"([^\"]*)\"|(-?\d+))\s*", when):
        value = m.group(2) if m.group(2) is not None else m.group(3)
        return m.group(1), int(m.group(4)) if value is None else value
    return None


class _Smac:
    def __init__(self, params: list[dict[str, Any]], base: dict[str, Any], seed: int, n: int):
        from ConfigSpace import Categorical, ConfigurationSpace, EqualsCondition, Float, Integer
        from smac import HyperparameterOptimizationFacade, Scenario

        self.cs = ConfigurationSpace(seed=seed)
        hps: dict[str, Any] = {}
        for p in params:
            name, d = p["name"], base[p["name"]]
            if p["type"] == "int":
                bounds = (int(p["low"]), int(p["high"]))
                hp = Integer(name, bounds, log=bool(p.get("log")), default=d)
            elif p["type"] == "float":
                hp = Float(name, (p["low"], p["high"]), log=bool(p.get("log")), default=d)
            else:
                items = [False, True] if p["type"] == "bool" else list(p["choices"])
                hp = Categorical(name, items, default=d)
            hps[name] = hp
        self.cs.add(list(hps.values()))
        for p in params:
            if p.get("when") and (par := parent(p["when"])) and par[0] in hps:
                self.cs.add(EqualsCondition(hps[p["name"]], hps[par[0]], par[1]))
        self.params = params
        self.tmp = tempfile.mkdtemp(prefix="bench-smac-")
        scenario = Scenario(
            self.cs,
            deterministic=True,
            n_trials=n,
            seed=seed,
            crash_cost=0.0,
            output_directory=self.tmp,
        )
        self.smac = HyperparameterOptimizationFacade(
            scenario, lambda config, seed=0: 0.0, overwrite=True, logging_level=40
        )

    def ask(self) -> tuple[Any, dict[str, Any]]:
        info = self.smac.ask()
        values = dict(info.config)
        full = {p["name"]: values.get(p["name"], _mid(p)) for p in self.params}
        return info, full

    def tell(self, handle: Any, values: dict[str, Any], value: float | None, worst: float) -> None:
        from ConfigSpace import Configuration
        from smac.runhistory import StatusType, TrialInfo, TrialValue

        if handle is None:  # the baseline, never asked: told as SMAC's ask/tell allows
            active = {k: v for k, v in values.items() if k in self._active(values)}
            handle = TrialInfo(Configuration(self.cs, values=active), seed=0)
        if value is None:
            self.smac.tell(handle, TrialValue(cost=0.0, status=StatusType.CRASHED), save=False)
        else:
            self.smac.tell(handle, TrialValue(cost=-value), save=False)

    def _active(self, values: dict[str, Any]) -> set[str]:
        out = set()
        for p in self.params:
            par = parent(p["when"]) if p.get("when") else None
            if par is None or values.get(par[0]) == par[1]:
                out.add(p["name"])
        return out

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


class _Hebo:
    def __init__(self, params: list[dict[str, Any]], base: dict[str, Any], seed: int, n: int):
        import numpy as np
        import torch
        from hebo.design_space.design_space import DesignSpace
        from hebo.optimizers.hebo import HEBO

        np.random.seed(seed)  # HEBO draws from numpy's and torch's global generators
        torch.manual_seed(seed)
        rows = []
        for p in params:
            name = p["name"]
            if p["type"] == "bool":
                rows.append({"name": name, "type": "bool"})
            elif p["type"] == "categorical":
                cats = [str(c) for c in p["choices"]]
                rows.append({"name": name, "type": "cat", "categories": cats})
            elif p["type"] == "int" and p.get("log") and p["low"] >= 1:
                rows.append({"name": name, "type": "pow_int", "lb": p["low"], "ub": p["high"]})
            elif p["type"] == "int" and p.get("step"):
                row = {"name": name, "type": "step_int", "lb": p["low"], "ub": p["high"]}
                rows.append({**row, "step": p["step"]})
            elif p["type"] == "int":
                rows.append({"name": name, "type": "int", "lb": p["low"], "ub": p["high"]})
            elif p.get("log") and p["low"] > 0:
                rows.append({"name": name, "type": "pow", "lb": p["low"], "ub": p["high"]})
            else:
                rows.append({"name": name, "type": "num", "lb": p["low"], "ub": p["high"]})
        self.params = params
        self.hebo = HEBO(DesignSpace().parse(rows), scramble_seed=seed)

    def ask(self) -> tuple[Any, dict[str, Any]]:
        df = self.hebo.suggest(n_suggestions=1)
        row = df.iloc[0].to_dict()
        return df, {p["name"]: row[p["name"]] for p in self.params}

    def tell(self, handle: Any, values: dict[str, Any], value: float | None, worst: float) -> None:
        import numpy as np
        import pandas as pd

        if handle is None:
            row = {p["name"]: values[p["name"]] for p in self.params}
            row.update({p["name"]: str(row[p["name"]]) for p in self.params if "choices" in p})
            handle = pd.DataFrame([row])
        y = -(worst if value is None else value)
        self.hebo.observe(handle, np.array([[y]]))

    def close(self) -> None:
        pass


class _NGOpt:
    def __init__(self, params: list[dict[str, Any]], base: dict[str, Any], seed: int, n: int):
        import nevergrad as ng

        kw: dict[str, Any] = {}
        for p in params:
            name, d = p["name"], base[p["name"]]
            if p["type"] == "bool":
                kw[name] = ng.p.Choice([False, True])
            elif p["type"] == "categorical":
                kw[name] = ng.p.Choice(list(p["choices"]))
            elif p.get("log") and p["low"] > 0:
                kw[name] = ng.p.Log(init=d, lower=p["low"], upper=p["high"])
            else:
                kw[name] = ng.p.Scalar(init=d, lower=p["low"], upper=p["high"])
            if p["type"] == "int":
                kw[name].set_integer_casting()
        inst = ng.p.Instrumentation(**kw)
        inst.random_state.seed(seed)
        self.opt = ng.optimizers.NGOpt(parametrization=inst, budget=n, num_workers=1)
        self.opt.suggest(**base)
        self.baseline = self.opt.ask()  # the suggestion: launched first, told first

    def ask(self) -> tuple[Any, dict[str, Any]]:
        cand = self.opt.ask()
        return cand, dict(cand.kwargs)

    def tell(self, handle: Any, values: dict[str, Any], value: float | None, worst: float) -> None:
        cand = self.baseline if handle is None else handle
        if value is None:
            self.opt.tell(cand, -worst, constraint_violation=[1.0])
        else:
            self.opt.tell(cand, -value, constraint_violation=[0.0])

    def close(self) -> None:
        pass


__all__ = ["PACKAGES", "asktell", "installed", "parent", "snap", "strategies"]
