"""Calibration, probe-cost correction, hits-only mode and the vectorization-loss check."""

import numpy as np
import pytest
from numba import njit

import numba_lprun
from numba_lprun.instrument.calibrate import probe_cost_ticks
from numba_lprun.instrument.clock import current_clock
from numba_lprun.vectorized import vectorized_lines
from tests import kernels as k

A = np.arange(1.0, 9.0)


def test_clock_calibration_is_sane_and_cached():
    clock = current_clock()
    assert clock is current_clock()
    assert clock.kind in ("tsc", "monotonic")
    assert 1e-11 < clock.seconds_per_tick <= 1e-9  # between 100 GHz and 1 GHz ticks, or ns
    cost = probe_cost_ticks(clock.kind) * clock.seconds_per_tick
    assert 0 < cost < 1e-6


def test_monotonic_fallback_clock_counts_nanoseconds():
    """The fallback reads the clock ``time.monotonic_ns`` reads, so a reading lies between two of
    its readings. The reader compiles lazily: its first call compiles (a second or more on a busy
    machine), so it is called once before the clock is bracketed."""
    import time

    from numba_lprun.instrument.clock import clock_reader

    read = clock_reader("monotonic")
    read()
    before = time.monotonic_ns()
    value = read()
    after = time.monotonic_ns()
    assert before <= value <= after


@njit
def coarse(n):
    a = 0.0
    for _ in range(n):
        a += np.sin(np.arange(400.0)).sum()
    b = np.cos(np.arange(4000.0)).sum()
    return a + b


def test_probe_cost_is_taken_out_per_hit():
    """Probe-cost subtraction, exactly: each line's corrected time is its raw probe time less
    its hits times the calibrated cost of one probe, never below zero, and the raw figures
    stay available. How close the corrected total comes to the plain twin's time (within 10%
    on a quiet machine) is a timing claim: ``benchmarks/timing_claims.py`` measures it side by
    side, since a preempted call moves it on a busy one."""
    coarse(3)
    prof = numba_lprun.LineProfiler(coarse, probes=True, sample_time=0.05)
    prof.runcall(coarse, 200)
    (stats,) = prof.profile.functions
    assert stats.diagnosis.probes_corrected and stats.counts.calls == 1
    assert stats.probes.cost == probe_cost_ticks(current_clock().kind) > 0
    for line, ticks in stats.probes.ticks.items():
        expected = max(0.0, ticks - stats.probes.hits.get(line, 0) * stats.probes.cost)
        assert stats.probe_line_ticks(line) == expected and stats.probe_line_ticks(line, raw=True) == ticks
    loop_body = coarse.py_func.__code__.co_firstlineno + 4
    assert stats.probes.hits[loop_body] == 200
    assert stats.probe_total(raw=True) > stats.probe_total() > 0
    assert stats.distortion.plain_ticks > 0


@pytest.mark.parametrize(
    "func, args",
    [(k.loops, (A, 5)), (k.sum2d, (np.arange(12.0).reshape(3, 4),)), (k.fib, (6,)), (k.with_objmode, (3,))],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_hits_only_counts_equal_timed_counts(func, args):
    timed = numba_lprun.LineProfiler(func)
    timed.runcall(func, *args)
    hits_only = numba_lprun.LineProfiler(func, timing=False)
    hits_only.runcall(func, *args)
    (t,), (h,) = timed.profile.functions, hits_only.profile.functions
    assert h.counts.hits == t.counts.hits
    assert (
        h.counts.time_source is None
        and not h.probes.ticks
        and h.line_ticks(next(iter(h.counts.hits))) is None
    )


def test_hits_only_prange_counts_exact():
    a = np.arange(500.0)
    prof = numba_lprun.LineProfiler(k.par_sum, timing=False)
    assert prof.runcall(k.par_sum, a) == pytest.approx((a * a).sum())
    (stats,) = prof.profile.functions
    first = k.par_sum.py_func.__code__.co_firstlineno
    assert stats.counts.hits[first + 3] == 501 and stats.counts.hits[first + 4] == 500


@njit(fastmath=True)
def vectorizable(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * a[i]
    return s


def test_a_function_first_compiled_by_the_profile_gets_the_same_evidence():
    """A script's functions have compiled nothing before the profile: the twins compile on
    their first call, and both are still compiled, timed and compared. The plain twin of a
    one-run profile is compiled only where cheap, judged by the time the run took (its compile
    included), so the test asks for it however long that was (``compare_code``): beside busy
    processes the probed twin's compile alone passed the limit (one clean-clone run in six)."""

    @njit(fastmath=True)
    def fresh(a):
        s = 0.0
        for i in range(a.size):
            s += a[i] * a[i]
        return s

    prof = numba_lprun.LineProfiler(fresh, probes=True, repeat=False, compare_code=True)
    prof.runcall(fresh, A)
    (stats,) = prof.profile.functions
    loop_line = fresh.py_func.__code__.co_firstlineno + 3
    assert set(stats.source.compile_seconds) == {"plain", "probed"} and not fresh.overloads
    assert stats.distortion.lost_vectorization == {loop_line}


def test_vectorization_loss_is_detected_and_named():
    vectorizable(A)
    probed = numba_lprun.LineProfiler(vectorizable, probes=True, repeat=False)
    probed.runcall(vectorizable, A)  # one run, so the probes ride on the user's run
    twins = {twin.kind: twin.dispatcher for twin in probed.twins()}
    loop_line = vectorizable.py_func.__code__.co_firstlineno + 3
    assert vectorized_lines(twins["plain"]) == {loop_line}
    assert vectorized_lines(twins["probed"]) == set()
    (stats,) = probed.profile.functions
    assert stats.counts.twin == "probed" and stats.distortion.lost_vectorization == {loop_line}
    assert any("vectorized" in note.text and str(loop_line) in note.text for note in stats.diagnosis.notes)
    counting = numba_lprun.LineProfiler(vectorizable, repeat=False, compare_code=True)  # however slow
    counting.runcall(vectorizable, A)
    (h,) = counting.profile.functions
    assert h.distortion.lost_vectorization == set()  # counters in registers leave the loop vectorized
    assert "loops vectorized as the plain twin's did" in " ".join(n.text for n in h.diagnosis.notes)
