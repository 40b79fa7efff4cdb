"""The command line: bad input is one clear line and a non-zero exit code; nothing is launched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.cli import main

BAD_SPACE = """\
engine: {name: transformers}
model: tiny-llama
parameters:
  - name: dtype
    type: categorical
    flag: --dtype
    choices: []
"""


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("autotune: error: ") and "\n" not in err, err
    assert "Traceback" not in err
    return err


def test_validate_bad_space_names_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = tmp_path / "bad.yaml"
    space.write_text(BAD_SPACE)
    assert main(["validate", str(space)]) == 2
    err = _one_line_error(capsys)
    assert f"{space}:7: parameters[0].choices:" in err


def test_validate_takes_the_space_as_start_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = tmp_path / "bad.yaml"
    space.write_text(BAD_SPACE)
    assert main(["validate", "--space", str(space)]) == 2
    assert f"{space}:7: parameters[0].choices:" in _one_line_error(capsys)
    assert main(["validate"]) == 2
    assert "--space" in _one_line_error(capsys)
    assert main(["validate", str(space), "--space", str(space)]) == 2
    assert "once" in _one_line_error(capsys)


def test_start_with_a_bad_space_launches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "bad.yaml"
    space.write_text(BAD_SPACE)
    assert main(["start", "--space", str(space), "--executor", "local", "--no-mlflow"]) == 2
    _one_line_error(capsys)
    assert not (tmp_path / "studies").exists() and not (tmp_path / "mlflow").exists()


def test_missing_space_file_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in _one_line_error(capsys)


def test_simulate_refuses_engines_it_does_not_stand_in_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    root = Path(__file__).resolve().parents[1]
    code = main(
        [
            "start",
            "--space",
            str(root / "search_spaces" / "quickstart.yaml"),
            "--simulate",
            "--executor",
            "local",
            "--no-mlflow",
        ]
    )
    assert code == 2
    assert "--simulate" in _one_line_error(capsys)
    assert not (tmp_path / "studies").exists()


def test_status_and_export_without_a_study_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--study-root", str(tmp_path)]) == 1
    assert "no study" in _one_line_error(capsys)
    assert main(["export", "--study", "x", "--study-root", str(tmp_path)]) == 1
    assert "no study 'x'" in _one_line_error(capsys)


def test_schema_is_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["type"] == "object" and "parameters" in schema["properties"]


def test_diagnose_json_has_cause_phase_hint_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-11-29 10:00:00 TP0] Load weight end. avail mem=21.78 GB\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.55\n"
    )
    assert main(["diagnose", str(log), "--engine", "sglang", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cause"] == "kv_pool_oom"
    assert {"cause", "phase", "hint", "evidence"} <= set(out)
    assert any("Not enough memory" in line for line in out["evidence"])


def test_diagnose_missing_log_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", str(tmp_path / "missing.log")]) == 2
    _one_line_error(capsys)


def test_diagnose_guesses_the_engine_from_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-11-29 10:00:00] server_args=ServerArgs(model_path='m', tp_size=8)\n"
        "[2026-11-29 10:00:05 TP0] Load weight end. avail mem=21.78 GB\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.55\n"
    )
    assert main(["diagnose", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cause"] == "kv_pool_oom"


# The installed console script, as a user runs it (not cli.main in-process: the script's
# own entry point and the parser's exception types are what broke before).
SCRIPT = Path(sys.executable).with_name("autotune")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "no command given"),
        (["start", "--space", "x.yaml", "--bogus"], "No such option: --bogus"),
        (["start", "--space", "x.yaml", "--n-trials", "-1"], "'--n-trials'"),
        (["start", "--space", "x.yaml", "--parallel", "0"], "'--parallel'"),
        (["export", "--format", "toml"], "'toml' is not one of"),
        (["start"], "Missing option '--space'"),
        (["frobnicate"], "No such command 'frobnicate'"),
        (["start", "--space", "x.yaml", "--sampler", "grid"], "'--sampler'"),
        (["status", "--trial", "x"], "'--trial'"),
    ],
)
def test_usage_errors_are_one_line_and_a_hint(argv: list[str], says: str, tmp_path: Path) -> None:
    assert SCRIPT.exists(), f"install the package first: {SCRIPT}"
    proc = subprocess.run(
        [str(SCRIPT), *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith("autotune: error: ") and says in lines[0]
    assert lines[1].startswith("usage: autotune") and "--help" in lines[1]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not (tmp_path / "studies").exists()


def test_help_and_version_exit_zero() -> None:
    for argv in (["--help"], ["start", "--help"], ["--version"]):
        proc = subprocess.run([str(SCRIPT), *argv], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    help_text = subprocess.run(
        [str(SCRIPT), "start", "--help"], capture_output=True, text=True, timeout=120
    ).stdout
    assert "<bool>" not in help_text and "tpe|random" in help_text


LONG_CONFIG = {
    "cuda_graph_max_bs": 128,
    "mem_fraction_static": 0.6000000000000001,
    "allreduce": "flashinfer_fusion",
    "NCCL_MIN_NCHANNELS": 2,
    "NCCL_MAX_NCHANNELS": 7,
    "NCCL_BUFFSIZE": 8526517,
    "NCCL_NTHREADS": 224,
    "NCCL_PROTO": "LL128",
}


def _study_on_disk(root: Path) -> None:
    import optuna
    from optuna.distributions import IntDistribution
    from optuna.trial import TrialState, create_trial

    (root / "studies" / "wide").mkdir(parents=True)
    s = optuna.create_study(
        study_name="wide",
        direction="maximize",
        storage=f"sqlite:///{root / 'studies' / 'wide' / 'study.db'}",
    )
    s.set_user_attr("objective", {"metric": "output_tok_s", "direction": "maximize"})
    for n, outcome in enumerate(["ok", "crashed", "ok"]):
        ua = {
            "outcome": outcome,
            "config": LONG_CONFIG,
            "baseline": n == 0,
            "argv": ["python3", "-m", "sglang.launch_server", "--tp", "8"],
            "env": {"NCCL_PROTO": "LL128"},
        }
        if outcome == "ok":
            ua["metrics"] = {"output_tok_s": 100.0 + n}
        else:
            ua.update(
                {
                    "cause": "kv_pool_oom",
                    "phase": "memory_pool",
                    "hint": "lower --mem-fraction-static " * 6,
                    "message": "RuntimeError: Not enough memory.",
                }
            )
        s.add_trial(
            create_trial(
                state=TrialState.COMPLETE,
                value=100.0 + n,
                params={"x": n},
                distributions={"x": IntDistribution(0, 9)},
                user_attrs=ua,
            )
        )


def test_status_in_80_columns_shows_every_configuration_whole(tmp_path: Path) -> None:
    _study_on_disk(tmp_path)
    proc = subprocess.run(
        [str(SCRIPT), "status"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    words = proc.stdout.split()
    for key, value in LONG_CONFIG.items():
        shown = "0.6" if key == "mem_fraction_static" else str(value)
        assert f"{key}={shown}" in words, key  # whole, never cut or wrapped mid-word
    assert "0.6000000000000001" not in proc.stdout and "…" not in proc.stdout


def test_status_trial_shows_one_trial_whole(tmp_path: Path) -> None:
    _study_on_disk(tmp_path)
    proc = subprocess.run(
        [str(SCRIPT), "status", "--trial", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "trial #1" in proc.stdout and "kv_pool_oom at memory_pool" in proc.stdout
    assert "mem_fraction_static = 0.6" in proc.stdout
    assert "NCCL_PROTO=LL128 python3 -m sglang.launch_server --tp 8" in proc.stdout
    missing = subprocess.run(
        [str(SCRIPT), "status", "--trial", "9"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert missing.returncode == 1 and "has no trial 9" in missing.stderr


def test_diagnose_prints_no_markup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "RuntimeError: Not enough memory. Please try to increase "
        "--mem-fraction-static. Current value: 0.907\n"
    )
    main(["diagnose", str(log), "--engine", "sglang"])
    out = capsys.readouterr().out
    assert "[dim]" not in out and "> RuntimeError: Not enough memory" in out


def test_a_finished_study_says_so_without_starting_ray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import optuna
    from optuna.trial import TrialState, create_trial

    import autotune.cli.start

    space = Path(__file__).resolve().parents[1] / "search_spaces" / "quickstart.yaml"
    from autotune.space.load import load

    name = load(space).name or "quickstart"
    (tmp_path / "studies" / name).mkdir(parents=True)
    s = optuna.create_study(
        study_name=name,
        direction="maximize",
        storage=f"sqlite:///{tmp_path / 'studies' / name / 'study.db'}",
    )
    s.set_user_attr("objective", {"metric": "output_tok_s", "direction": "maximize"})
    for n in range(2):
        s.add_trial(
            create_trial(
                state=TrialState.COMPLETE,
                value=1.0 + n,
                user_attrs={
                    "outcome": "ok",
                    "metrics": {"output_tok_s": 1.0 + n},
                    "config": {},
                },
            )
        )

    def no_executor(*args: object, **kwargs: object) -> None:
        raise AssertionError("an executor (Ray) was started for a finished study")

    from autotune.dispatch import EXECUTORS

    # Any executor would do: none may be created (Ray takes 13 s to start for nothing).
    for name in ("ray", "local"):
        monkeypatch.setattr(EXECUTORS.get_class(name), "create", classmethod(no_executor))
    monkeypatch.setattr(autotune.cli.start, "preflight", lambda *a, **k: None)
    monkeypatch.chdir(tmp_path)
    assert main(["start", "--space", str(space), "--n-trials", "2", "--no-mlflow"]) == 0
    out = capsys.readouterr().out
    assert "budget reached" in out and "--n-trials" in out


def test_a_finished_search_without_its_confirmation_is_confirmed_on_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import optuna
    from optuna.trial import TrialState, create_trial

    import autotune.cli.start
    from autotune.dispatch import EXECUTORS
    from autotune.space.load import load

    space = Path(__file__).resolve().parents[1] / "search_spaces" / "quickstart.yaml"
    name = load(space).name or "quickstart"
    (tmp_path / "studies" / name).mkdir(parents=True)
    s = optuna.create_study(
        study_name=name,
        direction="maximize",
        storage=f"sqlite:///{tmp_path / 'studies' / name / 'study.db'}",
    )
    s.set_user_attr("objective", {"metric": "output_tok_s", "direction": "maximize"})
    for n in range(2):  # a baseline and one other configuration, both measured
        s.add_trial(
            create_trial(
                state=TrialState.COMPLETE,
                value=1.0 + n,
                user_attrs={
                    "outcome": "ok",
                    "metrics": {"output_tok_s": 1.0 + n},
                    "config": {"continuous_batching": bool(n)},
                    "baseline": n == 0,
                },
            )
        )

    class Started(Exception):
        pass

    def started(*args: object, **kwargs: object) -> None:
        raise Started

    for executor in ("ray", "local"):
        monkeypatch.setattr(EXECUTORS.get_class(executor), "create", classmethod(started))
    monkeypatch.setattr(autotune.cli.start, "preflight", lambda *a, **k: None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Started):  # the budget is reached, but the confirmation is owed
        main(["start", "--space", str(space), "--n-trials", "2", "--no-mlflow"])
    # asked for no confirmation: nothing to run
    assert (
        main(["start", "--space", str(space), "--n-trials", "2", "--no-mlflow", "--no-confirm"])
        == 0
    )


def test_status_skips_an_empty_study_left_by_a_failed_start(tmp_path: Path) -> None:
    import time

    import optuna

    _study_on_disk(tmp_path)
    time.sleep(0.05)
    (tmp_path / "studies" / "empty").mkdir()
    optuna.create_study(
        study_name="empty", storage=f"sqlite:///{tmp_path / 'studies' / 'empty' / 'study.db'}"
    )
    proc = subprocess.run(
        [str(SCRIPT), "status"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "wide" in proc.stdout


def test_verbose_and_log_file_show_what_autotune_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("INFO: Starting vLLM API server\nValueError: bad\n")
    trace = tmp_path / "logs" / "autotune.log"
    assert main(["diagnose", str(log)]) == 0
    assert "diagnosing" not in capsys.readouterr().err  # quiet by default
    assert main(["-v", "--log-file", str(trace), "diagnose", str(log)]) == 0
    assert f"diagnosing {log} as a vllm log" in capsys.readouterr().err
    assert "INFO autotune.cli" in trace.read_text() and "as a vllm log" in trace.read_text()


def test_an_unwritable_log_file_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    assert main(["--log-file", str(tmp_path / "file" / "x.log"), "schema"]) == 2
    assert "x.log" in _one_line_error(capsys)


def test_an_unknown_executor_names_the_known_ones_and_launches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    space = Path(__file__).resolve().parents[1] / "search_spaces" / "quickstart.yaml"
    code = main(["start", "--space", str(space), "--executor", "slurm", "--no-mlflow"])
    assert code == 2
    err = _one_line_error(capsys)
    assert "--executor: unknown executor 'slurm'" in err and "local, ray" in err
    assert not (tmp_path / "studies").exists()


def test_diagnose_refuses_an_unknown_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("ValueError: bad\n")
    assert main(["diagnose", str(log), "--engine", "vllmm"]) == 2
    assert "--engine: unknown engine 'vllmm'" in _one_line_error(capsys)


def test_time_limit_overrides_the_space_budget_for_this_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import autotune.cli.start
    from autotune.dispatch import EXECUTORS
    from autotune.study import driver as driver_module

    seen: dict[str, object] = {}

    class Caught(Exception):
        pass

    def fake_driver(spec: object, **kwargs: object) -> None:
        seen["limit"] = spec.budget.time_limit_s  # type: ignore[attr-defined]
        raise Caught

    class Quiet:
        def capacity(self) -> int:
            return 1

        def shutdown(self) -> None:
            pass

    monkeypatch.setattr(EXECUTORS.get_class("local"), "create", classmethod(lambda *a: Quiet()))
    monkeypatch.setattr(driver_module, "Driver", fake_driver)
    monkeypatch.setattr(autotune.cli.start, "preflight", lambda *a, **k: None)
    monkeypatch.chdir(tmp_path)
    space = Path(__file__).resolve().parents[1] / "search_spaces" / "quickstart.yaml"
    with pytest.raises(Caught):
        main(["start", "--space", str(space), "--executor", "local", "--no-mlflow",
              "--time-limit", "123"])  # fmt: skip
    assert seen["limit"] == 123
