"""A jitted kernel and the plain Python functions Dask tasks call it through."""

import os
import signal

import numpy as np
from numba import njit


@njit
def work(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            s += i
        else:
            s -= 1
    return s


def task(n):
    """A task function that prepares its input and calls the kernel (the usual Dask pattern)."""
    return work(int(n)) + 1


def block(a):
    """A ``map_blocks`` function: the kernel on each element of the block."""
    out = np.empty(a.shape, dtype=np.int64)
    for j, n in enumerate(a.flat):
        out.flat[j] = work(int(n))
    return out


def exact_hits(ns):
    """Line -> hits of ``work(n)`` for each n of ``ns``, counted in Python."""
    first = work.py_func.__code__.co_firstlineno
    hits = dict.fromkeys(range(first + 2, first + 9), 0)
    for n in ns:
        thirds = len(range(0, n, 3))
        for line, add in ((2, 1), (3, n + 1), (4, n), (5, thirds), (7, n - thirds), (8, 1)):
            hits[first + line] += add
    return {line: h for line, h in hits.items() if h}


def task_or_die(n, flag):
    """A task whose first run kills its own worker outright (SIGKILL) before it calls the kernel
    (``flag``: a file it makes first, so that Dask's rerun of it elsewhere does the work). The
    file is made atomically (``O_EXCL``): with a check and then a write, two tasks starting at
    once on the two workers both killed theirs, now and then."""
    try:
        os.close(os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return task(n)
    os.kill(os.getpid(), signal.SIGKILL)
    return task(n)  # never reached
