"""Kernels for the machine-code view, on disk so their source can be read."""

import math

import numpy as np
from numba import njit, prange, stencil


@njit
def spin(units, seed):
    x = 1.0 + seed * 1e-9
    for _ in range(units * 200):
        x = x * 0.9999999 + 1e-7  # LOOP
    return x


@njit
def three_lines(n, one, two, three):
    acc = 0.0
    for i in range(n):
        acc += spin(one, i)  # ONE
        acc += spin(two, i)  # TWO
        acc += spin(three, i)  # THREE
    return acc


@njit
def conv(x, k):
    n = x.size - k.size + 1
    out = np.empty(n)
    for i in range(n):
        window = x[i : i + k.size]
        out[i] = np.sum(np.multiply(window, k))  # HOT
    return out


@njit(fastmath=True)
def sum_squares(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * a[i]  # BODY
    return s


@njit
def scalar_chain(n):
    x = 0.5
    for _ in range(n):
        x = x * 0.9999999 + 1e-7  # BODY
    return x


@njit
def sines(a):
    s = 0.0
    for i in range(a.size):
        s += math.sin(a[i])  # SIN
    return s


@njit(parallel=True)
def par_roots(a, reps):
    out = np.empty(a.size)
    for _ in range(reps):
        for i in prange(a.size):
            out[i] = math.sqrt(a[i]) * 2.0 + math.sin(a[i])  # BODY
    return out


@njit
def collatz_steps(n):
    total = 0
    for start in range(1, n):
        k = start
        while k != 1:
            if k % 2 == 0:
                k //= 2
            else:
                k = 3 * k + 1
            total += 1
    return total


@njit
def epanechnikov(x, y, h):
    u = (x - y) / h
    if abs(u) >= 1.0:
        return 0.0
    return 0.75 * (1.0 - u * u) / h


@njit
def density_at(x, points, h):
    s = 0.0
    for j in range(points.size):
        s += epanechnikov(x, points[j], h)
    return s / points.size


@njit
def wave(x):
    s = 0.0
    for k in range(50):
        s += np.sin(x * k) * np.cos(k)  # LIBM
    return s


@njit
def waves(a):
    t = 0.0
    for i in range(a.size):
        t += wave(a[i])  # CALL
    return t


@stencil
def four_point(a):
    return 0.25 * (a[-1, 0] + a[1, 0] + a[0, -1] + a[0, 1])


@njit
def relax(grid, steps):
    for _ in range(steps):
        grid = four_point(grid)  # STENCIL
    return grid


@njit
def relax_first(grid, steps):  # relax's twin for a first call made in the profile
    for _ in range(steps):
        grid = four_point(grid)  # STENCIL
    return grid


@njit
def kept_counts(values, stop):
    """Counts the program keeps of a ``while`` loop: its iterations from 0 (``taken``: the loop
    body's count), from 1 (``late``: one more), its odd steps (``odd``: the ``else`` arm's
    count); the loop breaks where a step reaches ``stop``, and a negative step raises after
    some iterations counted."""
    taken = 0
    late = 1
    odd = 0
    for v in values:
        k = v
        while k != 1:
            taken += 1
            late += 1
            if k % 2 == 0:
                k //= 2
            else:
                k = 3 * k + 1
                odd += 1
            if k == stop:
                break
            if k < 0:
                raise ValueError("a negative step")
    return taken, late, odd
