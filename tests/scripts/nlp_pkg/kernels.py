"""A module of kernels imported by the runnable module."""

from numba import njit


@njit
def dot(a, b):
    s = 0.0
    for i in range(a.size):
        s += a[i] * b[i]
    return s
