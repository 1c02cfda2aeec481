"""Kernels whose lines' counts follow from others' (``instrument.derived_counts``), with every way
out of their loops: a normal exit, ``break``, ``return`` inside the loop, ``continue``, and a raise
on an iteration (a ``raise`` statement, a helper that raises, a division by zero, an index out of
bounds, a slice's step of 0), for tests/test_derived_counts.py."""

import numpy as np
from numba import njit

from tests.machine_kernels import collatz_steps  # noqa: F401  (the branchy while: one copy in the tests)


@njit
def checked(x):
    if x < 0:
        raise ValueError("negative")
    return x


@njit
def arms_then_helper(a):
    total = 0
    for i in range(a.size):
        if a[i] % 2 == 0:
            total += 1
        else:
            total += checked(a[i] - 5)
        total += 2
    return total


@njit
def raise_statement(a, stop):
    total = 0
    for i in range(a.size):
        if a[i] > stop:
            raise ValueError("too big")
        if a[i] % 3 == 0:
            total += 1
        total += 2
    return total


@njit
def raise_with_value(a, stop):
    total = 0
    for i in range(a.size):
        if a[i] > stop:
            raise ValueError("too big:", a[i])  # a raise with a value known at run time
        if a[i] % 3 == 0:
            total += 1
        total += 2
    return total


@njit
def divides(a):
    total = 0
    for i in range(a.size):
        if a[i] % 2 == 0:
            total += 1
        total += 100 // (int(a[i]) - 3)
        total += 1
    return total


@njit(boundscheck=True)
def indexes(a, idx):
    total = 0
    for i in range(idx.size):
        if idx[i] % 2 == 0:
            total += 1
        total += a[idx[i]]
        total += 1
    return total


@njit
def ways_out(a, stop):
    total = 0
    for i in range(a.size):
        if a[i] == stop:
            break
        if a[i] < 0:
            return -total
        if a[i] % 2 == 0:
            continue
        total += a[i]
    else:
        total += 1000
    j = 0
    while j < 3:
        j += 1
        if total > 10_000_000:
            break
    return total + j


@njit
def nested(a):
    total = 0.0
    for i in range(a.shape[0]):
        row = 0.0
        for j in range(a.shape[1]):
            x = a[i, j]
            if x > 0.5:
                row += x
            elif x > 0.25:
                row -= x
            else:
                row += 1.0
        total += row
    return total


@njit
def recurse(n, a):
    if n <= 0:
        return 0
    total = 0
    for i in range(a.size):
        if a[i] % 2 == 0:
            total += 1
        else:
            total += 2
    return total + recurse(n - 1, a)


@njit(error_model="numpy")
def numpy_errors(a):
    total = 0.0
    for i in range(a.size):
        if a[i] > 0:
            total += 1.0 / a[i]
        else:
            total += 1.0
        total += 0.5
    return total


@njit
def windows(a, width, step):
    """Views (no raise) before a line that can: ``checked`` raises on a negative window sum, the
    slice with a run-time step on a step of 0; the 2-D row is a view too."""
    out = np.empty(a.size - width + 1)
    grid = a[: (a.size // width) * width].reshape((-1, width))
    for i in range(out.size):
        window = a[i : i + width]
        out[i] = checked(window.sum())
        out[i] += a[i::step][:1].sum() + grid[i % grid.shape[0], :].sum()
    return out


def data(n=50, seed=0):
    return np.random.default_rng(seed).integers(0, 20, n)
