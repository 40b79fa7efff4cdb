from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from autotune.errors import ConfigError
from autotune.space import active, render, render_value, violations
from autotune.space.render import format_value, order
from autotune.space.schema import StudySpec

SPACE = """
engine: {name: sglang}
model: m
fixed:
  args: [--tp-size, "8"]
  env: {NCCL_PROTO: Simple, OMP_NUM_THREADS: 2}
parameters:
  - {name: bs, type: int, low: 16, high: 512, log: true, flag: --cuda-graph-max-bs}
  - {name: mem, type: float, low: 0.45, high: 0.7, step: 0.05, flag: --mem-fraction-static}
  - {name: lr, type: float, low: 0.00001, high: 0.1, log: true, env: LR}
  - {name: proto, type: categorical, choices: [LL, LL128], env: NCCL_PROTO}
  - {name: threads, type: categorical, choices: [64, 2.5], env: NCCL_NTHREADS}
  - {name: graphs, type: bool, flag: --disable-cuda-graph}
  - {name: fusion, type: bool, flag: --fusion, bool_style: value}
  - {name: cumem, type: bool, env: NCCL_CUMEM_ENABLE}
  - name: allreduce
    type: categorical
    choices: [nccl, custom, symm]
    map:
      nccl: {args: [--disable-custom-all-reduce], env: {NCCL_ALGO: Ring}}
      custom: {}
      symm: {args: [--enable-torch-symm-mem]}
  - name: spec
    type: bool
    map:
      true: {args: [--speculative-algorithm, EAGLE3]}
      false: {}
  - {name: steps, type: int, low: 1, high: 5, flag: --speculative-num-steps, when: spec}
  - {name: topk, type: int, low: 1, high: 4, flag: --speculative-eagle-topk, when: spec}
  - {name: draft, type: int, low: 2, high: 16, flag: --speculative-num-draft-tokens, when: spec}
  - {name: deep, type: int, low: 0, high: 3, env: DEEP, when: topk > 1}
constraints:
  - draft - 1 <= topk + (steps - 1) * topk ** 2
  - topk != 1 or draft == steps + 1
  - bs >= 32 or not graphs
"""

FIXED_ARGS = ["--tp-size", "8"]
FIXED_ENV = {"NCCL_PROTO": "Simple", "OMP_NUM_THREADS": "2"}

RENDER: list[tuple[dict[str, Any], list[str], dict[str, str]]] = [
    ({}, FIXED_ARGS, FIXED_ENV),
    ({"bs": 128}, [*FIXED_ARGS, "--cuda-graph-max-bs", "128"], FIXED_ENV),
    ({"bs": 128.0}, [*FIXED_ARGS, "--cuda-graph-max-bs", "128"], FIXED_ENV),
    ({"mem": 0.45 + 4 * 0.05}, [*FIXED_ARGS, "--mem-fraction-static", "0.65"], FIXED_ENV),
    ({"mem": 0.7}, [*FIXED_ARGS, "--mem-fraction-static", "0.7"], FIXED_ENV),
    ({"lr": 1e-05}, FIXED_ARGS, {**FIXED_ENV, "LR": "1e-05"}),
    ({"lr": 0.1}, FIXED_ARGS, {**FIXED_ENV, "LR": "0.1"}),
    ({"proto": "LL"}, FIXED_ARGS, {**FIXED_ENV, "NCCL_PROTO": "LL"}),  # parameters win
    ({"threads": 64}, FIXED_ARGS, {**FIXED_ENV, "NCCL_NTHREADS": "64"}),
    ({"threads": 2.5}, FIXED_ARGS, {**FIXED_ENV, "NCCL_NTHREADS": "2.5"}),
    ({"graphs": True}, [*FIXED_ARGS, "--disable-cuda-graph"], FIXED_ENV),
    ({"graphs": False}, FIXED_ARGS, FIXED_ENV),
    ({"fusion": True}, [*FIXED_ARGS, "--fusion", "true"], FIXED_ENV),
    ({"fusion": False}, [*FIXED_ARGS, "--fusion", "false"], FIXED_ENV),
    ({"cumem": True}, FIXED_ARGS, {**FIXED_ENV, "NCCL_CUMEM_ENABLE": "1"}),
    ({"cumem": False}, FIXED_ARGS, {**FIXED_ENV, "NCCL_CUMEM_ENABLE": "0"}),
    (
        {"allreduce": "nccl"},
        [*FIXED_ARGS, "--disable-custom-all-reduce"],
        {**FIXED_ENV, "NCCL_ALGO": "Ring"},
    ),
    ({"allreduce": "custom"}, FIXED_ARGS, FIXED_ENV),
    ({"allreduce": "symm"}, [*FIXED_ARGS, "--enable-torch-symm-mem"], FIXED_ENV),
    ({"spec": False, "steps": 3, "topk": 2, "draft": 6, "deep": 1}, FIXED_ARGS, FIXED_ENV),
    (
        {"spec": True, "steps": 3, "topk": 2, "draft": 6, "deep": 1},
        [
            *FIXED_ARGS,
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "2",
            "--speculative-num-draft-tokens",
            "6",
        ],
        {**FIXED_ENV, "DEEP": "1"},
    ),
    (
        {"spec": True, "steps": 3, "topk": 1, "draft": 4, "deep": 1},
        [
            *FIXED_ARGS,
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "4",
        ],
        FIXED_ENV,
    ),
    # file order, whatever the order of the configuration
    (
        {"allreduce": "symm", "bs": 64, "graphs": True},
        [
            *FIXED_ARGS,
            "--cuda-graph-max-bs",
            "64",
            "--disable-cuda-graph",
            "--enable-torch-symm-mem",
        ],
        FIXED_ENV,
    ),
    ({"not_a_parameter": 1}, FIXED_ARGS, FIXED_ENV),
]


@pytest.fixture
def spec(space: Callable[[str], StudySpec]) -> StudySpec:
    return space(SPACE)


@pytest.mark.parametrize(("config", "args", "env"), RENDER)
def test_render(
    spec: StudySpec, config: dict[str, Any], args: list[str], env: dict[str, str]
) -> None:
    assert render(spec, config) == (args, env)


def test_render_does_not_touch_the_spec(spec: StudySpec) -> None:
    args, env = render(spec, {"proto": "LL"})
    args.append("--x")
    env["X"] = "1"
    assert render(spec, {}) == (FIXED_ARGS, FIXED_ENV)


ACTIVE = [
    ({"spec": False, "steps": 3}, {"spec": False}),
    ({"spec": True, "steps": 3}, {"spec": True, "steps": 3}),
    ({"steps": 3}, {}),  # spec unset: its condition sees None
    ({"spec": True, "topk": 2, "deep": 0}, {"spec": True, "topk": 2, "deep": 0}),
    ({"spec": True, "topk": 1, "deep": 0}, {"spec": True, "topk": 1}),
    ({"spec": False, "topk": 2, "deep": 0}, {"spec": False}),  # chained: topk inactive
    ({"deep": 0, "spec": True, "topk": 2}, {"spec": True, "topk": 2, "deep": 0}),
]


@pytest.mark.parametrize(("config", "expected"), ACTIVE)
def test_active(spec: StudySpec, config: dict[str, Any], expected: dict[str, Any]) -> None:
    result = active(spec, config)
    assert result == expected
    assert list(result) == [p.name for p in spec.parameters if p.name in expected]


VIOLATIONS = [
    ({"spec": True, "steps": 3, "topk": 2, "draft": 6}, []),
    (
        {"spec": True, "steps": 1, "topk": 2, "draft": 6},
        ["draft - 1 <= topk + (steps - 1) * topk ** 2"],
    ),
    (
        {"spec": True, "steps": 3, "topk": 1, "draft": 8},
        ["draft - 1 <= topk + (steps - 1) * topk ** 2", "topk != 1 or draft == steps + 1"],
    ),
    ({"spec": False, "steps": 3, "topk": 1, "draft": 8}, []),  # inactive: skipped
    ({"spec": True, "topk": 1, "draft": 8}, []),  # steps unset: skipped
    ({"bs": 16, "graphs": True}, ["bs >= 32 or not graphs"]),
    ({"bs": 16, "graphs": False}, []),
    ({}, []),
]


@pytest.mark.parametrize(("config", "expected"), VIOLATIONS)
def test_violations(spec: StudySpec, config: dict[str, Any], expected: list[str]) -> None:
    assert violations(spec, config) == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("bs", 1024),
        ("bs", "128"),
        ("mem", 0.47),
        ("proto", "Simple"),
        ("graphs", 1),
        ("allreduce", "mscclpp"),
        ("bs", True),
    ],
)
def test_values_outside_the_space_are_refused(spec: StudySpec, name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"not a value of parameter '{name}'"):
        render(spec, {name: value})


def test_render_value_ignores_conditions(spec: StudySpec) -> None:
    # for mapping a blamed flag back to a value: a conditional parameter renders on its own
    assert render(spec, {"steps": 4}) == (FIXED_ARGS, FIXED_ENV)
    assert render_value(spec.parameter("steps"), 4) == (["--speculative-num-steps", "4"], {})


def test_order_puts_conditions_first(space: Callable[[str], StudySpec]) -> None:
    spec = space(
        """
        engine: {name: sglang}
        model: m
        parameters:
          - {name: c, type: bool, flag: --c, when: b}
          - {name: b, type: bool, flag: --b, when: a}
          - {name: a, type: bool, flag: --a}
          - {name: d, type: bool, flag: --d}
        """
    )
    assert [p.name for p in order(spec)] == ["a", "b", "c", "d"]
    assert active(spec, {"a": True, "b": True, "c": True, "d": False}) == {
        "c": True,
        "b": True,
        "a": True,
        "d": False,
    }
    assert active(spec, {"a": False, "b": True, "c": True}) == {"a": False}


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("bs", 64, "64"),
        ("mem", 0.6000000000000001, "0.6"),
        ("lr", 0.5, "0.5"),
        ("lr", 2e-05, "2e-05"),
        ("fusion", True, "true"),
        ("cumem", False, "0"),
        ("threads", 2.5, "2.5"),
        ("proto", "LL", "LL"),
    ],
)
def test_format_value(spec: StudySpec, name: str, value: Any, text: str) -> None:
    assert format_value(spec.parameter(name), value) == text
