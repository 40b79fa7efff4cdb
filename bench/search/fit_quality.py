"""Does the search's model predict the landscape, or does its acquisition spend launches badly?

Replays the default's studies (the runner of ``python -m bench.search``) and, at each proposal
of the model phase, with the models that proposal was planned with, measures against the
landscape's noise-free value (``families.truth``; % of the instance's optimum, as the suite
scores):

- fit: Spearman rank correlation between the model's predicted mean and the truth on 500
  random configurations that do not crash and pass the space's checks (``global``), on 200
  near the incumbent (the launch with the best predicted mean, one or two settings moved:
  ``local``), and on the candidates the acquisition scored (``pool``; crashing ones left out);
- acquisition: the truth of the proposal, of the candidate with the best predicted mean
  (among those the acquisition did not rule out), of the best candidate scored (the regret of
  the acquisition inside its own candidate set), and of the incumbent;
- calibration: whether the next launch's measured value (log, as the model sees it) lies in
  the model's 90% predictive interval (its mean +- 1.645 sd, the noise included).

``--models`` adds surrogates of other kinds refitted on the same launches at the same steps
(``extratrees``, ``gp_ard`` from sklearn, bench only; ``ensemble[...]``: the mean of the
per-model ranks of the additive GP and one of those), each with its rank correlations and its
pick among the same candidates (argmax of mean x P(no crash)^risk).

The proposals are the default's own: the model step is replayed with the sampler's code and
random draws, only observed (each study's score must equal the suite's).

``--picks`` adds other rules that pick from the same candidates at the same steps (one step,
not a search: which rule filters the pool best), each scored by the truth of its choice
(crash = 0) next to EI's and the incumbent's: ``ts`` (Thompson sampling: argmax of one draw
of the model's joint posterior over the candidates x P(no crash)^risk; the mean over 20 draws
with fixed seeds), ``ucb1``/``ucb2``/``ucb4`` (argmax of mean + beta x sd, x P(no
crash)^risk), ``top5``/``top20`` (a draw among the k largest of EI x P(no crash)^risk,
weighted by it; its expectation, exact), ``uniform`` (a draw among the open candidates; exact
expectation), ``exploit`` (argmax of the mean x P(no crash)^risk). Only candidates EI left
open (a crash not certain) are picked from.

``--crash`` measures the crash model at the same steps, against which candidates crash in
truth: its discrimination on the pool (AUC of P(crash), crashing candidates against the rest;
Brier score), on the open candidates, and on the next launch (its P(crash) against whether it
crashed, pooled over a family's steps); the share of the pool that crashes; the mean P(crash)
of crashing candidates whose crash region a launch of the study had already hit (``seen``) or
not, and of those that run; and the oracle's pick, argmax of EI x 1[no crash in truth] over
the whole pool (``oracle``) or over the candidates EI left open (``oracle open``), and EI's
own score with the candidates that crash in truth vetoed (``veto``), each with its truth and
its climb next to EI's (paired by step); and the AUC among the 20 candidates EI scores
highest (``AUC top20``), where a pick is made. Its P(crash) is split by term, for candidates
that run and that crash, among those 20 and over the pool: the novel pairs' term alone
(``1 - (1 - novel_rate) ** novel``), the regions' alone, their product as scored, and the
mean number of novel pairs.

    PYTHONPATH=src .venv/bin/python -m bench.search.fit_quality
    PYTHONPATH=src .venv/bin/python -m bench.search.fit_quality --families curve10 --instances 0:1
    PYTHONPATH=src .venv/bin/python -m bench.search.fit_quality \
        --families interact,mixed7,curve10,ridge11,paired10 \
        --models "additive,extratrees,gp_ard,ensemble[extratrees],ensemble[gp_ard]"
    PYTHONPATH=src .venv/bin/python -m bench.search.fit_quality \
        --families curve10,ridge11,paired10,interact,mixed7 --models "" --picks all
    PYTHONPATH=src .venv/bin/python -m bench.search.fit_quality \
        --families curve10,ridge11,paired10,interact,mixed7 --models "" --crash
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from bench.search import families as fam
from bench.search.__main__ import score
from bench.search.harness import run_driver
from scipy.stats import spearmanr

from autotune.search import sampler as smod
from autotune.search.model import base_kernels, combine, expected_improvement
from autotune.search.space import encode, key

Z90 = 1.6449


@dataclass
class Step:
    """One model-phase proposal, measured."""

    rho_global: float
    rho_local: float
    rho_pool: float
    proposal: float | None  # truth, % of the optimum (None: it crashes)
    greedy: float | None  # the candidate with the best predicted mean
    oracle: float  # the best truth among the candidates scored
    incumbent: float | None
    config: dict[str, Any] = field(default_factory=dict)
    mu: float = 0.0  # predicted (log) mean and predictive sd of the proposal
    sd: float = 0.0
    inside: bool | None = None  # the next launch's value inside the 90% interval
    exploit: float | None = None  # argmax of mean x P(no crash)^risk among the candidates
    # by model (``ALTERNATIVES``): rho global, rho local, rho pool, truth of its pick
    alt: dict[str, tuple[float, float, float, float | None]] = field(default_factory=dict)
    # by surrogate (``--models``, ``SURROGATES``): rho random, rho near, rho pool, truth of
    # its pick (argmax of mean x P(no crash)^risk among the candidates the acquisition left open)
    rank: dict[str, tuple[float, float, float, float | None]] = field(default_factory=dict)
    # by pick rule (``--picks``, ``PICKS``): the expected truth of its choice (crash = 0), its
    # chance of crashing, and its climb: the expected max(0, its truth - the incumbent's)
    picks: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    crash: dict[str, Any] = field(default_factory=dict)  # ``--crash``: see ``_crash``


STEPS: list[Step] = []
ALTERNATIVES = ("default", "local half", "length 0.12", "rank y", "yj y")
MODELS: list[str] = list(ALTERNATIVES)  # ``--models``: which other models to measure
PICKS = ("exploit", "ts", "ucb1", "ucb2", "ucb4", "top5", "top20", "uniform")
PICKED: list[str] = []  # ``--picks``: which rules to measure
CRASH = False  # ``--crash``: measure the crash model
TOP = 20  # ``--crash``: the candidates EI scores highest, where its discrimination matters
DRAWS = 20  # Thompson draws per step
SHAPE: fam.Shape | None = None
OPT = 1.0


def _truth(c: dict[str, Any]) -> float | None:
    assert SHAPE is not None
    t = fam.truth(SHAPE, c)
    return None if t is None else 100.0 * t / OPT


def _rho(a: list[float], b: list[float]) -> float:
    if len(a) < 3:
        return math.nan
    r = spearmanr(a, b).statistic
    return float(r) if np.isfinite(r) else math.nan


def _probe(
    self: smod.Sampler, h: smod.History, incumbent: dict[str, Any], n: int, near: bool
) -> tuple[list[dict[str, Any]], list[float]]:
    """``n`` configurations that run, with their truth: random ones, or the incumbent with one
    or two settings moved."""
    rng = np.random.default_rng([len(h.ran), int(near), 7])
    names = [name for name in h.params if name in incumbent]
    configs: list[dict[str, Any]] = []
    truths: list[float] = []
    for _ in range(n * 20):
        if len(configs) >= n:
            break
        if near:
            c = dict(incumbent)
            for k in rng.permutation(len(names))[: rng.integers(1, 3)]:
                c[names[k]] = self._draw(h.params[names[k]], rng)
        else:
            c = {name: self._draw(p, rng) for name, p in h.params.items()}
        c = self._complete(h, c)
        if self.feasible is not None and not self.feasible(c):
            continue
        t = _truth(c)
        if t is None:
            continue
        configs.append(c)
        truths.append(t)
    return configs, truths


def _ranks(gp: Any, params: list[Any], probe: tuple[list[dict[str, Any]], list[float]]) -> float:
    if len(probe[0]) < 3:
        return math.nan
    mu, _ = gp.predict(encode(params, probe[0]))
    return _rho(list(mu), probe[1])


def _distance(x: np.ndarray, row: np.ndarray, numeric: np.ndarray) -> np.ndarray:
    """Squared distance of each row of ``x`` from ``row``: numbers by place, a choice or an
    absent value 1 where it differs."""
    d = np.zeros(len(x))
    for j in range(x.shape[1]):
        a, b = x[:, j], row[j]
        lack = np.isnan(a) | np.isnan(b)
        diff = (a - b) ** 2 if numeric[j] else (a != b).astype(float)
        d += np.where(lack, (np.isnan(a) != np.isnan(b)).astype(float), np.nan_to_num(diff))
    return d


# surrogates of other kinds on the same launches (bench only: the product does not import
# sklearn); each ensemble is the mean of the per-model ranks of the additive GP and one other
SURROGATES = ("additive", "extratrees", "gp_ard", "ensemble[extratrees]", "ensemble[gp_ard]")
TUNING = ("interact", "mixed7")  # the ensemble's partner is chosen on these families alone


def _fit_other(name: str, x: np.ndarray, y: np.ndarray, seed: int) -> Any:
    """``extratrees`` or ``gp_ard`` fitted on the encoded launches (absent values -1)."""
    x = np.nan_to_num(x, nan=-1.0)
    if name == "extratrees":
        from sklearn.ensemble import ExtraTreesRegressor

        return ExtraTreesRegressor(n_estimators=300, min_samples_leaf=2, random_state=seed).fit(
            x, y
        )
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
        np.ones(x.shape[1]), (1e-2, 1e2), nu=2.5
    ) + WhiteKernel(0.01, (1e-6, 1.0))
    gp = GaussianProcessRegressor(
        kernel, normalize_y=True, n_restarts_optimizer=2, random_state=seed
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gp.fit(x, y)


def _surrogates(
    self: smod.Sampler,
    h: smod.History,
    fit: smod.Fit,
    probes: list[Any],
    pool: list[dict[str, Any]],
    truths: list[float | None],
    open_: np.ndarray,
) -> dict[str, tuple[float, float, float, float | None]]:
    """Each requested surrogate's rank correlations with the truth (random probes, probes
    near the incumbent, the candidates) and the truth of its pick among the open candidates:
    argmax of its mean + risk x log P(no crash) (the crash model is the default's). An
    ensemble averages the ranks (within each set) of the additive GP's and its partner's
    mean; its pick, the mean rank of the two models' penalised scores."""
    from scipy.stats import rankdata

    from autotune.search.space import encode as enc

    x, y = encode(fit.params, h.ran), np.array(h.y)
    xp = encode(fit.params, pool)
    p = fit.crashes.probability(xp)
    penalty = self._risk * np.log1p(-np.minimum(p, 0.999))
    ok = [i for i, t in enumerate(truths) if t is not None]
    sets = [enc(fit.params, probes[0][0]), enc(fit.params, probes[1][0]), xp]
    wanted = [m for m in MODELS if m in SURROGATES]
    base = {m.removeprefix("ensemble[").rstrip("]") for m in wanted} | {"additive"}
    preds: dict[str, list[np.ndarray]] = {}
    for name in sorted(base):
        if name == "additive":
            preds[name] = [fit.gp.predict(s)[0] if len(s) else np.zeros(0) for s in sets]
        else:
            model = _fit_other(name, x, y, len(h.ran))
            preds[name] = [
                model.predict(np.nan_to_num(s, nan=-1.0)) if len(s) else np.zeros(0) for s in sets
            ]

    def ranked(names: list[str], k: int, shift: np.ndarray | float = 0.0) -> np.ndarray:
        return np.mean([rankdata(preds[n][k] + shift) for n in names], axis=0)

    out = {}
    for m in wanted:
        names = [m] if m in base else ["additive", m.removeprefix("ensemble[").rstrip("]")]
        rhos = []
        for k, probe in enumerate(probes):
            rhos.append(_rho(list(ranked(names, k)), probe[1]) if len(probe[0]) >= 3 else math.nan)
        mu = ranked(names, 2) if len(names) > 1 else preds[m][2]
        rhos.append(_rho([float(mu[i]) for i in ok], [truths[i] for i in ok]))  # type: ignore[misc]
        if len(names) > 1:
            # open candidates only, ranked among themselves
            idx = np.flatnonzero(open_)
            sc = np.mean([rankdata(preds[n][2][idx] + penalty[idx]) for n in names], axis=0)
            pick = int(idx[int(np.argmax(sc))])
        else:
            pick = int(np.argmax(np.where(open_, preds[m][2] + penalty, -np.inf)))
        out[m] = (rhos[0], rhos[1], rhos[2], truths[pick])
    return out


def _alternatives(
    self: smod.Sampler,
    h: smod.History,
    fit: smod.Fit,
    incumbent: dict[str, Any],
    probes: list[Any],
    pool: list[dict[str, Any]],
    truths: list[float | None],
) -> dict[str, tuple[float, float, float, float | None]]:
    """Other models fitted on the same launches, each with its rank correlations on
    ``probes`` and on the candidates, and the truth of its own pick among the same candidates
    (expected improvement x P(no crash)^risk): the default; a local model (the half of the
    launches nearest the incumbent, at least 10); a lengthscale of 0.12 instead of 0.25; the
    objective replaced by its normal scores (ranks; r22's ``ywarp=copula``); by its Yeo-Johnson
    transform, fitted on it standardised and standardised again (r22's ``ywarp=yj``)."""
    from scipy.stats import norm, rankdata, yeojohnson

    from autotune.search import model as mmod

    numeric = np.array([p.numeric for p in fit.params])
    x, y = encode(fit.params, h.ran), np.array(h.y)
    xp = encode(fit.params, pool)
    crash = fit.crashes.probability(xp)
    penalty = self._risk * np.log1p(-np.minimum(crash, 0.999))
    penalty = np.where(fit.crashes.certain(xp), -np.inf, penalty)
    ok = [i for i, t in enumerate(truths) if t is not None]
    near = np.argsort(_distance(x, encode(fit.params, [incumbent])[0], numeric))
    near = near[: max(10, len(near) // 2)]
    models: dict[str, Any] = {"default": fit.gp}
    models["local half"] = mmod.AdditiveGP(x[near], y[near], numeric)
    old = mmod.LENGTH
    mmod.LENGTH = 0.12
    try:
        models["length 0.12"] = mmod.AdditiveGP(x, y, numeric)
    finally:
        mmod.LENGTH = old
    models["rank y"] = mmod.AdditiveGP(x, norm.ppf((rankdata(y) - 0.5) / len(y)), numeric)
    yj = yeojohnson((y - np.mean(y)) / (np.std(y) or 1.0))[0]
    models["yj y"] = mmod.AdditiveGP(x, (yj - np.mean(yj)) / (np.std(yj) or 1.0), numeric)
    out = {}
    for name, gp in models.items():
        level = float(np.max(gp.predict(x)[0]))
        mu, sd = gp.predict(xp)
        pick = int(np.argmax(np.log(expected_improvement(mu, sd, level) + 1e-12) + penalty))
        out[name] = (
            _ranks(gp, fit.params, probes[0]),
            _ranks(gp, fit.params, probes[1]),
            _rho([float(mu[i]) for i in ok], [truths[i] for i in ok]),  # type: ignore[misc]
            truths[pick],
        )
    return out


@dataclass
class Scored:
    """One model step's candidates as ``Sampler._scored`` left them, with what the observers
    read of each, computed once: the encoding, the model's mean and sd, the crash model's
    probability, the truth (crash = 0) and whether it crashes in truth."""

    pool: list[dict[str, Any]]
    scores: np.ndarray  # EI x P(no crash)^risk in logs; -inf where not open
    incumbent: float  # the incumbent's truth (crash = 0)
    x: np.ndarray
    mu: np.ndarray
    sd: np.ndarray
    p: np.ndarray
    truths: list[float | None]
    t: np.ndarray
    bad: np.ndarray  # bool

    @classmethod
    def of(cls, fit: smod.Fit, pool: list[dict[str, Any]], scores: np.ndarray, inc: Any) -> Scored:
        x = encode(fit.params, pool)
        mu, sd = fit.gp.predict(x)
        truths = [_truth(c) for c in pool]
        t = np.array([0.0 if v is None else v for v in truths])
        bad = np.array([v is None for v in truths])
        incumbent = _zero(_truth(inc))
        return cls(pool, scores, incumbent, x, mu, sd, fit.crashes.probability(x), truths, t, bad)

    @property
    def open(self) -> np.ndarray:
        return np.isfinite(self.scores)


def _joint(gp: Any, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The model's posterior mean and covariance (no noise) over the rows of ``x``."""
    from scipy.linalg import cho_solve

    w, pairs, _ = gp._unpack(gp.theta)
    kx, _ = combine(base_kernels(x, gp.x, gp.numeric), w, pairs)
    kxx, _ = combine(base_kernels(x, x, gp.numeric), w, pairs)
    cov = kxx - kx @ cho_solve(gp._c, kx.T)
    return gp.mean + gp.scale * (kx @ gp._alpha), gp.scale**2 * 0.5 * (cov + cov.T)


def _picks(
    self: smod.Sampler, h: smod.History, fit: smod.Fit, c: Scored
) -> dict[str, tuple[float, float, float]]:
    """Each rule of ``PICKED``: the expected truth (crash = 0) of its choice among the
    candidates EI left open, its chance of picking one that crashes, and its climb (the
    expected gain over the incumbent's truth, none where it is below)."""
    x, scores, t, mu, sd = c.x, c.scores, c.t, c.mu, c.sd
    idx = np.flatnonzero(c.open)
    bad = c.bad.astype(float)
    up = np.maximum(t - c.incumbent, 0.0)
    penalty = np.where(c.open, self._risk * np.log1p(-np.minimum(c.p, 0.999)), -np.inf)

    def argmax(v: np.ndarray) -> tuple[float, float, float]:
        j = int(np.argmax(v + penalty))
        return float(t[j]), float(bad[j]), float(up[j])

    def weighted(w: np.ndarray, rows: np.ndarray) -> tuple[float, float, float]:
        w = w / w.sum()
        return float(w @ t[rows]), float(w @ bad[rows]), float(w @ up[rows])

    out: dict[str, tuple[float, float, float]] = {}
    for rule in PICKED:
        if rule == "exploit":
            out[rule] = argmax(mu)
        elif rule.startswith("ucb"):
            out[rule] = argmax(mu + float(rule[3:]) * sd)
        elif rule.startswith("top"):
            top = idx[np.argsort(scores[idx])[::-1][: int(rule[3:])]]
            out[rule] = weighted(np.exp(scores[top] - scores[top].max()), top)
        elif rule == "uniform":
            out[rule] = weighted(np.ones(len(idx)), idx)
        elif rule == "ts":
            m, cov = _joint(fit.gp, x)
            jitter = 1e-10 * max(float(np.mean(np.diag(cov))), 1e-12)
            for _ in range(8):
                try:
                    chol = np.linalg.cholesky(cov + jitter * np.eye(len(cov)))
                    break
                except np.linalg.LinAlgError:
                    jitter *= 100.0
            got = []
            for d in range(DRAWS):
                z = np.random.default_rng([len(h.ran), d, 11]).standard_normal(len(cov))
                got.append(argmax(m + chol @ z))
            out[rule] = tuple(statistics.mean(g[k] for g in got) for k in range(3))  # type: ignore[assignment]
    return out


def _auc(p: np.ndarray, bad: np.ndarray) -> float:
    """The chance a crashing row has a larger ``p`` than a running one (ties: half); NaN
    where either kind is missing."""
    from scipy.stats import rankdata

    n1, n0 = int(bad.sum()), int(len(bad) - bad.sum())
    if n1 == 0 or n0 == 0:
        return math.nan
    r = rankdata(p)
    return float((r[bad].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _region(c: dict[str, Any]) -> int | None:
    """The index of the first crash region of the landscape ``c`` falls in (None: it runs)."""
    assert SHAPE is not None
    active = fam._active(SHAPE, c)
    return next((k for k, (hit, _) in enumerate(SHAPE.crashes) if hit(active)), None)


def _crash(self: smod.Sampler, h: smod.History, fit: smod.Fit, c: Scored) -> dict[str, Any]:
    """The crash model against the truth on the candidates, and the oracle's pick (argmax of
    EI x 1[no crash in truth]); see the module's ``--crash``."""
    pool, scores, x, p, bad, t, open_ = c.pool, c.scores, c.x, c.p, c.bad, c.t, c.open
    incumbent = c.incumbent
    level = float(np.max(fit.gp.predict(encode(fit.params, h.ran))[0]))
    ei = np.log(expected_improvement(c.mu, c.sd, level) + 1e-12)
    j = int(np.argmax(scores))
    seen = {_region(c) for c, sig in h.launches if sig is not None} - {None}
    regions = [_region(c) if b else None for c, b in zip(pool, bad, strict=True)]
    known = np.array([r in seen for r in regions]) & bad
    out: dict[str, Any] = {
        "auc pool": _auc(p, bad),
        "brier pool": float(np.mean((p - bad) ** 2)),
        "auc open": _auc(p[open_], bad[open_]),
        "share crashes": float(bad.mean()),
        "share open crashes": float(bad[open_].mean()) if open_.any() else math.nan,
        "p seen": float(p[known].mean()) if known.any() else math.nan,
        "p unseen": float(p[bad & ~known].mean()) if (bad & ~known).any() else math.nan,
        "p runs": float(p[~bad].mean()) if (~bad).any() else math.nan,
        "unseen share": float((bad & ~known).sum() / bad.sum()) if bad.any() else math.nan,
        "next": (float(p[j]), bool(bad[j])),
    }
    top = np.argsort(scores)[::-1][:TOP]
    out["auc top"] = _auc(p[top], bad[top])
    out["top crashes"] = float(bad[top].mean())
    # P(crash) split by term: the novel pairs' alone, the regions' alone (what the product
    # leaves once the pairs' escape is divided out), their product as now; and the count of
    # novel pairs; for runners and crashes, among EI's best and over the pool
    k = fit.crashes.novel(x)
    pn = 1.0 - (1.0 - fit.crashes.novel_rate) ** k
    pr = 1.0 - (1.0 - p) / (1.0 - pn)
    among = np.zeros(len(x), bool)
    among[top] = True
    for where, rows in (("top", among), ("pool", np.ones(len(x), bool))):
        for kind, sel in (("runs", rows & ~bad), ("crashes", rows & bad)):
            out[f"terms {where} {kind}"] = tuple(
                float(v[sel].mean()) if sel.any() else math.nan for v in (pn, pr, p, k)
            )
    for name, where, by in (
        ("oracle", ~bad, ei),
        ("oracle open", ~bad & open_, ei),
        ("veto", ~bad & open_, scores),
    ):
        if where.any():
            k = int(np.argmax(np.where(where, by, -np.inf)))
            out[name] = (float(t[k]), max(0.0, float(t[k]) - incumbent))
        else:  # every candidate crashes: the oracle launches none (the incumbent stays)
            out[name] = (0.0, 0.0)
    return out


def _model(
    self: smod.Sampler, h: smod.History, rng: np.random.Generator, fit: smod.Fit
) -> dict[str, Any] | None:
    """``Sampler._model``, its candidates scored as it scores them (``_scored``), observed."""
    scored = self._scored(h, rng, fit)
    if scored is None:
        return None
    incumbent, pool, scores = scored
    chosen = pool[int(np.argmax(scores))]
    # -- observed, nothing above depends on it --
    c = Scored.of(fit, pool, scores, incumbent)
    mu, sd, truths, open_ = c.mu, c.sd, c.truths, c.open
    ok = [i for i, t in enumerate(truths) if t is not None]
    greedy = int(np.argmax(np.where(open_, mu, -np.inf)))
    j = int(np.argmax(scores))
    pred_sd = math.sqrt(float(sd[j]) ** 2 + fit.gp.noise**2)
    exploit = int(
        np.argmax(np.where(open_, mu + self._risk * np.log1p(-np.minimum(c.p, 0.999)), -np.inf))
    )
    probes = [
        _probe(self, h, incumbent, 500, near=False),
        _probe(self, h, incumbent, 200, near=True),
    ]
    STEPS.append(
        Step(
            _ranks(fit.gp, fit.params, probes[0]),
            _ranks(fit.gp, fit.params, probes[1]),
            _rho([float(mu[i]) for i in ok], [truths[i] for i in ok]),  # type: ignore[misc]
            truths[j],
            truths[greedy],
            max((truths[i] for i in ok), default=0.0),  # type: ignore[type-var]
            _truth(incumbent),
            dict(chosen),
            float(mu[j]),
            pred_sd,
            exploit=truths[exploit],
            alt=(
                _alternatives(self, h, fit, incumbent, probes, pool, truths)
                if any(m in ALTERNATIVES for m in MODELS)
                else {}
            ),
            rank=_surrogates(self, h, fit, probes, pool, truths, open_),
            picks=_picks(self, h, fit, c),
            crash=_crash(self, h, fit, c) if CRASH else {},
        )
    )
    return chosen


def _calibrate(steps: list[Step], launches: list[Any]) -> None:
    """Each step's ``inside``: its proposal's launch (the first of that configuration after
    the screen) measured inside the 90% interval (crashed or never launched: None)."""
    model = [la for la in launches if la.kind == "search" and la.source == "model"]
    for st, la in zip(steps, model, strict=False):
        if key(la.config) != key(st.config):
            continue  # a proposal the driver did not launch as planned
        if la.crashed or la.value is None or la.value <= 0:
            continue
        st.inside = abs(math.log(la.value) - st.mu) <= Z90 * st.sd


def _m(xs: list[float], d: int = 2) -> str:
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return "-"
    se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):.{d}f} ({se:.{d}f})"


def _study_means(rows: list[list[Step]], f: Any) -> list[float]:
    """Per study, the mean of ``f`` over its steps (None left out); SE is over studies."""
    out = []
    for steps in rows:
        xs = [v for st in steps if (v := f(st)) is not None and not math.isnan(v)]
        if xs:
            out.append(statistics.mean(xs))
    return out


def _surrogate_table(per_family: dict[str, list[list[Step]]]) -> str:
    """Rho (random 500 / near 200 / candidates) and pick per surrogate and family; the
    ensemble's partner named ``ensemble`` is the one whose own rho near the incumbent is the
    higher, averaged over the tuning families (when both ran)."""
    names = [m for m in SURROGATES if m in MODELS]
    out = [
        "Surrogates on the same launches and candidates (one step, not run on); pick: argmax "
        "of mean x P(no crash)^risk among the open candidates:",
        "| family | model | rho random | rho near | rho pool | pick % | pick crashes |",
        "| --- " * 7 + "|",
    ]
    near: dict[str, float] = {}
    for m in ("extratrees", "gp_ard"):
        xs = [
            statistics.mean(_study_means(per_family[f], lambda s, m=m: s.rank[m][1]))
            for f in TUNING
            if f in per_family and m in names
        ]
        if len(xs) == len(TUNING):
            near[m] = statistics.mean(xs)
    chosen = f"ensemble[{max(near, key=near.__getitem__)}]" if len(near) == 2 else None
    for family, rows in per_family.items():
        for name in names:
            cells = [_m(_study_means(rows, lambda s, k=k, n=name: s.rank[n][k])) for k in range(3)]
            cells.append(_m(_study_means(rows, lambda s, n=name: s.rank[n][3])))
            cells.append(_m(_study_means(rows, lambda s, n=name: float(s.rank[n][3] is None))))
            label = f"{name} = ensemble" if name == chosen else name
            out.append(f"| {family} | {label} | " + " | ".join(cells) + " |")
    if near:
        out.append(
            "rho near on the tuning families "
            + ", ".join(f"{m} {v:.3f}" for m, v in near.items())
            + (f": ensemble = {chosen}" if chosen else "")
        )
    return "\n".join(out)


def _zero(v: float | None) -> float:
    return 0.0 if v is None else v


def _pick_table(per_family: dict[str, list[list[Step]]]) -> str:
    """Per family, the truth (crash = 0) of each rule's choice, mean over studies of each
    study's mean over its steps (SE over studies); then each rule minus EI's, paired by step;
    then how often each rule picks a candidate that crashes."""
    base: list[tuple[str, Any]] = [
        ("incumbent", lambda s: _zero(s.incumbent)),
        ("EI", lambda s: _zero(s.proposal)),
    ]
    rules = base + [(r, lambda s, r=r: s.picks[r][0]) for r in PICKED]
    rules.append(("best candidate", lambda s: s.oracle))
    head = "| family | " + " | ".join(n for n, _ in rules) + " |"
    line = "| --- " * (len(rules) + 1) + "|"
    out = [
        "Pick rules on the same candidates at the same steps (one step, not a search); truth of "
        "the choice, % of the optimum, crash = 0:",
        head,
        line,
    ]
    for family, rows in per_family.items():
        out.append(
            f"| {family} | " + " | ".join(_m(_study_means(rows, f)) for _, f in rules) + " |"
        )
    out += ["", "Minus EI's, paired by step (SE over studies):", head, line]
    for family, rows in per_family.items():
        cells = [_m(_study_means(rows, lambda s, f=f: f(s) - _zero(s.proposal))) for _, f in rules]
        out.append(f"| {family} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Climb: the expected max(0, truth of the choice - the incumbent's), paired by step:",
        "| family | EI | " + " | ".join(PICKED) + " | best candidate |",
        "| --- " * (len(PICKED) + 3) + "|",
    ]
    for family, rows in per_family.items():
        cells = [_m(_study_means(rows, lambda s: max(0.0, _zero(s.proposal) - _zero(s.incumbent))))]
        cells += [_m(_study_means(rows, lambda s, r=r: s.picks[r][2])) for r in PICKED]
        cells.append(_m(_study_means(rows, lambda s: max(0.0, s.oracle - _zero(s.incumbent)))))
        out.append(f"| {family} | " + " | ".join(cells) + " |")
    out += ["", "Chance the choice crashes:", "| family | EI | " + " | ".join(PICKED) + " |"]
    out.append("| --- " * (len(PICKED) + 2) + "|")
    for family, rows in per_family.items():
        cells = [_m(_study_means(rows, lambda s: float(s.proposal is None)))]
        cells += [_m(_study_means(rows, lambda s, r=r: s.picks[r][1])) for r in PICKED]
        out.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _crash_table(per_family: dict[str, list[list[Step]]]) -> str:
    """Per family: the crash model against the truth, then the oracle's pick against EI's."""

    def col(name: str, k: int | None = None) -> Any:
        return lambda s: s.crash[name] if k is None else s.crash[name][k]

    cols = [
        ("pool crashes", col("share crashes")),
        ("open crashes", col("share open crashes")),
        ("AUC pool", col("auc pool")),
        ("Brier pool", col("brier pool")),
        ("AUC open", col("auc open")),
        (f"top{TOP} crashes", col("top crashes")),
        (f"AUC top{TOP}", col("auc top")),
        ("P(crash): crashes, region seen", col("p seen")),
        ("region unseen", col("p unseen")),
        ("runs", col("p runs")),
        ("crashes in unseen regions", col("unseen share")),
        ("next: P(crash)", col("next", 0)),
        ("next crashes", lambda s: float(s.crash["next"][1])),
        ("next: Brier", lambda s: (s.crash["next"][0] - s.crash["next"][1]) ** 2),
    ]
    out = [
        "The crash model on the candidates against the truth (share of the pool that crashes, "
        "AUC and Brier score of P(crash), its mean P(crash) by kind) and on the next launch "
        "(its AUC pooled over the family's steps):",
        "| family | " + " | ".join(c for c, _ in cols) + " | next: AUC (steps) |",
        "| --- " * (len(cols) + 2) + "|",
    ]
    for family, rows in per_family.items():
        cells = [_m(_study_means(rows, f), 3 if "AUC" in c else 2) for c, f in cols]
        nxt = [st.crash["next"] for r in rows for st in r]
        auc = _auc(np.array([p for p, _ in nxt]), np.array([b for _, b in nxt]))
        cells.append(f"{auc:.2f} ({len(nxt)})")
        out.append(f"| {family} | " + " | ".join(cells) + " |")

    out += [
        "",
        f"P(crash) by term (novel pairs alone | regions alone | product) and the mean number of "
        f"novel pairs, for candidates that run and that crash in truth, among EI's {TOP} best "
        "and over the pool:",
        "| family | where | kind | P novel | P regions | P | novel pairs |",
        "| --- " * 7 + "|",
    ]
    for family, rows in per_family.items():
        for where in ("top", "pool"):
            for kind in ("runs", "crashes"):
                name = f"terms {where} {kind}"
                cells = [_m(_study_means(rows, col(name, i))) for i in range(4)]
                out.append(f"| {family} | {where} | {kind} | " + " | ".join(cells) + " |")

    def ei(k: int) -> Any:
        return lambda s: (
            _zero(s.proposal) if k == 0 else max(0.0, _zero(s.proposal) - _zero(s.incumbent))
        )

    picks = [
        ("EI", ei(0), ei(1)),
        ("oracle", col("oracle", 0), col("oracle", 1)),
        ("oracle open", col("oracle open", 0), col("oracle open", 1)),
        ("veto", col("veto", 0), col("veto", 1)),
    ]
    out += [
        "",
        "EI's pick against the oracle's (argmax of EI x 1[no crash in truth]; over the whole "
        "pool, or the candidates EI left open): truth (crash = 0) and climb (max(0, truth - "
        "the incumbent's)), then minus EI's, paired by step (SE over studies):",
        "| family | "
        + " | ".join(f"{n} truth | {n} climb" for n, _, _ in picks)
        + " | oracle - EI: truth | climb | oracle open - EI: truth | climb | veto - EI: truth"
        " | climb | oracle / EI climb |",
        "| --- " * (2 * len(picks) + 8) + "|",
    ]
    for family, rows in per_family.items():
        cells = [_m(_study_means(rows, f)) for _, a, b in picks for f in (a, b)]
        for _, a, b in picks[1:]:
            for f, g in ((a, picks[0][1]), (b, picks[0][2])):
                cells.append(_m(_study_means(rows, lambda s, f=f, g=g: f(s) - g(s))))
        climbs = [statistics.mean(_study_means(rows, f)) for f in (picks[1][2], picks[0][2])]
        cells.append(f"{climbs[0] / climbs[1]:.2f}" if climbs[1] > 0 else "-")
        out.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def table(per_family: dict[str, list[list[Step]]]) -> str:
    cols = [
        ("steps", None),
        ("rho global", lambda s: s.rho_global),
        ("rho local", lambda s: s.rho_local),
        ("rho pool", lambda s: s.rho_pool),
        ("incumbent %", lambda s: s.incumbent),
        ("proposal %", lambda s: s.proposal),
        ("proposal crashes", lambda s: float(s.proposal is None)),
        ("argmax-mean %", lambda s: s.greedy),
        ("argmax-mean crashes", lambda s: float(s.greedy is None)),
        ("exploit %", lambda s: s.exploit),
        ("exploit crashes", lambda s: float(s.exploit is None)),
        ("best candidate %", lambda s: s.oracle),
        ("regret in pool", lambda s: None if s.proposal is None else s.oracle - s.proposal),
        (
            "proposal beats incumbent",
            lambda s: (
                None
                if s.proposal is None or s.incumbent is None
                else float(s.proposal > s.incumbent)
            ),
        ),
        ("in 90% interval", lambda s: None if s.inside is None else float(s.inside)),
        ("calibrated steps", None),
    ]
    out = ["| family | " + " | ".join(c for c, _ in cols) + " |"]
    out.append("| --- " * (len(cols) + 1) + "|")
    for family, rows in per_family.items():
        cells = [f"{sum(len(r) for r in rows) / len(rows):.1f}"]
        cells += [_m(_study_means(rows, f)) for _, f in cols[1:-1]]
        cells.append(str(sum(st.inside is not None for r in rows for st in r)))
        out.append(f"| {family} | " + " | ".join(cells) + " |")
    if any(m in SURROGATES for m in MODELS):
        out += ["", _surrogate_table(per_family)]
    if PICKED:
        out += ["", _pick_table(per_family)]
    if CRASH:
        out += ["", _crash_table(per_family)]
    if not any(m in ALTERNATIVES for m in MODELS):
        return "\n".join(out)
    out += ["", "Other models on the same launches and the same candidates (one step, not run on):"]
    out.append(
        "| family | model | rho global | rho local | rho pool | its pick % | its pick crashes |"
    )
    out.append("| --- " * 7 + "|")
    for family, rows in per_family.items():
        for name in ALTERNATIVES:
            cells = [_m(_study_means(rows, lambda s, k=k, n=name: s.alt[n][k])) for k in range(3)]
            cells.append(_m(_study_means(rows, lambda s, n=name: s.alt[n][3])))
            cells.append(_m(_study_means(rows, lambda s, n=name: float(s.alt[n][3] is None))))
            out.append(f"| {family} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--families", default="curve10,ridge11,paired10,interact")
    ap.add_argument("--instances", default="0:4")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument(
        "--models",
        default=",".join(ALTERNATIVES),
        help="other models to measure on the same launches, from "
        f"{', '.join(ALTERNATIVES + SURROGATES)}",
    )
    ap.add_argument(
        "--picks",
        default="",
        help=f"other rules that pick from the same candidates ('all': {', '.join(PICKS)})",
    )
    ap.add_argument(
        "--crash", action="store_true", help="the crash model against the truth; the oracle pick"
    )
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    global SHAPE, OPT, CRASH
    CRASH = a.crash
    MODELS[:] = [m for m in a.models.split(",") if m]
    PICKED[:] = list(PICKS) if a.picks == "all" else [r for r in a.picks.split(",") if r]
    if set(PICKED) - set(PICKS):
        ap.error(f"unknown picks: {', '.join(sorted(set(PICKED) - set(PICKS)))}")
    unknown = set(MODELS) - set(ALTERNATIVES + SURROGATES)
    if unknown:
        ap.error(f"unknown models: {', '.join(sorted(unknown))}")
    from bench.search import harness

    harness.WINDOWS = 3  # as ``--prune``
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    smod.Sampler._model = _model  # type: ignore[method-assign]
    lo, hi = (int(x) for x in a.instances.split(":"))
    per_family: dict[str, list[list[Step]]] = {}
    start = time.monotonic()
    for family in a.families.split(","):
        for i in range(lo, hi):
            land = fam.family(family, i)
            SHAPE, OPT = fam.shape(family, i), land.optimum()
            for seed in range(a.seeds):
                STEPS.clear()
                launches = run_driver(land, seed, a.trials)
                s = score(land, family, "autotune", seed, launches, 0.0)
                _calibrate(STEPS, launches)
                per_family.setdefault(family, []).append(list(STEPS))
                if a.verbose:
                    print(
                        f"{land.name} seed {seed}: {s.answer:.1f}% {len(STEPS)} steps", flush=True
                    )
    print(
        f"{a.families} x instances {a.instances} x {a.seeds} seeds, {a.trials} launches, pruned; "
        f"{time.monotonic() - start:.0f} s. Means over studies (each the mean of its model "
        "steps), SE over studies; % of the optimum, noise-free."
    )
    print(table(per_family))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
