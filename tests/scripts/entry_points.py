"""A script that calls its kernel through the entry point compile(sig) returns."""

import numpy as np
from numba import njit


@njit
def accumulate(a):
    total = 0.0
    for x in a:
        if x > 0.5:
            total += x
    return total


def main():
    entry = accumulate.compile("float64(float64[:])")
    a = np.linspace(0.0, 1.0, 11)
    print("total", round(entry(a), 6))


if __name__ == "__main__":
    main()
