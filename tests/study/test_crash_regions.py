"""The crash-region model: explanations learned from crashes and the successes around them."""

from __future__ import annotations

from pytest import approx

from autotune.space.schema import StudySpec
from autotune.study.steering import (
    PREFIX,
    CrashRegions,
    SteeringOptions,
    make_risk,
    signature_of,
)

SPACE = StudySpec.model_validate(
    {
        "engine": {"name": "sglang"},
        "model": "m",
        "parameters": [
            {"name": "backend", "type": "categorical", "flag": "--b", "choices": ["a", "b", "c"]},
            {"name": "bs", "type": "int", "flag": "--bs", "low": 1, "high": 512, "log": True},
            {"name": "mem", "type": "float", "flag": "--mem", "low": 0.5, "high": 0.95},
        ],
    }
)


def test_a_categorical_value_is_learned_from_one_crash() -> None:
    m = CrashRegions(SPACE)
    for bs, mem, backend in [(8, 0.6, "a"), (64, 0.9, "b"), (512, 0.5, "a"), (2, 0.95, "b")]:
        m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
    m.observe({"backend": "c", "bs": 16, "mem": 0.7}, crashed=True)
    reason = m.check({"backend": "c", "bs": 400, "mem": 0.55})
    assert reason is not None and reason.startswith(PREFIX) and "backend == 'c'" in reason
    assert m.check({"backend": "a", "bs": 16, "mem": 0.7}) is None


def test_a_box_is_learned_as_two_parameters_once_each_alone_has_run() -> None:
    m = CrashRegions(SPACE)
    # Large batches ran with little memory and much memory ran with small batches.
    for i, (bs, mem) in enumerate([(8, 0.6), (512, 0.6), (8, 0.95), (300, 0.7), (16, 0.9)]):
        m.observe({"backend": "ab"[i % 2], "bs": bs, "mem": mem}, crashed=False)
    m.observe({"backend": "b", "bs": 400, "mem": 0.9}, crashed=True)
    assert m.check({"backend": "b", "bs": 500, "mem": 0.92}) is not None
    # The box's edges are learned half-way between the crash and the runs beside it:
    # bs >= 80 (16 ran with mem 0.9; log scale) and mem >= 0.75 (0.6 ran with bs 512).
    assert m.check({"backend": "b", "bs": 100, "mem": 0.8}) is not None
    assert m.check({"backend": "b", "bs": 512, "mem": 0.72}) is None
    assert m.check({"backend": "b", "bs": 60, "mem": 0.95}) is None
    narrow = CrashRegions(SPACE, SteeringOptions(boundary=False))
    for i, (bs, mem) in enumerate([(8, 0.6), (512, 0.6), (8, 0.95), (300, 0.7), (16, 0.9)]):
        narrow.observe({"backend": "ab"[i % 2], "bs": bs, "mem": mem}, crashed=False)
    narrow.observe({"backend": "b", "bs": 400, "mem": 0.9}, crashed=True)
    assert narrow.check({"backend": "b", "bs": 100, "mem": 0.8}) is None  # only beyond 400, 0.9


def test_nothing_is_refused_for_distance_to_an_unrelated_crash() -> None:
    """The 3-NN vote refused configurations at 97-99.8% of the optimum next to a crash that
    another parameter caused; explanations do not."""
    m = CrashRegions(SPACE)
    for bs, mem, backend in [(64, 0.8, "a"), (64, 0.8, "b"), (128, 0.85, "a"), (32, 0.6, "c")]:
        m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
    m.observe({"backend": "c", "bs": 128, "mem": 0.85}, crashed=True)
    # Every explanation needs backend c (with a large batch or much memory): b is launched.
    assert m.check({"backend": "b", "bs": 128, "mem": 0.85}) is None
    assert m.check({"backend": "c", "bs": 40, "mem": 0.65}) is None  # c, but below its edges
    knn = make_risk(SPACE, SteeringOptions(model="knn", min_launched=2, min_crashes=1, explore=0.0))
    for bs, mem, backend in [(64, 0.8, "a"), (64, 0.8, "b"), (128, 0.85, "a"), (32, 0.6, "c")]:
        knn.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
    knn.observe({"backend": "c", "bs": 128, "mem": 0.85}, crashed=True)
    assert knn.check({"backend": "c", "bs": 100, "mem": 0.84}) is not None  # the old model did


def test_the_streak_limit_and_switch_hold() -> None:
    m = CrashRegions(SPACE, SteeringOptions(max_streak=2))
    m.observe({"backend": "a", "bs": 8, "mem": 0.6}, crashed=False)
    m.observe({"backend": "c", "bs": 8, "mem": 0.6}, crashed=True)
    doomed = {"backend": "c", "bs": 8, "mem": 0.6}
    assert [m.check(doomed) is None for _ in range(3)] == [False, False, True]
    off = CrashRegions(SPACE, SteeringOptions(enabled=False))
    off.observe({"backend": "c", "bs": 8, "mem": 0.6}, crashed=True)
    assert off.check(doomed) is None


def test_crashes_that_failed_alike_are_explained_together() -> None:
    """One crash leaves conditions that fit it by chance; a second crash of the same kind
    rules them out, so the region is refused where one crash's explanations disagreed."""
    runs = [(8, 0.6, "a"), (16, 0.9, "b"), (32, 0.7, "c"), (64, 0.8, "a")]
    crashes = [(400, 0.55, "a"), (300, 0.93, "b")]  # both: graph capture at a large batch

    def model(signatures: tuple[str, str], group: bool = True) -> CrashRegions:
        m = CrashRegions(SPACE, SteeringOptions(group=group, budget=0))
        for bs, mem, backend in runs:
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
        for (bs, mem, backend), sig in zip(crashes, signatures, strict=True):
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=True, signature=sig)
        return m

    probe = {"backend": "c", "bs": 350, "mem": 0.7}
    # Apart, each crash is also explained by its memory share (no run had 0.55 or 0.93).
    assert model(("cuda_oom", "cuda_graph_capture")).check(probe) is None
    # Together only the batch explains both: bs >= 300, widened half-way to 64 on the log
    # scale (about 139).
    alike = model(("cuda_graph_capture", "cuda_graph_capture"))
    reason = alike.check(probe)
    assert reason is not None and "bs >=" in reason
    assert alike.check({"backend": "c", "bs": 150, "mem": 0.7}) is not None
    assert alike.check({"backend": "c", "bs": 120, "mem": 0.7}) is None
    assert alike.predicts(probe) and not alike.predicts({"backend": "c", "bs": 120, "mem": 0.7})
    # group=False (the previous rule, kept to be measured against): each crash on its own.
    assert model(("cuda_graph_capture", "cuda_graph_capture"), group=False).check(probe) is None


def test_crashes_along_a_diagonal_edge_are_explained_by_two_numbers_too_large_together() -> None:
    """A batch size and a memory share that fill one pool: bs 512 crashed at mem 0.7 and bs
    32 at mem 0.95, while bs 64 ran at mem 0.75, inside the box of their two thresholds. No
    one box explains both crashes, so where the two sit in their ranges added is the
    explanation (1.44 or more; widened half-way toward 1.22, the most a run had): the far
    side of the diagonal is refused, also where neither crash's own box reaches, and its
    good side is not."""
    runs = [(8, 0.6), (512, 0.5), (1, 0.95), (64, 0.75)]
    crashes = [(512, 0.7), (32, 0.95)]

    def model(sums: bool) -> CrashRegions:
        m = CrashRegions(SPACE, SteeringOptions(sums=sums, budget=0))
        for bs, mem in runs:
            m.observe({"backend": "a", "bs": bs, "mem": mem}, crashed=False)
        for bs, mem in crashes:
            m.observe({"backend": "a", "bs": bs, "mem": mem}, crashed=True, signature="cuda_oom")
        return m

    beyond = {"backend": "a", "bs": 128, "mem": 0.82}  # 0.78 + 0.71 of the ranges
    m = model(sums=True)
    reason = m.check(beyond)
    assert reason is not None and "bs + mem >= 1.33 of their ranges" in reason
    assert m.probability(beyond) == approx(1.0)
    for good in ({"bs": 512, "mem": 0.55}, {"bs": 8, "mem": 0.9}, {"bs": 80, "mem": 0.76}):
        assert m.check({"backend": "a", **good}) is None, good
    # Between the most a run had and the least a crash had, the probability rises.
    assert 0.0 < m.probability({"backend": "a", "bs": 100, "mem": 0.8}) < 1.0  # type: ignore[operator]
    # Without sums, each crash keeps its own box, and the point between them is launched.
    assert model(sums=False).check(beyond) is None
    # The two the sum names, for the sampler's slides along that edge; none without sums.
    assert m.sum_pairs() == {frozenset(("bs", "mem"))}
    assert model(sums=False).sum_pairs() == set()


def test_a_box_that_explains_crashes_alike_is_kept_without_a_sum() -> None:
    """Two numbers' sum is tried only where nothing the crashes share explains them all: a
    backend that crashes at large batches stays a backend with a batch threshold."""
    m = CrashRegions(SPACE, SteeringOptions(sums=True, budget=0))
    for bs, mem, backend in [(8, 0.6, "a"), (512, 0.9, "a"), (8, 0.9, "c"), (16, 0.6, "c")]:
        m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
    for bs, mem in [(512, 0.6), (256, 0.9)]:
        m.observe({"backend": "c", "bs": bs, "mem": mem}, crashed=True, signature="assertion")
    (expl, _) = m.explanations()
    assert all(lit[1] != "sum" for e in expl for lit in e)
    assert m.sum_pairs() == set()
    assert m.check({"backend": "c", "bs": 300, "mem": 0.55}) is not None
    assert m.check({"backend": "a", "bs": 300, "mem": 0.95}) is None


def test_the_signature_is_the_cause_or_the_message_without_its_numbers() -> None:
    assert signature_of("cuda_oom", "Tried to allocate 2.00 GiB") == "cuda_oom"
    a = signature_of("unknown", "RuntimeError: 1024 threads requested for launch")
    assert a == signature_of("unknown", "RuntimeError: 2048 threads requested for launch")
    assert a != signature_of("unknown", "AssertionError: scheduler queue overflow")
    assert signature_of(None, "") == ""


def test_the_edge_option_moves_a_learned_threshold_toward_the_run() -> None:
    for edge, refused in [(0.5, False), (0.25, True)]:
        m = CrashRegions(SPACE, SteeringOptions(edge=edge))
        for bs, mem, backend in [(8, 0.9, "a"), (16, 0.6, "b"), (512, 0.5, "c")]:
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
        m.observe({"backend": "a", "bs": 256, "mem": 0.6}, crashed=True)
        # backend a with bs >= 256 crashed, 8 ran: half-way (log) is 45, a quarter 19.
        assert (m.check({"backend": "a", "bs": 32, "mem": 0.6}) is not None) is refused


def _edge_model(options: SteeringOptions) -> CrashRegions:
    """Backend b crashed at batch 400 and 512 and ran at 16; a and c ran at 512."""
    m = CrashRegions(SPACE, options)
    for backend, bs, mem in [("b", 16, 0.6), ("b", 16, 0.7), ("b", 16, 0.9)] + [
        ("a", 512, 0.6),
        ("a", 512, 0.9),
        ("c", 512, 0.7),
    ]:
        m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
    for bs in (512, 400):  # two graph-capture crashes of b: one region
        m.observe({"backend": "b", "bs": bs, "mem": 0.7}, crashed=True, signature="graph")
    return m


def test_soft_edges_make_the_crash_probability_rise_across_the_unknown_stretch() -> None:
    """Between the largest batch that ran and the one that crashed the edge is unknown: with
    ``soft`` the probability rises along it (log scale) instead of jumping at the half-way
    threshold; what is refused stays the same."""

    hard, soft = _edge_model(SteeringOptions(soft=False)), _edge_model(SteeringOptions(soft=True))
    at = {bs: soft.probability({"backend": "b", "bs": bs, "mem": 0.7}) for bs in (16, 32, 80, 300)}
    assert at[16] == 0.0
    assert at[16] < at[32] < at[80] < at[300] <= 1.0
    # 80 is the half-way point of 16..400 on the log scale: refused by both, soft says ~0.5.
    assert 0.35 < (at[80] or 0.0) < 0.65
    assert hard.probability({"backend": "b", "bs": 32, "mem": 0.7}) == 0.0
    for bs in (32, 80, 300):
        config = {"backend": "b", "bs": bs, "mem": 0.7}
        assert soft.predicts(config) == hard.predicts(config)
    assert soft.probability({"backend": "a", "bs": 300, "mem": 0.7}) == 0.0


def test_soft_edges_are_the_default() -> None:
    m = _edge_model(SteeringOptions())
    assert 0.0 < (m.probability({"backend": "b", "bs": 32, "mem": 0.7}) or 0.0) < 0.5


def test_the_crash_probability_combines_the_regions_a_configuration_may_be_in() -> None:
    """Backend c crashed at a large batch (or at little memory) and b with much memory (or a
    large batch with it): c with a large batch and much memory meets one of two explanations
    of each crash, so it runs only if neither is right: 1 - 0.5 * 0.5, not 0.5 (each
    explanation counted alike: weighed, the shares are others)."""
    for combine, p in [(False, 0.5), (True, 0.75)]:
        options = SteeringOptions(combine=combine, soft=False, budget=0, weighs=False)
        m = CrashRegions(SPACE, options)
        for backend, bs, mem in [
            ("a", 512, 0.6),
            ("b", 16, 0.6),
            ("c", 16, 0.9),
            ("a", 16, 0.95),
            ("b", 512, 0.5),
        ]:
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
        m.observe({"backend": "c", "bs": 400, "mem": 0.6}, crashed=True, signature="graph")
        m.observe({"backend": "b", "bs": 64, "mem": 0.92}, crashed=True, signature="oom")
        config = {"backend": "c", "bs": 300, "mem": 0.92}
        assert m.probability(config) == approx(p)
        assert not m.predicts(config)  # what is refused does not change
        assert m.probability({"backend": "a", "bs": 8, "mem": 0.6}) == 0.0


def _budget_model(
    options: SteeringOptions, trials: int | None = None, spec: StudySpec = SPACE
) -> CrashRegions:
    """Backend c crashed at a large batch, then b with much memory, then a with both: each
    crash has two explanations (its backend with the batch, or with the memory)."""
    m = CrashRegions(spec, options, trials=trials)
    for backend, bs, mem in [("a", 8, 0.6), ("b", 8, 0.6), ("c", 8, 0.6), ("a", 512, 0.5)]:
        m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
    for backend, bs, mem, sig in [
        ("c", 400, 0.9, "graph"),
        ("b", 300, 0.92, "oom"),
        ("a", 300, 0.93, "assert"),
    ]:
        m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=True, signature=sig)
    return m


def test_once_the_crash_budget_is_spent_an_even_chance_of_crashing_is_not_taken() -> None:
    """Before the budget is spent only what every explanation of a crash covers is refused; a
    configuration meeting one of two is weighed, not refused. After it, one that the crash
    model gives ``cap`` or more is refused too, saying why."""
    risky = {"backend": "c", "bs": 400, "mem": 0.7}  # c with the batch, not the memory
    safe = {"backend": "a", "bs": 8, "mem": 0.6}
    unspent = _budget_model(SteeringOptions(budget=4))
    assert (unspent.probability(risky) or 0.0) >= 0.4
    assert unspent.check(risky) is None
    spent = _budget_model(SteeringOptions(budget=3))
    reason = spent.check(risky)
    assert reason is not None and reason.startswith(PREFIX) and "crash budget 3" in reason
    assert spent.check(safe) is None
    assert _budget_model(SteeringOptions(budget=3, cap=0.9)).check(risky) is None
    assert _budget_model(SteeringOptions(budget=0)).check(risky) is None  # off


def test_the_crash_budget_is_a_share_of_the_study_s_trials() -> None:
    """budget.crash_budget of the trials, those of --n-trials where given; 0 (the default)
    turns it off."""
    assert CrashRegions(SPACE).options.budget == 0
    tenth = SPACE.model_copy(
        update={"budget": SPACE.budget.model_copy(update={"crash_budget": 0.1})}
    )
    assert CrashRegions(tenth).options.budget == 2  # 20 trials by default
    assert CrashRegions(tenth, trials=30).options.budget == 3
    assert make_risk(tenth, trials=60).options.budget == 6
    assert CrashRegions(tenth, SteeringOptions(budget=5)).options.budget == 5
    risky = {"backend": "c", "bs": 400, "mem": 0.7}
    assert _budget_model(SteeringOptions(), trials=30).check(risky) is None  # off
    assert _budget_model(SteeringOptions(), trials=30, spec=tenth).check(risky) is not None


def test_a_crash_s_explanations_are_weighed_by_the_stretch_their_threshold_may_lie_in() -> None:
    """Backend c ran at bs 8 with mem 0.6 and crashed at bs 512 with mem 0.62: either the
    large batch or the little more memory did it. The batch went across two thirds of its
    range, the memory across a twentieth of its own, so c at a large batch is the likelier
    crash (``weighs``); counted alike, each is one half."""
    for weighs in (True, False):
        m = CrashRegions(SPACE, SteeringOptions(soft=False, budget=0, weighs=weighs))
        for backend, bs, mem in [("c", 8, 0.6), ("a", 512, 0.62), ("b", 8, 0.9)]:
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
        m.observe({"backend": "c", "bs": 512, "mem": 0.62}, crashed=True)
        assert len(m.explanations()[0]) == 2
        batch = m.probability({"backend": "c", "bs": 512, "mem": 0.6}) or 0.0
        memory = m.probability({"backend": "c", "bs": 32, "mem": 0.62}) or 0.0
        if weighs:
            assert batch > 0.9 and memory < 0.1 and batch + memory == approx(1.0)
        else:
            assert batch == memory == approx(0.5)


def test_pairs_keep_a_crash_s_two_value_explanations_beside_one_value_alone() -> None:
    """A crash at a batch size below any that ran is explained by that alone, and the choice
    it came with is missed: ``b`` with much memory never ran either. ``pairs`` (the default)
    keeps that explanation too, so a ``b`` configuration with much memory carries a crash
    chance, and a small batch alone, one of two explanations now, is no longer refused."""

    def model(options: SteeringOptions) -> CrashRegions:
        m = CrashRegions(SPACE, options)
        for backend, bs, mem in [("a", 8, 0.95), ("a", 512, 0.5), ("b", 64, 0.5)]:
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
        m.observe({"backend": "b", "bs": 2, "mem": 0.9}, crashed=True)
        return m

    alone, pairs = model(SteeringOptions(pairs=False)), model(SteeringOptions())
    big_b = {"backend": "b", "bs": 256, "mem": 0.92}
    small = {"backend": "a", "bs": 1, "mem": 0.6}
    assert [len(e) for e in alone.explanations()[0]] == [1]
    assert sorted(len(e) for e in pairs.explanations()[0]) == [1, 2]
    assert not alone.probability(big_b, soft=False)
    assert 0.0 < (pairs.probability(big_b, soft=False) or 0.0) < 1.0
    assert alone.check(small) is not None and pairs.check(small) is None


def test_a_crash_is_likelier_caused_by_what_caused_another_that_failed_alike() -> None:
    """Backend a ran out of memory at bs 512, which the batch alone explains; b ran out of
    memory at bs 200 with mem 0.85, where b with either number explains it and no one
    threshold explains both (the edge moves with the backend). The same error says the batch
    did it again (``kin``): b with a small batch is the safer repair, b with less memory the
    riskier. Counted by stretch alone (kin 1), the two are about even; a crash that failed
    otherwise lends the batch nothing."""
    runs = [("a", 256, 0.7), ("a", 16, 0.9), ("c", 400, 0.9), ("b", 32, 0.7), ("b", 8, 0.6)]

    def model(kin: float, second: str = "cuda_oom") -> CrashRegions:
        m = CrashRegions(SPACE, SteeringOptions(soft=False, budget=0, kin=kin))
        for backend, bs, mem in runs:
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
        m.observe({"backend": "a", "bs": 512, "mem": 0.7}, crashed=True, signature="cuda_oom")
        m.observe({"backend": "b", "bs": 200, "mem": 0.85}, crashed=True, signature=second)
        return m

    small_batch = {"backend": "b", "bs": 16, "mem": 0.85}
    less_memory = {"backend": "b", "bs": 200, "mem": 0.6}

    def shares(m: CrashRegions) -> tuple[float, float]:
        return m.probability(small_batch) or 0.0, m.probability(less_memory) or 0.0

    kin = model(4.0)
    assert [len(e) for e in kin.explanations()[0]] == [1]  # the batch alone
    assert len(kin.explanations()[1]) == 2  # b with the batch, b with the memory
    batch, memory = shares(kin)
    assert batch < 0.3 and memory > 0.7
    batch, memory = shares(model(1.0))
    assert abs(batch - memory) < 0.1
    assert shares(model(4.0, second="cuda_graph_capture")) == shares(model(1.0))
    assert SteeringOptions().kin > 1.0


def test_a_choice_every_explanation_of_a_crash_names_lends_no_kin() -> None:
    """c ran out of memory at bs 128, which only c with a large batch explains: the batch
    caused it, and c came with it. c then ran out of memory at bs 16 with mem 0.95 (c with a
    small batch, c with much memory, or a small batch with much memory). Only the number
    lends weight (``kin``), and none of the second crash's explanations is on a large batch,
    so c with a small batch is as likely a crash with kin as without; were c to lend weight
    too, both explanations with c would weigh four times."""
    runs = [("c", 32, 0.6), ("a", 256, 0.9), ("c", 64, 0.85), ("a", 200, 0.7)]
    runs += [("a", 8, 0.6), ("a", 100, 0.95)]

    def model(kin: float) -> CrashRegions:
        m = CrashRegions(SPACE, SteeringOptions(soft=False, budget=0, kin=kin))
        for backend, bs, mem in runs:
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
        m.observe({"backend": "c", "bs": 128, "mem": 0.8}, crashed=True, signature="cuda_oom")
        m.observe({"backend": "c", "bs": 16, "mem": 0.95}, crashed=True, signature="cuda_oom")
        return m

    first, second = model(4.0).explanations()
    assert len(first) == 1 and {lit[0] for lit in first[0]} == {"backend", "bs"}
    assert sum(any(lit[0] == "backend" for lit in e) for e in second) == 2
    small_c = {"backend": "c", "bs": 8, "mem": 0.7}
    assert model(4.0).probability(small_c) == approx(model(1.0).probability(small_c))
    assert 0.0 < (model(1.0).probability(small_c) or 0.0) < 0.5


def test_two_numbers_too_large_together_are_read_through_the_edges_no_run_rules_out() -> None:
    """The batch ran at its end with little memory and the memory at its end with a small
    batch; both at their ends crashed, and a run in the middle keeps the half-way box from
    holding: the crash's one explanation is the two numbers too large together, at
    thresholds no run pins down. Read each threshold alone, that explanation sits at the
    crash's own values, and a configuration just below them on both counts as safe
    (``joint`` off). Read through the pairs of edges that no run rules out, it is more
    likely than not to crash there, and no chance is given where a run at larger values of
    both ran. A one-number explanation reads the same either way."""
    runs = [("a", 8, 0.6), ("a", 512, 0.6), ("a", 8, 0.95), ("a", 100, 0.85)]
    near, under = {"backend": "a", "bs": 400, "mem": 0.9}, {"backend": "a", "bs": 16, "mem": 0.7}
    at = {}
    for joint in (False, True):
        m = CrashRegions(SPACE, SteeringOptions(budget=0, joint=joint))
        for backend, bs, mem in runs:
            m.observe({"backend": backend, "bs": bs, "mem": mem}, crashed=False)
        m.observe({"backend": "a", "bs": 512, "mem": 0.95}, crashed=True)
        assert [[lit[0] for lit in e] for e in m.explanations()[0]] == [["bs", "mem"]]
        at[joint] = (m.probability(near), m.probability(under))
    assert at[False] == (0.0, 0.0)
    assert (at[True][0] or 0.0) > 0.5 and at[True][1] == 0.0
    for bs in (16, 32, 80, 300):  # batch sizes alone: the same ramp
        config = {"backend": "b", "bs": bs, "mem": 0.7}
        assert _edge_model(SteeringOptions(joint=True)).probability(config) == approx(
            _edge_model(SteeringOptions()).probability(config)
        )
