"""Real profiles for the renderer tests: two small jitted kernels, one with a long source line.

The renderer tests read these profiles from JSON fixtures (``tests/fixtures``,
remade by ``python -m tests.fixtures.make``), so they compile nothing; likewise a
CUDA launch in the simulator (``tests.fixtures.make_cuda``).
"""

import functools
from pathlib import Path

import numpy as np
from numba import njit

from numba_lprun.stats import ProfileStats


@njit
def weigh(x, k):
    n = x.size - k.size + 1
    out = np.empty(n)
    for i in range(n):
        window = x[i : i + k.size]
        out[i] = np.sum(np.multiply(window, k)) + 0.5 * np.max(window) - 0.25 * np.min(window) + 0.125 * window[0]  # noqa: E501  # fmt: skip
    return out


@njit
def caller(x, k):
    total = 0.0
    for _ in range(2):
        total += weigh(x, k).sum()
    return total


LONG_LINE = "out[i] = np.sum(np.multiply(window, k)) + 0.5 * np.max(window)"


FIXTURES = Path(__file__).resolve().parent / "fixtures"


@functools.cache
def long_line_profile(kind: str = "sampled_probes"):
    """The profile of ``caller`` and ``weigh`` (both profiled) from its JSON fixture:
    ``sampled_probes`` (default times, ``--probes`` beside them) or ``probes_only``."""
    return ProfileStats.from_json((FIXTURES / f"{kind}.json").read_text(encoding="utf-8"))


@functools.cache
def cuda_simulated_profile() -> ProfileStats:
    """A simulator launch of ``tests/cuda_kernels.walk`` with its device function ``step``
    (hits, warps and lanes; no times), remade by
    ``NUMBA_ENABLE_CUDASIM=1 python -m tests.fixtures.make_cuda``."""
    return ProfileStats.from_json((FIXTURES / "cuda_simulated.json").read_text(encoding="utf-8"))
