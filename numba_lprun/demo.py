"""``python -m numba_lprun.demo``: profile the classic ``conv`` kernel and show what the magic shows."""

from __future__ import annotations

import numpy as np
from numba import njit

import numba_lprun
from numba_lprun.renderers import print_profile

INTRO = """\
numba_lprun demo: a jitted 1-D convolution, profiled line by line.
What to look at: Hits are exact counts from a counting twin (a counter per line,
kept in registers). Time is probe-free: each line's share of the samples the
native sampler took of the optimized code (% Time, with its 95% interval)
times the function's measured time. The notes under the table say how much the
counters slowed the run against the plain twin. The hints under them come from
the optimized machine code (--asm): what the hot line does on every execution
(`--asm N` also lists its hottest instructions).
"""


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
    print(INTRO)
    prof = numba_lprun.LineProfiler(conv, asm=True)
    prof.runcall(conv, x, k)
    print_profile(prof.profile)


if __name__ == "__main__":
    main()
