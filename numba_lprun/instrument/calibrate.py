"""What one probe costs, measured once per process on this machine.

A line's measured time runs from its probe's clock read to the next one, so it
includes one probe's own work per hit. Timing an empty loop that holds nothing
but probes gives that cost; ``profiler`` subtracts it per hit (the raw figures
stay in the stats), and lines whose time per hit is close to it are marked as
below the timer's resolution.
"""

from __future__ import annotations

import functools

from numba import njit

from . import probes as P

_SPIN_SOURCE = """
def spin(n):
    _nlp_enter()
    for i in range(n):
        _nlp_line(0)
        _nlp_line(1)
    _nlp_leave()
"""


@functools.cache
def probe_cost_ticks(clock: str, repeats: int = 5, n: int = 200_000) -> float:
    """Clock ticks one probe adds to the line it charges (the minimum of ``repeats`` runs)."""
    counters = P.new_counters(2)
    namespace = P.make_probes(P.ProbeConfig(counters.ctypes.data, 2, clock))
    exec(compile(_SPIN_SOURCE, "<numba_lprun calibration>", "exec"), namespace)
    spin = njit(namespace["spin"])
    spin(10)
    best = float("inf")
    for _ in range(repeats):
        counters[:] = 0
        spin(n)
        hits = counters[0, 0] + counters[1, 0]
        ticks = counters[0, 1] + counters[1, 1]
        best = min(best, ticks / hits)
    return best
