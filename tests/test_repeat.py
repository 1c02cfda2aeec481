"""Repeated and concurrent profiling: same hits every time, nothing leaks between
profiler objects, and memory stays flat over many runs."""

import gc
import os
import sys
import weakref

import numpy as np
from numba.core.registry import CPUDispatcher

import numba_lprun
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
    """Every twin a profiler built (plain, instrumented and relinked callers)."""
    runner = prof._runner
    return [twin for phase in ("plain", "instrumented") for twin in runner.twins(phase)]


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
    # each profiler has twins and counters of its own
    own1 = {id(t.dispatcher) for t in twins_of(first)}
    own2 = {id(t.dispatcher) for t in twins_of(second)}
    assert own1 and own2 and not own1 & own2
    (t1,), (t2,) = first._runner.targets.values(), second._runner.targets.values()
    for phase in ("plain", "instrumented"):
        assert t1.counters[phase].ctypes.data != t2.counters[phase].ctypes.data


def test_same_profiler_twice_accumulates_exactly():
    prof = numba_lprun.LineProfiler(k.loops, sample_time=0.05)
    prof.runcall(k.loops, A, 5)
    once = hits_of(prof.get_stats(), "loops")
    compiled = [list(t.compiled) for t in twins_of(prof)]
    prof.runcall(k.loops, A, 5)
    assert hits_of(prof.get_stats(), "loops") == {line: 2 * n for line, n in once.items()}
    assert [list(t.compiled) for t in twins_of(prof)] == compiled  # reused, not recompiled
    (stats,) = prof.profile.functions
    assert stats.calls == 2


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
    assert [f.name for f in pa.profile.functions] == ["sum2d"]
    assert [f.name for f in pb.profile.functions] == ["branches"]
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


def test_memory_flat_over_100_runs_of_one_profiler():
    k.branches(60)
    prof = numba_lprun.LineProfiler(k.branches, sample_time=0.05)
    for _ in range(10):  # warm up: twins compiled, caches filled
        prof.runcall(k.branches, 60)
    gc.collect()
    blocks, rss = sys.getallocatedblocks(), _rss()
    for _ in range(100):
        prof.runcall(k.branches, 60)
    gc.collect()
    grown_blocks = sys.getallocatedblocks() - blocks
    grown_rss = _rss() - rss
    assert grown_blocks < 3000, grown_blocks  # Python objects (a run made about 0)
    assert grown_rss < 16 * 2**20, grown_rss  # native memory: no compile per run
    (stats,) = prof.profile.functions
    assert stats.calls == 110
    assert hits_of(prof.get_stats(), "branches") == {
        line: 110 * n for line, n in reference_hits(k.branches, 60).items()
    }


def test_fresh_profilers_release_everything_of_theirs():
    """numba_lprun keeps no profiler, counter or twin alive once a profiler is gone.

    Numba itself keeps every compiled function's globals alive (its target
    context registers each compiled overload for good), and a twin's globals
    bind the twin itself (so recursion reaches it) and its siblings. So a twin
    outlives its profiler until those bindings are dropped; dropping them here
    must free every twin, which shows nothing else holds one. (The counter
    arrays stay with the twins' globals, as long as the code that writes them.
    A recursive function's twin is held by Numba even then, as any recursive
    dispatcher is: its compiled IR refers to itself.)
    """
    k.sum2d(GRID)
    refs, twins, funcs = [], [], []
    for scale in (1.0, 2.0, 3.0):
        prof = numba_lprun.LineProfiler(k.sum2d, sample_time=0.05)
        assert prof.runcall(k.sum2d, GRID * scale) == k.sum2d(GRID * scale)
        refs.append(weakref.ref(prof))
        refs.append(weakref.ref(prof._runner))
        for target in prof._runner.targets.values():
            refs.append(weakref.ref(target))
        for twin in twins_of(prof):
            twins.append(weakref.ref(twin.dispatcher))
            funcs.append(weakref.ref(twin.dispatcher.py_func))
        del prof, target, twin
    gc.collect()
    assert all(r() is None for r in refs)
    alive = {id(r()) for r in twins if r() is not None}
    for ref in funcs:
        func = ref()
        if func is None:
            continue
        g = func.__globals__
        for name in [name for name, value in g.items() if id(value) in alive]:
            del g[name]
        del func, g
    gc.collect()
    assert [r() is None for r in twins] == [True] * len(twins)
