"""Every row of the engine's matrix: profiled result == plain result, hits == line_profiler's."""

import numpy as np
import pytest

from tests import kernels as k

A = np.arange(1.0, 9.0)


@pytest.mark.parametrize(
    "func, args",
    [
        (k.loops, (A, 5)),
        (k.find_first, (A, 4.0)),
        (k.find_first, (A, -1.0)),
        (k.sum2d, (np.arange(12.0).reshape(3, 4),)),
        (k.multiline, (A, 4)),
        (k.oneline, (5,)),
        (k.with_defaults, (A,)),
        (k.eager_sum, (A,)),
        (k.fast_dot, (A, A)),
        (k.fib, (7,)),
        (k.scale3, (A,)),
        (k.with_inner, (A,)),
        (k.unrolled, (3,)),
        (k.typed_containers, (6,)),
        (k.count_vowels, ("aäbcöeu",)),
        (k.weighted, (12,)),
        (k.uses_helpers, (A,)),
        (k.jit_plain, (A,)),
        (k.caller, (A,)),
        (k.with_objmode, (4,)),
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else "",
)
def test_matrix_row(check, func, args):
    check(func, *args)


@pytest.mark.parametrize("x", [200, 60, 20, 5, 4])
def test_if_elif_else(check, x):
    check(k.branches, x)


@pytest.mark.parametrize("x", [3, -3])
def test_try_except(check, x):
    check(k.guarded, x)


def test_default_arguments_given(check):
    check(k.with_defaults, A, 0.5, offset=3)


def test_several_signatures_merge():
    import numba_lprun

    k.poly(2)
    k.poly(2.5)
    prof = numba_lprun.LineProfiler(k.poly)
    prof.runcall(k.poly, 3)
    prof.runcall(k.poly, 1.5)
    (stats,) = prof.profile.functions
    assert len(stats.source.signatures) >= 2
    first = k.poly.py_func.__code__.co_firstlineno
    assert stats.counts.hits == {first + 2: 2, first + 3: 2}


def test_parallel_prange_counts_exact():
    import numba_lprun

    a = np.arange(1000.0)
    prof = numba_lprun.LineProfiler(k.par_sum)
    assert prof.runcall(k.par_sum, a) == pytest.approx((a * a).sum())
    (stats,) = prof.profile.functions
    first = k.par_sum.py_func.__code__.co_firstlineno
    assert stats.counts.hits[first + 3] == 1001  # the prange header: iterations + 1
    assert stats.counts.hits[first + 4] == 1000
    assert stats.counts.hits[first + 5] == 1000


def test_mutates_argument_in_place_once_with_baseline():
    import numba_lprun

    a = np.zeros(4)
    prof = numba_lprun.LineProfiler(k.bump, sample_time=0.05)
    prof.runcall(k.bump, a)
    assert np.all(a == 1.0)  # the baseline runs' changes were put back
    once = numba_lprun.LineProfiler(k.bump, repeat=False)
    once.runcall(k.bump, a)
    assert np.all(a == 2.0)
    assert once.overhead == {"bump": None}
