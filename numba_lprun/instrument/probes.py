"""The probes compiled into a twin: Numba intrinsics that read the clock and bump counters.

Each profiled function gets its own counter array, and its own set of intrinsics
with that array's address baked in as a constant, so a probe is a clock read and
two memory updates with no argument passing. The per-call state (the previous
line and when it started) lives in a stack slot of the LLVM function the probe is
lowered into: LLVM promotes it to registers, every call (and every ``prange``
worker, whose body is a function of its own) gets its own, and nothing Python can
see is added, so reductions and type inference are left alone. A generator's
body is re-entered at each resume, which makes its slot afresh: the time it spends
suspended is charged to no line (and its hits-only counts go straight to the
counters, see ``ProbeConfig.local_hits``).

Counter layout, one row of two int64 per entry: rows ``0..n-1`` are the lines
(hits, ticks), row ``n`` is a trash row charged when there is no previous line,
row ``n+1`` holds the function totals (calls, ticks from entry to return).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .clock import emit_read

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
PREV_ROW, PREV_T, ENTRY_T, LOCAL_HITS = 0, 1, 2, 3  # fields of the state slot


def new_counters(n_lines: int) -> np.ndarray:
    """Zeroed counters for ``n_lines`` lines plus the trash and totals rows."""
    return np.zeros((n_lines + 2, 2), dtype=np.int64)


@dataclass(frozen=True)
class ProbeConfig:
    """What a set of probes does; one config per twin of one function."""

    address: int  # of the counters' data; the array must outlive the compiled code
    n_lines: int
    clock: str  # "tsc" or "monotonic"
    timing: bool = True  # read the clock on every line (False: hit counts only)
    atomic: bool = False  # counters may be touched by several threads (parallel=True, nogil=True)
    suspends: bool = False  # a generator: its stack slot is made afresh at every resume

    @property
    def local_hits(self) -> bool:
        """Hits-only mode counts in the stack slot, flushed at return; a generator's slot
        does not survive a yield, so there every hit goes straight to the counters."""
        return not self.timing and not self.suspends

    @property
    def trash_row(self) -> int:
        return self.n_lines

    @property
    def totals_row(self) -> int:
        return self.n_lines + 1


class _Emitter:
    """LLVM snippets shared by the intrinsics of one ProbeConfig."""

    def __init__(self, cfg: ProbeConfig):
        self.cfg = cfg

    def cell(self, builder: ir.IRBuilder, row, column: int) -> ir.Value:
        base = builder.inttoptr(ir.Constant(_I64, self.cfg.address), _I64.as_pointer())
        if isinstance(row, int):
            index = ir.Constant(_I64, 2 * row + column)
        else:
            index = builder.add(builder.shl(row, ir.Constant(_I64, 1)), ir.Constant(_I64, column))
        return builder.gep(base, [index])

    def add(self, builder: ir.IRBuilder, row, column: int, amount: ir.Value) -> None:
        ptr = self.cell(builder, row, column)
        if self.cfg.atomic:
            builder.atomic_rmw("add", ptr, amount, "monotonic")
        else:
            builder.store(builder.add(builder.load(ptr), amount), ptr)

    def state(self, builder: ir.IRBuilder) -> ir.Value:
        """The per-call state slot of the function being lowered, made on first use.

        It is initialised in the entry block (no previous line, clock read at
        entry), so probes in code with no explicit ``enter`` (a ``prange`` body
        outlined into a worker function) start from a defined state.
        """
        fn = builder.function
        slots = getattr(fn, "_nlp_state_slots", None)
        if slots is None:
            slots = fn._nlp_state_slots = {}
        key = self.cfg.address
        if key not in slots:
            local_rows = self.cfg.n_lines if self.cfg.local_hits else 0
            with builder.goto_entry_block():
                slot = builder.alloca(ir.ArrayType(_I64, LOCAL_HITS + local_rows), name="nlp.state")
                self.set(builder, slot, PREV_ROW, ir.Constant(_I64, self.cfg.trash_row))
                now = emit_read(builder, self.cfg.clock)
                self.set(builder, slot, PREV_T, now)
                self.set(builder, slot, ENTRY_T, now)
                for row in range(local_rows):
                    self.set(builder, slot, LOCAL_HITS + row, ir.Constant(_I64, 0))
            slots[key] = slot
        return slots[key]

    @staticmethod
    def get(builder: ir.IRBuilder, slot: ir.Value, field: int) -> ir.Value:
        return builder.load(builder.gep(slot, [ir.Constant(_I32, 0), ir.Constant(_I32, field)]))

    @staticmethod
    def set(builder: ir.IRBuilder, slot: ir.Value, field: int, value: ir.Value) -> None:
        builder.store(value, builder.gep(slot, [ir.Constant(_I32, 0), ir.Constant(_I32, field)]))

    def charge_previous(self, builder: ir.IRBuilder, slot: ir.Value, now: ir.Value) -> None:
        prev_row = self.get(builder, slot, PREV_ROW)
        self.add(builder, prev_row, 1, builder.sub(now, self.get(builder, slot, PREV_T)))

    def enter(self, builder: ir.IRBuilder) -> None:
        slot = self.state(builder)
        now = emit_read(builder, self.cfg.clock)
        self.set(builder, slot, PREV_ROW, ir.Constant(_I64, self.cfg.trash_row))
        self.set(builder, slot, PREV_T, now)
        self.set(builder, slot, ENTRY_T, now)

    def line(self, builder: ir.IRBuilder, row: int) -> None:
        slot = self.state(builder)
        if self.cfg.local_hits:  # count in the stack slot: LLVM keeps it in a register
            field = LOCAL_HITS + row
            self.set(builder, slot, field, builder.add(self.get(builder, slot, field), ir.Constant(_I64, 1)))
            return
        self.add(builder, row, 0, ir.Constant(_I64, 1))
        if not self.cfg.timing:
            return
        now = emit_read(builder, self.cfg.clock)
        self.charge_previous(builder, slot, now)
        self.set(builder, slot, PREV_ROW, ir.Constant(_I64, row))
        self.set(builder, slot, PREV_T, now)

    def flush(self, builder: ir.IRBuilder) -> None:
        """Move the hits counted in the stack slot (hits-only mode) to the counters."""
        if not self.cfg.local_hits:
            return
        slot = self.state(builder)
        for row in range(self.cfg.n_lines):
            field = LOCAL_HITS + row
            self.add(builder, row, 0, self.get(builder, slot, field))
            self.set(builder, slot, field, ir.Constant(_I64, 0))

    def leave(self, builder: ir.IRBuilder) -> None:
        self.flush(builder)
        slot = self.state(builder)
        now = emit_read(builder, self.cfg.clock)
        if self.cfg.timing:
            self.charge_previous(builder, slot, now)
            self.set(builder, slot, PREV_ROW, ir.Constant(_I64, self.cfg.trash_row))
            self.set(builder, slot, PREV_T, now)
        self.add(builder, self.cfg.totals_row, 0, ir.Constant(_I64, 1))
        self.add(builder, self.cfg.totals_row, 1, builder.sub(now, self.get(builder, slot, ENTRY_T)))


def _no_arg_probe(emit: Callable[[ir.IRBuilder], None]):
    """An intrinsic taking no argument that emits ``emit(builder)`` where it is called."""

    @intrinsic
    def probe(typingctx):
        def codegen(context, builder, sig, args):
            emit(builder)
            return context.get_dummy_value()

        return types.none(), codegen

    return probe


def make_probes(cfg: ProbeConfig) -> dict[str, object]:
    """The intrinsics for one twin, keyed by the global names the rewriter uses.

    ``enter()`` starts a call, ``line(k)`` is the line event of row ``k`` (a
    literal) and ``leave()`` ends a call (the rewriter puts it after a return
    value is computed). In hits-only mode hits are counted in the per-call stack
    slot, which keeps them in registers and lets LLVM vectorize the loop;
    ``leave`` and ``flush()`` (at the end of each ``prange`` iteration, whose
    worker never returns through ``leave``) move them to the counters.
    """
    emit = _Emitter(cfg)

    @intrinsic
    def nlp_line(typingctx, row):
        if not isinstance(row, types.IntegerLiteral):
            return None

        def codegen(context, builder, sig, args):
            emit.line(builder, sig.args[0].literal_value)
            return context.get_dummy_value()

        return types.none(row), codegen

    return {
        ENTER: _no_arg_probe(emit.enter),
        LINE: nlp_line,
        LEAVE: _no_arg_probe(emit.leave),
        FLUSH: _no_arg_probe(emit.flush),
    }


ENTER, LINE, LEAVE, FLUSH = "_nlp_enter", "_nlp_line", "_nlp_leave", "_nlp_flush"
PYHIT = "_nlp_pyhit"  # a plain Python hit counter, for lines inside objmode blocks


def make_python_hit(counters: np.ndarray):
    """A Python-level hit counter for lines that run in object mode (objmode blocks)."""

    def nlp_pyhit(row: int) -> None:
        counters[row, 0] += 1

    return nlp_pyhit
