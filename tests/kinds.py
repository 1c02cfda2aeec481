"""Kernels written the other ways Numba code is written: nogil threads, jitclass,
first-class functions, ufuncs, register_jitable/overload, generators, stencils."""

from concurrent.futures import ThreadPoolExecutor

from numba import njit


@njit(nogil=True)
def nogil_body(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * 0.5
    return s


def threaded_sum(chunks, threads=4):
    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(nogil_body, chunks))


@njit
def inner_counted(x):
    return x + 1.0


@njit(nogil=True)
def nogil_caller(a):
    s = 0.0
    for _ in range(a.size):
        s = inner_counted(s)
    return s


def threaded_caller(chunks):
    with ThreadPoolExecutor(len(chunks)) as pool:
        return sum(pool.map(nogil_caller, chunks))
