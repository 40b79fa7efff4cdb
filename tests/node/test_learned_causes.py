"""The cause learnt from the corpus's words (node/learned.py): it names a failed run the rules
call ``unknown``, with the lines it rests on, the phase, the engine and that cause's hint; it
never answers ``ok``; and the dress of the log does not change it."""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import DRESSES

from autotune.diagnosis import diagnose_text
from autotune.models import Cause
from autotune.node import learned
from autotune.node.failures import api

# SGLang's early router: a batch ran the request pool dry, so its allocation came back None
# and the next line failed on it. No rule knows these words; the corpus's KV-pool logs do.
POOL_RAN_DRY = """Exception in ModelRpcServer:
Traceback (most recent call last):
  File "/app/sglang/srt/managers/router/model_rpc.py", line 160, in exposed_step
    self.forward_step()
  File "/app/sglang/srt/managers/router/model_rpc.py", line 390, in forward_fill_batch
    batch.prepare_for_extend(self.model_config.vocab_size)
  File "/app/sglang/srt/managers/router/infer_batch.py", line 210, in prepare_for_extend
    req_pool_indices_cpu = req_pool_indices.cpu().numpy()
AttributeError: 'NoneType' object has no attribute 'cpu'
"""


def test_the_rules_alone_call_it_unknown() -> None:
    failure = diagnose_text(POOL_RAN_DRY, learnt=False).failure
    assert failure is not None and failure.cause == Cause.UNKNOWN


def test_a_log_the_rules_miss_gets_the_learnt_cause_with_its_evidence() -> None:
    found = diagnose_text(POOL_RAN_DRY)
    failure = found.failure
    assert failure is not None
    assert failure.cause == Cause.KV_POOL_OOM
    assert failure.rule == "learnt"
    assert failure.evidence and all(line in POOL_RAN_DRY for line in failure.evidence)
    assert failure.phase is not None
    assert "KV" in failure.hint  # the hint of the cause named, not the unknown's
    assert failure.engine == found.engine
    assert "learnt from the corpus" in failure.message


@pytest.mark.parametrize("dress", sorted(DRESSES))
def test_the_dress_of_the_log_does_not_change_the_learnt_cause(dress: str) -> None:
    dressed = "\n".join(DRESSES[dress](POOL_RAN_DRY.splitlines()))
    failure = diagnose_text(dressed).failure
    assert failure is not None and failure.cause == Cause.KV_POOL_OOM


def test_a_model_that_says_ok_leaves_the_rules_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    leaning_ok = learned._Weights(  # every log scores highest for ok
        classes=["cuda_oom", "ok"], intercept=[0.0, 5.0], idf={"nonetype": 1.0}, coef={}
    )
    monkeypatch.setattr(learned, "_weights", lambda: leaning_ok)
    assert learned.guess(POOL_RAN_DRY.splitlines()) is None
    failure = diagnose_text(POOL_RAN_DRY).failure
    assert failure is not None and failure.cause == Cause.UNKNOWN


def test_a_healthy_log_stays_ok() -> None:
    healthy = "INFO:     Started server process [1]\nINFO:     Application startup complete.\n"
    healthy += "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
    assert diagnose_text(healthy).failure is None


def test_the_weights_ship_and_are_read_without_numpy() -> None:
    weights = learned._weights()
    assert weights is not None and "ok" in weights.classes
    assert len(weights.intercept) == len(weights.classes)


def test_a_learnt_answer_keeps_the_line_the_rules_saw_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules found the failing line but no cause in it; the model's guess rests on other
    words ("INFO loading"). The answer still shows the failing line first: the guess is
    checked against what the log says went wrong, not only against the words that weighed."""
    lines = ["INFO loading", "something went wrong: the frobnicator failed"]
    rules = diagnose_text("\n".join(lines), learnt=False).failure
    assert rules is not None and rules.cause == Cause.UNKNOWN
    weighed = learned.Guess(cause="startup_timeout", probability=0.12, evidence=["INFO loading"])
    monkeypatch.setattr(api, "guess", lambda lines, exit_code=None: weighed)
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is not None and failure.rule == "learnt"
    assert failure.message.startswith("learnt from the corpus (p=0.12): ")
    assert "the frobnicator failed" in failure.message
    assert failure.evidence[: len(rules.evidence)] == rules.evidence and lines[1] in rules.evidence


def test_a_learnt_answer_names_the_line_that_weighed_where_the_rules_found_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No line says what failed (the rules say only how the process ended): the line whose
    words weighed most is in the message."""
    lines = ["Loading model", "Capturing cuda graph bs 256", "Process exited"]
    weighed = learned.Guess(cause="cuda_graph_capture", probability=0.4, evidence=[lines[1]])
    monkeypatch.setattr(api, "guess", lambda lines, exit_code=None: weighed)
    failure = diagnose_text("\n".join(lines), exit_code=1).failure
    assert failure is not None and failure.rule == "learnt"
    assert "exited with code 1" in failure.message and lines[1] in failure.message


def test_the_learnt_answer_is_the_same_in_every_process() -> None:
    # Python salts the hash of each string per process (PYTHONHASHSEED), so a set's order
    # differs between runs: a sum of floats over a set then differs in its last digits, and
    # near ties among lines (this log's frames weigh almost alike) went one way or the other.
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    log = Path(__file__).parents[1] / "data" / "crashlogs" / "sglang-250.log"
    code = (
        "import json, sys; from pathlib import Path; from autotune.node.learned import guess; "
        "g = guess(Path(sys.argv[1]).read_text(errors='replace').splitlines()); "
        "print(json.dumps([g.cause, repr(g.probability), g.evidence]))"
    )
    answers = set()
    for seed in ("0", "58"):  # two salts whose set orders gave two answers before
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code, str(log)], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        answers.add(out.stdout)
    assert len(answers) == 1, answers
    assert json.loads(answers.pop())[0] == "cuda_graph_capture"
