"""Kernels of ``tests/scripts/meaning.py`` that ``tests/test_meaning.py`` profiles through the API
too: a module of their own, so the tests import them without running the script's cases (the
script keeps its own, as a program defines its kernels)."""

from numba import njit, objmode


# mutual recursion between module functions
@njit
def outer_fac(n):
    if n < 1:
        return 1
    return n * inner_fac(n - 1)


@njit
def inner_fac(n):
    if n < 1:
        return 1
    return n * outer_fac(n - 1)


# a with objmode block: counted once per call
@njit
def with_objmode(n):
    s = 0
    for i in range(n):
        s += i
    with objmode(y="int64"):
        y = sum(range(10))
    return s + y


# a generator consumed by a function compiled during the run
@njit
def evens(n):
    for i in range(n):
        yield 2 * i


@njit
def consume(n):
    s = 0
    for v in evens(n):
        s += v
    return s
