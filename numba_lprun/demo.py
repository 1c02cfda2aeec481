"""``python -m numba_lprun.demo``: profile the classic ``conv`` kernel and print the table."""

from __future__ import annotations

import numpy as np
from numba import njit

import numba_lprun


@njit
def conv(x, k):
    n = x.size - k.size + 1
    out = np.empty(n)
    for i in range(n):
        window = x[i : i + k.size]
        out[i] = np.sum(np.multiply(window, k))
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    x, k = rng.random(200_000), rng.random(32)
    conv(x, k)  # compile the original once, as a user would have
    prof = numba_lprun.LineProfiler(conv)
    prof.runcall(conv, x, k)
    prof.print_stats()


if __name__ == "__main__":
    main()
