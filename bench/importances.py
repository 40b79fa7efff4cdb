"""fANOVA importances vs per-parameter marginal effects on a small quickstart-shaped study.

A synthetic study (not a measurement): ``continuous_batching`` multiplies throughput by 4,
bfloat16 adds 10%, ``mem`` does nothing, and conditional parameters exist on one side of the
switch only (``cb_block_size`` when on, ``attn_implementation`` when off), as in
search_spaces/quickstart.yaml. It prints what Optuna's fANOVA and autotune's marginal effect
say about each parameter after 12 successful trials.

    .venv/bin/python bench/importances.py
"""

from __future__ import annotations

import random
import tempfile
import warnings
from pathlib import Path

import optuna
from optuna.distributions import CategoricalDistribution as Cat
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from autotune.core.records import StudyRecord, TrialRecord
from autotune.report import insights
from autotune.study.ledger import Ledger, trial_attrs

DISTS = {
    "continuous_batching": Cat([False, True]),
    "dtype": Cat(["float32", "bfloat16"]),
    "attn_implementation": Cat(["sdpa", "eager"]),
    "cb_block_size": Cat([16, 32, 64]),
    "mem": FloatDistribution(0.45, 0.7, step=0.05),
}


def make_study(path: Path, seed: int = 3) -> optuna.Study:
    rng = random.Random(seed)
    study = optuna.create_study(storage=f"sqlite:///{path}", study_name="qs", direction="maximize")
    Ledger(study).write_study(
        StudyRecord(name="qs", metric="output_tok_s", direction="maximize", engine="transformers")
    )
    for n in range(14):
        cb = rng.random() < 0.6
        config = {
            "continuous_batching": cb,
            "dtype": rng.choice(["float32", "bfloat16"]),
            "mem": 0.45 + 0.05 * rng.randint(0, 5),
        }
        if n == 0:
            config = {
                "continuous_batching": False,
                "dtype": "float32",
                "attn_implementation": "sdpa",
                "mem": 0.5,
            }
        elif cb:
            config["cb_block_size"] = rng.choice([16, 32, 64])
        else:
            config["attn_implementation"] = rng.choice(["sdpa", "eager"])
        value = 40.0 if config["continuous_batching"] else 10.0
        value *= 1.1 if config["dtype"] == "bfloat16" else 1.0
        value += rng.random()
        crashed = n in (5, 9)
        record = TrialRecord(
            number=n,
            state="COMPLETE",
            outcome="crashed" if crashed else "ok",  # type: ignore[arg-type]
            config=config,
            baseline=n == 0,
            metrics={} if crashed else {"output_tok_s": value},
        )
        study.add_trial(
            create_trial(
                state=TrialState.PRUNED if crashed else TrialState.COMPLETE,
                value=None if crashed else value,
                params=config,
                distributions={k: DISTS[k] for k in config},
                user_attrs=trial_attrs(record),
            )
        )
    return study


def main() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        study = make_study(Path(tmp) / "study.db")
        view = Ledger(study).view()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            every = optuna.importance.get_param_importances(insights.ok_study(study, view))
        shared = insights.importances(study, view)
        effects = {e.param: e for e in insights.marginal_effects(view)}
        print(f"{'parameter':<22}{'fANOVA (all)':>14}{'fANOVA (shared)':>17}{'marginal':>10}")
        for name in DISTS:
            e = effects.get(name)
            print(
                f"{name:<22}{every.get(name, float('nan')):>14.3f}"
                f"{shared.get(name, float('nan')):>17.3f}"
                f"{(e.spread if e else float('nan')):>10.2f}"
            )
        print(insights.trust_note(view))


if __name__ == "__main__":
    main()
