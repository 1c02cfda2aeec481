"""Flush probe state on every way out of a lowered function, exceptions included.

Why: a counting twin keeps its hits in a per-call stack slot (registers, so the
loop stays as fast as the plain one) and adds them to the counters when the call
returns (the ``leave`` probe, placed before each ``return`` of the source). A
call that raises, itself or in a callee, leaves through Numba's error return
instead and would lose every hit of the call: the profile of a statement that
fails would show nothing of the lines that ran before the error. Numba lowers
every exit of a function to an LLVM ``ret`` (a status code), so after lowering,
the flush is emitted once more before each ``ret``. On the normal path ``leave``
has already flushed and zeroed the slot, and LLVM folds the second flush away.

Numba calls its target context's ``post_lowering(module, library)`` after lowering
each function (and each ``prange`` body's gufunc), before the module is
materialized; :func:`flushing` gives a pipeline a context whose hook also does this
(``internals.with_post_lowering``).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..internals import runs_post_lowering, with_post_lowering

Flush = Callable[[ir.IRBuilder], None]
_EXITS = "_nlp_exit_flushes"


def exits_flushed(context: object) -> bool:
    """Whether code lowered with ``context`` gets the exit flushes (a twin compiled with a
    ``flushing`` pipeline; ufunc and stencil twins are built by Numba's own builders)."""
    return runs_post_lowering(context, _flush_exits)


def flush_on_exit(function: ir.Function, key: object, flush: Flush) -> None:
    """Have ``flush(builder)`` emitted before every ``ret`` of ``function`` (once per ``key``)."""
    flushes = getattr(function, _EXITS, None)
    if flushes is None:
        flushes = {}
        setattr(function, _EXITS, flushes)
    flushes.setdefault(key, flush)


def _flush_exits(module: ir.Module) -> None:
    for function in module.functions:
        flushes = getattr(function, _EXITS, None)
        if not flushes:
            continue
        builder = ir.IRBuilder()
        for block in list(function.blocks):
            if isinstance(block.terminator, ir.Ret):
                builder.position_before(block.terminator)
                for flush in flushes.values():
                    flush(builder)


def flushing(base: type) -> type:
    """``base`` (a Numba compiler pipeline class) whose lowering runs :func:`flush_on_exit` requests."""
    return with_post_lowering(base, _flush_exits, "Flushing")
