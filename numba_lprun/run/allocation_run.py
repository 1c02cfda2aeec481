"""The extra run that counts allocations per line (``asm=True``), apart from the timed runs."""

from __future__ import annotations

from dataclasses import dataclass

from .call_context import CallContext, silently
from .measurements import PLAIN, Allocations, ExtraRun
from .sampled_run import line_maps


@dataclass(frozen=True)
class AllocationRun:
    """One more plain run with every allocation of Numba's runtime recorded (``asm=True``).

    A run of its own: the hook that records each allocation's stack costs a
    backtrace per allocation, which would distort the timed run and the samples;
    the count is exact in any run of the same call.
    """

    def run(self, ctx: CallContext) -> None:
        from ..machine.allocations import allocations_per_line, counting, unavailable

        why = unavailable()
        if why is not None:
            ctx.made.append(Allocations(None, why))
            return
        try:
            with ctx.runner.phase(PLAIN, ctx.namespaces, ctx.progress) as run:
                with counting() as counted:
                    silently(ctx, run)
        finally:
            ctx.runner.take_counts(PLAIN)
            ctx.restore()
        dropped = counted.get("dropped")
        if dropped or dropped is None:
            total = len(counted.get("stacks", ())) + (dropped or 0)
            ctx.made.append(
                Allocations(None, f"the counted run allocated {total:,} times, more than it can record")
            )
            return
        maps = line_maps(ctx.runner.twin_code(PLAIN))
        ctx.made.append(Allocations(allocations_per_line(counted["stacks"], maps)))
        ctx.made.append(ExtraRun("plain run counting allocations"))
