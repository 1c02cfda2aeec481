"""A small module for ``%nlprun -m``: every jitted function it defines is profiled, those not
called get no table, and one that Numba compiles in object mode is skipped and said so."""

import numba
import numpy as np
from numba import njit


@njit
def poly(x):
    y = x * x
    return y + 1


@njit
def busy(n):
    s = 0.0
    for i in range(n):
        s += np.sin(i) ** 2
    return s


@numba.jit(forceobj=True)
def objmode_only(x):
    return x
