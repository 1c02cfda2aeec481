"""Flush probe state on every way out of a lowered function, exceptions included.

Why: a counting twin keeps its hits in a per-call stack slot (registers, so the
loop stays as fast as the plain one) and adds them to the counters when the call
ends. A call that raises, itself or in a callee, leaves through Numba's error
return, and must lose none of them: the profile of a statement that fails shows
the lines that ran before the error. Numba lowers every exit of a function to an
LLVM ``ret`` (a status code), so after lowering, the normal returns are made to
share one exit block and the error returns another (``_one_exit``), and the
flush is emitted before each of the two; the ``leave`` probe at each ``return``
of the source flushes nothing where this runs.

Numba calls its target context's ``post_lowering(module, library)`` after lowering
each function (and each ``prange`` body's gufunc), before the module is
materialized; :func:`flushing` gives a pipeline a context whose hook also does this
(``internals.with_post_lowering``).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..internals import runs_post_lowering, with_post_lowering

#: ``flush(builder, failing)``: ``failing`` at the error exit, which a call takes at most once
Flush = Callable[[ir.IRBuilder, bool], None]
_EXITS = "_nlp_exit_flushes"


def exits_flushed(context: object) -> bool:
    """Whether code lowered with ``context`` gets the exit flushes (a twin compiled with a
    ``flushing`` pipeline; ufunc and stencil twins are built by Numba's own builders)."""
    return runs_post_lowering(context, _flush_exits)


def flush_on_exit(function: ir.Function, key: object, flush: Flush) -> None:
    """Have ``flush(builder, failing)`` emitted before the normal exit of ``function`` and
    before its error exit (``failing``), once per ``key``."""
    flushes = getattr(function, _EXITS, None)
    if flushes is None:
        flushes = {}
        setattr(function, _EXITS, flushes)
    flushes.setdefault(key, flush)


def _flush_exits(module: ir.Module, library: object) -> None:
    """Emit each function's flushes before its exits, once: Numba runs the hook on a module
    again when it lowers more into it (a function with a ``with objmode`` block), and a
    second flush at each exit counted every call twice, its time as the clock's reading."""
    for function in module.functions:
        flushes = getattr(function, _EXITS, None)
        if not flushes:
            continue
        setattr(function, _EXITS, {})  # done: a request made after this adds to the next run
        builder = ir.IRBuilder()
        rets = [block for block in function.blocks if isinstance(block.terminator, ir.Ret)]
        ok = [block for block in rets if _returns_ok(block.terminator)]
        failed = [block for block in rets if block not in ok]
        for blocks, failing in ((ok, False), (failed, True)):
            if not blocks:
                continue
            exit_block = _one_exit(function, blocks, failing) if len(blocks) > 1 else blocks[0]
            builder.position_before(exit_block.terminator)
            for flush in flushes.values():
                flush(builder, failing)


def _returns_ok(ret: ir.Ret) -> bool:
    """Whether ``ret`` returns Numba's OK status (a constant 0) or nothing: a normal return."""
    operands = ret.operands
    return not operands or (isinstance(operands[0], ir.Constant) and operands[0].constant == 0)


def _one_exit(function: ir.Function, blocks: list[ir.Block], failing: bool) -> ir.Block:
    """The returns of ``function`` in ``blocks`` (its normal ones, or its error ones) made
    branches to one new block that returns their status, so that they share one flush.

    Why: Numba's code has an error return after each call that may raise (a 280-line
    function had 29, and a flush copied before each was a third of its compile: 0.34 s of
    1.55 s), and a normal return for each ``return`` of the source. One flush per call on
    every normal path keeps a small helper's twin small enough for LLVM to inline where it
    inlines the plain helper, and is a store on every iteration of a loop the helper is
    inlined into, which LLVM can keep in a register until the loop ends; a flush at each
    return is a store on some iterations only, which it cannot. The error exit stays apart:
    merged with the normal one, the inlined helper's normal path ran through a block the
    error path shares (Black-Scholes' normal CDF, called twice per element: 1.05x -> 1.3x)."""
    exit_block = function.append_basic_block("nlp.error_exit" if failing else "nlp.exit")
    builder = ir.IRBuilder(exit_block)
    operands = blocks[0].terminator.operands
    status = builder.phi(operands[0].type, name="nlp.status") if operands else None
    for block in blocks:
        ret = block.terminator
        block.instructions.remove(ret)
        block.terminator = None  # llvmlite keeps the terminator apart from the instructions too
        ir.IRBuilder(block).branch(exit_block)
        if status is not None:
            status.add_incoming(ret.operands[0], block)
    if status is None:
        builder.ret_void()
    else:
        builder.ret(status)
    return exit_block


def flushing(base: type) -> type:
    """``base`` (a Numba compiler pipeline class) whose lowering runs :func:`flush_on_exit` requests."""
    return with_post_lowering(base, _flush_exits, "Flushing")
