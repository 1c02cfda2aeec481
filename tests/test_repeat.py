"""Repeated and concurrent profiling: same hits every time, nothing leaks between
profiler objects, and memory stays flat over many runs."""

import gc
import linecache
import os
import sys
import weakref

import numpy as np
from numba import njit

import numba_lprun
from numba_lprun.internals import CPUDispatcher
from tests import kernels as k
from tests.conftest import hits_of, reference_hits

A = np.arange(1.0, 9.0)
GRID = np.arange(12.0).reshape(3, 4)


def bindings():
    """id of every jitted function bound in the kernels module, and their compiled signatures."""
    ns = vars(k)
    binds = {name: id(v) for name, v in ns.items() if isinstance(v, CPUDispatcher)}
    sigs = {name: tuple(v.signatures) for name, v in ns.items() if isinstance(v, CPUDispatcher)}
    return binds, sigs


def twins_of(prof):
    """Every twin a profiler runs on (plain, instrumented and relinked callers)."""
    return prof.twins()


def test_same_function_twice_gives_the_same_hits():
    k.loops(A, 5)
    before = bindings()
    first = numba_lprun.LineProfiler(k.loops, sample_time=0.05)
    second = numba_lprun.LineProfiler(k.loops, sample_time=0.05)
    r1 = first.runcall(k.loops, A, 5)
    r2 = second.runcall(k.loops, A, 5)
    assert r1 == r2 == k.loops(A, 5)
    h1, h2 = hits_of(first.get_stats(), "loops"), hits_of(second.get_stats(), "loops")
    assert h1 == h2 == reference_hits(k.loops, A, 5)
    assert bindings() == before  # originals back in place, no new signatures on them
    # the second profiler found the first one's twins on the function: nothing compiled twice
    own1 = {id(t.dispatcher) for t in twins_of(first) if t.kind != "relinked"}
    own2 = {id(t.dispatcher) for t in twins_of(second) if t.kind != "relinked"}
    assert own1 and own1 == own2
    assert second.profile.functions[0].source.compile_seconds == {"plain": 0.0, "counting": 0.0}


def test_a_first_profile_says_how_long_its_twins_took_to_compile(tmp_path):
    """The header's "Compile:" seconds are each twin's own compile: the holds of Numba's compiler
    lock inside it (every code generation takes it) are its own time, not a nested compile's
    (charged so, every twin read 0.00 s). A module written here, with a constant no other run
    had: no cache holds its twins."""
    import importlib.util
    import time

    path = tmp_path / "fresh_kernel.py"
    path.write_text(
        f"from numba import njit\n\n\n@njit\ndef fresh(a):\n    s = {time.time_ns()}.0\n"
        "    for v in a:\n        s += v * v\n    return s\n"
    )
    spec = importlib.util.spec_from_file_location("fresh_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.fresh(A)
    prof = numba_lprun.LineProfiler(module.fresh, repeat=False)
    began = time.perf_counter()
    prof.runcall(module.fresh, A)
    spent = time.perf_counter() - began
    seconds = prof.profile.functions[0].source.compile_seconds
    assert 0.01 < seconds["counting"] < spent, seconds  # an njit compile takes tens of ms or more


def test_switching_between_hits_only_and_timed_profiles_compiles_each_twin_once():
    """A timed profile's counting twin reads the clock at each call's entry and exit, a
    ``--hits`` one reads none: two twins. A session switching between them takes back the twin
    the last profile of that mode built (``Target.take_built``) with its counters: it compiles
    nothing (a parallel twin takes about a second), and its hits stay exact."""
    k.loops(A, 5)
    expected = reference_hits(k.loops, A, 5)

    def counting_twin(**options):
        prof = numba_lprun.LineProfiler(k.loops, repeat=False, **options)
        assert prof.runcall(k.loops, A, 5) == k.loops(A, 5)
        assert hits_of(prof.get_stats(), "loops") == expected
        twin = next(t for t in twins_of(prof) if t.kind == "counting")
        return twin.dispatcher, prof.profile.functions[0].source.compile_seconds["counting"]

    timed, _ = counting_twin()
    hits_only, _ = counting_twin(timing=False)
    assert hits_only is not timed
    assert counting_twin() == (timed, 0.0)
    assert counting_twin(timing=False) == (hits_only, 0.0)
    assert counting_twin() == (timed, 0.0)


def test_same_profiler_twice_accumulates_exactly():
    prof = numba_lprun.LineProfiler(k.loops, sample_time=0.05)
    prof.runcall(k.loops, A, 5)
    once = hits_of(prof.get_stats(), "loops")
    compiled = [list(t.compiled) for t in twins_of(prof)]
    prof.runcall(k.loops, A, 5)
    assert hits_of(prof.get_stats(), "loops") == {line: 2 * n for line, n in once.items()}
    assert [list(t.compiled) for t in twins_of(prof)] == compiled  # reused, not recompiled
    (stats,) = prof.profile.functions
    assert stats.counts.calls == 2


def test_two_functions_two_profilers_do_not_mix():
    k.sum2d(GRID)
    k.branches(60)
    before = bindings()
    pa = numba_lprun.LineProfiler(k.sum2d, sample_time=0.05)
    pb = numba_lprun.LineProfiler(k.branches, sample_time=0.05)
    pa.runcall(k.sum2d, GRID)
    a_once = hits_of(pa.get_stats(), "sum2d")
    pb.runcall(k.branches, 60)
    pb.runcall(k.branches, 5)
    assert hits_of(pa.get_stats(), "sum2d") == a_once  # b's runs leave a's counters alone
    assert [f.source.name for f in pa.profile.functions] == ["sum2d"]
    assert [f.source.name for f in pb.profile.functions] == ["branches"]
    expected_b = reference_hits(k.branches, 60)
    for line, n in reference_hits(k.branches, 5).items():
        expected_b[line] = expected_b.get(line, 0) + n
    assert hits_of(pb.get_stats(), "branches") == expected_b
    # a profiler of both, alongside: its own counts, the others' unchanged
    both = numba_lprun.LineProfiler(k.sum2d, k.branches)
    both.runcall(k.sum2d, GRID)
    assert hits_of(both.get_stats(), "sum2d") == a_once
    assert hits_of(pa.get_stats(), "sum2d") == a_once
    assert hits_of(pb.get_stats(), "branches") == expected_b
    pa.runcall(k.sum2d, GRID)
    assert hits_of(pa.get_stats(), "sum2d") == {line: 2 * n for line, n in a_once.items()}
    assert bindings() == before


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_flat_over_20_runs_of_one_profiler():
    """20 sampled runs after 5 to warm up: Python objects and native memory stay flat (a
    compile per run would cost megabytes, a leaked sample buffer or record per run thousands
    of blocks: 20 runs show either past the limits as 40 did, in half of CI's time)."""
    k.branches(60)
    prof = numba_lprun.LineProfiler(k.branches, sample_time=0.05)
    for _ in range(5):  # warm up: twins compiled, caches filled
        prof.runcall(k.branches, 60)
    gc.collect()
    blocks, rss = sys.getallocatedblocks(), _rss()
    for _ in range(20):
        prof.runcall(k.branches, 60)
    gc.collect()
    grown_blocks = sys.getallocatedblocks() - blocks
    grown_rss = _rss() - rss
    assert grown_blocks < 1200, grown_blocks  # Python objects (a run made about 0)
    assert grown_rss < 16 * 2**20, grown_rss  # native memory: no compile per run
    (stats,) = prof.profile.functions
    assert stats.counts.calls == 25
    assert hits_of(prof.get_stats(), "branches") == {
        line: 25 * n for line, n in reference_hits(k.branches, 60).items()
    }


def test_profiles_of_throwaway_functions_free_their_twins():
    """Twins live on the function they twin: when it goes, they go.

    25 profiles of 25 functions made and dropped one after another. Every
    original and twin dispatcher is freed. What stays per function is Numba's
    own: each twin's probe intrinsics are registered in Numba's typing registry
    for good (Numba has no way to unregister one, about 650 small objects), and
    LLVM keeps compiled code, as for any compile.
    """

    def throwaway(i):
        name = f"<throwaway-{i}>"
        src = f"def f{i}(x):\n    y = x + {i}\n    return y * 2\n"
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)
        ns = {}
        exec(compile(src, name, "exec"), ns)
        func = njit(ns[f"f{i}"])
        prof = numba_lprun.LineProfiler(func, sample=False)
        assert prof.runcall(func, 2.0) == (2.0 + i) * 2
        assert hits_of(prof.get_stats(), f"f{i}") == {2: 1, 3: 1}
        refs = [weakref.ref(t.dispatcher) for t in prof.twins()] + [weakref.ref(func)]
        del linecache.cache[name]
        return refs

    refs = throwaway(0)
    gc.collect()
    blocks = sys.getallocatedblocks()
    for i in range(1, 26):
        refs += throwaway(i)
    gc.collect()
    assert len(refs) == 26 * 3
    assert [r() for r in refs if r() is not None] == []
    assert (sys.getallocatedblocks() - blocks) / 25 < 1500  # Numba's registrations only


def test_a_run_past_the_extra_limit_keeps_no_copy_of_its_calls():
    """The calls of a run are copied for replays that a run past ``--extra-limit`` never gets:
    past the limit the recorder drops what it kept and copies nothing more (a kernel on 80 MB
    arrays called for a second spent 2 s copying). Before the limit it keeps the calls."""
    from numba_lprun.run.replay import CallRecorder

    @njit
    def scale(a, f):
        a *= f

    a = np.ones(1000)
    scale(a, 2.0)
    elapsed = [0.0]
    recorder = CallRecorder(budget=1 << 30)
    recorder.stop_after(0.5, lambda: elapsed[0])
    for _ in range(3):
        recorder(scale, scale, (a, 2.0), {})
    assert len(recorder.calls) == 3 and not recorder.stopped
    elapsed[0] = 0.6  # the run is now past the limit
    for _ in range(3):
        recorder(scale, scale, (a, 2.0), {})
    assert recorder.stopped and recorder.calls == [] and recorder.seen == 6
    assert a[0] == 2.0**7  # every call made, recorded or not
