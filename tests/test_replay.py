"""The user's statement runs once in every mode: extra runs replay the profiled functions' calls.

Each statement here has an effect no snapshot of the process can see (a line appended to
a file, a process started, a module's counter, printed output): it must happen exactly once
per profile, while the extra runs (the timed plain replay and the sampled replays) still
give the overhead figure and the samples.
"""

import subprocess
import sys

import numpy as np
from numba import njit

import numba_lprun
from tests.conftest import reference_hits

CALLS_MADE = [0]  # a module-level counter the statement's Python function increments


@njit
def kern(a):
    s = 0.0
    for v in a:
        s += v * v
    return s


@njit
def bump(a):
    for i in range(a.size):
        a[i] += 1.0
    return a.sum()


@njit
def pairs(n):
    for i in range(n):
        yield i * 2


def run_and_log(a, path):
    CALLS_MADE[0] += 1
    r = kern(a)
    with open(path, "a") as handle:
        handle.write(f"{r}\n")
    return r


def start_process(a, path):
    subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'a').write('started\\n')"], check=True)
    return kern(a)


def _lines(path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def _replayed(profile) -> bool:
    return profile.runs.once is None and profile.sampling is not None and profile.sampling.extra_runs >= 1


def test_runcall_and_runctx_append_once_and_replay_the_kernel(tmp_path):
    a = np.linspace(0.0, 1.0, 20_000)
    path = tmp_path / "log.txt"
    before = CALLS_MADE[0]
    prof = numba_lprun.LineProfiler(kern, sample_time=0.2)
    assert prof.runcall(run_and_log, a, path) == kern.py_func(a)
    assert _lines(path) == 1 and CALLS_MADE[0] == before + 1
    assert _replayed(prof.profile), prof.profile.runs
    assert any("replay" in run for run in prof.profile.runs.extra)
    (stats,) = prof.profile.functions
    assert stats.counts.hits == reference_hits(kern, a)  # the replays' counts are not the user's
    assert stats.distortion.overhead is not None  # the plain replay made the same call: like with like

    prof = numba_lprun.LineProfiler(kern, sample_time=0.2)
    prof.runctx("run_and_log(a, path)", {"run_and_log": run_and_log, "a": a, "path": path}, None)
    assert _lines(path) == 2 and CALLS_MADE[0] == before + 2
    assert _replayed(prof.profile)


def test_the_magics_append_once(ipshell, tmp_path):
    path = tmp_path / "log.txt"
    ipshell.user_ns.update(run_and_log=run_and_log, kern=kern, a=np.ones(5000), path=path)
    ipshell.run_line_magic("nlprun", "-f kern --sample-time 0.1 run_and_log(a, path)")
    assert _lines(path) == 1
    ipshell.run_cell_magic("nlprun", "-f kern --sample-time 0.1", "r = run_and_log(a, path)\nr2 = r + 1")
    assert _lines(path) == 2 and ipshell.user_ns["r2"] == ipshell.user_ns["r"] + 1


def test_a_statement_that_starts_a_process_or_prints_does_it_once(tmp_path, capsys):
    path = tmp_path / "log.txt"
    prof = numba_lprun.LineProfiler(kern, sample_time=0.1)
    prof.runctx("print('hello once'); start_process(a, path)", {"start_process": start_process,
                "a": np.ones(1000), "path": path}, None)  # fmt: skip
    assert _lines(path) == 1
    assert capsys.readouterr().out.count("hello once") == 1
    assert _replayed(prof.profile)


def test_a_kernel_that_changes_its_argument_changes_it_once():
    a = np.zeros(1000)
    prof = numba_lprun.LineProfiler(bump, sample_time=0.1)
    assert prof.runcall(bump, a) == 1000.0
    assert (a == 1.0).all()  # the replays ran on copies
    assert _replayed(prof.profile)


def test_a_strided_view_is_replayed_as_the_same_type():
    """A replay's copy of a view keeps its layout: no new signature compiles for the replays."""
    a = np.arange(4000.0)[::2]
    kern(a)
    before = len(kern.signatures)
    prof = numba_lprun.LineProfiler(kern, sample_time=0.1)
    prof.runcall(kern, a)
    assert _replayed(prof.profile)
    assert len(kern.signatures) == before


def test_a_generator_is_not_replayed_and_the_profile_says_why():
    prof = numba_lprun.LineProfiler(pairs)
    assert prof.runctx("out = sum(pairs(10))", {"pairs": pairs}, None) is prof
    assert prof.profile.runs.once is not None and "generator" in prof.profile.runs.once
