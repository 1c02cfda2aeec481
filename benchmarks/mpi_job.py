"""What profiling an MPI job costs: the job unprofiled and under ``nlprun``, side by side.

Run ``python benchmarks/mpi_job.py [--ranks N] [--repeats K]`` (MPICH's ``mpiexec`` from
``pip install -e ".[mpi]"``). The job is ``tests/test_mpi.py``'s: a kernel calling
``numba_mpi.allreduce`` inside ``@njit``, rank 1 given three times rank 0's work. It runs as
``mpiexec -n N python job.py`` and as ``mpiexec -n N nlprun -f step job.py``, alternating,
``K`` times each (the twins come from numba_lprun's disk cache after the first); the medians
are compared. The goal (issue 60): at most 1.25x the unprofiled job + 2 s, with one table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_mpi import ALLREDUCE  # the tests' job, so both measure one program


def timed(command: list[str], folder: str) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - began, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
    if mpiexec is None:
        raise SystemExit("no mpiexec: pip install -e '.[mpi]'")
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "job.py").write_text(textwrap.dedent(ALLREDUCE))
        plain_cmd = [mpiexec, "-n", str(options.ranks), sys.executable, "job.py"]
        profiled_cmd = [
            mpiexec,
            "-n",
            str(options.ranks),
            sys.executable,
            "-m",
            "numba_lprun",
            "-f",
            "step",
            "job.py",
        ]
        timed(profiled_cmd, folder)  # the twins compiled once, as for a second run of the job
        plain, profiled = [], []
        tables = 0
        for _ in range(options.repeats):
            plain.append(timed(plain_cmd, folder)[0])
            seconds, out = timed(profiled_cmd, folder)
            profiled.append(seconds)
            tables = max(tables, out.count("Function:   step"))
    p, q = statistics.median(plain), statistics.median(profiled)
    goal = 1.25 * p + 2.0
    print(
        f"{options.ranks} ranks, {options.repeats} runs each (medians): plain {p:.2f} s, profiled {q:.2f} s"
    )
    verdict = "met" if q <= goal else "missed"
    print(f"profiled / plain: {q / p:.2f}x; goal <= 1.25x + 2 s = {goal:.2f} s: {verdict}")
    print(f"tables printed by the profiled job: {tables} (one expected)")


if __name__ == "__main__":
    main()
