"""One more plain run, counting each line's allocations (``machine.allocations``).

Why a run of its own: the hook that records each allocation's stack costs a
backtrace per allocation, which would distort the timed run and the samples; the
count is exact in any run of the same call, so it gets one more, like the sampled
repeats (state put back after it, output discarded, hit counters dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..sampling import LineMap
from .quiet import quiet
from .runner import PLAIN, PhaseRun, Progress, Runner


def count_allocations(
    runner: Runner,
    execute: Callable[[PhaseRun], Any],
    namespaces: list[dict],
    progress: Progress | None,
    restore: Callable[[PhaseRun], None],
    maps: Callable[[], dict[Hashable, LineMap]],
) -> tuple[dict[Hashable, dict[int, int]] | None, str | None]:
    """Run ``execute`` on the plain twins with allocations recorded; (key -> line -> count,
    None), or (None, why the counts would not be exact)."""
    from ..machine.allocations import allocations_per_line, counting, unavailable

    why = unavailable()
    if why is not None:
        return None, why
    try:
        with runner.phase(PLAIN, namespaces, progress) as run:
            with counting() as counted, quiet():
                try:
                    execute(run)
                except (Exception, SystemExit):  # the instrumented run is the one the user sees
                    pass
            restore(run)
    finally:
        runner.take_counts(PLAIN)
    dropped = counted.get("dropped")
    if dropped or dropped is None:
        total = len(counted.get("stacks", ())) + (dropped or 0)
        return None, f"the counted run allocated {total:,} times, more than it can record"
    return allocations_per_line(counted["stacks"], maps()), None
