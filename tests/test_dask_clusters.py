"""Dask clusters as people run them: every way a task reaches a kernel is counted, and nothing is left.

A cluster started by Dask's own command line (``dask scheduler``, two ``dask worker``
processes, each in a folder of its own with its own HOME and caches: ``dask_cluster``),
shared by the tests of this module, and a ``LocalCluster`` whose client is made before
the profile. The kernel lives in a package the workers import by name
(``tests/dask_packages/nlp_dask``); the notebook's functions are defined in a real IPython
shell. Hits are compared with exact sums over the tasks; after every profile, even one
whose registration failed, no worker and no scheduler holds the plugin, and the workers'
dispatchers are their own again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="Dask is not installed (the .[dask] extra)")

from numba_lprun import LineProfiler  # noqa: E402
from numba_lprun.processes.dask_plugin import KEY, PLUGIN_NAME  # noqa: E402
from numba_lprun.stats import read_line_stats  # noqa: E402
from tests.dask_cluster import PACKAGES, ExternalCluster  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PACKAGES))  # as the workers have it: the kernel package is installed there
from nlp_dask import kernel  # noqa: E402

NS = [1_500_000, 1_000_000, 500_000, 2_000_000]  # each task's argument: the kernel's loop length
NB = [3 * n for n in NS]  # the notebook's kernel's (a cheaper loop: as many samples wanted)

#: A notebook's cell: a kernel it defines, and task functions of its own calling the module's kernel
#: (a Python one, and a jitted one, which the workers will have compiled before the profile).
CELL = """
import dask, dask.array as da, dask.bag as db, numpy as np
from numba import njit
from nlp_dask import kernel

@njit
def nbwork(n):
    t = 0
    for i in range(n):
        t += i % 7
    return t

def nbtask(n):
    return kernel.work(n) * 2

@njit
def nbjit(n):
    return kernel.work(n) - 1
"""
#: Every way a task reaches the kernels: a module's wrapper, the notebook's kernel and wrappers,
#: a bag, map_blocks and delayed (``meta`` given: no call made in the client to infer it).
PATTERNS = (
    "wrapped = client.gather(client.map(kernel.task, NS, pure=False)); "
    "nb = client.gather(client.map(nbwork, NB, pure=False)); "
    "nbwrapped = client.gather(client.map(nbtask, NS, pure=False)); "
    "nbjitted = client.gather(client.map(nbjit, NS, pure=False)); "
    "bagged = db.from_sequence(NS, npartitions=2).map(kernel.work).compute(); "
    "blocks = da.from_array(np.array(NS), chunks=2)"
    ".map_blocks(kernel.block, meta=np.array((), 'i8')).compute(); "
    "delayed = list(dask.compute(*[dask.delayed(kernel.task)(n) for n in NS]))"
)


def _nbwork_hits(first: int, ns: list[int]) -> dict[int, int]:
    return {first + 2: len(ns), first + 3: sum(ns) + len(ns), first + 4: sum(ns), first + 5: len(ns)}


@pytest.fixture(scope="module")
def cluster():
    """The external cluster and a client of it (not the default client: each test says which is)."""
    started = ExternalCluster()
    client = None
    try:
        started.start()
        client = distributed.Client(started.address, set_as_default=False)
        client.wait_for_workers(2, timeout=90)
        yield started, client
    finally:
        if client is not None:
            client.close()
        started.stop()


def _left_behind(client) -> tuple[dict, list, object]:
    """The plugins on each worker and on the scheduler, and the scheduler's state of the profile."""
    on_workers = client.run(lambda dask_worker: [n for n in dask_worker.plugins if n.startswith(PLUGIN_NAME)])
    on_scheduler = client.run_on_scheduler(
        lambda dask_scheduler: ([n for n in dask_scheduler.worker_plugins if n.startswith(PLUGIN_NAME)],
                                dask_scheduler.task_metadata.get(KEY))
    )  # fmt: skip
    return on_workers, *on_scheduler


def _own_dispatchers(client) -> dict:
    """Whether each worker's kernels are their own dispatchers again: their own class, no twin to
    call (the twins built stay cached on them for a later profile, as in the main process)."""

    def own() -> bool:
        import sys

        import numba.core.registry
        from nlp_dask import kernel

        slow = sys.modules.get("nlp_dask.slow")  # (imported by one test only: it takes seconds)
        kernels = (kernel.work, *([slow.slow_work] if slow else []))
        return all(
            type(k) is numba.core.registry.CPUDispatcher and "_numba_lprun_twin" not in vars(k)
            for k in kernels
        )

    return client.run(own)


def _assert_nothing_left(client) -> None:
    """No plugin, no state, the workers' own dispatchers: at once, but for a worker that was joining
    as the registration was removed (one whose nanny restarts it), which removes its plugin itself
    within a second of its set-up, and the scheduler's watcher, which removes a worker's last report
    a few seconds later; 20 s at most."""
    deadline = time.monotonic() + 20
    while True:
        on_workers, on_scheduler, state = _left_behind(client)
        gone = state is None and not on_scheduler and not any(on_workers.values())
        if gone or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not any(on_workers.values()) and not on_scheduler and state is None, (
        on_workers,
        on_scheduler,
        state,
    )
    assert all(_own_dispatchers(client).values())


def _twin_counts(client) -> dict:
    """On each worker: the hits its counting twin of the kernel has counted and not yet given (none
    once a profile is over, unless something still calls the twin)."""

    def counted() -> int:
        from nlp_dask import kernel

        from numba_lprun.instrument.clock import current_clock
        from numba_lprun.run.targets import cached_target

        target = cached_target(kernel.work, current_clock().kind)
        return int(target.counters["counting"].read().sum()) if target is not None else 0

    return client.run(counted)


def _every_pattern(ipshell, client, warm: bool) -> None:
    """The notebook's case: the cell, then ``%nlprun`` of every pattern; exact sums, workers' samples.
    ``warm``: the workers compiled the notebook's jitted wrapper before (it is relinked to the twins
    for the run); else they compile it during the run (against the twin: compiled again after)."""
    assert ipshell.run_cell(CELL).success
    ipshell.user_ns.update(client=client, NS=NS, NB=NB)
    nbjit = ipshell.user_ns["nbjit"]
    if warm:
        client.gather(client.map(nbjit, [10, 20], pure=False))
    with client.as_current():
        profile = ipshell.run_line_magic(
            "nlprun", f"-r -T /dev/null -f kernel.work -f nbwork {PATTERNS}"
        ).profile
    ns = ipshell.user_ns
    nbwork = ns["nbwork"]
    assert ns["wrapped"] == ns["delayed"] == [kernel.work.py_func(n) + 1 for n in NS]
    assert ns["nb"] == [nbwork.py_func(n) for n in NB]
    assert ns["nbwrapped"] == [2 * kernel.work.py_func(n) for n in NS]
    assert ns["nbjitted"] == [kernel.work.py_func(n) - 1 for n in NS]
    assert ns["bagged"] == list(ns["blocks"]) == [kernel.work.py_func(n) for n in NS]
    assert not profile.missing, profile.missing
    work, nb = (next(f for f in profile.functions if f.source.name == name) for name in ("work", "nbwork"))
    # the kernel: called by the module's wrapper, the notebook's two, a bag, map_blocks and delayed
    assert {k: v for k, v in work.counts.hits.items() if v} == {
        k: 6 * v for k, v in kernel.exact_hits(NS).items()
    }
    first = nbwork.py_func.__code__.co_firstlineno
    assert {k: v for k, v in nb.counts.hits.items() if v} == _nbwork_hits(first, NB)
    for stats in (work, nb):
        # every call ran in the workers (the main process ran none), so every sample is theirs; their
        # loops' lines get some 40 of each function's (about 40 seen in each at a quiet moment), so
        # the odds that none lands there are below 1e-15
        loops = [line for line, n in stats.counts.hits.items() if n > stats.counts.calls]
        assert sum(stats.samples.counts.get(line, 0) for line in loops) > 0, stats.name
        assert any(stats.samples.seconds.get(line) for line in loops), stats.name
    workers = [p for p in profile.parts if p.label.startswith("dask worker")]
    assert len(workers) == 2 and sum(p.profile.sampling.total for p in workers) > 0
    row = dict(work.extras.rows)["Processes"]
    assert row.startswith("main + 2 workers; in the workers: 24 of 24 calls")
    assert all(
        p.label.removeprefix("dask worker ") in row for p in workers if p.profile.functions[0].counts.calls
    )
    _assert_nothing_left(client)
    counted = _twin_counts(client)
    assert client.gather(client.map(nbjit, NS, pure=False)) == ns["nbjitted"]
    assert _twin_counts(client) == counted  # the wrapper calls the kernel itself again


def test_an_external_cluster_counts_every_way_a_task_reaches_the_kernels(cluster, ipshell):
    _every_pattern(ipshell, cluster[1], warm=True)


def test_a_local_cluster_made_before_the_profile_counts_every_way_too(ipshell):
    options = {"n_workers": 2, "threads_per_worker": 1, "processes": True, "dashboard_address": ":0"}
    with (
        distributed.LocalCluster(**options) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        client.gather(client.map(kernel.task, NS[:2], pure=False))  # the workers ran the kernel before
        _every_pattern(ipshell, client, warm=False)


def test_nlprun_on_a_script_that_connects_to_an_external_scheduler(cluster, tmp_path):
    """The script makes its own client, during the run: it is reached as it connects."""
    script = tmp_path / "connects.py"
    script.write_text(
        "import os\n"
        "from distributed import Client\n"
        "from nlp_dask.kernel import task\n"
        "with Client(os.environ['DASK_SCHEDULER']) as client:\n"
        f"    print('sum', sum(client.gather(client.map(task, {NS}, pure=False))))\n"
    )
    lprof = tmp_path / "out.lprof"
    env = {
        "PYTHONPATH": f"{ROOT}{os.pathsep}{PACKAGES}",
        "DASK_SCHEDULER": cluster[0].address,
        "COLUMNS": "100",
        "PATH": "/usr/bin:/bin",
        "NUMBA_LPRUN_CACHE_DIR": os.environ.get("NUMBA_LPRUN_CACHE_DIR", str(tmp_path / "cache")),
    }
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "-f", "nlp_dask.kernel:work", "-D", str(lprof), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert f"sum {sum(kernel.work.py_func(n) + 1 for n in NS)}" in done.stdout
    assert "Processes:" in done.stdout and "main + 2 workers" in done.stdout, done.stdout
    ((_, rows),) = read_line_stats(str(lprof)).timings.items()
    assert {line: n for line, n, _ in rows if n} == kernel.exact_hits(NS)
    _assert_nothing_left(cluster[1])


def test_a_kernel_module_shipped_to_the_workers_during_the_run_is_profiled_once_imported(cluster, tmp_path):
    """The workers cannot import the module when the profile begins (it is said to be missing
    there); ``Client.upload_file`` ships it during the run, a task imports it: from then on its
    kernel is profiled, and nothing is said missing. The workers' copy of the file is in their own
    folders, as a package installed elsewhere on another machine: their counts are the same
    function's all the same."""
    client = cluster[1]
    name = f"shipped_{os.getpid()}_{time.monotonic_ns()}"  # the workers keep what was shipped
    path = tmp_path / f"{name}.py"
    path.write_text((PACKAGES / "nlp_dask" / "kernel.py").read_text(encoding="utf-8"), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        shipped = __import__(name)
    finally:
        sys.path.remove(str(tmp_path))

    def run():
        client.upload_file(str(path))
        return client.gather(client.map(shipped.task, NS, pure=False))

    profiler = LineProfiler(shipped.work)
    with client.as_current():
        assert profiler.runcall(run) == [shipped.work.py_func(n) + 1 for n in NS]
    profile = profiler.profile
    assert not profile.missing, profile.missing
    assert {k: v for k, v in profile.functions[0].counts.hits.items() if v} == shipped.exact_hits(NS)
    _assert_nothing_left(client)


def test_a_worker_killed_during_the_map_is_named(cluster, tmp_path):
    started, client = cluster
    before = client.run(os.getpid)
    flag = str(tmp_path / "killed-one")
    profiler = LineProfiler(kernel.work)
    with client.as_current():
        result = profiler.runcall(
            lambda: client.gather(client.map(kernel.task_or_die, NS, flag=flag, pure=False))
        )
    assert result == [kernel.work.py_func(n) + 1 for n in NS]  # Dask ran the task again elsewhere
    profile = profiler.profile
    said = [m for m in profile.missing if "left the cluster during your run" in m]
    assert len(said) == 1, profile.missing
    (lost,) = said
    gone = [address for address in before if address in lost]
    assert len(gone) == 1 and f"(pid {before[gone[0]]})" in lost, lost
    hits = {k: v for k, v in profile.functions[0].counts.hits.items() if v}
    exact = kernel.exact_hits(NS)
    assert all(hits.get(line, 0) <= n for line, n in exact.items())  # what the lost worker ran is lost
    client.wait_for_workers(2, timeout=90)  # its nanny started it again
    _assert_nothing_left(client)


def test_a_worker_killed_while_the_plugin_is_set_up_leaves_nothing_behind(cluster):
    """The plugin is set up while the workers import the kernel's slow module: one is killed then."""
    started, client = cluster
    from nlp_dask.slow import slow_work

    pids = client.run(os.getpid)
    victim = next(iter(pids.values()))
    markers = [started.root / f"worker-{i}" / "tmp" / f"importing-slow-{victim}" for i in range(2)]

    def kill_when_importing() -> None:
        deadline = time.monotonic() + 60
        while not any(m.exists() for m in markers) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(victim, 9)

    import threading

    killer = threading.Thread(target=kill_when_importing)
    killer.start()
    profiler = LineProfiler(slow_work)
    with client.as_current():
        assert profiler.runcall(lambda: client.submit(slow_work, 1000, pure=False).result()) == sum(
            range(1000)
        )
    killer.join()
    (warning,) = profiler.profile.missing
    assert "could not be profiled" in warning and "the plugin was removed" in warning, warning
    client.wait_for_workers(2, timeout=90)
    _assert_nothing_left(client)


def test_workers_without_numba_lprun_leave_nothing_behind(cluster):
    started, client = cluster
    pid = started.add_worker("lacking", without_numba_lprun=True)
    try:
        client.wait_for_workers(3, timeout=90)
        profiler = LineProfiler(kernel.work)
        with client.as_current():
            assert profiler.runcall(lambda: client.gather(client.map(kernel.work, NS, pure=False))) == [
                kernel.work.py_func(n) for n in NS
            ]
        (warning,) = profiler.profile.missing
        assert "ModuleNotFoundError" in warning and "numba_lprun" in warning, warning
        assert "\n" not in warning
        _assert_nothing_left(client)
    finally:
        started.stop_worker(pid)
    deadline = time.monotonic() + 60
    while len(client.scheduler_info()["workers"]) > 2 and time.monotonic() < deadline:
        time.sleep(0.1)
