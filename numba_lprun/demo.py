"""``python -m numba_lprun.demo``: profile the classic ``conv`` kernel and show what the magic shows."""

from __future__ import annotations

import numpy as np
from numba import njit

import numba_lprun
from numba_lprun.renderers import print_profile

INTRO = """\
numba_lprun demo: a jitted 1-D convolution, profiled line by line.
What to look at: the Hits and Time columns come from probes compiled into an
instrumented twin; % Samples is a probe-free sampled view of the plain, fully
optimized twin. The notes under the table say how much the probes slowed the
run and where the two views disagree (! marks); ~ marks lines too quick to time.
The hints under them come from the optimized machine code (--asm): what the hot
line does on every execution (`--asm N` also lists its hottest instructions).
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
