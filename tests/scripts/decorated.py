"""Only the function marked with @numba_lprun.profile is profiled."""

from numba import njit

import numba_lprun


@numba_lprun.profile
@njit
def marked(n):
    s = 0
    for i in range(n):
        s += i
    return s


@njit
def unmarked(n):
    return n * 2


print(marked(100) + unmarked(3))
