"""A helper in a module of its own, for the attribution corpus (tests/attribution_kernels.py)."""

from numba import njit

UNIT = 2000  # dependent multiply-adds per unit of work


@njit
def spin_elsewhere(units, seed):
    """A leaf loop compiled in another module (another file in the line tables)."""
    x = 1.0 + seed * 1e-9
    for _ in range(units * UNIT):
        x = x * 0.9999999 + 1e-7
    return x
