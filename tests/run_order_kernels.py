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
