"""A newcomer's mistakes on ``autotune start``: each gives one clear line and leaves a state
the next run resumes or cleans.

- the same command a second time: while the first still runs, or once it has finished;
- a study folder this user cannot write;
- Ctrl-C during the confirmation rounds (the first Ctrl-C of ``test_interrupt.py`` comes
  during the search; there the trial is still launching).

Real processes and real servers: ``tests/study/servers/toy.py`` behind a launcher that
hangs (as a server stuck loading) while a file exists.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
import yaml
from tests.study.study_helpers import TOY

from autotune.cli import main

SCRIPT = Path(sys.executable).with_name("autotune")

# Serves as toy.py does; while HANG exists, a launch writes its pid to HANG.pid and never
# gets ready instead (ignoring SIGTERM too when HANG says "stubborn"). --help is answered at
# once (the command engine's preflight).
LAUNCHER = """\
import os, runpy, sys, time
hang = sys.argv.pop(1)
if "--help" not in sys.argv and os.path.exists(hang):
    if open(hang).read() == "stubborn":  # teardown would wait for it: only a force ends it
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(hang + ".pid", "w").write(str(os.getpid()))
    print("loading weights...", flush=True)
    time.sleep(600)
sys.argv = [{toy!r}] + sys.argv[1:]
sys.path.insert(0, os.path.dirname({toy!r}))
runpy.run_path({toy!r}, run_name="__main__")
"""


def _space(tmp_path: Path, **budget: int) -> Path:
    launcher = tmp_path / "launcher.py"
    launcher.write_text(LAUNCHER.format(toy=str(TOY)))
    hang = tmp_path / "hang"
    space = {
        "name": "first",
        "engine": {
            "name": "command",
            "command": [sys.executable, str(launcher), str(hang), "--port", "{port}"],
            "startup_timeout_s": 300,
        },
        "model": "toy",
        "parameters": [{"name": "y", "type": "int", "low": 1, "high": 4, "flag": "--y"}],
        "baseline": {"y": 1},
        "objective": {"metric": "output_tok_s", "direction": "maximize"},
        "workload": {"concurrency": 1, "num_requests": 2, "output_len": 8, "warmup_requests": 0},
        "budget": {"trials": 2, "baseline_launches": 1, **budget},
    }
    path = tmp_path / "first.yaml"
    path.write_text(yaml.safe_dump(space))
    return path


def _argv(space: Path) -> list[str]:
    return [str(SCRIPT), "start", "--space", str(space), "--executor", "local", "--no-mlflow"]


def _wait_for(path: Path, proc: subprocess.Popen[str], limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while not (path.exists() and path.read_text()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.1)


def _study(tmp_path: Path) -> optuna.Study:
    db = tmp_path / "studies" / "first" / "study.db"
    return optuna.load_study(study_name="first", storage=f"sqlite:///{db}")


def test_the_budget_comes_from_the_space_and_a_second_run_says_where_to_look(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    space = _space(tmp_path, baseline_launches=2, confirm=0)
    assert main(_argv(space)[1:] + ["-q"]) == 0
    trials = _study(tmp_path).get_trials()
    assert [bool(t.user_attrs.get("baseline")) for t in trials] == [True, True, False]
    assert not any("confirm_round" in t.user_attrs for t in trials)  # budget.confirm: 0
    out = capsys.readouterr().out
    assert "  report: studies/first/report/report.html" in out.splitlines()
    assert (tmp_path / "studies" / "first" / "report" / "report.html").is_file()

    # The same command again: the answer, where to look, and nothing launched.
    (tmp_path / "studies" / "first" / "report" / "report.html").unlink()
    assert main(_argv(space)[1:] + ["-q"]) == 0
    out = capsys.readouterr().out
    assert "study first already holds 2 launched trial(s): budget reached" in out
    assert "  report: studies/first/report/report.html" in out.splitlines()
    assert "export: autotune export --study first --format sh" in out
    assert len(_study(tmp_path).get_trials()) == 3
    assert (tmp_path / "studies" / "first" / "report" / "report.html").is_file()
    shutil.rmtree(tmp_path / "studies")
    assert main(_argv(space)[1:] + ["-q", "--baseline-launches", "1"]) == 0
    trials = _study(tmp_path).get_trials()
    assert [bool(t.user_attrs.get("baseline")) for t in trials] == [True, False]


def test_the_same_command_again_while_it_runs_is_one_line(tmp_path: Path) -> None:
    space = _space(tmp_path)
    (tmp_path / "hang").touch()  # the first run's baseline never gets ready
    first = subprocess.Popen(
        _argv(space), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for(tmp_path / "hang.pid", first)
        again = subprocess.run(
            _argv(space), cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert again.returncode == 1, again.stderr
        lines = again.stderr.strip().splitlines()
        assert len(lines) == 1 and "is being run by process" in lines[0], again.stderr
        assert f"process {first.pid}" in lines[0]
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    assert first.returncode == 130


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """``folder`` made unwritable, for this user: 0o555, or ``chattr +i`` as root (whom
    permissions do not stop)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)]).returncode != 0:
        pytest.skip("root, and no chattr +i here: cannot make a folder unwritable")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


def test_an_unwritable_study_folder_is_one_line_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    space = _space(tmp_path)
    root = tmp_path / "studies"
    root.mkdir()
    with _read_only(root):
        code = main(["start", "--space", str(space), "--executor", "local"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith("autotune: error: cannot write the study folder studies/first: ")
    assert err[0].endswith("; run from a folder you can write to, or pass --study-root DIR")
    assert list(root.iterdir()) == []
    assert not (tmp_path / "mlflow").exists()  # no tracking store was opened either
    assert not (tmp_path / "hang.pid").exists()


@pytest.mark.slow  # two whole studies in CLI processes (tests/study/test_ledger.py: the unit)
def test_ctrl_c_during_confirmation_stops_at_once_and_the_resume_confirms(
    tmp_path: Path,
) -> None:
    space = _space(tmp_path, confirm=1, confirm_rounds=2)
    proc = subprocess.Popen(
        _argv(space), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    # The search's two launches serve; from the first confirmation launch on, servers hang.
    deadline = time.monotonic() + 120
    while _finished_trials(tmp_path) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the search never finished"
        time.sleep(0.1)
    (tmp_path / "hang").touch()
    _wait_for(tmp_path / "hang.pid", proc)
    stopped = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=60)
    finally:  # never leave the study or its hanging server behind
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        with contextlib.suppress(ProcessLookupError):  # torn down already, as it should be
            os.kill(int((tmp_path / "hang.pid").read_text()), signal.SIGKILL)
    assert proc.returncode == 130, err
    # Without the fix it waited for the hanging server's startup timeout (300 s).
    assert time.monotonic() - stopped < 60, "the confirmation went on after Ctrl-C"
    assert "Traceback" not in err and "Resume with: autotune start --space" in err
    trials = _study(tmp_path).get_trials()
    interrupted = [t for t in trials if t.user_attrs.get("outcome") == "interrupted"]
    assert len(interrupted) == 1 and interrupted[0].user_attrs.get("confirm_round") == 1
    assert _study(tmp_path).user_attrs.get("confirmation") is None  # not settled: no record

    (tmp_path / "hang").unlink()
    again = subprocess.run(_argv(space), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    confirmation = _study(tmp_path).user_attrs.get("confirmation")
    assert confirmation is not None and confirmation["rounds"] >= 2
    search = [t for t in _study(tmp_path).get_trials() if "confirm_round" not in t.user_attrs]
    assert len([t for t in search if t.user_attrs.get("outcome") == "ok"]) == 2  # not rerun


def _finished_trials(tmp_path: Path) -> int:
    """Finished trials of the study so far, read without writing: opening it with Optuna while
    the CLI creates it would create its tables too, and one of the two would fail."""
    db = tmp_path / "studies" / "first" / "study.db"
    if not db.exists():
        return 0
    finished = "SELECT count(*) FROM trials WHERE state IN ('COMPLETE', 'FAIL', 'PRUNED')"
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            (n,) = conn.execute(finished).fetchone()
    except sqlite3.OperationalError:  # the study is being created: no trials table yet
        return 0
    return int(n)


@pytest.mark.slow  # a local Ray instance
def test_a_forced_ctrl_c_leaves_no_process_behind_on_ray(tmp_path: Path) -> None:
    import psutil

    space = _space(tmp_path)
    (tmp_path / "hang").write_text("stubborn")  # the baseline never gets ready, nor stops
    argv = _argv(space)
    argv[argv.index("local")] = "ray"
    proc = subprocess.Popen(
        argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for(tmp_path / "hang.pid", proc, limit_s=180)
        started = psutil.Process(proc.pid).children(recursive=True)  # Ray's, the server
        assert len(started) > 2
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130 and "forced" in err and "Traceback" not in err
    deadline = time.monotonic() + 30
    left = started
    while left and time.monotonic() < deadline:
        left = [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.2)
    assert left == [], [p.cmdline()[:2] for p in left]
