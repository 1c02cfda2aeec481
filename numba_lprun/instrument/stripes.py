"""A twin's counters, and the per-thread stripes that keep threads off each other's cache lines.

Why stripes: counters that several threads update at once need atomic adds, and when
those threads bump the same cache line at every call of a small helper (a Gaussian
called from a ``prange`` loop: a few adds per call, 10 million calls) the line moves
between cores at every add: the counting run was 3.5x the plain run. Each thread
instead claims a stripe of its own, a copy of the counter rows on cache lines no
other thread writes, and adds to it without a lock; the stripes are summed when the
counters are read, after the run. Which stripe is a thread's: its thread pointer
(``%fs:0`` on x86-64 Linux, unique among live threads) hashed to a slot of an owner
table; the slot is claimed once with a compare-and-swap, and a thread that finds its
slot held by another adds atomically to stripe 0, the shared one, so no count is lost
whoever runs. A twin asks a function compiled on its own for the stripe
(``emit_thread_stripe``), so LLVM can move the question out of a loop. A thread that ends
leaves its stripe to whichever thread gets its thread pointer next (it no longer writes).
Elsewhere (other CPUs, other systems) there are no stripes: every concurrent add is atomic
on stripe 0, as before.

Layout, int64 cells: ``1 + stripes`` blocks of ``padded`` rows of (hits, ticks), each
block starting on a 64-byte line (stripe 0 is the shared one, and the only one of a
twin whose counters are not concurrent), then the owner table, one cell per stripe.
"""

from __future__ import annotations

import platform
import sys

import numpy as np
from llvmlite import ir

from ..internals import native_function

_I64 = ir.IntType(64)
_FS = 257  # x86-64's %fs segment as an LLVM address space
_HASH = 0x9E3779B97F4A7C15  # Fibonacci hashing: spreads thread pointers 8 MiB apart over the slots
STRIPES = 64  # owned stripes of a concurrent twin's counters (a power of two)


def stripes_supported() -> bool:
    """Whether a thread can find its own stripe here (the thread pointer read as ``%fs:0``)."""
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def layout(n_lines: int, stripes: int) -> tuple[int, int, int]:
    """(rows, int64 cells from one stripe to the next, the owner table's first cell)."""
    rows = n_lines + 2
    padded = -(-rows // 4) * 4  # rows of 16 bytes: a block fills whole cache lines
    return rows, 2 * padded, (1 + stripes) * 2 * padded


class CounterTable:
    """The counters of one twin: ``n_lines`` line rows, the trash row and the totals row
    (see ``probes``), in stripe 0 and ``stripes`` per-thread copies of them."""

    def __init__(self, n_lines: int, stripes: int = 0):
        self.n_lines = n_lines
        self.stripes = stripes
        if stripes:  # before any twin that adds here is compiled or loaded
            native_function(stripe_function_module(stripes), stripe_function_name(stripes))
        self.rows, cells, _ = layout(n_lines, stripes)
        owner_blocks = -(-stripes // cells)
        self.array = np.zeros((1 + stripes + owner_blocks, cells // 2, 2), dtype=np.int64)
        self.earlier: tuple[CounterTable, ...] = ()  # tables this one succeeds (``succeeded``)

    def succeeded(self, stripes: int) -> CounterTable:
        """A table with ``stripes`` stripes that takes over from this one, which stays alive and
        counted: a twin rebuilt with other counters mid-run (a parallel caller defined after its
        helper's twin was built) leaves compiled code that still adds here, and the counts
        already made. One of the tables it took over from is taken again where it has as many
        stripes (a long session switching back and forth holds two tables, not one per switch)."""
        tables = self._tables()
        table = next((t for t in tables if t.stripes == stripes), None) or CounterTable(self.n_lines, stripes)
        for earlier in tables:
            earlier.earlier = ()
        table.earlier = tuple(t for t in tables if t is not table)
        return table

    def _tables(self) -> tuple[CounterTable, ...]:
        return (self, *self.earlier)

    @property
    def address(self) -> int:
        return self.array.ctypes.data

    @property
    def shared(self) -> np.ndarray:
        """Stripe 0's rows (a view): where code that holds no stripe adds (Python's object-mode
        lines, a thread whose slot another holds)."""
        return self.array[0, : self.rows]

    def read(self) -> np.ndarray:
        """Every row summed over the stripes and the tables this one succeeded (a copy, shaped
        ``(rows, 2)``)."""
        return sum(t.array[: 1 + t.stripes, : t.rows].sum(axis=0) for t in self._tables())

    def zero(self) -> None:
        """Counts back to 0 (the owner table is kept: a thread keeps its stripe)."""
        for table in self._tables():
            table.array[: 1 + table.stripes] = 0

    def take_totals(self) -> tuple[int, int]:
        """The totals row (calls, ticks) summed over the stripes, then zeroed there."""
        calls = ticks = 0
        for table in self._tables():
            totals = table.array[: 1 + table.stripes, table.rows - 1]
            more_calls, more_ticks = (int(v) for v in totals.sum(axis=0))
            calls, ticks = calls + more_calls, ticks + more_ticks
            totals[:] = 0
        return calls, ticks


def _slot_of_thread(builder: ir.IRBuilder, base: ir.Value, owners_cell: int, stripes: int):
    """(the thread pointer, its slot of the owner table, that slot's cell, who holds it)."""
    pointer_type = ir.PointerType(_I64, addrspace=_FS)
    thread = builder.load(builder.inttoptr(ir.Constant(_I64, 0), pointer_type), name="nlp.thread")
    thread.set_metadata("invariant.load", builder.module.add_metadata([]))  # a thread's own, for life
    bits = stripes.bit_length() - 1
    mixed = builder.mul(builder.lshr(thread, ir.Constant(_I64, 12)), ir.Constant(_I64, _HASH))
    slot = builder.lshr(mixed, ir.Constant(_I64, 64 - bits)) if bits else ir.Constant(_I64, 0)
    owner = builder.gep(base, [builder.add(slot, ir.Constant(_I64, owners_cell))])
    held = builder.load_atomic(owner, "unordered", 8)  # unordered: LLVM may hoist it out of a loop
    return thread, slot, owner, held


def stripe_function_name(stripes: int) -> str:
    """The symbol of the stripe function (``emit_thread_stripe``) for ``stripes`` stripes."""
    return f"nlp_thread_stripe_{stripes}"


def stripe_function_module(stripes: int) -> str:
    """LLVM IR of a module defining the stripe function for ``stripes`` stripes: given the owner
    table's first cell, the calling thread's stripe (1..stripes), its slot claimed if free, or 0
    where another thread holds the slot (``emit_own_stripe``). Compiled once per process, on its
    own (``internals.native_function``), so that no twin sees its body."""
    module = ir.Module(name="nlp_stripes")
    signature = ir.FunctionType(_I64, [_I64.as_pointer()])
    function = ir.Function(module, signature, name=stripe_function_name(stripes))
    function.attributes.add("nounwind")
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    builder.ret(emit_own_stripe(builder, function.args[0], 0, stripes))
    return str(module)


def emit_thread_stripe(builder: ir.IRBuilder, base: ir.Value, owners_cell: int, stripes: int) -> ir.Value:
    """The calling thread's stripe (1..stripes), or 0 where another thread holds its slot: a call
    of the stripe function (``stripe_function_module``), which claims a free slot.

    The call is declared to touch no memory (``readnone``): true of all the memory the twin's
    code sees, since only the stripe function reads or writes the owner table, and a thread's
    answer never changes once its slot is claimed or found another's (a thread keeps its
    pointer for life; the owner table is never reset). LLVM then moves the call out of a loop
    that a helper's flush is inlined into, and with the stripe fixed before the loop it may keep
    the stripe's counters in registers across it. Not an inline owner check: read before the
    loop, before the thread's first flush had claimed its slot, it made every flush of that
    loop go out of line (a one-call profile of a KDE whose helper returns early: 4.3x the plain
    call); and the owner table's cells, indexed like the stripes' by the thread, may alias
    them for all LLVM can tell, so it reread the owner at every flush."""
    name = stripe_function_name(stripes)
    function = builder.module.globals.get(name)
    if function is None:
        function = ir.Function(builder.module, ir.FunctionType(_I64, [_I64.as_pointer()]), name=name)
        function.attributes.add("readnone")
        function.attributes.add("nounwind")
    owners = builder.gep(base, [ir.Constant(_I64, owners_cell)])
    return builder.call(function, [owners])


def emit_own_stripe(builder: ir.IRBuilder, base: ir.Value, owners_cell: int, stripes: int) -> ir.Value:
    """The calling thread's stripe (1..stripes), or 0 where its slot is another thread's.

    The fast path is a load and a compare: a slot held by this thread. A free slot is
    claimed with a compare-and-swap, once per thread; the owner table is never reset."""
    thread, slot, owner, held = _slot_of_thread(builder, base, owners_cell, stripes)
    mine = builder.icmp_unsigned("==", held, thread)
    free = builder.icmp_unsigned("==", held, ir.Constant(_I64, 0))
    start = builder.block
    claim = builder.append_basic_block("nlp.claim")
    done = builder.append_basic_block("nlp.stripe")
    builder.cbranch(builder.and_(free, builder.not_(mine)), claim, done)
    builder.position_at_end(claim)
    swapped = builder.cmpxchg(owner, ir.Constant(_I64, 0), thread, "monotonic", "monotonic")
    claimed = builder.extract_value(swapped, 1)
    builder.branch(done)
    builder.position_at_end(done)
    owns = builder.phi(ir.IntType(1))
    owns.add_incoming(mine, start)
    owns.add_incoming(claimed, claim)
    return builder.select(owns, builder.add(slot, ir.Constant(_I64, 1)), ir.Constant(_I64, 0))
