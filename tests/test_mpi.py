"""MPI jobs under a real ``mpiexec`` (the ``mpich`` wheel): one profile of every rank, shown once.

Each rank profiles its own run; rank 0 prints the one table with the exact sums over the
ranks (line_profiler's hits of every rank added), a ``Ranks`` row, and writes the one
``-D`` file; the other ranks print only their own output. Jobs run oversubscribed on two
cores (``-n 3``).
"""

import os
import shutil
import subprocess
import sys
import textwrap

import line_profiler
import pytest

from tests.conftest import hits_of

MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(
    MPIEXEC is None, reason="no mpiexec: pip install -e '.[test]' brings MPICH's wheel (mpich)"
)

# No MPI in the program: the ranks only know who they are from the launcher's environment.
KERNEL = """
import os
import numpy as np
from numba import njit


@njit
def kern(a, reps):
    s = 0.0
    for r in range(reps):
        for i in range(a.size):
            s += a[i] * 0.5
    return s


rank = int(os.environ["PMI_RANK"])
print(f"rank {rank} {kern(np.ones(1000), 10 * (rank + 1))}", flush=True)
if rank == 2:
    raise ValueError("rank 2 fails after its work")
"""

# numba-mpi inside @njit, rank 1 doing three times rank 0's work: rank 0 waits in the allreduce.
# The signature compiles the twins before the barrier: compiled at the first call, a rank that
# compiles slower (a busy machine) makes the other wait in the first allreduce, which hides the
# imbalance the test looks for.
ALLREDUCE = """
import numpy as np
import numba_mpi
from mpi4py import MPI
from numba import njit


@njit("float64(float64[::1], int64)")
def step(a, reps):
    s = 0.0
    for r in range(reps):
        for i in range(a.size):
            s += np.sqrt(a[i]) * 0.5
    out = np.array([s])
    numba_mpi.allreduce(out.copy(), out)
    return out[0]


rank = MPI.COMM_WORLD.Get_rank()
MPI.COMM_WORLD.Barrier()
for _ in range(3):
    r = step(np.ones(100_000), 100 * (3 if rank == 1 else 1))
print(f"rank {rank} {r}", flush=True)
"""


def _job(tmp_path, n: int, *args: str) -> subprocess.CompletedProcess:
    # the jobs print each line whole and flushed (one write: it reaches the launcher before a rank
    # that raises ends the job); not PYTHONUNBUFFERED, which writes print's every piece apart, so
    # the ranks' pieces interleave in the launcher's output ("rank rank 1 2 ...": CI lost lines)
    env = dict(os.environ, NUMBA_LPRUN_RANK_WAIT="60")
    env.pop("PYTHONUNBUFFERED", None)  # pytest-xdist's workers set it, and the ranks inherited it
    return subprocess.run(
        [MPIEXEC, "-n", str(n), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def _reference(func, calls: list[tuple]) -> dict[int, int]:
    """line_profiler's hits of the Python function over every rank's calls."""
    prof = line_profiler.LineProfiler(func)
    for args in calls:
        prof.runcall(func, *args)
    return hits_of(prof.get_stats(), func.__name__)


def _compiled(source: str, name: str):
    namespace: dict = {}
    exec(compile(textwrap.dedent(source).split("\n\nrank =")[0], "<job>", "exec"), namespace)
    return namespace[name].py_func


def test_three_ranks_give_one_table_with_every_ranks_hits_and_one_file(tmp_path):
    import numpy as np

    (tmp_path / "job.py").write_text(textwrap.dedent(KERNEL))
    lprof = tmp_path / "out.lprof"
    done = _job(
        tmp_path, 3, sys.executable, "-m", "numba_lprun", "--hits", "-D", str(lprof), "-f", "kern", "job.py"
    )
    assert done.returncode != 0  # rank 2 raised, as without the profiler
    assert done.stdout.count("Function:   kern") == 1, done.stdout
    assert done.stdout.count("Profile stats pickled") == 1
    assert "Ranks:      3 ranks, 3 profiled; calls: rank 0 1, rank 1 1, rank 2 1" in done.stdout
    assert sorted(line for line in done.stdout.splitlines() if line.startswith("rank ")) == [
        "rank 0 5000.0",
        "rank 1 10000.0",
        "rank 2 15000.0",
    ]
    assert "rank 2 fails after its work" in done.stderr
    kern = _compiled(KERNEL, "kern")
    expected = _reference(kern, [(np.ones(1000), 10 * (rank + 1)) for rank in range(3)])
    saved = line_profiler.load_stats(str(lprof))
    (rows,) = [rows for (_, _, name), rows in saved.timings.items() if name.endswith("kern")]
    assert {line: hits for line, hits, _ in rows if hits} == expected


def test_numba_mpi_inside_njit_under_mpi4pys_runner_names_the_waiting_line(tmp_path):
    (tmp_path / "job.py").write_text(textwrap.dedent(ALLREDUCE))
    done = _job(tmp_path, 2, sys.executable, "-m", "numba_lprun", "-f", "step", "-m", "mpi4py", "job.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Function:   step") == 1, done.stdout
    assert "Ranks:      2 ranks, 2 profiled" in done.stdout
    step = _compiled(ALLREDUCE, "step")
    text = " ".join(done.stdout.split())
    first = step.__code__.co_firstlineno
    allreduce = first + 7
    assert f"the ranks differ most on line {allreduce} (numba_mpi.allreduce(out.copy(), out)): rank 0" in text
    # the hits are every rank's: the loops ran 3 x (100 + 300) times over 100,000 values
    hits = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[0].isdigit() and parts[1].isdigit():
            hits[int(parts[0])] = int(parts[1])
    assert hits[first + 3] == 3 * (100 + 300) + 6
    assert hits[first + 5] == 3 * (100 + 300) * 100_000
    assert hits[allreduce] == 6


def test_mpi4py_running_nlprun_gives_one_table(tmp_path):
    (tmp_path / "job.py").write_text(textwrap.dedent(ALLREDUCE))
    done = _job(
        tmp_path, 2, sys.executable, "-m", "mpi4py", "-m", "numba_lprun", "--hits", "-f", "step", "job.py"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Function:   step") == 1, done.stdout
    assert "Ranks:      2 ranks, 2 profiled; calls: rank 0 3, rank 1 3" in done.stdout
