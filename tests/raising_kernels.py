"""Kernels for the tests of statements that raise: a side effect the snapshot cannot undo
(an attribute of a function: functions are code, not state) counts the statement's runs."""

import numpy as np
from numba import njit


def bump():
    bump.runs += 1


bump.runs = 0


@njit
def checked_sum(a):
    s = 0
    for i in range(a.size):
        if a[i] < 0:
            raise ValueError("negative value")
        s += a[i]
    return s


def around(a):
    bump()
    return missing_name_around(a)


def missing_name_around(a):
    return checked_sum(a) + missing_name  # noqa: F821  (the Python code around the call raises)


GOOD, BAD = np.arange(5), np.array([1, 2, -3, 4])

#: statement -> the exception it raises: a wrong argument count, a type Numba cannot compile,
#: an exception raised inside the kernel on some data, and one raised by Python code around it
CASES = {
    "bump(); checked_sum(GOOD, 1)": TypeError,
    "bump(); checked_sum('abc')": Exception,  # Numba's TypingError
    "bump(); checked_sum(BAD)": ValueError,
    "around(GOOD)": NameError,
}


@njit
def checked_root(v):
    if v < 0:
        raise ValueError("negative value")
    return np.sqrt(v)


@njit
def three_stages(a):
    """Three calls that may raise, so Numba's code has an error return after each of them
    (the twin's flush for all of them is made once: ``instrument.exits``)."""
    s = 0.0
    for i in range(a.size):
        s += checked_root(a[i])
    t = 0.0
    for i in range(a.size):
        t += checked_root(a[i] - 1.0)
    u = checked_root(s + t)
    return s + t + u


STAGES_BAD = np.array([4.0, 3.0, 0.5, 2.0])  # the second loop raises at its third element
