"""The small function ``startup_parts.py`` makes twins of (its own file: the twins' cache key)."""

from numba import njit


@njit
def kernel(a):
    s = 0.0
    for i in range(a.size):
        if a[i] > 0.5:
            s += a[i]
        else:
            s -= 1.0
    return s
