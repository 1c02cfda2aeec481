"""Jitted functions made inside other functions, at run time, as examples and tests write them."""

import numpy as np
from numba import njit


def make_kernel(power):
    @njit
    def kernel(a):
        s = 0.0
        for v in a:
            s += v**power
        return s

    return kernel


def run():
    @njit
    def inner(n):
        t = 0
        for i in range(n):
            t += i
        return t

    return inner(10)


squares = make_kernel(2)
print("squares", squares(np.arange(4.0)), "inner", run())
