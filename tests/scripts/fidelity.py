"""Touches what programs touch on a dispatcher, and compares Python and Numba (as examples do).

Prints what it sees and exits with status 3, so a profiled run can be compared
with an unprofiled one line by line.
"""

import io
import pickle
import sys

import numpy as np
from numba import njit
from numba.core.registry import CPUDispatcher


@njit
def mergesort(a):
    if a.size <= 1:
        return a.copy()
    mid = a.size // 2
    left, right = mergesort(a[:mid]), mergesort(a[mid:])
    out = np.empty(a.size)
    i = j = 0
    for k in range(a.size):
        if j >= right.size or (i < left.size and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


def make_scaler(factor):
    @njit
    def scale(a):
        return a * factor

    return scale


data = np.random.default_rng(0).random(64)
by_python = mergesort.py_func(data)
by_numba = mergesort(data)
print("same result:", bool(np.array_equal(by_python, by_numba)))
print("name:", mergesort.__name__, mergesort.py_func.__name__)
print("isinstance:", isinstance(mergesort, CPUDispatcher))
print("signatures:", [str(s) for s in mergesort.signatures])
print("overloads:", len(mergesort.overloads))
types = io.StringIO()
mergesort.inspect_types(file=types)
print("inspect_types mentions the loop:", "for k in range(a.size)" in types.getvalue())
again = pickle.loads(pickle.dumps(mergesort))
print("pickled round trip:", type(again).__name__, bool(np.array_equal(again(data), by_numba)))
scale = make_scaler(2.0)
print("nested:", scale(np.ones(3)).tolist())
print("FIDELITY-END")
sys.exit(3)
