"""Kernels for the run order's tests: a fastmath prange reduction (whose result the counters can
change in the last bits), a call of a couple of microseconds, and a call of a few milliseconds."""

import numpy as np
from numba import njit, prange


@njit(fastmath=True, parallel=True)
def fast_log_sum(a):
    s = 0.0
    for i in prange(a.size):
        s += np.log(a[i])
    return s


@njit
def tiny(x):
    return x * 2.0 + 1.0


@njit
def millis(a, reps):
    s = 0.0
    for _ in range(reps):
        for i in range(a.size):
            s += np.sqrt(a[i])
    return s


LOGS = np.random.default_rng(0).random(400_000) + 0.5
ROOTS = np.ones(20_000)


@njit
def fresh_arrays(n, rounds):
    """Allocates an 8 MB array per round: in a fresh process its first call faults on fresh
    pages that the calls after it reuse (``run.page_faults``)."""
    total = 0.0
    for r in range(rounds):
        a = np.full(n, r + 1.0)
        total += a[n // 2]
    return total


@njit
def weighted(v, k):
    t = 0.0
    for j in range(k):
        t += v * j
    return t


@njit(parallel=True)
def weighted_sum(a, k):
    s = 0.0
    for i in prange(a.size):
        s += weighted(a[i], k)
    return s
