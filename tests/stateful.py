"""Kernels with state, as real Numba code has: in-place updates, random state, jitclasses.

Each ``Case`` makes its arguments fresh from one fixed state, so a profiled call can
be compared with one unprofiled call and with line_profiler on ``py_func``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit
from numba.experimental import jitclass
from numba.typed import List


@njit
def bubble_sort(a):
    n = a.size
    swaps = 0
    for i in range(n):
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
                swaps += 1
    return swaps


@njit
def heap_push(heap, size, value):
    i = size[0]
    heap[i] = value
    size[0] += 1
    while i > 0:
        parent = (i - 1) // 2
        if heap[parent] <= heap[i]:
            break
        heap[parent], heap[i] = heap[i], heap[parent]
        i = parent
    return i


@njit
def xorshift_fill(state, out):
    x = state[0]
    for i in range(out.size):
        x ^= (x << np.uint64(13)) & np.uint64(0xFFFFFFFFFFFFFFFF)
        x ^= x >> np.uint64(7)
        x ^= (x << np.uint64(17)) & np.uint64(0xFFFFFFFFFFFFFFFF)
        out[i] = x % np.uint64(1000)
    state[0] = x
    return out.sum()


@njit
def draw_from(rng, n):
    total = 0.0
    for _ in range(n):
        total += rng.random()
    return total


@njit
def numba_seed(seed):
    np.random.seed(seed)


@njit
def numba_random_walk(n):
    x = 0.0
    for _ in range(n):
        if np.random.random() < 0.5:
            x += 1.0
        else:
            x -= 1.0
    return x


@jitclass([("count", numba.int64), ("data", numba.float64[:])])
class Counter:
    def __init__(self, n):
        self.count = 0
        self.data = np.zeros(n)

    def bump(self, i):
        self.count += 1
        self.data[i % self.data.size] += i


@njit
def bump_all(counter, n):
    for i in range(n):
        counter.bump(i)
    return counter.count


@njit
def push_all(items, n):
    for i in range(n):
        if i % 3:
            items.append(i * 0.5)
    return len(items)


def plain(value):
    """Comparable plain data for any argument state."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.tolist())
    if isinstance(value, np.random.Generator):
        return ("generator", repr(value.bit_generator.state))
    if hasattr(value, "bump"):  # a Counter instance
        return ("counter", value.count, value.data.tolist())
    if type(value).__name__ == "List":
        return ("typed list", list(value))
    if isinstance(value, (tuple, list)):
        return tuple(plain(v) for v in value)
    return value


def numba_random_state():
    """The state of Numba's np.random in this thread (for comparing afterwards)."""
    from numba import _helperlib

    return _helperlib.rnd_get_state(_helperlib.rnd_get_np_state_ptr())


@dataclass
class Case:
    name: str
    func: Callable
    make: Callable[[], tuple]  # fresh arguments from one fixed state (and seeds Numba's state)
    expr: str  # the call as a statement would write it, with the arguments named a, b, c


def _seeded(n):
    numba_seed(7)  # Numba's own state, used by the jitted function
    np.random.seed(7)  # NumPy's, used by py_func under line_profiler: the same stream
    return (n,)


def _typed_list():
    items = List()
    items.append(1.5)
    return (items, 40)


CASES = [
    Case("in-place sort", bubble_sort, lambda: (np.random.default_rng(3).random(60),), "bubble_sort(a)"),
    Case(
        "heap push",
        heap_push,
        lambda: (np.array([1.0, 4.0, 2.0, 9.0, 5.0, 0.0, 0.0, 0.0]), np.array([5]), 0.5),
        "heap_push(a, b, c)",
    ),
    Case(
        "state-array generator",
        xorshift_fill,
        lambda: (np.array([88172645463325252], np.uint64), np.zeros(50, np.uint64)),
        "xorshift_fill(a, b)",
    ),
    Case("np.random.Generator", draw_from, lambda: (np.random.default_rng(11), 30), "draw_from(a, b)"),
    Case("np.random.seed in njit", numba_random_walk, lambda: _seeded(200), "numba_random_walk(a)"),
    Case("jitclass mutated by a method", bump_all, lambda: (Counter(4), 25), "bump_all(a, b)"),
    Case("typed List append", push_all, _typed_list, "push_all(a, b)"),
]


@njit(parallel=True)
def seed_workers(n_threads):
    """Seeds every thread's np.random state (each thread seeds its own) from its thread id."""
    for _ in numba.prange(n_threads * 64):
        np.random.seed(numba.get_thread_id() + 1)


@njit(parallel=True)
def parallel_noise(out):
    for i in numba.prange(out.size):
        out[i] = np.random.random()
    return out.sum()
