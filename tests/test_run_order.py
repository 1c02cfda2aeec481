"""The user's run comes first: extra runs follow only where they are cheap enough and can change
nothing the user sees, and what they measure is said honestly (an overhead figure only from
enough plain runs of calls long enough to time; results that fastmath let differ, by how much)."""

import numpy as np

import numba_lprun
from tests import run_order_kernels as K


def test_a_run_over_the_extra_limit_is_the_only_run():
    K.millis(K.ROOTS, 1)
    prof = numba_lprun.LineProfiler(K.millis, extra_limit=0.0)
    assert prof.runcall(K.millis, K.ROOTS, 3) == K.millis(K.ROOTS, 3)
    profile = prof.profile
    assert "your run took" in profile.runs.once and "--extra-limit 0 s" in profile.runs.once
    (stats,) = profile.functions
    assert stats.overhead is None and profile.sampling.extra_runs == 0
    assert (
        "vectorized as the plain twin's did" in " ".join(n.text for n in stats.notes)
        or stats.lost_vectorization
    )


def test_a_short_run_gets_its_overhead_from_three_plain_runs_or_more():
    K.millis(K.ROOTS, 1)
    prof = numba_lprun.LineProfiler(K.millis, sample_time=0.2)
    prof.runcall(K.millis, K.ROOTS, 5)
    (stats,) = prof.profile.functions
    assert prof.profile.runs.once is None
    assert stats.overhead is not None and stats.overhead_spread is not None
    assert prof.profile.sampling.extra_runs >= 3


def test_one_plain_run_is_no_figure():
    """``sample_time=0`` allows the timed plain run only: one run is too few for a figure."""
    prof = numba_lprun.LineProfiler(K.millis, sample_time=0.0)
    prof.runcall(K.millis, K.ROOTS, 5)
    (stats,) = prof.profile.functions
    assert stats.overhead is None
    assert "one plain run only" in stats.overhead_unmeasured


def test_microsecond_calls_get_no_ratio():
    K.tiny(1.0)
    prof = numba_lprun.LineProfiler(K.tiny, sample_time=0.2)
    assert prof.runcall(K.tiny, 3.0) == 7.0
    (stats,) = prof.profile.functions
    assert stats.overhead is None
    assert "too short for the clock to compare" in stats.overhead_unmeasured
    assert not any("x the plain run" in n.text for n in stats.notes)


def test_fastmath_reduction_result_is_compared_with_the_plain_run():
    """The counters change how LLVM splits a fastmath ``prange`` reduction (measured: the last
    bits differ); the profile says by how much, against the plain twin (the unprofiled code)."""
    unprofiled = K.fast_log_sum(K.LOGS)
    prof = numba_lprun.LineProfiler(K.fast_log_sum, sample_time=0.05)
    mine = prof.runcall(K.fast_log_sum, K.LOGS)
    said = prof.profile.runs.results
    assert said is not None and "fastmath (fast_log_sum)" in said
    if mine == unprofiled:
        assert "bit for bit" in said
    else:
        shown = float(said.split("by up to ")[1].split(" ")[0])
        actual = abs(mine - unprofiled) / abs(unprofiled)
        assert np.isclose(shown, actual, rtol=0.1)
    once = numba_lprun.LineProfiler(K.fast_log_sum, repeat=False)
    once.runcall(K.fast_log_sum, K.LOGS)
    assert "may differ from an unprofiled run's" in once.profile.runs.results
