"""A ufunc and a stencil made inside ``main()`` (``vectorize([...])(f)``), as programs build them."""

import numpy as np
from numba import float64, stencil, vectorize


def clamp_py(x):
    if x < 0.0:
        return 0.0
    return x


def main():
    clamp = vectorize([float64(float64)])(clamp_py)

    @stencil
    def average(a):
        return (a[-1] + a[0] + a[1]) / 3.0

    x = np.linspace(-1.0, 1.0, 1001)
    print("clamped", clamp(x).sum(), "averaged", round(average(x)[1:-1].sum(), 6))


main()
