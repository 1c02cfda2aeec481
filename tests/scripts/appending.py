"""Appends one line to a log file and runs a jitted kernel: a script with side effects."""

import sys

import numpy as np
from numba import njit


@njit
def total(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * 0.5
    return s


log = sys.argv[1]
value = total(np.arange(20_000.0))
with open(log, "a", encoding="utf-8") as handle:
    handle.write(f"ran once: {value}\n")
print("appended", value)
