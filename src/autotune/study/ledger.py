"""The study's ledger: everything autotune keeps in Optuna storage is written and read here.

Optuna storage is the study's source of truth (it survives a resume; MLflow is a view of it).
Optuna keeps states, values, parameters and constraints; everything else autotune knows
about a trial or a study is a user attribute, and this is the only module that names them.
The driver writes through a ``Ledger``; status, report, export and the progress view read
typed records (``autotune.core.records``) from it.

The attribute names are a storage format: studies written by earlier versions must still
read and resume. A ``TrialRecord`` or ``StudyRecord`` field is stored under its own name
(``_RENAMED`` lists the few older names), so a field added to a record later is stored and
read with no change here, and reads its default from older studies.
"""

from __future__ import annotations

import logging
import math
import statistics
import warnings
from collections.abc import Mapping
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from pydantic import BaseModel, ValidationError

from autotune.core.records import SkipKind, SkipRecord, StudyRecord, TrialRecord
from autotune.core.summary import Ablation, StudySummary, StudyView
from autotune.errors import StudyError
from autotune.models import Outcome
from autotune.search import CRASH, DEFAULTS, KIND, REFUSED, adapter
from autotune.space.schema import config_key
from autotune.study import evidence
from autotune.study.confirm import Confirmation, Progress
from autotune.study.deadends import DeadEnd
from autotune.study.summary import summarize

_logger = logging.getLogger(__name__)

# Trial fields that Optuna keeps itself, or that are derived on reading: never user attributes.
_FROM_OPTUNA = frozenset({"number", "state", "value", "duration_s", "constraints", "skip"})
# Skips: the reason under its old name, the kind and the repeated trial beside it.
_SKIPPED = "skipped"
_SKIP_KIND = "skip_kind"
_SKIP_SAME_AS = "skip_same_as"
# Study fields stored under another name than the field's, or derived.
_OBJECTIVE = "objective"  # {"metric": ..., "direction": ...}
_CONFIRM_PROGRESS = "confirm_progress"  # study/confirm.py Progress, while one runs
_STUDY_RENAMED = {"tracker_run": "mlflow_parent_run_id"}
_STUDY_DERIVED = frozenset({"name", "metric", "direction"})
_DEAD_ENDS = "dead_ends"  # list of DeadEnd as JSON (study/deadends.py)
# Optuna's own system attribute: the parameters an enqueued trial was asked to use.
_FIXED_PARAMS = adapter.FIXED_PARAMS
_PROPOSED_BY = KIND  # TrialRecord.proposed_by, written by the search's sampler


def is_baseline(trial: FrozenTrial) -> bool:
    """Whether a frozen trial is a launch of the baseline."""
    return bool(trial.user_attrs.get("baseline"))


def trial_attrs(record: TrialRecord) -> dict[str, Any]:
    """The user attributes that store ``record``: fields left at their default are omitted."""
    out: dict[str, Any] = {}
    defaults = TrialRecord.model_fields
    data = record.model_dump(mode="json", exclude={*_FROM_OPTUNA, "chosen"})
    for name, value in data.items():
        if getattr(record, name) == defaults[name].get_default(call_default_factory=True):
            continue
        out[name] = value
    if record.chosen:  # where the search reads it (``Ledger.mark_defaults``)
        out[DEFAULTS] = record.chosen
    if record.skip is not None:
        out[_SKIPPED] = record.skip.reason
        out[_SKIP_KIND] = record.skip.kind.value
        if record.skip.same_as is not None:
            out[_SKIP_SAME_AS] = record.skip.same_as
    return out


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _validated(model: type[BaseModel], data: dict[str, Any], what: str) -> Any:
    """``model`` from stored data; a field that no longer validates is dropped, with a warning.

    A study written by another version (or edited by hand) must still show what it can.
    """
    for _ in range(len(data) + 1):
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            bad &= set(data) - {"number", "state", "name"}
            if not bad:
                raise StudyError(f"{what}: unreadable record in the study: {exc}") from exc
            _logger.warning("%s: ignoring unreadable stored field(s) %s", what, sorted(bad))
            data = {k: v for k, v in data.items() if k not in bad}
    raise StudyError(f"{what}: unreadable record in the study")


def _skip(ua: Mapping[str, Any]) -> SkipRecord | None:
    reason = ua.get(_SKIPPED)
    if reason is None:
        return None
    kind = ua.get(_SKIP_KIND)
    if kind not in set(SkipKind):
        if kind is not None:  # a kind this version does not know: say so, read it as before
            _logger.warning("unknown skip kind %r stored; inferring it from the record", kind)
        # Written before skips had a kind: tell them apart as that version did.
        cause = ua.get("cause")
        if cause == SkipKind.CONSTRAINT:
            kind = SkipKind.CONSTRAINT
        elif str(reason).startswith("predicted crash"):
            kind = SkipKind.PREDICTED_CRASH
        elif cause == SkipKind.DEAD_END:
            kind = SkipKind.DEAD_END
        else:
            kind = SkipKind.REPEAT
    same_as = ua.get(_SKIP_SAME_AS)
    same_as = same_as if isinstance(same_as, int) and not isinstance(same_as, bool) else None
    return SkipRecord(kind=SkipKind(kind), reason=str(reason), same_as=same_as)


def decode_trial(trial: FrozenTrial, metric: str, *, study_simulated: bool = False) -> TrialRecord:
    """The record of one stored trial (``metric``: the objective, for ``value``)."""
    ua = trial.user_attrs
    data: dict[str, Any] = {
        k: v for k, v in ua.items() if k in TrialRecord.model_fields and k not in _FROM_OPTUNA
    }
    data.update(number=trial.number, state=trial.state.name)
    if data.get("outcome") is None and trial.state == TrialState.PRUNED:
        data["outcome"] = Outcome.PRUNED.value
    data.setdefault("simulated", study_simulated)
    raw = data.get("metrics")
    raw = raw if isinstance(raw, dict) else {}
    data["metrics"] = {str(k): float(v) for k, v in raw.items() if _finite(v) is not None}
    if not data.get("config"):
        data["config"] = dict(trial.params)
    skip = _skip(ua)
    if skip is not None:
        data["skip"] = skip
        if skip.kind is not SkipKind.REPEAT:
            data["cause"] = skip.kind.value
    data["constraints"] = dict(trial.constraints)
    chosen = ua.get(DEFAULTS)
    if isinstance(chosen, dict):
        data["chosen"] = chosen
    record: TrialRecord = _validated(TrialRecord, data, f"trial {trial.number}")
    value: float | None = None
    if record.outcome in (Outcome.OK, Outcome.SLO_VIOLATED):
        value = record.metrics.get(metric)
        if value is None and trial.values is not None and len(trial.values) == 1:
            value = _finite(trial.values[0])
    duration = record.timings.total_s if record.timings and record.timings.total_s else None
    if duration is None and trial.duration is not None:
        duration = trial.duration.total_seconds()
    return record.model_copy(update={"value": value, "duration_s": duration})


class Ledger:
    """Reads and writes what a study keeps, over its Optuna storage.

    Args:
        study: a loaded or created Optuna study.
    """

    def __init__(self, study: optuna.Study) -> None:
        self.study = study
        self._storage = adapter.storage(study)

    # -- the study ---------------------------------------------------------------------

    def study_record(self) -> StudyRecord:
        """What the study keeps about itself."""
        ua = self.study.user_attrs
        data: dict[str, Any] = {"name": self.study.study_name}
        for name in StudyRecord.model_fields:
            key = _STUDY_RENAMED.get(name, name)
            if name not in _STUDY_DERIVED and key in ua and ua[key] is not None:
                data[name] = ua[key]
        objective = ua.get(_OBJECTIVE)
        objective = objective if isinstance(objective, dict) else {}
        data["metric"] = str(objective.get("metric") or "value")
        direction = objective.get("direction")
        if direction not in ("maximize", "minimize"):
            minimize = self.study.directions[0] == optuna.study.StudyDirection.MINIMIZE
            direction = "minimize" if minimize else "maximize"
        data["direction"] = direction
        record: StudyRecord = _validated(StudyRecord, data, f"study {self.study.study_name!r}")
        return record

    def write_study(self, record: StudyRecord) -> None:
        """Store ``record`` on the study (its ``name`` is the study's own)."""
        self.study.set_user_attr(
            _OBJECTIVE, {"metric": record.metric, "direction": record.direction}
        )
        data = record.model_dump(mode="json", exclude=set(_STUDY_DERIVED))
        for name, value in data.items():
            if value is not None:
                self.study.set_user_attr(_STUDY_RENAMED.get(name, name), value)

    def set_tracker_run(self, run_id: str) -> None:
        """Remember the tracker's record of the study, to reuse it on resume."""
        key = _STUDY_RENAMED["tracker_run"]
        if self.study.user_attrs.get(key) != run_id:
            self.study.set_user_attr(key, run_id)

    def dead_ends(self) -> list[DeadEnd]:
        """The study's remembered permanent failures."""
        return [DeadEnd.model_validate(d) for d in self.study.user_attrs.get(_DEAD_ENDS) or []]

    def write_dead_ends(self, records: list[DeadEnd]) -> None:
        """Replace the remembered permanent failures."""
        self.study.set_user_attr(_DEAD_ENDS, [r.model_dump(mode="json") for r in records])

    # -- writing trials ----------------------------------------------------------------

    def enqueue(
        self,
        config: Mapping[str, Any],
        *,
        baseline: bool = False,
        retry_of: int | None = None,
        confirm_round: int | None = None,
        confirm_key: str | None = None,
        ablation_round: int | None = None,
        ablation_key: str | None = None,
        proposed_by: str | None = None,
    ) -> None:
        """Queue ``config`` to be proposed next (the baseline, an interrupted trial's, a
        confirmation or ablation launch, or a proposal made elsewhere, ``proposed_by``: a
        crash's test)."""
        user: dict[str, Any] = {}
        if proposed_by is not None:
            user[_PROPOSED_BY] = proposed_by
        if baseline:
            user["baseline"] = True
        if retry_of is not None:
            user["retry_of"] = retry_of
        if confirm_round is not None:
            user["confirm_round"] = confirm_round
            user["confirm_key"] = confirm_key
        if ablation_round is not None:
            user["ablation_round"] = ablation_round
            user["ablation_key"] = ablation_key
        self.study.enqueue_trial(dict(config), user_attrs=user)

    def mark_repeat(self, trial_id: int, earlier: int) -> None:
        """Mark a running trial as a relaunch of ``earlier``'s configuration (a new sample)."""
        self._storage.set_trial_user_attr(trial_id, "repeat_of", earlier)

    def write_confirmation(self, record: Confirmation) -> None:
        """Store the confirmation rounds (study/confirm.py) on the study."""
        self.study.set_user_attr("confirmation", record.model_dump(mode="json"))

    def confirmation(self) -> Confirmation | None:
        """The study's confirmation record, if it ran one."""
        raw = self.study_record().confirmation
        return Confirmation.model_validate(raw) if raw else None

    def write_confirm_progress(self, progress: Progress | None) -> None:
        """Store a confirmation under way (None: it ended)."""
        raw = progress.model_dump(mode="json") if progress is not None else None
        self.study.set_user_attr(_CONFIRM_PROGRESS, raw)

    def confirm_progress(self) -> Progress | None:
        """The confirmation under way when the study was stopped, if one was."""
        raw = self.study.user_attrs.get(_CONFIRM_PROGRESS)
        if not raw:
            return None
        try:
            return Progress.model_validate(raw)
        except ValidationError as exc:  # another version's: plan again
            _logger.warning("the stored confirmation under way is unreadable: %s", exc)
            return None

    def fixed_params(self, trial_id: int) -> dict[str, Any] | None:
        """The parameters an enqueued trial was asked to use, or None for a sampled one."""
        fixed = self._storage.get_trial_system_attrs(trial_id).get(_FIXED_PARAMS)
        return dict(fixed) if fixed is not None else None

    def is_baseline(self, trial_id: int) -> bool:
        """Whether a trial runs the space's baseline."""
        return bool(self._storage.get_trial(trial_id).user_attrs.get("baseline"))

    def proposed_by(self, trial_id: int) -> str | None:
        """The kind of proposal that made this trial (``TrialRecord.proposed_by``)."""
        kind = self._storage.get_trial(trial_id).user_attrs.get(_PROPOSED_BY)
        return kind if isinstance(kind, str) else None

    def has_defaults(self) -> bool:
        """Whether a trial already says what the engine chose (``mark_defaults``)."""
        return any(DEFAULTS in t.user_attrs for t in self.study.get_trials(deepcopy=False))

    def mark_defaults(self, trial: optuna.Trial, chosen: dict[str, Any]) -> None:
        """Tell the search's sampler what the engine chose for the settings this trial left
        unset (``search.DEFAULTS``): its screen starts there. Once per study (the driver
        asks ``has_defaults`` first)."""
        if chosen:
            trial.set_user_attr(DEFAULTS, chosen)

    def mark_crash(self, trial: optuna.Trial, signature: str) -> None:
        """Tell the search's sampler a launched trial crashed, and how (``search.CRASH``)."""
        trial.set_user_attr(CRASH, signature)

    def mark_refused(self, trial: optuna.Trial, why: str) -> None:
        """Tell the search's sampler a proposal was not launched, and why (``search.REFUSED``)."""
        trial.set_user_attr(REFUSED, why)

    def write_trial(self, trial_id: int, record: TrialRecord) -> None:
        """Store ``record`` on a trial (before it is told: a told trial takes no attribute)."""
        for key, value in trial_attrs(record).items():
            self._storage.set_trial_user_attr(trial_id, key, value)

    def heartbeat(self, trial_id: int) -> None:
        """Record that a running trial's driver is alive."""
        try:
            adapter.record_heartbeat(self._storage, trial_id)
        except Exception as exc:  # heartbeats are best effort; the lock file is the real guard
            _logger.warning("heartbeat of trial id %s not recorded: %s", trial_id, exc)

    def recover_interrupted(self, running: bool = True) -> int:
        """Trials a dead driver left: fail them and queue their configuration again.

        ``running``: also the RUNNING ones (at start, under the study lock, every RUNNING
        trial is a dead driver's). Always: trials Optuna failed for a stale heartbeat, which
        carry no outcome of ours. Queued once per trial, even if a recovery was cut short.

        Returns:
            How many configurations were queued again.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(self.study)
        trials = self.study.get_trials(deepcopy=False)
        queued = {t.user_attrs.get("retry_of") for t in trials}
        n = 0
        for t in trials:
            lost = t.state == TrialState.FAIL and "outcome" not in t.user_attrs
            if not (lost or running and t.state == TrialState.RUNNING):
                continue
            if t.state == TrialState.RUNNING:
                self._storage.set_trial_user_attr(
                    adapter.trial_id(t), "outcome", Outcome.INTERRUPTED.value
                )
                self._storage.set_trial_state_values(adapter.trial_id(t), TrialState.FAIL)
            if t.number in queued:  # a finished trial takes no new attribute: retry_of marks it
                continue
            if any(t.user_attrs.get(k) is not None for k in ("confirm_round", "ablation_round")):
                # Not queued: confirmation goes on from its last measured launch on resume
                # (a queued trial would wait for a search budget that is already spent); an
                # ablation cut short says so.
                continue
            fixed = t.system_attrs.get(_FIXED_PARAMS) or t.params
            self.enqueue(fixed, baseline=bool(t.user_attrs.get("baseline")), retry_of=t.number)
            n += 1
        return n

    # -- reading trials ----------------------------------------------------------------

    def trials(self) -> list[TrialRecord]:
        """Every trial of the study, in number order."""
        study = self.study_record()
        trials = sorted(self.study.get_trials(deepcopy=False), key=lambda t: t.number)
        return [decode_trial(t, study.metric, study_simulated=study.simulated) for t in trials]

    def trial(self, number: int) -> TrialRecord:
        """One trial by number.

        Raises:
            StudyError: no such trial.
        """
        study = self.study_record()
        for t in self.study.get_trials(deepcopy=False):
            if t.number == number:
                return decode_trial(t, study.metric, study_simulated=study.simulated)
        raise StudyError(f"study {self.study.study_name!r} has no trial {number}")

    def measured(self, config: Mapping[str, Any]) -> TrialRecord | None:
        """An earlier trial of the search that measured ``config`` (``ok`` or
        ``slo_violated``): the same configuration as ``config_key`` has it."""
        key = config_key(config)
        done = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        for t in done:
            ua = t.user_attrs
            if (
                ua.get("outcome") in (Outcome.OK, Outcome.SLO_VIOLATED)
                and ua.get("ablation_round") is None
                and config_key(ua.get("config") or {}) == key
            ):
                return decode_trial(t, self.study_record().metric)
        return None

    def verdict(self, trials: list[TrialRecord] | None = None) -> evidence.Verdict:
        """The study's answer: the winner, its gain with an interval, the noise."""
        study = self.study_record()
        trials = self.trials() if trials is None else trials
        return evidence.verdict(trials, study.metric, study.direction, self.confirmation())

    def best(
        self, trials: list[TrialRecord] | None = None, v: evidence.Verdict | None = None
    ) -> TrialRecord | None:
        """The configuration to recommend: the winner, by the median of its launches.

        Its record is that of its first launch, with ``value`` the median of its confirmation
        launches when there were any, else of its launches. When a baseline ran and nothing
        beat it beyond noise, this is the baseline. Ties go to the earlier trial.
        """
        trials = self.trials() if trials is None else trials
        v = self.verdict(trials) if v is None else v
        if v.winner is None or v.winner.first_trial is None:
            return None
        first = next((r for r in trials if r.number == v.winner.first_trial), None)
        if first is None:
            return None
        values = v.winner.confirm_values or v.winner.values
        value = float(statistics.median(values)) if values else first.value
        return first.model_copy(update={"value": value})

    def ranked(
        self, n: int, trials: list[TrialRecord] | None = None, *, answer_first: bool = True
    ) -> list[TrialRecord]:
        """Up to ``n`` configurations, best first, by the median of their launches.

        Each is its first launch's record with ``value`` that median; a configuration launched
        several times is one entry; only eligible ones (measured, never failed under the
        workload). ``answer_first``: the first is :meth:`best`, the study's answer (the
        baseline when nothing beat it beyond noise), then the others.
        """
        trials = self.trials() if trials is None else trials
        study = self.study_record()
        out: list[TrialRecord] = []
        if answer_first:
            top = self.best(trials)
            if top is None:
                return []
            out.append(top)
        for group in evidence.ranked(evidence.gather(trials, study.metric), study.direction):
            if len(out) >= n:
                break
            if group.first_trial is None or any(r.number == group.first_trial for r in out):
                continue
            first = next((r for r in trials if r.number == group.first_trial), None)
            if first is not None:
                out.append(first.model_copy(update={"value": group.median}))
        return out[:n]

    def baseline(self, trials: list[TrialRecord] | None = None) -> TrialRecord | None:
        """The baseline trial (the first ``ok`` one if it ran more than once), or None."""
        trials = self.trials() if trials is None else trials
        marked = [r for r in trials if r.baseline]
        if not marked:
            return None
        ok = [r for r in marked if r.outcome == Outcome.OK]
        return (ok or marked)[0]

    def summary(self, trials: list[TrialRecord] | None = None) -> StudySummary:
        """Counts and every headline figure of the study (``study/summary.py``)."""
        trials = self.trials() if trials is None else trials
        return summarize(self.study_record(), trials, self.confirmation())

    def view(self) -> StudyView:
        """The study read once: its record, every trial and its summary, for the readers."""
        record = self.study_record()
        trials = self.trials()
        summary = summarize(record, trials, self.confirmation())
        return StudyView(record=record, trials=trials, summary=summary)

    def write_ablation(self, record: Ablation) -> None:
        """Store the winner's ablation (``study/ablation.py``) on the study."""
        self.study.set_user_attr("ablation", record.model_dump(mode="json"))


__all__ = ["Ledger", "decode_trial", "trial_attrs"]
