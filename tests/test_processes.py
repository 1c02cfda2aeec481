"""Kernels run by worker processes: their hits come back into one profile, exactly.

Real pools and executors on every start method (a forked worker uses the parent's
twins; a spawned one is a fresh interpreter that finds the kernel by name and
unpickles the parent's tasks as its own profiled dispatcher); a worker killed
outright is named in the notes; ``multiprocessing`` is as it was after the run.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest

from numba_lprun import LineProfiler
from numba_lprun.merge import WORKERS_UNTIMED
from numba_lprun.stats import ProfileStats
from tests.process_kernels import (
    both,
    collatz_steps,
    count_then_block_own_part,
    count_then_sigterm_as_it_returns,
    count_then_spoil_own_part,
    count_then_wait,
    die_after,
    exact_hits,
    gather_collatz,
    made_inside,
    spread,
    weight,
    worker_state,
)

N = 40  # each task's argument: a short task (a few thousand hits)
TASKS = 4
ROOT = Path(__file__).resolve().parent.parent


def _expected(tasks: int = TASKS) -> dict[int, int]:
    return {line: tasks * n for line, n in exact_hits(N).items() if n}


def _hits(profile: ProfileStats) -> dict[int, int]:
    (stats,) = profile.functions
    return {line: n for line, n in stats.counts.hits.items() if n}


def _pool_map(method: str, n: int = N) -> list[int]:
    with mp.get_context(method).Pool(2) as pool:  # its __exit__ terminates the workers (SIGTERM)
        return pool.map(collatz_steps, [n] * TASKS)


def _executor_map(method: str) -> list[int]:
    with ProcessPoolExecutor(2, mp_context=mp.get_context(method)) as executor:
        return list(executor.map(collatz_steps, [N] * TASKS))


@pytest.mark.parametrize(
    "run, method",
    [(_pool_map, "fork"), (_pool_map, "spawn"), (_executor_map, "fork"), (_executor_map, "forkserver")],
    ids=["fork-pool", "spawn-pool", "fork-executor", "forkserver-executor"],
)
def test_a_kernel_run_by_worker_processes_has_the_exact_hits_of_every_task(run, method):
    start = BaseProcess.start
    profiler = LineProfiler(collatz_steps)
    result = profiler.runcall(run, method)
    assert result == [collatz_steps.py_func(N)] * TASKS  # the program's results are its own
    assert BaseProcess.start is start  # multiprocessing as it was
    profile = profiler.profile
    assert _hits(profile) == _expected()
    (stats,) = profile.functions
    assert stats.counts.calls == TASKS
    assert [p.label for p in profile.parts][0] == "main" and len(profile.parts) >= 2
    assert sum(p.profile.functions[0].counts.calls for p in profile.parts[1:]) == TASKS
    assert not profile.missing
    # each worker is sampled its whole life (its waits weigh nothing); one that ran no task may
    # have taken no sample (CI: a spawned worker that lived 31 ms on a busy machine took none)
    for part in profile.parts[1:]:
        assert part.profile.sampling.unavailable is None, part
        assert part.profile.sampling.total > 0 or not part.profile.functions[0].counts.calls, part
    assert sum(p.profile.sampling.total for p in profile.parts[1:]) > 0
    assert dict(stats.extras.rows)["Processes"].startswith(f"main + {len(profile.parts) - 1} worker")
    assert "not called during the run" not in [n.text for n in stats.diagnosis.notes]
    # the saved profile holds the merged figures and each process's part
    loaded = ProfileStats.from_json(profile.to_json())
    assert _hits(loaded) == _expected() and len(loaded.parts) == len(profile.parts)
    assert profile.to_line_stats().timings  # .lprof files get the merged hits


def test_the_hot_lines_get_the_workers_samples():
    """4 tasks of about 30 ms on 2 forked workers: the main process runs no task, so every
    sample in the kernel is a worker's (at the boosted rate, some 200 expected: a false
    failure needs none of them to land, odds below 1e-50)."""
    n = 250_000
    profiler = LineProfiler(collatz_steps)
    assert profiler.runcall(_pool_map, "fork", n) == [collatz_steps(n)] * TASKS
    (stats,) = profiler.profile.functions
    first = collatz_steps.py_func.__code__.co_firstlineno
    loop = sum(stats.samples.counts.get(line, 0) for line in range(first + 5, first + 11))
    assert loop > 0 and stats.samples.seconds, stats.samples.counts
    n = stats.samples.total
    row = dict(stats.extras.rows)["Processes"]
    assert f"{n:,} of {n:,} samples; calls in " in row  # the workers that ran it, named
    workers = [p for p in profiler.profile.parts[1:] if p.profile.functions[0].counts.calls]
    assert all(f"{p.label} ({p.profile.functions[0].counts.calls})" in row for p in workers), row
    assert WORKERS_UNTIMED not in [n.text for n in stats.diagnosis.notes]


def test_a_worker_killed_outright_is_named_and_the_profile_still_comes():
    """Two workers killed for one reason are one warning naming both (a pool of 16 was 16)."""

    def run():
        processes = [mp.get_context("fork").Process(target=die_after, args=(N,)) for _ in range(2)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        return [process.exitcode for process in processes], [process.pid for process in processes]

    profiler = LineProfiler(collatz_steps)
    codes, pids = profiler.runcall(run)
    assert codes == [-9, -9]
    profile = profiler.profile
    (missing,) = profile.missing
    assert missing.startswith("2 processes (") and all(f"(pid {pid})" in missing for pid in pids)
    assert "were killed by SIGKILL before they could send their counts: their work is not counted" in missing
    assert any(missing == n.text for n in profile.functions[0].diagnosis.notes)


def _forks(how: str) -> int:
    """The parent's task, then a child of its own ``os.fork`` that does one and ends as ``how``
    says (``_exit``, ``SystemExit``), or goes on past the run (``left``, ended after it)."""
    import os
    import time

    steps = collatz_steps(N)
    pid = os.fork()
    if pid == 0:
        collatz_steps(N)
        if how == "left":
            time.sleep(1.5)
        if how in ("_exit", "left"):
            os._exit(0)
        raise SystemExit(0)
    if how != "left":
        os.waitpid(pid, 0)
    return steps


@pytest.mark.parametrize("how", ["_exit", "SystemExit", "left"])
def test_a_process_the_run_forks_itself_sends_its_counts_or_is_named(how):
    """``os.fork`` outside ``multiprocessing``: the child's work was lost silently (``os._exit``), or
    the child, leaving the run through the profiler, kept a profile of its own (with the parent's
    counts copied into it) that a script printed and saved over the parent's. The child now counts
    from zero and sends its counts as a part; one still running when the run ends is named."""
    import os

    fork, exit_ = os.fork, os._exit
    profiler = LineProfiler(collatz_steps, sample_time=0.05)
    try:
        assert profiler.runcall(_forks, how) == collatz_steps(N)
    except SystemExit:  # the child, leaving the run as it does (its part sent)
        os._exit(0)
    assert (os.fork, os._exit) == (fork, exit_)  # put back
    profile = profiler.profile
    if how == "left":
        assert _hits(profile) == _expected(1)
        (missing,) = profile.missing
        assert "which your run forked (os.fork), sent no counts" in missing
        os.wait()
    else:
        assert _hits(profile) == _expected(2) and not profile.missing
        assert profile.functions[0].counts.calls == 2


def test_a_script_that_forks_shows_one_table_with_the_childs_work(tmp_path):
    """The child of a script's own ``os.fork`` that ends with ``SystemExit`` left the run through
    ``nlprun``: it printed a table of its own and wrote ``-D`` over the parent's (its calls only)."""
    script = tmp_path / "forky.py"
    script.write_text(
        "import os\nfrom tests.process_kernels import collatz_steps\n"
        f"collatz_steps({N})\npid = os.fork()\nif pid == 0:\n    collatz_steps({N})\n"
        "    raise SystemExit(0)\nos.waitpid(pid, 0)\n"
    )
    lprof = tmp_path / "out.lprof"
    env = {"PYTHONPATH": str(ROOT), "COLUMNS": "100", "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "numba_lprun", "-f", "tests.process_kernels:collatz_steps"]
    done = subprocess.run(
        [*command, "-D", str(lprof), str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Function:") == 1 and done.stdout.count("Profile stats pickled") == 1
    from numba_lprun.stats import read_line_stats

    ((_, rows),) = read_line_stats(str(lprof)).timings.items()
    assert {line: n for line, n, _ in rows if n} == _expected(2)


def test_nlprun_on_a_script_whose_fork_pool_runs_a_prange_kernel_and_its_helper(tmp_path):
    """A fresh process, as users run it: the sampler launched Numba's threads in the parent, and
    every forked worker that then ran a ``prange`` loop was ended by OpenMP ("fork() called from a
    process already using GNU OpenMP") while the pool waited for ever."""
    script = tmp_path / "pool_script.py"
    script.write_text(
        "import multiprocessing as mp\n"
        "from tests.process_kernels import both\n"
        "if __name__ == '__main__':\n"
        f"    with mp.get_context('fork').Pool(2) as pool:\n"
        f"        print('steps', sum(pool.map(both, [{N}] * {TASKS})))\n"
    )
    lprof = tmp_path / "out.lprof"
    env = {"PYTHONPATH": str(ROOT), "COLUMNS": "80", "PATH": "/usr/bin:/bin"}
    names = ("collatz_steps", "spread", "weight")
    command = [sys.executable, "-m", "numba_lprun", *(f"-ftests.process_kernels:{n}" for n in names)]
    done = subprocess.run(
        [*command, "-D", str(lprof), str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert f"steps {sum(both(N) for _ in range(TASKS))}" in done.stdout  # the script's own output
    assert "OpenMP" not in done.stderr
    assert "Processes:" in done.stdout and "main + 2 workers" in done.stdout
    assert "not called during the run" not in done.stdout
    from numba_lprun.stats import read_line_stats

    timings = read_line_stats(str(lprof)).timings
    hits = {name: {line: n for line, n, _ in rows} for (_, _, name), rows in timings.items()}
    assert hits["collatz_steps"] == _expected()
    first = spread.py_func.__code__.co_firstlineno
    assert hits["spread"][first + 5] == TASKS * N * (N + 1)  # for i in range(n): exact under prange
    assert hits["spread"][first + 6] == TASKS * N * N
    assert hits["weight"][weight.py_func.__code__.co_firstlineno + 2] == TASKS * N * N


def test_workers_of_a_run_on_probed_twins_run_the_probed_twins(monkeypatch):
    """Without a sampler the run is on clock-probed twins; a forked worker made its own counting
    twin from the parent's redirected dispatcher, a redirecting class with no twin of its own,
    and every task raised KeyError."""
    monkeypatch.setenv("NUMBA_LPRUN_NO_SAMPLER", "1")
    profiler = LineProfiler(collatz_steps)
    assert profiler.runcall(_pool_map, "fork") == [collatz_steps.py_func(N)] * TASKS
    assert _hits(profiler.profile) == _expected()
    profile = profiler.profile
    assert profile.runs.user_twin == "probed"
    assert [p.profile.runs.user_twin for p in profile.parts] == ["probed"] * len(profile.parts)


def test_joblib_workers_kept_for_later_send_their_counts_when_the_run_ends():
    joblib = pytest.importorskip("joblib", reason="joblib is not installed (the .[dask] extra)")

    def run():
        return joblib.Parallel(n_jobs=2)(joblib.delayed(collatz_steps)(N) for _ in range(TASKS))

    profiler = LineProfiler(collatz_steps)
    assert profiler.runcall(run) == [collatz_steps.py_func(N)] * TASKS
    profile = profiler.profile
    assert _hits(profile) == _expected()  # loky's workers still run: asked for their counts
    assert not profile.missing
    # they go on running for the program, on its own code again: no twin, no sampler
    states = joblib.Parallel(n_jobs=2)(joblib.delayed(worker_state)(i) for i in range(TASKS))
    assert all(own and not sampled for _, sampled, own in states), states
    # a later profile cannot reach them, and says so instead of showing a silent zero
    again = LineProfiler(collatz_steps)
    try:
        again.runcall(run)
    finally:  # as the warning advises; and the tests after this one get no kept worker
        joblib.externals.loky.get_reusable_executor().shutdown(wait=True)
    (warning,) = again.profile.missing
    assert "started before this profile" in warning and "joblib" in warning


def test_a_pool_made_before_the_profile_is_named_not_silently_missed():
    with mp.get_context("fork").Pool(2) as pool:
        profiler = LineProfiler(collatz_steps)
        assert profiler.runcall(pool.map, collatz_steps, [N] * TASKS) == [collatz_steps.py_func(N)] * TASKS
        workers = [p.pid for p in pool._pool]
    (warning,) = profiler.profile.missing  # (joblib's workers kept from an earlier test are in it too)
    assert "worker processes started before this profile were running" in warning
    assert all(f"(pid {pid})" in warning for pid in workers), warning
    assert not _hits(profiler.profile)  # the main process ran none of it: the warning says why


PARENT_ONLY = """
import multiprocessing
from numba import njit

if multiprocessing.parent_process() is not None:
    raise RuntimeError("this module is not for worker processes")


@njit
def here_only(n):
    return n + 1
"""


@pytest.mark.parametrize("beside", [False, True], ids=["alone", "beside-one-it-finds"])
def test_a_spawned_worker_that_cannot_find_the_function_says_why(tmp_path, monkeypatch, beside):
    """A spawned worker finds the profiled functions by importing their modules: one whose import
    fails there ran its work unprofiled and sent nothing, and the profile said only that it
    "exited with status 0 without sending its counts"; beside a function it found, nothing at all
    was said of it. It says why now."""
    (tmp_path / "parent_only_kernels.py").write_text(PARENT_ONLY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import parent_only_kernels

    def run():
        worker = mp.get_context("spawn").Process(target=sum, args=([1, 2],))
        worker.start()
        worker.join()
        return parent_only_kernels.here_only(1)

    profiler = LineProfiler(parent_only_kernels.here_only, *([collatz_steps] if beside else []))
    assert profiler.runcall(run) == 2
    (said,) = profiler.profile.missing
    assert "here_only could not be profiled (importing parent_only_kernels failed here: RuntimeError" in said
    assert "this module is not for worker processes" in said and "without sending" not in said


def test_a_dask_local_cluster_started_in_the_run_sends_every_workers_counts():
    distributed = pytest.importorskip("distributed", reason="Dask is not installed (the .[dask] extra)")

    def run():
        options = {"n_workers": 2, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
        with distributed.LocalCluster(**options) as cluster, distributed.Client(cluster) as client:
            return client.gather(client.map(collatz_steps, [N] * TASKS, pure=False))

    profiler = LineProfiler(collatz_steps)
    assert profiler.runcall(run) == [collatz_steps.py_func(N)] * TASKS
    assert _hits(profiler.profile) == _expected() and not profiler.profile.missing, profiler.profile.missing


def test_a_process_the_run_kills_outright_sends_its_part_first():
    """``Process.kill`` (SIGKILL) during the run asks the process for its part first: a Dask
    nanny kills a worker still closing after 4 s, and on a loaded machine one worker's part,
    written only once its target returned, was lost with it (half the hits in a suite run)."""
    context = mp.get_context("fork")

    def run():
        done = context.Event()
        process = context.Process(target=count_then_wait, args=(N, TASKS, done))
        process.start()
        assert done.wait(60)
        process.kill()
        process.join()
        return process.exitcode

    profiler = LineProfiler(collatz_steps)
    assert profiler.runcall(run) == -9
    assert _hits(profiler.profile) == _expected() and not profiler.profile.missing, profiler.profile.missing


def test_a_kernel_made_inside_a_function_is_counted_in_spawned_workers():
    """A spawned worker finds the profiled functions by module and name; one made inside a function
    has neither, so the workers ran it unprofiled and the profile said they were "killed by
    SIGTERM before they could send their counts" (the pool's exit), with no hit. It is sent to
    them pickled, as the tasks send it: the hits are those of the same calls made here."""
    kernel = made_inside()

    def run():
        with mp.get_context("spawn").Pool(2) as pool:
            return pool.map(kernel, [N] * TASKS)

    here = LineProfiler(kernel)
    for _ in range(TASKS):
        here.runcall(kernel, N)
    profiler = LineProfiler(kernel)
    assert profiler.runcall(run) == [kernel.py_func(N)] * TASKS
    assert not profiler.profile.missing, profiler.profile.missing
    assert _hits(profiler.profile) == _hits(here.profile) != {}


@pytest.mark.parametrize("delay", [0.0, 0.003, 0.02])
def test_sigterm_as_the_run_closes_its_counts_loses_none(delay):
    """A pool worker that ended its task loop as ``Pool.terminate``'s SIGTERM came: the SIGTERM's
    part read the counters while the run was taking them (some zeroed, others not, the counts taken
    not yet kept), and replaced the run's last part: a kernel's hits were lost, silently (7 of 98
    ``nlprun`` runs of a fork pool's script, 1 of 12 clean-clone suite runs). SIGTERM now waits
    for the last part once the target has returned. The delays put SIGTERM before, around and
    after the run's closing (1.5-12 ms in a forked child here); the window itself, the counts
    being taken, lasts about 0.1 ms, so this test cannot aim at it: the script's test
    (``test_nlprun_on_a_script_whose_fork_pool_runs_a_prange_kernel_and_its_helper``) met it."""
    context = mp.get_context("fork")

    def run():
        process = context.Process(target=count_then_sigterm_as_it_returns, args=(N, TASKS, delay))
        process.start()
        process.join()
        return process.exitcode

    profiler = LineProfiler(collatz_steps)
    assert profiler.runcall(run) in (0, -signal.SIGTERM)
    assert _hits(profiler.profile) == _expected() and not profiler.profile.missing, profiler.profile.missing


def _one_forked_worker(target) -> int | None:
    """Run ``target(N, TASKS)`` in one forked process; its exit code."""
    process = mp.get_context("fork").Process(target=target, args=(N, TASKS))
    process.start()
    process.join()
    return process.exitcode


def test_a_part_that_cannot_be_read_is_named_not_lost():
    """A part the parent could not read was skipped without a word, and the process was then said
    to have "exited with status 0 without sending its counts" (one loaded clean-clone run said
    that of a Dask worker, cause unknown). What could not be read is named now."""
    profiler = LineProfiler(collatz_steps)
    assert profiler.runcall(_one_forked_worker, count_then_spoil_own_part) == 0
    (said,) = profiler.profile.missing
    assert "could not be read (ValueError" in said and "without sending" not in said, said


def test_a_part_that_cannot_be_written_says_why_on_the_workers_stderr(capfd):
    """A worker that could not write its part (a full disk) said nothing: the parent can only say
    it sent none. The worker now says why on its standard error."""
    profiler = LineProfiler(collatz_steps)
    assert profiler.runcall(_one_forked_worker, count_then_block_own_part) == 0
    (said,) = profiler.profile.missing
    assert "without sending its counts" in said, said
    err = capfd.readouterr().err
    assert "could not save its counts: [Errno 21] Is a directory" in err, err


def test_a_dask_client_made_before_the_profile_has_its_workers_profiled():
    """The usual notebook: the cluster and its client exist before the profile, and the workers
    already ran the kernel (their tasks unpickle the dispatcher they know)."""
    distributed = pytest.importorskip("distributed", reason="Dask is not installed (the .[dask] extra)")
    from numba_lprun.processes.dask_workers import PLUGIN_NAME

    options = {"n_workers": 2, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
    with distributed.LocalCluster(**options) as cluster, distributed.Client(cluster) as client:
        expected = [collatz_steps.py_func(N)] * TASKS
        assert client.gather(client.map(collatz_steps, [N] * TASKS, pure=False)) == expected

        def run():
            return client.gather(client.map(collatz_steps, [N] * TASKS, pure=False))

        profiler = LineProfiler(collatz_steps)
        assert profiler.runcall(run) == expected
        profile = profiler.profile
        assert _hits(profile) == _expected() and not profile.missing
        assert [p.label.split(" tcp")[0] for p in profile.parts] == ["main", "dask worker", "dask worker"]
        assert dict(profile.functions[0].extras.rows)["Processes"].startswith("main + 2 workers")
        # a statement whose state can be saved: no extra run either, since it would send the tasks
        # again and the workers would count them again (they did: 37x the exact hits)
        again = LineProfiler(collatz_steps)
        assert again.runcall(gather_collatz, N, TASKS) == expected
        assert _hits(again.profile) == _expected()
        assert again.profile.runs.once == f"your run sent {TASKS} tasks to Dask workers"
        # afterwards the workers are as they were: no plugin, the kernel's plain calls
        plugins = client.run(lambda dask_worker: list(dask_worker.plugins))
        assert not any(n.startswith(PLUGIN_NAME) for names in plugins.values() for n in names), plugins
        assert client.gather(client.map(collatz_steps, [N], pure=False)) == expected[:1]


def test_the_magic_around_a_fork_pool(ipshell):
    ipshell.user_ns.update(mp=mp, collatz_steps=collatz_steps, N=N, TASKS=TASKS)
    statement = "with mp.get_context('fork').Pool(2) as pool: steps = pool.map(collatz_steps, [N] * TASKS)"
    profile = ipshell.run_line_magic("nlprun", f"-r -f collatz_steps {statement}").profile
    assert ipshell.user_ns["steps"] == [collatz_steps.py_func(N)] * TASKS
    assert _hits(profile) == _expected()
    assert "your run started 2 processes" in profile.runs.once  # run once: no plain run repeats the pool


SCRIPT_WITH_ITS_KERNEL = """\
import multiprocessing as mp
from numba import njit

@njit
def triangle(n):
    s = 0
    for i in range(n):
        s += i
    return s

if __name__ == "__main__":
    with mp.get_context("{method}").Pool(2) as pool:
        print("total", sum(pool.map(triangle, [1000] * 4)))
"""


JOBLIB_MAIN = """
if __name__ == "__main__":
    from joblib import Parallel, delayed
    print("total", sum(Parallel(n_jobs=2)(delayed(triangle)(1000) for _ in range(4))))
"""


@pytest.mark.parametrize("method", ["fork", "spawn", "joblib"])
def test_nlprun_on_a_script_whose_pool_runs_a_kernel_the_script_defines(tmp_path, method):
    """The kernel is defined by the script as it runs (the profiler adopts it then), and a spawned
    worker knows the script as ``__mp_main__``: the workers' counts once never came back (an
    empty table, "not called during the run"), as the processes were told the functions known
    before the script ran, and a spawned worker did not find ``__main__.triangle``. joblib's
    loky workers never run the script: the tasks send the kernel by value, and a worker found
    none to profile ("did not answer: its work is not counted") until the processes were sent
    the kernel pickled too."""
    if method == "joblib":
        pytest.importorskip("joblib", reason="joblib is not installed (the .[dask] extra)")
    script = tmp_path / "pool_script.py"
    source = SCRIPT_WITH_ITS_KERNEL.format(method=method)
    if method == "joblib":
        source = source[: source.index('if __name__ == "__main__":')] + JOBLIB_MAIN
    script.write_text(source)
    lprof = tmp_path / "out.lprof"
    env = {"PYTHONPATH": str(ROOT), "COLUMNS": "80", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "-f", "triangle", "-D", str(lprof), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"total {4 * sum(range(1000))}" in done.stdout
    assert "main + 2 workers" in done.stdout and "not called during the run" not in done.stdout
    from numba_lprun.stats import read_line_stats

    (rows,) = read_line_stats(str(lprof)).timings.values()
    hits = sorted(n for _, n, _ in rows if n)
    assert hits == [4, 4, 4000, 4004], hits  # s = 0 and return s, the body, the loop: exact
