"""A real profile for the renderer tests: two small jitted kernels, one with a long source line.

Profiled once per session (``functools.cache``) so the compiles are shared by
every test module that renders it.
"""

import functools

import numpy as np
from numba import njit

import numba_lprun


@njit
def weigh(x, k):
    n = x.size - k.size + 1
    out = np.empty(n)
    for i in range(n):
        window = x[i : i + k.size]
        out[i] = np.sum(np.multiply(window, k)) + 0.5 * np.max(window) - 0.25 * np.min(window) + 0.125 * window[0]  # noqa: E501  # fmt: skip
    return out


@njit
def caller(x, k):
    total = 0.0
    for _ in range(2):
        total += weigh(x, k).sum()
    return total


LONG_LINE = "out[i] = np.sum(np.multiply(window, k)) + 0.5 * np.max(window)"


@functools.cache
def long_line_profile():
    """The ProfileStats of ``caller`` and ``weigh`` on a small input (both profiled)."""
    rng = np.random.default_rng(0)
    x, k = rng.random(20_000), rng.random(16)
    prof = numba_lprun.LineProfiler(caller, weigh)
    prof.runcall(caller, x, k)
    return prof.profile
