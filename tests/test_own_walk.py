"""The handler's own walk through profiled code (``sampling._handler.own_walk``) against libgcc's.

The own walk replaces libgcc's for samples that interrupt profiled code, so it must
give the very frames libgcc gives: with ``verify_walks`` the handler walks every stack
both ways and counts the walks that differ. The kernels are built with unwind tables
(``debug=True``, as twins are) and call what real kernels call: a helper LLVM keeps
apart, libm, Numba's allocator, a recursive helper.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

import numba_lprun
from numba_lprun.sampling import Sampler
from numba_lprun.sampling.unwind_tables import END, FROM_RBP, FROM_RSP, GAP, ROW, own_table, python_calls_in
from numba_lprun.twin_kind import COUNTING

DEBUG = {"debug": True, "boundscheck": False, "_dbg_extend_lifetimes": False}


@njit(**DEBUG)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


@njit(**DEBUG)
def allocating(n):
    total = 0.0
    for i in range(n):
        a = np.empty(16 + i % 7)
        a[:] = i
        total += a.sum()
    return total


@njit(**DEBUG)
def kernel(n):
    acc = 0.0
    for i in range(n):
        acc += math.sin(i * 1e-3) * math.exp(-i * 1e-9)  # libm
        if i % 64 == 0:
            acc += allocating(3)  # Numba's runtime, through a helper
        if i % 4096 == 0:
            acc += fib(12)  # a recursive helper: frames of the same function on frames
    return acc


def _rows(table: np.ndarray) -> np.ndarray:
    stops = int(table[1])
    return table[2 + 2 * stops :].reshape(int(table[0]), ROW)


def test_the_table_holds_each_function_from_its_entry_to_a_gap():
    kernel(10)
    table = own_table([kernel], python_calls_in())
    assert table is not None
    rows = _rows(table)
    assert (np.diff(rows[:, 0]) > 0).all()  # sorted, one rule per address
    assert set(rows[:, 1]) <= {GAP, FROM_RSP, FROM_RBP, END} and GAP in set(rows[:, 1])
    cres = next(iter(kernel.overloads.values()))
    entry = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
    at_entry = rows[np.searchsorted(rows[:, 0], entry, side="right") - 1]
    assert tuple(at_entry[:4]) == (entry, FROM_RSP, 8, 0)  # at entry the CFA is rsp + 8, rbp the caller's
    assert table[1] >= 1  # the interpreter, at least, calls in


def test_own_walks_give_libgcc_frames():
    """Samples of a kernel calling libm, the allocator and a recursive helper: every own walk
    equals libgcc's walk of the same stack. Deterministic: a wrong rule differs every time."""
    kernel(10)
    with Sampler(rate_hz=5000.0, own_code=[kernel, allocating, fib], verify_walks=True) as sampler:
        kernel(20_000_000)  # about 0.3 s
    raw = sampler.samples
    assert sampler.unavailable is None
    assert raw.walk_mismatches == 0
    assert raw.own_walks > 100, raw.own_walks


@njit(**DEBUG)
def arithmetic(n):
    acc = 0.0
    for i in range(n):
        acc = acc * 0.9999999 + (i % 7) * 1e-7
    return acc


def test_samples_in_profiled_code_are_walked_by_the_handler():
    """A loop that calls nothing: nearly every sample interrupts it, so the handler walks
    nearly every one itself, and each walk ends complete (at Python calling in)."""
    arithmetic(10)
    with Sampler(rate_hz=5000.0, own_code=[arithmetic]) as sampler:
        arithmetic(100_000_000)  # about 0.3 s
    raw = sampler.samples
    assert raw.count > 200
    assert raw.own_walks > 0.8 * raw.count, (raw.own_walks, raw.count)
    assert (raw.stops == -1).mean() > 0.95


@njit(parallel=True)
def parallel_sum(a):
    total = 0.0
    for i in prange(a.shape[0]):
        total += math.sqrt(a[i]) * math.log1p(a[i])
    return total


def test_own_walks_on_numba_threads_give_libgcc_frames():
    """A ``prange`` twin (its gufuncs are copies in its own module) on Numba's threads: through
    the threading layer and libc to each thread's first frame, the own walk's frames are
    libgcc's, and it walks most samples of the threads that run the loop."""
    a = np.random.default_rng(0).random(2_000_000)
    prof = numba_lprun.LineProfiler(parallel_sum, repeat=False)
    prof.runcall(parallel_sum, a[:1000])
    twins = [twin.code for twin in prof._runner.twins(COUNTING)]
    with Sampler(rate_hz=5000.0, numba_threads=True, own_code=twins, verify_walks=True) as sampler:
        for _ in range(5):
            twins[0](a)
    raw = sampler.samples
    assert raw.walk_mismatches == 0
    assert raw.own_walks > 0.3 * raw.count, (raw.own_walks, raw.count)
