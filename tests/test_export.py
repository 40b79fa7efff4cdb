"""export: the best trial as a bash script (checked by bash itself), JSON and YAML."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from autotune.core.records import StudyRecord, TrialRecord
from autotune.errors import ConfigError, StudyError
from autotune.export.formats import export, export_data
from autotune.study.ledger import Ledger, trial_attrs

BASH = shutil.which("bash")
DISTS = {
    "chunked_prefill_size": IntDistribution(1024, 16384, step=1024),
    "attention_backend": CategoricalDistribution(["fa3", "flashinfer", "triton"]),
}
HF = "hf_" + "Xy7" * 12

# The real SGLang command as the driver stores it: {host}/{port} are filled on the node.
BEST_ARGV = [
    "python3",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "/models/Kimi K2.5 (int4)",
    "--tp",
    "8",
    "--chunked-prefill-size",
    "8192",
    "--attention-backend",
    "fa3",
    "--enable-torch-compile",
    "--json-model-override-args",
    '{"rope": "x y", "n": 1}',
    "--served-model-name",
    "it's $HOME; rm -rf /",
    "--api-key",
    "s3cr3t-key",
    "--host",
    "{host}",
    "--port",
    "{port}",
    "--dist-init-addr={host}:5000",
]
BEST_ENV = {
    "NCCL_PROTO": "LL,LL128",
    "SGLANG_ODD": "a b\t'c' \"d\" $PATH `x`",
    "HF_TOKEN": HF,
}
BASE = {"chunked_prefill_size": 4096, "attention_backend": "triton"}
BEST = {"chunked_prefill_size": 8192, "attention_backend": "fa3"}


def make_study(path: Path, *, simulated: bool = False) -> optuna.Study:
    study = optuna.create_study(
        storage=f"sqlite:///{path / 'study.db'}", study_name="kimi", direction="maximize"
    )
    Ledger(study).write_study(
        StudyRecord(
            name="kimi",
            metric="output_tok_s",
            simulated=simulated,
            engine="sglang",
            space={"engine": {"name": "sglang", "version": "0.5.9"}},
        )
    )
    return study


def add(
    study: optuna.Study,
    outcome: str,
    value: float,
    *,
    params: dict[str, Any],
    argv: list[str] | None = None,
    env: dict[str, str] | None = None,
    baseline: bool = False,
) -> None:
    """One finished trial; a plain SGLang launch unless ``argv`` and ``env`` say otherwise."""
    ok = outcome == "ok"
    study.add_trial(
        create_trial(
            state=TrialState.COMPLETE,
            value=value if ok else 1e12,  # a crash's penalty must never be exported
            params=params,
            distributions={k: DISTS[k] for k in params},
            user_attrs=trial_attrs(
                TrialRecord(
                    number=0,
                    state="COMPLETE",
                    outcome=outcome,  # type: ignore[arg-type]
                    config=params,
                    argv=argv or ["python3", "-m", "sglang.launch_server"],
                    env=env or {},
                    baseline=baseline,
                    simulated=Ledger(study).study_record().simulated,
                    metrics={"output_tok_s": value} if ok else {},
                )
            ),
        )
    )


def filled(argv: list[str], host: str = "127.0.0.1", port: int = 30000) -> list[str]:
    return [a.replace("{host}", host).replace("{port}", str(port)) for a in argv]


def redacted_argv(host: str = "127.0.0.1") -> list[str]:
    out = filled(BEST_ARGV, host=host)
    out[out.index("--api-key") + 1] = "***"
    return out


@pytest.fixture
def study(tmp_path: Path) -> optuna.Study:
    s = make_study(tmp_path)
    add(s, "ok", 1000.0, params=BASE, baseline=True)
    crash = {"chunked_prefill_size": 16384, "attention_backend": "fa3"}
    add(s, "crashed", 0.0, params=crash, argv=["python3", "crash"])
    add(s, "ok", 1250.0, params=BEST, argv=BEST_ARGV, env=BEST_ENV)
    for value in (990.0, 1010.0):  # the baseline's launch noise (about 1%) is known
        add(s, "ok", value, params=BASE, baseline=True)
    return s


def test_a_noise_winner_is_never_exported_the_baseline_is(tmp_path: Path) -> None:
    s = make_study(tmp_path)
    for value in (1000.0, 1090.0, 930.0):  # 8% launch noise
        add(s, "ok", value, params=BASE, baseline=True)
    add(s, "ok", 1060.0, params=BEST, argv=BEST_ARGV, env=BEST_ENV)
    data = export_data(Ledger(s).view())
    assert data["trial"] == 0 and data["is_baseline"] is True
    assert data["config"] == BASE and data["gain"]["significant"] is False
    script = export(s, "sh")
    assert "# no configuration beat the baseline beyond noise" in script
    assert "keep your current configuration" in script and "--chunked-prefill-size" not in script


def test_no_ok_trial_is_a_study_error(tmp_path: Path) -> None:
    s = make_study(tmp_path)
    add(s, "crashed", 0.0, params={"chunked_prefill_size": 1024}, argv=["x"])
    with pytest.raises(StudyError, match="no successful trial yet"):
        export(s, "sh")


def test_sh_is_valid_bash_and_recovers_argv_and_env(study: optuna.Study, tmp_path: Path) -> None:
    script = export(study, "sh")
    assert script.startswith("#!/usr/bin/env bash\n")
    assert "trial 2" in script and "SIMULATED" not in script
    assert "# gain over the baseline +25.0% (95% CI +" in script
    assert HF not in script and "s3cr3t-key" not in script
    path = tmp_path / "best.sh"
    path.write_text(script)
    assert BASH is not None
    subprocess.run([BASH, "-n", str(path)], check=True)

    # Parse it as bash would: join continuations, drop comments, split words.
    joined = script.replace("\\\n", " ")
    code = [ln for ln in joined.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    exports = [shlex.split(ln)[1] for ln in code if ln.startswith("export ")]
    env = dict(e.split("=", 1) for e in exports)
    assert env["NCCL_PROTO"] == BEST_ENV["NCCL_PROTO"]
    assert env["SGLANG_ODD"] == BEST_ENV["SGLANG_ODD"]
    command = [ln for ln in code if not ln.startswith(("export ", "set "))]
    assert len(command) == 1
    assert shlex.split(command[0]) == redacted_argv()


def test_sh_runs_in_bash_with_the_exact_argv_and_env(study: optuna.Study, tmp_path: Path) -> None:
    """Source the script with ``python3`` shadowed by a bash function that reports its args."""
    path = tmp_path / "best.sh"
    path.write_text(export(study, "sh", port=31000))
    out = tmp_path / "seen"
    probe = 'python3() { printf "%s\\0" "$@" > "$OUT/argv"; env -0 > "$OUT/env"; }; source "$1"'
    environ = {"PATH": os.environ["PATH"], "OUT": str(out), "HF_TOKEN": "mine"}
    out.mkdir()
    assert BASH is not None
    subprocess.run([BASH, "-c", probe, "probe", str(path)], check=True, env=environ)
    argv = (out / "argv").read_bytes().split(b"\0")[:-1]
    expected = redacted_argv()
    expected = [a.replace("30000", "31000") for a in expected]
    assert [a.decode() for a in argv] == expected[1:]
    env = dict(e.decode().split("=", 1) for e in (out / "env").read_bytes().split(b"\0") if e)
    assert env["NCCL_PROTO"] == BEST_ENV["NCCL_PROTO"]
    assert env["SGLANG_ODD"] == BEST_ENV["SGLANG_ODD"]
    assert env["HF_TOKEN"] == "mine"  # the redacted secret is the caller's own


def test_sh_insists_on_redacted_secret(study: optuna.Study, tmp_path: Path) -> None:
    path = tmp_path / "best.sh"
    path.write_text(export(study, "sh"))
    assert BASH is not None
    proc = subprocess.run(
        [BASH, "-c", 'python3() { echo launched; }; source "$1"', "probe", str(path)],
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "launched" not in proc.stdout
    assert "HF_TOKEN must be set" in proc.stderr


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_structured(study: optuna.Study, fmt: str) -> None:
    text = export(study, fmt)  # type: ignore[arg-type]
    data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert data["study"] == "kimi" and data["trial"] == 2
    assert data["value"] == 1250.0 and data["baseline_value"] == 1000.0
    assert data["gain_pct"] == pytest.approx(25.0, abs=0.1)  # over the baseline's geomean
    assert (data["metric"], data["direction"]) == ("output_tok_s", "maximize")
    assert data["config"] == BEST
    assert data["argv"] == redacted_argv()
    assert shlex.split(data["command"]) == redacted_argv()
    assert data["env"] == {**BEST_ENV, "HF_TOKEN": "***"}
    assert data["simulated"] is False
    assert data["versions"]["engine"] == "0.5.9"


def test_simulated_study_exports_real_command_marked(tmp_path: Path) -> None:
    s = make_study(tmp_path, simulated=True)
    add(s, "ok", 900.0, params={"chunked_prefill_size": 8192}, argv=BEST_ARGV)
    script = export(s, "sh")
    assert "# WARNING: SIMULATED" in script
    assert "sglang.launch_server" in script and "autotune.sim" not in script.split("\n\n")[-1]
    data = export_data(Ledger(s).view())
    assert data["simulated"] is True and data["baseline_value"] is None and data["gain_pct"] is None


def test_unknown_format(study: optuna.Study) -> None:
    with pytest.raises(ConfigError, match="unknown export format"):
        export(study, "toml")  # type: ignore[arg-type]


def test_export_a_chosen_trial_and_refuse_one_that_did_not_run_ok(study: optuna.Study) -> None:
    data = export_data(Ledger(study).view(), trial=0)
    assert data["trial"] == 0 and data["config"] == BASE
    with pytest.raises(StudyError, match="trial 1 .* cannot be exported \\(crashed\\)"):
        export(study, "sh", trial=1)
    with pytest.raises(StudyError, match="no such trial"):
        export(study, "sh", trial=99)


def _probe(
    script: str,
    tmp_path: Path,
    fn: str,
    extra_env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> list[str]:
    """Source ``script`` with program ``fn`` shadowed by a bash function recording its argv."""
    path = tmp_path / "x.sh"
    path.write_text(script)
    out = tmp_path / "argv"
    probe = f'{fn}() {{ printf "%s\\0" "$@" > "$OUT"; }}; f="$1"; shift; source "$f" "$@"'
    environ = {"PATH": os.environ["PATH"], "OUT": str(out), **(extra_env or {})}
    assert BASH is not None
    subprocess.run([BASH, "-c", probe, "probe", str(path), *args], check=True, env=environ)
    return [a.decode() for a in out.read_bytes().split(b"\0")[:-1]]


def test_every_format_says_engine_version_gpu_and_date(study: optuna.Study) -> None:
    for fmt in ("sh", "env", "docker", "k8s"):
        text = export(study, fmt)  # type: ignore[arg-type]
        head = "\n".join(ln for ln in text.splitlines() if ln.startswith("#"))
        assert "engine: sglang 0.5.9" in head, fmt
        assert "GPU: " in head and "exported 20" in head, fmt
        assert HF not in text and "s3cr3t-key" not in text, fmt
    data = export_data(Ledger(study).view())
    assert data["gpu"] and data["exported_at"].startswith("20")


def test_env_format_is_sourceable(study: optuna.Study, tmp_path: Path) -> None:
    path = tmp_path / "best.env"
    path.write_text(export(study, "env"))
    assert BASH is not None
    shown = subprocess.run(
        [
            BASH,
            "-c",
            'set -a; source "$1"; printf "%s\\0" "$NCCL_PROTO" "$SGLANG_ODD"',
            "p",
            str(path),
        ],
        check=True,
        capture_output=True,
        env={"PATH": os.environ["PATH"]},
    ).stdout.split(b"\0")[:-1]
    assert [s.decode() for s in shown] == [BEST_ENV["NCCL_PROTO"], BEST_ENV["SGLANG_ODD"]]
    assert "HF_TOKEN was redacted" in path.read_text()


def test_docker_runs_the_exact_command_with_the_callers_secret(
    study: optuna.Study, tmp_path: Path
) -> None:
    script = export(study, "docker")
    argv = _probe(script, tmp_path, "docker", {"HF_TOKEN": "mine"})
    image_at = argv.index("lmsysorg/sglang:latest")
    inner = redacted_argv("0.0.0.0")
    assert argv[image_at + 1 :] == inner[1:]
    assert argv[argv.index("--entrypoint") + 1] == inner[0]
    assert "-e" in argv and "HF_TOKEN" in argv  # passed through from the caller
    assert f"NCCL_PROTO={BEST_ENV['NCCL_PROTO']}" in argv
    assert "/models/Kimi K2.5 (int4):/models/Kimi K2.5 (int4):ro" in argv


def test_k8s_deployment_holds_argv_env_and_secret_refs(study: optuna.Study) -> None:
    docs = [d for d in yaml.safe_load_all(export(study, "k8s")) if d]
    assert len(docs) == 1
    pod = docs[0]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["command"] + container["args"] == redacted_argv("0.0.0.0")
    env = {e["name"]: e for e in container["env"]}
    assert env["NCCL_PROTO"]["value"] == BEST_ENV["NCCL_PROTO"]
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "HF_TOKEN"
    assert docs[0]["metadata"]["name"] == "autotune-kimi-rank1"


def test_top_k(study: optuna.Study, tmp_path: Path) -> None:
    ranked = json.loads(export(study, "json", top=5))
    assert [d["trial"] for d in ranked] == [2, 0]  # only two ok trials
    assert [d["rank"] for d in ranked] == [1, 2]
    assert len([d for d in yaml.safe_load_all(export(study, "k8s", top=2)) if d]) == 2
    script = export(study, "sh", top=2)
    assert _probe(script, tmp_path, "python3", {"HF_TOKEN": "x"}, ("rank2",)) == [
        "-m",
        "sglang.launch_server",
    ]
    assert _probe(script, tmp_path, "python3", {"HF_TOKEN": "x"})[:2] == [
        "-m",
        "sglang.launch_server",
    ]
    with pytest.raises(ConfigError, match="env holds one configuration"):
        export(study, "env", top=2)


def test_float_noise_is_not_exported(tmp_path: Path) -> None:
    s = make_study(tmp_path)
    noisy = {"mem": 0.6000000000000001}  # what Optuna's stepped floats produce
    s.add_trial(
        create_trial(
            state=TrialState.COMPLETE,
            value=10.0,
            params=noisy,
            distributions={"mem": FloatDistribution(0.5, 0.7, step=0.05)},
            user_attrs={
                "outcome": "ok",
                "config": noisy,
                "argv": ["x"],
                "metrics": {"output_tok_s": 10.0},
            },
        )
    )
    assert export_data(Ledger(s).view())["config"] == {"mem": 0.6}
    assert "mem=0.6\n" in export(s, "sh")


def test_export_says_the_gpu_the_trial_ran_on(tmp_path: Path) -> None:
    s = make_study(tmp_path)
    record = TrialRecord(
        number=0,
        state="COMPLETE",
        outcome="ok",  # type: ignore[arg-type]
        config={"chunked_prefill_size": 8192},
        argv=["python3", "x"],
        metrics={"output_tok_s": 5.0},
        gpu="8x NVIDIA H200",
        engine_version="0.5.9.post1",
    )
    s.add_trial(
        create_trial(
            state=TrialState.COMPLETE,
            value=5.0,
            params={"chunked_prefill_size": 8192},
            distributions={"chunked_prefill_size": DISTS["chunked_prefill_size"]},
            user_attrs=trial_attrs(record),
        )
    )
    script = export(s, "sh")
    assert "# GPU: 8x NVIDIA H200" in script
    assert "# engine: sglang 0.5.9.post1" in script  # what the server reported wins


def test_gpu_description_counts_models(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from autotune.node import gpu

    names = [b"NVIDIA H200", b"NVIDIA H200", b"NVIDIA L4"]
    nvml = SimpleNamespace(
        nvmlDeviceGetCount=lambda: len(names),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: names[h],
    )
    monkeypatch.setattr(gpu, "_load", lambda: nvml)
    assert gpu.describe() == "2x NVIDIA H200, 1x NVIDIA L4"
    assert gpu.describe(2, "0,1") == "2x NVIDIA H200"
    monkeypatch.setattr(gpu, "_load", lambda: None)
    assert gpu.describe() == ""
