"""The corpus of real crash logs: its labels are sound, its split is the recorded one, and
``autotune diagnose`` is accurate on it, never ``ok`` for a failed run, and unmoved by the
dress a log comes in (compose prefixes, timestamps, ANSI colour, JSON lines, two ranks).

The accuracy floors are real measurements on real data, a little below what
``bench/diagnosis.py`` prints (docs/benchmarks.md has the figures): a rule change that breaks
a family fails here. Logs are classified in this process, as ``autotune diagnose`` does.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from tests.node import corpus_helpers as corpus
from tests.node.corpus_helpers import Verdict

from autotune.models import Cause, Phase

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "crashlogs"
FIRST, SECOND, THIRD, FOURTH = "2026-11-30", "2026-12-06", "2026-12-06b", "2026-12-06c"
FIFTH, SIXTH, SEVENTH = "2026-12-06d", "2026-12-06e", "2026-12-06f"
EIGHTH, NINTH, TENTH = "2026-12-06g", "2026-12-06h", "2026-12-06i"
ELEVENTH, TWELFTH, THIRTEENTH = "2026-12-06j", "2026-12-06k", "2026-12-06l"
FOURTEENTH, FIFTEENTH, SIXTEENTH = "2026-12-06m", "2026-12-06n", "2026-12-06o"
SEVENTEENTH, EIGHTEENTH, NINETEENTH = "2026-12-06p", "2026-12-06q", "2026-12-06r"
TWENTIETH, TWENTY_FIRST, TWENTY_SECOND = "2026-12-06s", "2026-12-06t", "2026-12-07u"
TWENTY_THIRD, TWENTY_FOURTH, TWENTY_FIFTH = "2026-12-07v", "2026-12-07w", "2026-12-07x"
TWENTY_SIXTH, TWENTY_SEVENTH, TWENTY_EIGHTH = "2026-12-07y", "2026-12-07z", "2026-12-07za"
TWENTY_NINTH, THIRTIETH, THIRTY_FIRST = "2026-12-07zb", "2026-12-07zc", "2026-12-07zd"
# Batch p, the second blind set, was read whole before it joined (MANIFEST.md), so all of it
# is tuning. Three of its logs stop in healthy serving lines before a crash only the thread
# names; nothing in them shows a failure, so their `ok` is pinned by id, not fixed by a rule.
# Batch q, the third blind set, joined the same way (read whole, all tuning); one of its logs,
# sglang-096, is the same kind (healthy prefill lines; the OOM is past the cut).
SILENT_CRASHES = {"sglang-088", "sglang-089", "llamacpp-032", "sglang-096"}
# Batch r's tuning part answered `ok` for two failed runs at first sight (main's code), both
# read since by a mechanism: a server's own 5xx answer, a server that refused every request.
# Batch s's tuning part answered `ok` for two failed runs at first sight (main's code, 25a811c):
# healthy decode lines (token usage 0.94) and a healthy start with one request served, the
# failure past the cut in both (MANIFEST.md); nothing in them shows it, so they are pinned.
SILENT_CRASHES |= {"sglang-157", "sglang-158"}
# Batch t's tuning part answered `ok` for one failed run at first sight (main's code, 83b9ada):
# lmdeploy-039, a request's end with reason "error" before a 200 answer, under a journal stamp
# in a CJK locale; read since (fifteenth round), it is pinned no more.
BLIND_BATCHES = {SEVENTEENTH, EIGHTEENTH}
# Batch r, the fourth blind set, joined split by the URL rule before any log of it was read
# (thirteenth round); like p and q it stays out of the whole-corpus floors, which keep to the
# batches before p, and has floors of its own.
# Batch s, the fifth blind set, joined the same way in the fourteenth round; batch t, the sixth,
# in the fifteenth; batch u, the seventh, for the learnt cause (issue-51-u), no rule written
# from it; batch v, the eighth, the same (issue-51-v); batch w, the ninth, too (issue-51-w);
# batch x, the tenth (issue-51-x), after which u to x's tuning parts are rule data; batch y,
# the eleventh (issue-51-y), whose tuning part is rule data too, and batches z to zd, the
# twelfth to sixteenth (issue-51-z, issue-51-za, issue-51-zb, issue-51-zc, issue-51-zd), the
# same.
LATE_BATCHES = BLIND_BATCHES | {NINETEENTH, TWENTIETH, TWENTY_FIRST, TWENTY_SECOND}
LATE_BATCHES |= {TWENTY_THIRD, TWENTY_FOURTH, TWENTY_FIFTH, TWENTY_SIXTH, TWENTY_SEVENTH}
LATE_BATCHES |= {TWENTY_EIGHTH, TWENTY_NINTH, THIRTIETH, THIRTY_FIRST}
# Held-out parts never opened, not even their misses: a failing floor does not name their logs.
SEALED = {SIXTEENTH, NINETEENTH, TWENTIETH, TWENTY_FIRST, TWENTY_SECOND, TWENTY_THIRD}
SEALED |= {TWENTY_FOURTH, TWENTY_FIFTH, TWENTY_SIXTH, TWENTY_SEVENTH, TWENTY_EIGHTH, TWENTY_NINTH}
SEALED |= {THIRTIETH, THIRTY_FIRST}
# Measured 2026-12-06 (bench/diagnosis.py, issue 51 third round, commit aec6f41): tuning
# 95.7%, held out 78.5%. Per batch, held out: 48/51 (2026-11-30), 26/30 (2026-12-06), 9/12 (b),
# 2/7 (c), 15/17 (d), 5/7 (e), 13/16 (f), 9/14 (g), 7/10 (h), 5/7 (i), 4/7 (j), 3/8 (k). Batches
# b to k were each first measured fresh, before anything learnt from them: 14/29, 11/20, 34/45,
# then 20/32, 28/38, 25/40, 16/21, 13/23, 16/24 and 10/16 (MANIFEST.md). The held-out floor
# went from 0.8 to 0.75 when the fresh batches j and k were added, not because a rule changed.
# Fourth round (issue-51-r5): batch l first measured fresh at 13/25 (7/13, 6/12); after this
# round's changes, made from its tuning part and family words, tuning 95.9%, held out 78.3%,
# batch l 12/13 and 8/12. Fifth round (issue-51-r6): batch m first measured fresh at 25/34
# (16/21, 9/13); after the round's changes tuning 95.9%, held out 79.1%, batch m 19/21, 10/13.
# Seventh round (issue-51-r7): batch n (26 logs, mostly explicit error lines) first measured
# fresh at 25/26 (tuning 19/19, held out 6/7); its floors sit a little below that.
# Eighth round (issue-51-r8): the first blind set joined as batch o (72 short excerpts, many
# labelled from the thread's title, not from the log): first measured at 18/46 and 10/26, which
# took the whole corpus to tuning 384/427 (89.9%), held out 183/244 (75.0%). After the round's
# mechanisms (each tested with lines of its own): tuning 393/427 (92.0%), held out 183/244,
# batch o 27/46 and 10/26. The whole-corpus floors went down with batch o, not with a rule.
# Tenth round (issue-51-r10): the second blind set joined as batch p, all tuning (read whole
# first), first measured at 33/81; the whole-corpus floors keep to the batches before it
# (tuning 393/427, held out 183/244, unmoved by the round) and batch p has its own floor:
# 43/81 after the round's mechanisms (each tested with lines of its own).
# Eleventh round (issue-51-r11): the third blind set joined as batch q, all tuning (read whole),
# first measured at 39/83 with main's code (b2db39e); 50/83 after the round's mechanisms, which
# left every held-out answer as it was (183/244) and the batches before p at 394/427.
# Thirteenth round (issue-51-r13): the fourth blind set joined as batch r, split by the URL rule
# (58 tuning, 28 held out), first measured with main's code (f2b4038) at 32/58 and 11/28; after
# the round's mechanisms (each tested with lines of its own) 38/58 and 13/28, no held-out answer
# worse; the batches before p at 394/427 and 184/244.
# Fourteenth round (issue-51-r14): the fifth blind set joined as batch s, split by the URL rule
# (50 tuning, 35 held out), first measured with main's code (25a811c) at 21/50 and 14/35; after
# the round's mechanisms (each tested with lines of its own) 26/50 and 15/35, no held-out answer
# worse (batch r's held out 14/28, the batches before p at 394/427 and 185/244).
# Fifteenth round (issue-51-r15): the sixth blind set joined as batch t, split by the URL rule
# (53 tuning, 28 held out), first measured with main's code (83b9ada) at 18/53 and 10/28; after
# the round's mechanisms (each tested with lines of its own) 22/53 and 10/28, no held-out answer
# moved (the batches before p at 394/427 and 185/244).
# Issue 51, learnt cause (issue-51-u): the seventh blind set joined as batch u, split by the URL
# rule (52 tuning, 28 held out, the held-out part sealed), first measured with main's code
# (85a2099, rules and the learnt cause) at 21/52 (two `ok` for a failed run) and 9/28 (none);
# its floors sit just below those figures, as batch t's did.
# Issue 51 (issue-51-v): the eighth blind set joined as batch v, split by the URL rule (46
# tuning, 34 held out, the held-out part sealed), first measured with main's code (0cf0a9a,
# rules and the learnt cause) at 30/46 and 21/34 (one `ok` for a failed run in each); its
# floors sit just below those figures.
# Issue 51 (issue-51-w): the ninth blind set joined as batch w, split by the URL rule (52
# tuning, 28 held out, the held-out part sealed), first measured with main's code (9128fb3,
# rules and the learnt cause retrained with v) at 26/52 and 12/28 (one `ok` for a failed run
# in each); its floors sit just below those figures.
# Issue 51 (issue-51-x): the tenth blind set joined as batch x, split by the URL rule (51
# tuning, 29 held out, the held-out part sealed), first measured with main's code (3326e20,
# rules and the learnt cause) at 17/51 (two `ok` for a failed run) and 13/29 (four); its
# floors sit just below those figures.
# Issue 51 (issue-51-y): the eleventh blind set joined as batch y, split by the URL rule (57
# tuning, 22 held out, the held-out part sealed), first measured with main's code and the
# lead's kv_pool decision (2aab408) at 16/57 (one `ok` for a failed run) and 6/22 (none); its
# floors sit just below those figures.
# Issue 51 (issue-51-z): the twelfth blind set joined as batch z, split by the URL rule (54
# tuning, 26 held out, the held-out part sealed), first measured with main's code (b4d0e63, the
# code of e676abb) at 21/54 (one `ok` for a failed run) and 10/26 (none); its floors sit just
# below those figures.
# Issue 51 (issue-51-za): the thirteenth blind set joined as batch za, split by the URL rule (52
# tuning, 30 held out, the held-out part sealed), first measured with main's code (33b56fa, the
# diagnosis code of 10cf246) at 21/52 (one `ok` for a failed run) and 12/30 (one); its floors
# sit just below those figures.
# Issue 51 (issue-51-zb): the fourteenth blind set joined as batch zb, split by the URL rule (50
# tuning, 32 held out, the held-out part sealed), first measured with main's code (1155af8) at
# 29/50 (no `ok` for a failed run) and 12/32 (one); its floors sit just below those figures.
# Issue 51 (issue-51-zc): the fifteenth blind set joined as batch zc, split by the URL rule (50
# tuning, 32 held out, the held-out part sealed), first measured with main's code (ec9da94, the
# diagnosis code of d8b5390) at 19/50 (three `ok` for a failed run) and 10/32 (none); its
# floors sit just below those figures.
# Issue 51 (issue-51-zd): the sixteenth blind set joined as batch zd, split by the URL rule (50
# tuning, 32 held out, the held-out part sealed), first measured with main's code (589649d, the
# diagnosis code of b8329e0) at 28/50 (one `ok` for a failed run) and 18/32 (none); its floors
# sit just below those figures.
FLOORS = {
    ("tuning", None): 0.91,
    ("heldout", None): 0.74,
    ("heldout", SECOND): 0.83,
    ("tuning", THIRD): 0.9,
    ("heldout", THIRD): 0.5,
    ("tuning", FOURTH): 0.9,
    ("heldout", FOURTH): 0.28,
    ("tuning", FIFTH): 0.95,
    ("heldout", FIFTH): 0.8,
    ("tuning", SIXTH): 0.88,
    ("heldout", SIXTH): 0.7,
    ("tuning", SEVENTH): 0.85,
    ("heldout", SEVENTH): 0.65,
    ("tuning", EIGHTH): 0.85,
    ("heldout", EIGHTH): 0.6,
    ("tuning", NINTH): 0.9,
    ("heldout", NINTH): 0.6,
    ("tuning", TENTH): 0.85,
    ("heldout", TENTH): 0.6,
    ("tuning", ELEVENTH): 0.9,
    ("heldout", ELEVENTH): 0.5,
    ("tuning", TWELFTH): 0.85,
    ("heldout", TWELFTH): 0.35,
    ("tuning", THIRTEENTH): 0.9,
    ("heldout", THIRTEENTH): 0.6,
    ("tuning", FOURTEENTH): 0.85,
    ("heldout", FOURTEENTH): 0.7,
    ("tuning", FIFTEENTH): 0.95,
    ("heldout", FIFTEENTH): 0.8,
    ("tuning", SIXTEENTH): 0.55,
    ("heldout", SIXTEENTH): 0.35,
    ("tuning", SEVENTEENTH): 0.5,
    ("tuning", EIGHTEENTH): 0.55,
    ("tuning", NINETEENTH): 0.6,
    ("heldout", NINETEENTH): 0.4,
    ("tuning", TWENTIETH): 0.5,
    ("heldout", TWENTIETH): 0.42,
    ("tuning", TWENTY_FIRST): 0.4,
    ("heldout", TWENTY_FIRST): 0.35,
    ("tuning", TWENTY_SECOND): 0.4,
    ("heldout", TWENTY_SECOND): 0.3,
    ("tuning", TWENTY_THIRD): 0.65,
    ("heldout", TWENTY_THIRD): 0.6,
    ("tuning", TWENTY_FOURTH): 0.48,
    ("heldout", TWENTY_FOURTH): 0.4,
    ("tuning", TWENTY_FIFTH): 0.32,
    ("heldout", TWENTY_FIFTH): 0.42,
    ("tuning", TWENTY_SIXTH): 0.27,
    ("heldout", TWENTY_SIXTH): 0.27,
    ("tuning", TWENTY_SEVENTH): 0.38,
    ("heldout", TWENTY_SEVENTH): 0.38,
    ("tuning", TWENTY_EIGHTH): 0.40,
    ("heldout", TWENTY_EIGHTH): 0.39,
    ("tuning", TWENTY_NINTH): 0.57,
    ("heldout", TWENTY_NINTH): 0.37,
    ("tuning", THIRTIETH): 0.37,
    ("heldout", THIRTIETH): 0.31,
    ("tuning", THIRTY_FIRST): 0.55,
    ("heldout", THIRTY_FIRST): 0.56,
}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    with (CORPUS / "labels.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def verdicts() -> list[Verdict]:
    return corpus.diagnose_all()


def test_labels_are_well_formed(rows: list[dict[str, str]]) -> None:
    assert len(rows) >= 150
    causes = {c.value for c in Cause} | {"ok"}
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    for row in rows:
        assert (CORPUS / f"{row['id']}.log").read_text(encoding="utf-8").strip(), row["id"]
        assert re.match(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$", row["url"])
        assert row["cause"] in causes, row
        assert row["phase"] in {p.value for p in Phase}, row
        assert row["split"] in {"tuning", "heldout"}, row
        assert row["added"] in {
            FIRST,
            SECOND,
            THIRD,
            FOURTH,
            FIFTH,
            SIXTH,
            SEVENTH,
            EIGHTH,
            NINTH,
            TENTH,
            ELEVENTH,
            TWELFTH,
            THIRTEENTH,
            FOURTEENTH,
            FIFTEENTH,
            SIXTEENTH,
            SEVENTEENTH,
            EIGHTEENTH,
            NINETEENTH,
            TWENTIETH,
            TWENTY_FIRST,
            TWENTY_SECOND,
            TWENTY_THIRD,
            TWENTY_FOURTH,
            TWENTY_FIFTH,
            TWENTY_SIXTH,
            TWENTY_SEVENTH,
            TWENTY_EIGHTH,
            TWENTY_NINTH,
            THIRTIETH,
            THIRTY_FIRST,
        }, row
        # The exit status where the thread gives it (-9: killed by SIGKILL), passed to diagnose.
        assert re.fullmatch(r"(-?\d+)?", row.get("exit_code", "")), row
    files = {p.stem for p in CORPUS.glob("*.log")}
    assert files == set(ids), "every log has a label and every label a log"
    # Whether the log itself shows its cause, where the blind set that brought it said so.
    with (CORPUS / "in_log.csv").open(encoding="utf-8", newline="") as fh:
        in_log = list(csv.DictReader(fh))
    assert {r["in_log"] for r in in_log} <= {"yes", "no"}
    assert len({r["id"] for r in in_log}) == len(in_log) and {r["id"] for r in in_log} <= set(ids)


def test_corpus_spans_the_engines_and_families(rows: list[dict[str, str]]) -> None:
    second = [r for r in rows if r["added"] == SECOND]
    assert len(second) >= 90
    assert len({r["engine"] for r in second}) >= 8
    engines = Counter(r["engine"] for r in rows)
    for engine in ("sglang", "vllm", "trtllm", "tgi", "transformers", "torch-distributed"):
        assert engines[engine] >= 4, engine
    causes = Counter(r["cause"] for r in rows)
    for cause in (
        "kv_pool_oom",
        "cuda_oom",
        "cuda_graph_capture",
        "arch_unsupported",
        "model_unsupported",
        "watchdog_timeout",
        "host_oom",
        "startup_timeout",
        "nccl_error",
        "invalid_argument",
        "import_error",
        "runtime_crash",
    ):
        assert causes[cause] >= 4, cause


def test_split_is_the_recorded_deterministic_one(rows: list[dict[str, str]]) -> None:
    """First batch: per cause, the 38% of ids first in SHA-256 order are held out. Later
    batches: a log is held out when its source URL hashes below 35 in 100 (MANIFEST.md); each
    rule was fixed before any rule was written from its batch. Batches p and q were read whole
    before they joined: all tuning."""
    by_cause: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row["added"] == FIRST:
            by_cause[row["cause"]].append(row["id"])
    expected = {}
    for ids in by_cause.values():
        ids.sort(key=lambda i: hashlib.sha256(i.encode()).hexdigest())
        k = round(0.38 * len(ids))
        expected.update({i: ("heldout" if n < k else "tuning") for n, i in enumerate(ids)})
    for row in rows:
        if row["added"] in BLIND_BATCHES:
            expected[row["id"]] = "tuning"
        elif row["added"] != FIRST:
            held = int(hashlib.sha256(row["url"].encode()).hexdigest()[:8], 16) % 100 < 35
            expected[row["id"]] = "heldout" if held else "tuning"
    assert {r["id"]: r["split"] for r in rows} == expected
    # The held-out share is of the logs whose split was chosen before they were read: the
    # blind batches joined already read (all tuning), so they are no part of that choice.
    chosen = [r for r in rows if r["added"] not in BLIND_BATCHES]
    share = sum(r["split"] == "heldout" for r in chosen) / len(chosen)
    assert share >= 0.30


@pytest.mark.parametrize(("split", "batch"), sorted(FLOORS, key=str))
def test_accuracy_floor(verdicts: list[Verdict], split: str, batch: str | None) -> None:
    chosen = [v for v in verdicts if v.split == split and batch in (None, v.batch)]
    if batch is None:  # the whole corpus as it stood before batch p (see FLOORS)
        chosen = [v for v in chosen if v.batch not in LATE_BATCHES]
    cause_acc, phase_acc = corpus.accuracy(chosen)
    misses = [f"{v.id}: want {v.cause} got {v.got_cause}" for v in chosen if v.got_cause != v.cause]
    if split == "heldout" and batch in SEALED:
        misses = [f"{len(misses)} misses (sealed)"]
    assert cause_acc >= FLOORS[(split, batch)], misses
    right = sum(v.got_cause == v.cause for v in chosen)
    # A phase figure over a handful of logs is noise. The whole splits keep 0.8; a fresh batch's
    # logs are mostly issue excerpts with few progress lines (measured 67% and 70% on the fifth
    # and sixth), so a batch is held to 0.6; batch l (25 short excerpts: single error lines,
    # NCCL transport errors and killed torchrun jobs with no progress line) measured 58% on its
    # tuning part; in the fifth round a one-line log of it (a Triton MLIR assertion, no phase in
    # it) became right in cause, so 7 of 13 right causes have the right phase: held to 0.5.
    # Batch n's tuning part (many one-line excerpts: a title's error line alone, no progress
    # line to place it) measured 11/19 = 57.9% at first sight: held to 0.5 as well.
    # Batch s's held-out part (sealed) measured 8/14 = 57.1% at first sight (9/15 after the
    # fourteenth round): held to 0.5.
    # Batch t's held-out part (sealed) measured 5/10 at first sight: held to 0.5; its tuning
    # part 11/18 at first sight, 13/22 after the fifteenth round (shortfin-001 and vllm-286
    # right in cause, their phase a guess of the thread's): held to 0.5 as well.
    # Batch o's held-out part (sealed): with the learnt cause for the rules' `unknown` (issue 51,
    # node/learned.py) 12 causes right, not 10, and 7 of them in the right phase (58%): held
    # to 0.5. Batch w's held-out part (sealed): 7 of its 12 right causes in the right phase at
    # first sight (58%): held to 0.5. Batch zb's held-out part (sealed): 6 of its 12 right
    # causes in the right phase at first sight: held to 0.5; batch zd's (sealed) 9 of its 18.
    if right >= 10:
        low = batch in (THIRTEENTH, FIFTEENTH, TWENTY_FIRST) or (batch, split) in (
            (TWENTIETH, "heldout"),
            (SIXTEENTH, "heldout"),
            (TWENTY_FOURTH, "heldout"),
            (TWENTY_NINTH, "heldout"),
            (THIRTY_FIRST, "heldout"),
        )
        assert phase_acc >= (0.8 if batch is None else 0.5 if low else 0.6)


def assert_no_new_ok(verdicts: list[Verdict]) -> None:
    """One held-out log of batch o (the first blind set) was answered `ok` at first sight; the
    held-out part is never opened to write a rule, so that one is pinned, not fixed. Batch r's
    held-out part is sealed (not even its misses are named), so it is held by count: none; batch
    s's the same, at the two it had at first sight, batch t's at the one it had, batch u's at
    none, batch v's and w's at the one each had, batch x's at four, batch y's and z's at none,
    batch za's and zb's at one, batch zc's and zd's at none. Batch u's tuning part answered `ok`
    for two failed runs at first sight, batch v's and w's for one each, batch x's for two, batch
    y's, z's and za's for one each, batch zb's for none, batch zc's for three, batch zd's for
    one; they joined unread, so they too are held by count, at two, one, one, two, one, one, one,
    none, three and one. Any other `ok` for a failed run, anywhere, fails here (but the pinned
    SILENT_CRASHES)."""
    sealed = [v for v in verdicts if v.batch in SEALED and v.split == "heldout"]
    assert corpus.ok_on_failed([v for v in sealed if v.batch == SIXTEENTH]) <= 1
    assert corpus.ok_on_failed([v for v in sealed if v.batch == NINETEENTH]) == 0
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTIETH]) <= 2
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_FIRST]) <= 1
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_SECOND]) == 0
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_THIRD]) <= 1
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_FOURTH]) <= 1
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_FIFTH]) <= 4
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_SIXTH]) == 0
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_SEVENTH]) == 0
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_EIGHTH]) <= 1
    assert corpus.ok_on_failed([v for v in sealed if v.batch == TWENTY_NINTH]) <= 1
    assert corpus.ok_on_failed([v for v in sealed if v.batch == THIRTIETH]) == 0
    assert corpus.ok_on_failed([v for v in sealed if v.batch == THIRTY_FIRST]) == 0
    unread_u = [v for v in verdicts if v.batch == TWENTY_SECOND and v.split == "tuning"]
    unread_v = [v for v in verdicts if v.batch == TWENTY_THIRD and v.split == "tuning"]
    unread_w = [v for v in verdicts if v.batch == TWENTY_FOURTH and v.split == "tuning"]
    assert corpus.ok_on_failed(unread_u) <= 2
    assert corpus.ok_on_failed(unread_v) <= 1
    unread_x = [v for v in verdicts if v.batch == TWENTY_FIFTH and v.split == "tuning"]
    assert corpus.ok_on_failed(unread_w) <= 1
    assert corpus.ok_on_failed(unread_x) <= 2
    unread_y = [v for v in verdicts if v.batch == TWENTY_SIXTH and v.split == "tuning"]
    assert corpus.ok_on_failed(unread_y) <= 1
    unread_z = [v for v in verdicts if v.batch == TWENTY_SEVENTH and v.split == "tuning"]
    assert corpus.ok_on_failed(unread_z) <= 1
    unread_za = [v for v in verdicts if v.batch == TWENTY_EIGHTH and v.split == "tuning"]
    assert corpus.ok_on_failed(unread_za) <= 1
    unread_zb = [v for v in verdicts if v.batch == TWENTY_NINTH and v.split == "tuning"]
    assert corpus.ok_on_failed(unread_zb) == 0
    unread = unread_u + unread_v + unread_w + unread_x + unread_y + unread_z + unread_za
    unread_zc = [v for v in verdicts if v.batch == THIRTIETH and v.split == "tuning"]
    assert corpus.ok_on_failed(unread_zc) <= 3
    unread_zd = [v for v in verdicts if v.batch == THIRTY_FIRST and v.split == "tuning"]
    assert corpus.ok_on_failed(unread_zd) <= 1
    unread += unread_zb + unread_zc + unread_zd
    rest = [v for v in verdicts if v not in sealed and v not in unread]
    assert {v.id for v in rest if v.got_cause == "ok" and v.cause != "ok"} <= SILENT_CRASHES


def test_a_failed_run_is_never_ok(verdicts: list[Verdict]) -> None:
    assert_no_new_ok(verdicts)


def test_generic_rules_alone_meet_the_floor() -> None:
    """The `command` engine gets the common rules only; they must know every family."""
    verdicts = corpus.diagnose_all(generic=True)
    verdicts = [v for v in verdicts if v.split == "heldout" and v.batch not in LATE_BATCHES]
    cause_acc, _ = corpus.accuracy(verdicts)
    assert cause_acc >= FLOORS[("heldout", None)]


def test_family_scoring_alone_names_most_failures() -> None:
    """With no rule at all, the vocabulary of node/families.py names the family of most logs
    (measured 2026-12-06: tuning 92.4%, held out 74.3%; with batch o, eighth round: 88.3%,
    70.9%) and never says ``ok`` for a failure (but the pinned held-out log of batch o)."""
    verdicts = corpus.diagnose_all(no_rules=True)
    before_p = [v for v in verdicts if v.batch not in LATE_BATCHES]
    for split, floor in (("tuning", 0.87), ("heldout", 0.7)):
        cause_acc, _ = corpus.accuracy([v for v in before_p if v.split == split])
        assert cause_acc >= floor, split
    assert_no_new_ok(verdicts)


def test_the_dress_of_a_log_does_not_change_its_answer(request: pytest.FixtureRequest) -> None:
    """Each log in one dress, the dresses in turn (every log in every dress: the slow tier)."""
    if request.config.getoption("--slow"):
        pytest.skip("the slow tier puts every log in every dress (the next test), this one too")
    changed = corpus.dress_changes(split="all", every=False)
    assert seal(changed) == {name: [] for name in corpus.DRESSES}


@pytest.mark.slow
def test_no_dress_of_any_log_changes_its_answer() -> None:
    changed = corpus.dress_changes(split="all")
    assert seal(changed) == {name: [] for name in corpus.DRESSES}


def seal(changed: dict[str, list[str]]) -> dict[str, list[str]]:
    """``changed`` with the ids of a sealed held-out part replaced by a mark: a failure names
    how many, never which."""
    rows = corpus.load_labels()
    sealed = {r["id"] for r in rows if r["added"] in SEALED and r["split"] == "heldout"}
    return {k: [i if i not in sealed else "(sealed)" for i in ids] for k, ids in changed.items()}


def test_tables_list_every_cause(verdicts: list[Verdict]) -> None:
    table = corpus.confusion_table(verdicts)
    recall = corpus.precision_recall(verdicts)
    for cause in {v.cause for v in verdicts}:
        assert f"| `{cause}` |" in table and f"| `{cause}` |" in recall
    assert "| true \\ said |" in corpus.confusion_matrix(verdicts)
