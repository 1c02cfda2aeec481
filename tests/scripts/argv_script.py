"""A script with argparse that calls a jitted kernel, as users write them."""

import argparse

import numpy as np
from numba import njit


@njit
def smooth(a, width):
    out = np.empty(a.size - width + 1)
    for i in range(out.size):
        out[i] = a[i : i + width].mean()
    return out


@njit
def never_called(a):
    return a


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--exit", type=int, default=0)
    args = parser.parse_args()
    result = smooth(np.arange(float(args.n)), 5)
    print(f"smoothed {result.size} values")
    raise SystemExit(args.exit)


if __name__ == "__main__":
    main()
