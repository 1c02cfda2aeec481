"""What one probe costs, measured once per machine and boot on this machine.

A line's measured time runs from its probe's clock read to the next one, so it
includes one probe's own work per hit. Timing an empty loop that holds nothing
but probes gives that cost; ``profiler`` subtracts it per hit (the raw figures
stay in the stats), and lines whose time per hit is close to it are marked as
below the timer's resolution.

Measuring compiles a loop and runs it (0.1 s), so the figure is kept in the cache
directory next to the TSC rate (``disk_cache.machine_key``: same machine, same
boot, same code) and read back by later processes. The figure is the minimum of
several runs, so a busy machine at measuring time inflates it little.
"""

from __future__ import annotations

import functools

from . import disk_cache
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
    key = disk_cache.machine_key()
    field = f"probe_ticks_{clock}_{repeats}_{n}"
    if key is not None:
        kept = disk_cache.load_record("machine", key).get(field)
        if isinstance(kept, float) and kept > 0:
            return kept
    ticks = _measure(clock, repeats, n)
    if key is not None and 0 < ticks < float("inf"):
        disk_cache.update_record("machine", key, **{field: ticks})
    return ticks


def _measure(clock: str, repeats: int, n: int) -> float:
    from numba import njit

    table = P.new_counters(2)
    counters = table.shared
    namespace = P.make_probes(P.ProbeConfig(table.address, 2, clock))
    exec(compile(_SPIN_SOURCE, "<numba_lprun calibration>", "exec"), namespace)
    spin = njit(namespace["spin"])
    spin(10)
    best = float("inf")
    for _ in range(repeats):
        counters[:] = 0
        spin(n)
        hits = counters[0, 0] + counters[1, 0]
        ticks = counters[0, 1] + counters[1, 1]
        best = min(best, float(ticks / hits))
    return best
