"""A Dask cluster started as people start one: ``dask scheduler`` and ``dask worker`` processes.

Each process is started by Dask's own command line through a shell that exits at once,
so none is a child of the test's Python; each has its own working directory, HOME,
TMPDIR, NUMBA_CACHE_DIR and numba_lprun cache, and listens on the loopback interface
only. The kernel package (``tests/dask_packages/nlp_dask``) is on the workers' path, as an
installed package would be. ``stop`` ends every process by pid (the nannies' worker
processes too, found through /proc), on success or failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

PACKAGES = Path(__file__).resolve().parent / "dask_packages"
#: Set in the workers' environment: the kernel package's slow module sleeps on import there only.
WORKER_FLAG = "NLP_DASK_WORKER"


class ExternalCluster:
    """A scheduler and workers started by Dask's command line, each in a folder of its own."""

    def __init__(self, paths: tuple[str, ...] = (str(PACKAGES),)) -> None:
        self.paths = os.pathsep.join(paths)  # where the processes import the kernels from
        self.root = Path(tempfile.mkdtemp(prefix="nlprun-cluster-"))
        self.pids: list[int] = []  # every process started (the shells' children), by pid
        self.address = ""

    def start(self, workers: int = 2, timeout: float = 90.0) -> ExternalCluster:
        folder = self._folder("scheduler")
        scheduler_file = self.root / "scheduler.json"
        options = "scheduler --host 127.0.0.1 --port 0 --no-dashboard --scheduler-file".split()
        command = [_dask(), *options, str(scheduler_file)]
        self._launch(folder, command, self.paths)  # it unpickles the task graphs: the kernels too
        deadline = time.monotonic() + timeout
        while not scheduler_file.exists():
            self._check_alive(deadline, "the scheduler did not write its address")
            time.sleep(0.05)
        for _ in range(50):
            with contextlib.suppress(ValueError, KeyError):
                self.address = json.loads(scheduler_file.read_text())["address"]
                break
            time.sleep(0.05)
        for index in range(workers):
            self.add_worker(f"worker-{index}")
        return self

    def add_worker(self, name: str, without_numba_lprun: bool = False) -> int:
        """Start a ``dask worker`` (with its nanny) named ``name``; its pid (the nanny's)."""
        folder = self._folder(name)
        options = f"worker {self.address} --name {name} --nworkers 1 --nthreads 1 --host 127.0.0.1".split()
        command = [_dask(), *options, "--no-dashboard", "--local-directory", str(folder / "dask")]
        pythonpath = self.paths
        if without_numba_lprun:  # the same packages, numba_lprun left out, and no site module to add it
            command = [sys.executable, "-S", *command]
            pythonpath = f"{_packages_without_numba_lprun(self.root)}{os.pathsep}{pythonpath}"
        return self._launch(folder, command, pythonpath)

    def _folder(self, name: str) -> Path:
        folder = self.root / name
        for sub in ("home", "tmp", "numba-cache", "lprun-cache"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        return folder

    def _launch(self, folder: Path, command: list[str], pythonpath: str = "") -> int:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTEST", "NUMBA_LPRUN", "DASK_", "COV_")) and key != "PYTHONPATH"
        }
        env.update(
            HOME=str(folder / "home"),
            TMPDIR=str(folder / "tmp"),
            NUMBA_CACHE_DIR=str(folder / "numba-cache"),
            NUMBA_LPRUN_CACHE_DIR=str(folder / "lprun-cache"),
            PYTHONPATH=pythonpath,
            DASK_DISTRIBUTED__ADMIN__LOG_LENGTH="1000",
        )
        env[WORKER_FLAG] = "1"
        log = folder / "log.txt"
        line = f"{shlex.join(command)} >{shlex.quote(str(log))} 2>&1 </dev/null & echo $!"
        shell = subprocess.run(
            ["sh", "-c", line], cwd=folder, env=env, capture_output=True, text=True, check=True
        )
        pid = int(shell.stdout.split()[-1])
        self.pids.append(pid)
        return pid

    def _check_alive(self, deadline: float, what: str) -> None:
        if time.monotonic() > deadline or not all(_alive(pid) for pid in self.pids):
            logs = {p.parent.name: p.read_text()[-2000:] for p in self.root.glob("*/log.txt")}
            raise RuntimeError(f"{what}: {logs}")

    def stop(self) -> None:
        """End every process started, by pid: SIGTERM, then SIGKILL for whatever is still alive after
        3 s (the nannies' worker processes included)."""
        everyone = {pid for started in self.pids for pid in (started, *_descendants(started))}
        for pid in reversed(self.pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 3
        while any(map(_alive, everyone)) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in everyone:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)

    def stop_worker(self, pid: int) -> None:
        """End one worker started by ``add_worker`` (its nanny and worker process), by pid."""
        everyone = [pid, *_descendants(pid)]
        for each in everyone:
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(map(_alive, everyone)) and time.monotonic() < deadline:
            time.sleep(0.05)


def _dask() -> str:
    """Dask's command line, as installed beside this Python."""
    return str(Path(sys.executable).parent / "dask")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie is not running: it is not our child to reap)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (a nanny's worker process, its resource tracker...)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, frontier = [], [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child)
    return found


def _packages_without_numba_lprun(root: Path) -> Path:
    """A folder of links to every installed package but numba_lprun: a worker's environment
    where numba_lprun is not installed."""
    folder = root / "site-without-numba-lprun"
    if folder.exists():
        return folder
    folder.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name.lower()
        if name.startswith(("numba_lprun", "__editable__")) or name.endswith(".pth"):
            continue
        (folder / entry.name).symlink_to(entry)
    return folder
