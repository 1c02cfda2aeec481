"""The two shapes of probe intrinsic, shared by the CPU's probes and the GPU's.

A probe is either ``_nlp_line(k)`` (a literal row: the line event) or an intrinsic with no
argument (enter, leave, flush). Both targets build them alike and differ only in their
``intrinsic`` decorator and ``types`` module (``numba.extending`` and ``numba.types`` on the
CPU, ``numba.cuda.extending`` and ``numba.cuda.types`` for a kernel) and in the code they
emit: those are the parameters, so the typing rule lives once (``instrument.probes``,
``cuda.gpu_probes``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def line_intrinsic(intrinsic: Callable, types: Any, emit_line: Callable[[Any, int], None]) -> object:
    """``_nlp_line(k)``: typed only for a literal integer ``k``, it emits ``emit_line(builder, k)``."""

    @intrinsic
    def nlp_line(typingctx, row):
        if not isinstance(row, types.IntegerLiteral):
            return None

        def codegen(context, builder, sig, args):
            emit_line(builder, sig.args[0].literal_value)
            return context.get_dummy_value()

        return types.none(row), codegen

    return nlp_line


def no_arg_intrinsic(intrinsic: Callable, types: Any, emit: Callable[[Any, Any], None]) -> object:
    """An intrinsic taking no argument that emits ``emit(builder, context)`` where it is called."""

    @intrinsic
    def probe(typingctx):
        def codegen(context, builder, sig, args):
            emit(builder, context)
            return context.get_dummy_value()

        return types.none(), codegen

    return probe
