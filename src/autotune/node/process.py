"""One server process: launch in its own process group, track its descendants, tear it down.

Teardown never goes by process name (``pkill -f vllm`` kills the tuner too). It goes by
process group, by the PIDs of every descendant seen while the server ran, and by a token in
the environment that every descendant inherits, which finds children that double-forked or
called ``setsid()`` to leave the group. A node that does not come clean gets a marker so the
next trial on it first checks again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from autotune.node import gpu

_logger = logging.getLogger(__name__)

TOKEN_ENV = "AUTOTUNE_TRIAL_TOKEN"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    """Whether ``port`` can be bound on ``host`` (TIME_WAIT leftovers do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:  # taken (or not ours to bind)
            return False
    return True


def wait_port_free(host: str, port: int, limit_s: float) -> bool:
    """Poll until ``port`` is free or ``limit_s`` passes."""
    deadline = time.monotonic() + limit_s
    while not port_is_free(host, port):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def _alive(proc: psutil.Process) -> bool:
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:  # gone or not ours: not alive
        return False


def _same(pid: int, create_time: float) -> psutil.Process | None:
    """The process ``pid`` if it is still the one we saw (PIDs get reused)."""
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) < 0.01:
            return proc
    except psutil.Error:  # gone meanwhile: not the same
        pass
    return None


@dataclass
class TeardownReport:
    """What teardown did and what it left behind."""

    processes_left: int
    left: list[dict[str, Any]] = field(default_factory=list)  # pid, create_time, name
    seconds: float = 0.0
    killed: bool = False  # SIGKILL was needed


class LaunchFailed(Exception):
    """The command could not be started at all (missing executable, bad cwd)."""


class ServerProcess:
    """A launched server (or job) and everything it spawned.

    Args:
        argv: the command, never run through a shell.
        env: the full environment of the process.
        log_path: file receiving stdout and stderr.
        cwd: working directory, or None for the current one.
    """

    def __init__(
        self, argv: list[str], env: dict[str, str], log_path: Path, cwd: str | None = None
    ) -> None:
        self.argv = list(argv)
        self.token = uuid.uuid4().hex
        self.env = {**env, TOKEN_ENV: self.token}
        self.log_path = log_path
        self.cwd = cwd
        self.popen: subprocess.Popen[bytes] | None = None
        self.pgid: int | None = None
        self._seen: dict[int, float] = {}  # pid -> create_time of every descendant seen
        self._seen_lock = threading.Lock()
        self._halt = threading.Event()
        self._tracker: threading.Thread | None = None
        self.entry: Path | None = None  # this server's record in the registry (see reap_orphans)

    @property
    def pid(self) -> int:
        assert self.popen is not None, "not launched"
        return self.popen.pid

    def start(self) -> None:
        """Launch the process in a new session (its own process group).

        Raises:
            LaunchFailed: the executable or working directory does not exist.
        """
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # "wb": a log left by an earlier run under the same name must not be read as this one's.
        with open(self.log_path, "wb") as log:
            try:
                self.popen = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    cwd=self.cwd,
                    start_new_session=True,
                    close_fds=True,
                    preexec_fn=_die_with_parent(),
                )
            except OSError as exc:
                log.write(f"autotune: cannot start {self.argv[0]!r}: {exc}\n".encode())
                raise LaunchFailed(f"cannot start {self.argv[0]!r}: {exc}") from exc
        self.pgid = self.popen.pid
        with contextlib.suppress(psutil.Error):  # exited at once: the log says why
            self._seen[self.popen.pid] = psutil.Process(self.popen.pid).create_time()
        self._tracker = threading.Thread(target=self._track, name="autotune-track", daemon=True)
        self._tracker.start()
        # On record so that a reaper can find the server if this process dies (SIGKILL).
        self.entry = register_server(self)
        _logger.info("launched pid %d (log %s): %s", self.popen.pid, self.log_path, self.argv[0])

    def poll(self) -> int | None:
        """The exit code of the main process, or None while it runs."""
        return None if self.popen is None else self.popen.poll()

    def _track(self) -> None:
        # Remember descendants while they are still attached to the tree: a child that
        # double-forks is reparented away and cannot be found through the tree later.
        while not self._halt.wait(0.2):
            self._remember_descendants()

    def _remember_descendants(self) -> None:
        if self.popen is None:
            return
        try:
            children = psutil.Process(self.popen.pid).children(recursive=True)
        except psutil.Error:  # the server exited: nothing new
            return
        with self._seen_lock:
            for child in children:
                with contextlib.suppress(psutil.Error):  # exited meanwhile
                    self._seen.setdefault(child.pid, child.create_time())

    def _by_token(self) -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter():
            try:
                if proc.environ().get(TOKEN_ENV) == self.token:
                    found.append(proc)
            except psutil.Error:  # other users' processes, or gone meanwhile
                continue
        return found

    def survivors(self) -> list[psutil.Process]:
        """Every live (non-zombie) process of this trial."""
        self._remember_descendants()
        procs: dict[int, psutil.Process] = {}
        with self._seen_lock:
            seen = dict(self._seen)
        for pid, created in seen.items():
            proc = _same(pid, created)
            if proc is not None:
                procs[pid] = proc
        for proc in self._by_token():
            procs.setdefault(proc.pid, proc)
        return [p for p in procs.values() if _alive(p)]

    def _signal_all(self, sig: signal.Signals, procs: list[psutil.Process]) -> None:
        if self.pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):  # group gone already
                os.killpg(self.pgid, sig)
        for proc in procs:
            with contextlib.suppress(psutil.Error):  # gone already
                proc.send_signal(sig)

    def _wait_gone(self, limit_s: float) -> list[psutil.Process]:
        deadline = time.monotonic() + limit_s
        while True:
            self.poll()  # reap the main process so it does not linger as a zombie
            left = self.survivors()
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.05)

    def teardown(self, grace_s: float) -> TeardownReport:
        """SIGTERM the group and every known descendant, wait ``grace_s``, then SIGKILL.

        Returns:
            What is left afterwards (normally nothing).
        """
        start = time.monotonic()
        self._halt.set()
        if self._tracker is not None:
            self._tracker.join(timeout=2)
        if self.popen is None:
            return TeardownReport(processes_left=0)
        killed = False
        left = self.survivors()
        if left:
            self._signal_all(signal.SIGTERM, left)
            left = self._wait_gone(grace_s)
        if left:
            killed = True
            self._signal_all(signal.SIGKILL, left)
            left = self._wait_gone(5.0)
        with contextlib.suppress(subprocess.TimeoutExpired):  # reaped below if left
            self.popen.wait(timeout=1.0)
        if not left and self.entry is not None:
            with contextlib.suppress(OSError):  # a record left is reaped later
                self.entry.unlink()
        report: list[dict[str, Any]] = []
        for proc in left:
            with contextlib.suppress(psutil.Error):  # gone meanwhile
                report.append(
                    {"pid": proc.pid, "create_time": proc.create_time(), "name": proc.name()}
                )
        if left:
            _logger.warning("pid %d: %d process(es) survived SIGKILL", self.popen.pid, len(left))
        return TeardownReport(
            processes_left=len(left),
            left=report,
            seconds=time.monotonic() - start,
            killed=killed,
        )


def state_dir() -> Path:
    """Where node markers live (``AUTOTUNE_NODE_STATE``, else ``~/.cache/autotune/node-state``)."""
    env = os.environ.get("AUTOTUNE_NODE_STATE")
    return Path(env) if env else Path.home() / ".cache" / "autotune" / "node-state"


class NodeState:
    """The "this node did not come clean" marker, one file per host.

    The file is named after the host because ``~/.cache`` may be shared between nodes.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self.dir = directory or state_dir()
        self.path = self.dir / f"dirty-{socket.gethostname()}.json"

    def mark(self, info: dict[str, Any]) -> None:
        """Record that the node is not clean, with what is known about the leftovers."""
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({**info, "time": time.time()}, indent=1, default=str))
        tmp.replace(self.path)

    def check(self, gpus: int | None, visible: str | None = None) -> str | None:
        """Re-check a marked node; clear the marker once clean.

        Leftover processes recorded in the marker are killed by PID (after checking the PID
        still names the same process). Returns None when clean, else why not.
        """
        # Servers whose launcher died (a killed Ray worker or driver) hold GPUs nobody frees.
        reap_orphans(directory=self.dir)
        if not self.path.exists():
            return None
        try:
            info = json.loads(self.path.read_text())
        except (OSError, ValueError):  # no or torn marker: clean
            info = {}
        alive = []
        for item in info.get("processes", []):
            proc = _same(int(item.get("pid", -1)), float(item.get("create_time", 0.0)))
            if proc is not None and _alive(proc):
                with contextlib.suppress(psutil.Error):  # gone meanwhile
                    proc.kill()
                alive.append(proc)
        alive = [p for p in alive if _alive(p) and not _wait_dead(p, 3.0)]
        if alive:
            return f"{len(alive)} process(es) of an earlier trial still alive: " + ", ".join(
                str(p.pid) for p in alive
            )
        used = gpu.snapshot(gpus, visible) if gpus != 0 else None
        if gpu.is_clean(used) is False:
            return f"GPU memory still in use after an earlier trial: {_mib(used)}"
        with contextlib.suppress(OSError):  # removed already: clean either way
            self.path.unlink()
        return None


def _wait_dead(proc: psutil.Process, limit_s: float) -> bool:
    with contextlib.suppress(psutil.Error):  # timed out: checked below
        proc.wait(timeout=limit_s)
    return not _alive(proc)


def _mib(used: list[float] | None) -> str:
    return "n/a" if used is None else ", ".join(f"{u:.0f} MiB" for u in used)


# -- servers that outlive their owner -------------------------------------------------------
#
# A server runs in its own session, so it survives the process that launched it (a Ray worker,
# or the driver with the local executor) when that process is SIGKILLed or its node's raylet
# dies. Two guards: the kernel sends the server SIGTERM when its launcher dies (Linux
# PR_SET_PDEATHSIG), and every server is on record under the node state folder, so a reaper
# can find and kill what is left (its descendants too, by their token) on the next trial on
# the node, and when the driver resumes or ends a study.

STUDY_ENV = "AUTOTUNE_STUDY"  # the study's name: a marker on every trial server
STUDY_KEY_ENV = "AUTOTUNE_STUDY_KEY"  # one study folder on one driver host
DRIVER_ENV = "AUTOTUNE_DRIVER"  # the driver run that launched the trial (host:pid:start)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Any:
    """A ``preexec_fn`` that asks the kernel to SIGTERM the child when its launcher dies.

    Resolved before the fork, so the child only makes one libc call. None off Linux. The
    signal follows the launching *thread*: launchers keep that thread until teardown.
    """
    if os.uname().sysname != "Linux":
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no libc prctl: the reaper remains
        return None
    parent = os.getpid()
    term = int(signal.SIGTERM)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(term), ctypes.c_ulong(0), ctypes.c_ulong(0), 0)
        if os.getppid() != parent:  # the launcher died before prctl took effect
            os.kill(os.getpid(), term)

    return preexec


def registry_dir(directory: Path | None = None) -> Path:
    """Where running trial servers are on record: ``<node state>/servers``."""
    return (directory or state_dir()) / "servers"


def _create_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:  # gone: no start time
        return None


def register_server(proc: ServerProcess, directory: Path | None = None) -> Path | None:
    """Put a launched server on record (best effort: a read-only disk must not fail a trial).

    Returns:
        The record's path, or None if it could not be written.
    """
    if proc.popen is None:
        return None
    owner = os.getpid()
    info = {
        "token": proc.token,
        "pid": proc.popen.pid,
        "create_time": proc._seen.get(proc.popen.pid) or _create_time(proc.popen.pid),
        "pgid": proc.pgid,
        "host": socket.gethostname(),
        "owner_pid": owner,
        "owner_create_time": _create_time(owner),
        "study": proc.env.get(STUDY_ENV),
        "study_key": proc.env.get(STUDY_KEY_ENV),
        "driver": proc.env.get(DRIVER_ENV),
        "log": str(proc.log_path),
        "time": time.time(),
    }
    folder = registry_dir(directory)
    path = folder / f"{socket.gethostname()}-{proc.token}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        tmp.replace(path)
    except OSError as exc:  # best effort, as documented: None
        _logger.warning("server pid %s not put on record in %s: %s", info["pid"], folder, exc)
        return None
    return path


def registered_servers(directory: Path | None = None) -> list[dict[str, Any]]:
    """The records of this host's trial servers (each with its ``path``)."""
    folder = registry_dir(directory)
    out: list[dict[str, Any]] = []
    for path in sorted(folder.glob(f"{socket.gethostname()}-*.json")):
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):  # torn or foreign record
            continue
        if isinstance(info, dict) and info.get("host") == socket.gethostname():
            out.append({**info, "path": str(path)})
    return out


def _owner_alive(info: dict[str, Any]) -> bool:
    created = info.get("owner_create_time")
    if created is None:
        return bool(psutil.pid_exists(int(info.get("owner_pid", -1))))
    proc = _same(int(info.get("owner_pid", -1)), float(created))
    return proc is not None and _alive(proc)


def _processes_of(info: dict[str, Any]) -> list[psutil.Process]:
    """The live processes of a recorded server: its main process and every holder of its token."""
    found: dict[int, psutil.Process] = {}
    created = info.get("create_time")
    if created is not None:
        main = _same(int(info.get("pid", -1)), float(created))
        if main is not None:
            found[main.pid] = main
    token = info.get("token")
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == os.getpid():
            continue
        try:
            if token and proc.environ().get(TOKEN_ENV) == token:
                found[proc.pid] = proc
        except psutil.Error:  # other users' processes, or gone meanwhile
            continue
    return [p for p in found.values() if _alive(p)]


def _kill(procs: list[psutil.Process], grace_s: float) -> list[psutil.Process]:
    """SIGTERM, wait ``grace_s``, SIGKILL; returns what is still alive."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        for proc in procs:
            with contextlib.suppress(psutil.Error):  # gone already
                proc.send_signal(sig)
        deadline = time.monotonic() + wait_s
        while procs and time.monotonic() < deadline:
            procs = [p for p in procs if _alive(p)]
            time.sleep(0.05)
        procs = [p for p in procs if _alive(p)]
        if not procs:
            break
    return procs


def reap_orphans(
    *,
    study_key: str | None = None,
    driver: str | None = None,
    directory: Path | None = None,
    grace_s: float = 5.0,
) -> list[dict[str, Any]]:
    """Kill this host's trial servers that nobody will tear down, and drop their records.

    A server is an orphan when the process that launched it is dead. With ``study_key``, a
    server of that study launched by a driver run other than ``driver`` is one too (only one
    driver runs a study at a time: the study lock), even while its launcher lingers.

    Returns:
        One dict per orphan: its record plus ``killed`` (PIDs signalled) and ``left`` (PIDs
        still alive; the record is kept for the next reaper then).
    """
    reaped: list[dict[str, Any]] = []
    for info in registered_servers(directory):
        stale = (
            study_key is not None
            and info.get("study_key") == study_key
            and (info.get("driver") != driver)
        )
        if not stale and _owner_alive(info):
            continue
        procs = _processes_of(info)
        pids = [p.pid for p in procs]
        left = _kill(procs, grace_s) if procs else []
        if not left:
            with contextlib.suppress(OSError):  # left on record: reaped again
                Path(info["path"]).unlink()
        _logger.warning(
            "reaped the orphaned trial server %s (study %s, log %s): killed %s, left %s",
            info.get("pid"),
            info.get("study"),
            info.get("log"),
            pids,
            [p.pid for p in left],
        )
        reaped.append({**info, "killed": pids, "left": [p.pid for p in left]})
    return reaped


def kill_own_servers(grace_s: float = 5.0, directory: Path | None = None) -> int:
    """Kill the trial servers this process launched (a study stopped by Ctrl-C).

    Their runners then see the server gone and return; the registry records are dropped by
    the runners' own teardown. Returns how many servers were signalled.
    """
    me = os.getpid()
    mine = [i for i in registered_servers(directory) if i.get("owner_pid") == me]
    for info in mine:
        procs = _processes_of(info)
        if procs:
            _kill(procs, grace_s)
    return len(mine)
