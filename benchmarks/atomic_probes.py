"""What atomic counter updates cost a probe: the price of exact counts under threads.

Run ``python benchmarks/atomic_probes.py``. ``nogil=True`` functions (which Python
threads may run at the same time) and ``parallel=True`` ones get probes whose
counter updates are atomic (``lock xadd``); other functions keep plain adds, since
the GIL keeps their calls apart. The same kernels are profiled as plain ``@njit``
and as ``nogil=True``, and the instrumented time per call is compared side by side,
single-threaded (atomics uncontended: their fixed cost), with timing and hits only.
Then the contended case: the overhead (instrumented / plain time per call) of the
``nogil`` kernel called by two threads at once, against the same calls in sequence,
where every probe of both threads updates the same counters.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba
import numpy as np

import numba_lprun

RUNS = 5


def scalar_loop(a):
    s = 0.0
    for i in range(a.size):
        if a[i] > 0.5:
            s += a[i]
        else:
            s -= 1.0
    return s


def coarse(a):
    s = 0.0
    for i in range(a.size // 1000):
        s += np.sum(np.sin(a[i * 1000 : (i + 1) * 1000]))
    return s


def profiled_seconds(func, args, timing: bool) -> float:
    """Seconds per call on the twin the profile runs (the best of RUNS calls)."""
    best = float("inf")
    for _ in range(RUNS):
        prof = numba_lprun.LineProfiler(func, timing=timing, sample=False, repeat=False)
        prof.runcall(func, *args)
        (stats,) = prof.profile.functions
        best = min(best, stats.counts.ticks * prof.profile.unit / stats.counts.calls)
    return best


def threaded_overhead(func, a, threads: int) -> float:
    """Instrumented / plain time per call with ``threads`` calls at once (1: in sequence)."""

    def work():
        if threads == 1:
            return [func(a) for _ in range(2)]
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(func, [a] * threads))

    prof = numba_lprun.LineProfiler(func, sample=False)
    for _ in range(RUNS):
        prof.runcall(work)
    return prof.overhead[func.__name__]


def main() -> None:
    a = np.random.default_rng(0).random(1_000_000)
    print(f"{'kernel':<14}{'mode':<10}{'plain add ms':>14}{'atomic ms':>12}{'atomic/plain':>14}")
    for py_func in (scalar_loop, coarse):
        plain, atomic = numba.njit(py_func), numba.njit(nogil=True)(py_func)
        plain(a), atomic(a)
        for timing in (True, False):
            p = profiled_seconds(plain, (a,), timing)
            t = profiled_seconds(atomic, (a,), timing)
            mode = "timing" if timing else "hits"
            print(f"{py_func.__name__:<14}{mode:<10}{p * 1e3:>14.2f}{t * 1e3:>12.2f}{t / p:>13.2f}x")
    print("\ncontended: overhead of the nogil kernel, 2 calls in sequence vs 2 threads at once")
    for py_func in (scalar_loop, coarse):
        atomic = numba.njit(nogil=True)(py_func)
        seq, par = threaded_overhead(atomic, a, 1), threaded_overhead(atomic, a, 2)
        print(f"{py_func.__name__:<14}sequential {seq:6.2f}x   2 threads {par:6.2f}x")


if __name__ == "__main__":
    main()
