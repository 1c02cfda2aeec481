"""Helpers for LLVM IR emitted inside intrinsics (probes, clock reads, the sampler's handler).

Numba's ``cgutils`` places stack slots in the function's entry block, where LLVM
promotes them to registers, and writes counted loops the way Numba's own
lowering does; it is ``numba.core``, so the code generators reach it here.
"""

from __future__ import annotations

from .registry import touches


@touches(
    "numba.core.cgutils",
    "alloca_once",
    "instrument/clock.py, sampling/_handler.py: a stack slot in the entry block (a timespec)",
)
def stack_slot(builder, lltype, name: str = ""):
    """A stack slot of ``lltype`` in the function's entry block (kept out of loops)."""
    from numba.core import cgutils

    return cgutils.alloca_once(builder, lltype, name=name)


@touches(
    "numba.core.cgutils",
    "alloca_once_value",
    "sampling/_handler.py: a stack slot holding an initial value",
)
def stack_value(builder, value, name: str = ""):
    """A stack slot in the entry block, holding ``value`` where it is called."""
    from numba.core import cgutils

    return cgutils.alloca_once_value(builder, value, name=name)


@touches(
    "numba.core.cgutils",
    "for_range",
    "sampling/_handler.py: copy a run of stack words inside the signal handler",
)
def counted_loop(builder, count):
    """A context manager emitting a loop of ``count`` iterations (``loop.index`` inside)."""
    from numba.core import cgutils

    return cgutils.for_range(builder, count)
