"""Ray's tasks and actors, counted as Dask's are (issue 63): real Ray clusters, in subprocesses.

Ray's workers are started by its raylet, so the run reaches them through Ray itself: a setup
hook in the job's runtime environment (``processes/ray_workers.py``). Each check runs a real
cluster (``ray.init()`` in the script, or ``ray start --head`` joined with ``address="auto"``)
and compares the summed hits with line_profiler's over the same calls, on a task function
and an actor's method; nothing of the profile is left in the workers or in the temporary
folder afterwards.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import line_profiler
import numpy as np
import pytest

from tests.conftest import hits_of

pytest.importorskip("ray")

JOB = """
import numpy as np
import ray
from numba import njit


@njit
def kern(a, reps):
    s = 0.0
    for r in range(reps):
        for i in range(a.size):
            s += a[i] * 0.5
    return s


@ray.remote
def task(n):
    return kern(np.ones(n), 3)


@ray.remote
class Accumulator:
    def __init__(self):
        self.total = 0.0

    def add(self, n):
        self.total += kern(np.ones(n), 2)
        return self.total


ray.init(ADDRESS)
print("tasks", sum(ray.get([task.remote(100 * (k + 1)) for k in range(4)])))
acc = Accumulator.remote()
print("actor", ray.get([acc.add.remote(50) for _ in range(3)])[-1])
"""
#: The calls the job makes, as (n, reps): four tasks, then three of the actor's method.
CALLS = [(100 * (k + 1), 3) for k in range(4)] + [(50, 2)] * 3
#: One CPU: one worker to start (the actor waits for the tasks); two cost each test about 6 s more.
LOCAL = 'num_cpus=1, include_dashboard=False, logging_level="ERROR"'


def _reference(calls: list[tuple[int, int]] = CALLS) -> dict[int, int]:
    """line_profiler's hits of ``kern`` over ``calls``, by offset from its ``def`` line."""
    namespace: dict = {}
    exec(compile(textwrap.dedent(JOB).split("\n\n@ray.remote")[0], "<job>", "exec"), namespace)
    kern = namespace["kern"].py_func
    prof = line_profiler.LineProfiler(kern)
    for n, reps in calls:
        prof.runcall(kern, np.ones(n), reps)
    first = kern.__code__.co_firstlineno
    return {line - first: hits for line, hits in hits_of(prof.get_stats(), "kern").items()}


@pytest.fixture
def scratch():
    """A short temporary folder (Ray's sockets live under it: at most 107 bytes a path) for the
    run's folders, checked empty after; removed with what Ray left."""
    folder = Path(tempfile.mkdtemp(prefix="nlr-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _env(scratch: Path) -> dict:
    # no token: the cluster started apart is joined as any local script joins it
    return dict(os.environ, TMPDIR=str(scratch), RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")


def _run(tmp_path: Path, scratch: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, env=_env(scratch), capture_output=True, text=True, timeout=240
    )


def _table_hits(stdout: str) -> dict[int, int]:
    """Hits by offset from the ``def`` line, read off the printed table."""
    rows = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[0].isdigit() and parts[1].isdigit():
            rows[int(parts[0])] = int(parts[1])
    first = min(rows) - 2  # the first counted line is the function's first statement
    return {line - first: hits for line, hits in rows.items()}


#: Ray starts a worker that has a runtime environment through a shell command that does not quote
#: Python's path: with a space in it (CI's clone: ".../ci run/numba_lprun"), no such worker starts
SPACE_IN_PYTHON = any(c.isspace() for c in sys.executable)


def _check(tmp_path: Path, scratch: Path, address: str) -> None:
    (tmp_path / "job.py").write_text(textwrap.dedent(JOB).replace("ADDRESS", address))
    done = _run(tmp_path, scratch, "-m", "numba_lprun", "-f", "kern", "job.py")
    assert done.returncode == 0, done.stderr
    # what the plain job prints (kern(ones(n), reps) is reps * n / 2): no second cluster to start
    said = [line for line in done.stdout.splitlines() if line.startswith(("tasks", "actor"))]
    assert said == [f"tasks {sum(reps * n / 2 for n, reps in CALLS[:4])}", f"actor {3 * 2 * 50 / 2}"]
    text = " ".join(done.stdout.split())
    assert "in the workers: 7 of 7 calls" in text and "ray worker (pid" in text, done.stdout
    assert "not counted" not in text and "not called" not in text, done.stdout
    assert _table_hits(done.stdout) == _reference()
    assert not [p.name for p in scratch.glob("nlprun-*")]  # no folder left behind


def test_tasks_and_an_actor_on_a_local_cluster_are_counted_exactly(tmp_path, scratch):
    _check(tmp_path, scratch, LOCAL)


@pytest.mark.skipif(
    SPACE_IN_PYTHON,
    reason="a joined cluster takes the hook through a runtime environment, which Ray cannot start "
    "with a space in Python's path: the run says so, and counts nothing there (a minute of CI "
    "for that one sentence)",
)
def test_a_cluster_started_apart_is_joined_and_counted(tmp_path, scratch):
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    env = _env(scratch)
    start = [ray_cli, "start", "--head", "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"]
    started = subprocess.run(
        [*start, "--node-ip-address=127.0.0.1"], env=env, capture_output=True, text=True, timeout=120
    )
    try:
        assert started.returncode == 0, started.stderr
        _check(tmp_path, scratch, 'address="auto", logging_level="ERROR"')
    finally:
        _stop_by_pid(scratch)


def _stop_by_pid(scratch: Path) -> None:
    """Kill the cluster's processes: those whose command line names its folder (Ray's session
    lives there: TMPDIR), and no other Ray on the machine."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(scratch).encode() in command:
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), signal.SIGKILL)


UNREACHABLE = """
import numpy as np
import ray
from numba import njit


@njit
def kern(n):
    s = 0
    for i in range(n):
        s += i
    return s


@ray.remote
def task(n):
    return kern(n)


# the workers import a numba_lprun that fails (as where it is not installed): they run as themselves
env = {"env_vars": {"PYTHONPATH": SHADOW}}
ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR", runtime_env=env)
print("sum", sum(ray.get([task.remote(10) for _ in range(2)])))
"""


@pytest.mark.skipif(
    SPACE_IN_PYTHON, reason="Ray starts no worker with a runtime environment here (a space in Python's path)"
)
def test_workers_that_cannot_import_numba_lprun_are_named_not_called(tmp_path, scratch):
    shadow = tmp_path / "shadow" / "numba_lprun"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed here')\n")
    (tmp_path / "job.py").write_text(textwrap.dedent(UNREACHABLE).replace("SHADOW", repr(str(shadow.parent))))
    done = _run(tmp_path, scratch, "-m", "numba_lprun", "--hits", "-f", "kern", "job.py")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "sum 90" in text
    assert "a Ray worker (pid" in text and "numba_lprun cannot be imported there" in text, done.stdout
    assert "not called during the run" not in text
    assert "no call counted in this process or in the processes that sent their parts" in text


NOTEBOOK = """
from IPython.testing.globalipapp import start_ipython

ip = start_ipython()
ip.run_line_magic("load_ext", "numba_lprun")
ip.run_cell(CELL + '''

@ray.remote
def leftovers():  # the worker's own dispatcher again: its own class, no twin to call (the twins built
    # stay cached on it for a later profile, as in the main process)
    return [type(kern).__name__, "_numba_lprun_twin" in vars(kern)]
''')
prof = ip.run_cell_magic("nlprun", "-r -f kern", '''
ray.init(LOCAL)
total = sum(ray.get([task.remote(100 * (k + 1)) for k in range(4)]))
''')
print("HITS", sum(sum(f.counts.hits.values()) for f in prof.profile.functions), ip.user_ns["total"])
ip.run_cell("_left = ray.get(leftovers.remote())")
print("LEFT", ip.user_ns["_left"])
again = ip.run_line_magic("nlprun", "-r -f kern ray.get(task.remote(10))")
print("AGAIN", " ".join(" ".join(again.profile.missing).split()))
print("NOTES", [n.text for f in again.profile.functions for n in f.diagnosis.notes])
ip.run_cell("ray.shutdown()")
"""


def test_a_notebooks_task_is_counted_and_a_ray_started_before_is_said(tmp_path, scratch):
    cell = textwrap.dedent(JOB).split("\n\n@ray.remote\nclass")[0]  # the job's kernel and task
    notebook = textwrap.dedent(NOTEBOOK).replace("LOCAL", LOCAL).replace("CELL", repr(cell))
    (tmp_path / "notebook.py").write_text(notebook)
    done = _run(tmp_path, scratch, "notebook.py")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.split()}
    four_tasks = sum(_reference(CALLS[:4]).values())
    assert lines["HITS"].split()[1:] == [str(four_tasks), "1500.0"], lines["HITS"]
    assert lines["LEFT"] == "LEFT ['CPUDispatcher', False]", lines["LEFT"]  # the workers' kern as it was
    assert "Ray was started before this profile" in lines["AGAIN"], lines["AGAIN"]
    assert "not called during the run" not in lines["NOTES"], lines["NOTES"]
