"""A kernel written with @guvectorize, called on rows of a matrix."""

import numpy as np
from numba import guvectorize


@guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def row_norm(row, out):
    acc = 0.0
    for v in row:
        acc += v * v
    out[0] = np.sqrt(acc)


m = np.arange(12.0).reshape(4, 3)
print("norms", np.round(row_norm(m), 3).tolist())
