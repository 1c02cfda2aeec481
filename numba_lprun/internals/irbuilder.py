"""Helpers for LLVM IR emitted inside intrinsics (probes, clock reads, the sampler's handler).

Numba's ``cgutils`` places stack slots in the function's entry block, where LLVM
promotes them to registers, and writes counted loops the way Numba's own
lowering does; it is ``numba.core``, so the code generators reach it here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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


@touches(
    "llvmlite.ir.builder",
    "IRBuilder",
    "instrument/probes.py: branch where the builder stands inside a block (before an exit's ret)",
    instance_attribute="_anchor",
    package="llvmlite",
)
@contextmanager
def branching_here(builder) -> Iterator[None]:
    """Let the code emitted inside branch, wherever the builder stands: llvmlite appends blocks
    and branches only at a block's end, so what follows the builder's position in its block
    (an exit's ``ret``, where flushes go) is moved to a new block, branched to afterwards,
    and the builder left before it. Phi nodes of the moved terminator's successors are told."""
    block, anchor = builder.block, builder._anchor
    if anchor >= len(block.instructions):
        yield
        return
    rest = block.function.append_basic_block(name=f"{block.name}.rest")
    moved = block.instructions[anchor:]
    del block.instructions[anchor:]
    for instruction in moved:
        instruction.parent = rest
        rest.instructions.append(instruction)
    rest.terminator, block.terminator = block.terminator, None
    for other in block.function.blocks:
        for instruction in other.instructions:
            incomings = getattr(instruction, "incomings", None)
            if incomings is not None:
                instruction.incomings = [(v, rest if b is block else b) for v, b in incomings]
    builder.position_at_end(block)
    yield
    builder.branch(rest)
    builder.position_before(rest.instructions[0])
