"""What profiling a kernel run by worker processes costs: the script unprofiled and under ``nlprun``.

Run ``python benchmarks/processes.py [CASE...]`` (cases: fork, spawn, forkserver, joblib,
dask, dask-client-first, dask-external, ray; default all). A script runs a jitted kernel in
worker processes (4 tasks of 20M iterations on 2 workers: a multiprocessing pool of each
start method, joblib's default loky backend, a Dask ``LocalCluster`` with worker processes
made in the script; ``dask-client-first``, a client made before the profile, timed in one
process; ``dask-external``, a cluster started by Dask's command line, ``dask scheduler``
and two ``dask worker`` processes, to which the script connects; ``ray``, Ray tasks on a
local cluster of 2 CPUs that the script starts), once as
``python script.py`` and once as ``nlprun -f kern:work script.py``, alternating, three
times each; the medians are compared side by side in one run. The goal (issues 30, 48, 63):
at most 1.5x the unprofiled run + 4 s, with hits equal to the exact sum over the tasks.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.dask_cluster starts the cluster

KERNEL = """
import numpy as np
from numba import njit

@njit
def work(n):
    s = 0.0
    for i in range(n):
        if i % 3 == 0:
            s += np.sqrt(i)
        else:
            s -= 1.0
    return s
"""

SCRIPT = """
import multiprocessing as mp
import sys
from kern import work

TASKS = [20_000_000] * 4


def run(case):
    if case == "joblib":
        from joblib import Parallel, delayed

        return Parallel(n_jobs=2)(delayed(work)(n) for n in TASKS)
    if case == "external":
        import os
        from distributed import Client

        with Client(os.environ["DASK_SCHEDULER"]) as client:
            return client.gather(client.map(work, TASKS, pure=False))
    if case == "ray":
        import ray

        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
        task = ray.remote(lambda n: work(n))  # a task function that calls the kernel
        return ray.get([task.remote(n) for n in TASKS])
    if case == "dask":
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
            with Client(c) as client:
                return client.gather(client.map(work, TASKS, pure=False))
    with mp.get_context(case).Pool(2) as pool:
        return pool.map(work, TASKS)


if __name__ == "__main__":
    print("sum", round(sum(run(sys.argv[1])), 3))
"""

#: The notebook's case: a Dask client made before the profile, its workers warm; the same
#: gather timed unprofiled and through ``LineProfiler.runcall``, alternating, in one process.
CLIENT_FIRST = """
import statistics, time
from distributed import Client, LocalCluster
import numba_lprun
from kern import work

TASKS = [20_000_000] * 4
if __name__ == "__main__":
    options = dict(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with LocalCluster(**options) as cluster, Client(cluster) as client:
        def run():
            return client.gather(client.map(work, TASKS, pure=False))

        run()
        plain, profiled = [], []
        for _ in range(3):
            started = time.perf_counter()
            run()
            plain.append(time.perf_counter() - started)
            profiler = numba_lprun.LineProfiler(work)
            started = time.perf_counter()
            profiler.runcall(run)
            profile = profiler.profile
            profiled.append(time.perf_counter() - started)
        hits = max(profile.functions[0].counts.hits.values())
        print(statistics.median(plain), statistics.median(profiled), hits)
"""

CASES = ("fork", "spawn", "forkserver", "joblib", "dask", "dask-client-first", "dask-external", "ray")


def timed(command: list[str], folder: str, **extra: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": folder, **extra}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout


def main() -> None:
    folder = tempfile.mkdtemp(prefix="nlprun-bench-")
    with open(os.path.join(folder, "kern.py"), "w") as handle:
        handle.write(KERNEL)
    with open(os.path.join(folder, "script.py"), "w") as handle:
        handle.write(SCRIPT)
    with open(os.path.join(folder, "client_first.py"), "w") as handle:
        handle.write(CLIENT_FIRST)
    nlprun = [sys.executable, "-m", "numba_lprun", "-f", "kern:work"]
    with contextlib.ExitStack() as stack:
        for method in sys.argv[1:] or CASES:
            if method == "dask-client-first":
                client_first(folder)
                continue
            extra = external(folder, stack) if method == "dask-external" else {}
            argument = "external" if method == "dask-external" else method
            plain, profiled, out = [], [], ""
            for _ in range(3):
                plain.append(timed([sys.executable, "script.py", argument], folder, **extra)[0])
                seconds, out = timed([*nlprun, "script.py", argument], folder, **extra)
                profiled.append(seconds)
            a, b = statistics.median(plain), statistics.median(profiled)
            hits = next((line.split()[1] for line in out.splitlines() if line.strip().startswith("8 ")), "?")
            print(
                f"{method}: unprofiled {a:.2f} s, nlprun {b:.2f} s: {b / a:.2f}x, +{b - a:.2f} s "
                f"(goal: <= 1.5x + 4 s = {1.5 * a + 4:.2f} s); loop-line hits {hits} (exact: 80000004)"
            )


def client_first(folder: str) -> None:
    a, b, hits = timed([sys.executable, "client_first.py"], folder)[1].split()[-3:]
    a, b = float(a), float(b)
    print(
        f"dask-client-first (%nlprun's case, through the API): unprofiled {a:.2f} s, profiled {b:.2f} s: "
        f"{b / a:.2f}x, +{b - a:.2f} s (goal: <= {1.5 * a + 4:.2f} s); loop-line hits {hits} "
        "(exact: 80000004)"
    )


def external(folder: str, stack: contextlib.ExitStack) -> dict[str, str]:
    """A cluster started by Dask's command line for the script to connect to (stopped when the
    benchmark ends), its workers warm: the script runs once unprofiled first, as on a cluster in use."""
    from distributed import Client

    from tests.dask_cluster import ExternalCluster

    cluster = ExternalCluster((folder,))
    stack.callback(cluster.stop)
    cluster.start()
    with Client(cluster.address, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=120)
    extra = {"DASK_SCHEDULER": cluster.address}
    timed([sys.executable, "script.py", "external"], folder, **extra)
    return extra


if __name__ == "__main__":
    main()
