"""Kernels for the one-run model: a stateful object with a log, a tight loop, a pandas holder."""

import io

import numpy as np
from numba import njit


@njit
def step(x, n):
    """A kernel that mutates its argument: its time is all in the loop body."""
    acc = 0.0
    for _ in range(n):
        for i in range(x.size):
            x[i] = x[i] * 0.999 + 0.001
            acc += np.sqrt(x[i])
    return acc


class Model:
    """Package code as it is: an object holding a log (a StringIO) and state, calling a kernel."""

    def __init__(self, size=2000, frame=None):
        self.x = np.linspace(0.0, 1.0, size)
        self.log = io.StringIO()
        self.frame = frame

    def train(self, n):
        acc = step(self.x, n)
        self.log.write(f"trained {n}: {acc:.3f}\n")
        return acc


@njit
def tight(a, reps):
    s = 0.0
    for _ in range(reps):
        for i in range(a.size):
            s += np.sqrt(a[i]) * 0.5
    return s


class ListModel:
    """Like ``Model``, but its whole state can be saved and put back (a list for a log)."""

    def __init__(self, size=2000):
        self.x = np.linspace(0.0, 1.0, size)
        self.log = []

    def train(self, n):
        self.log.append(step(self.x, n))


@njit
def mergesort(a):
    """Recursive, as examples compare it with its own ``py_func``."""
    if a.size <= 1:
        return a.copy()
    mid = a.size // 2
    left, right = mergesort(a[:mid]), mergesort(a[mid:])
    out = np.empty(a.size)
    i = j = 0
    for k in range(a.size):
        if j >= right.size or (i < left.size and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out
