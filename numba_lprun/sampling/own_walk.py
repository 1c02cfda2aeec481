"""The handler's own stack walk through profiled code (rules from ``unwind_rows``).

Compiled into the SIGPROF handler (``_handler``: ``context.compile_internal``), so
it obeys the handler's rules: no Python, no allocation, nothing that can raise. It
reads only the interrupted thread's stack, at addresses its unwind rules give, and
the table, which the sampler keeps alive until no handler runs.

The walk starts at the interrupted instruction and steps while the code has rules
in the table (the profiled code, the libraries it calls, Numba's threading layers).
It then stops where the next frame is Python calling in (the interpreter, Numba's
dispatcher: ``stops``), since nothing above that is needed to charge the sample (the
walk is complete as far as attribution goes), or at a thread's first frame. Anywhere
else (a jitted caller that is not profiled) it gives up, and the handler asks libgcc
for the whole walk, as before.

Two tables (``unwind_rows``' layout): the twins', made by each sampler with the stops,
and the shared libraries', made once per process.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, register_jitable

from .cfa_rules import END, FROM_RSP, GAP, ROW

#: A frame's CFA lies at most this far above the stack pointer (a sanity bound on the rules).
MAX_FRAME = 1 << 26
_I64P = ir.IntType(64).as_pointer()


@intrinsic
def load_word(typingctx, address):
    """The int64 at ``address``."""

    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], _I64P))

    return types.int64(types.int64), codegen


@intrinsic
def store_word(typingctx, address, value):
    """Write the int64 ``value`` at ``address``."""

    def codegen(context, builder, signature, args):
        builder.store(args[1], builder.inttoptr(args[0], _I64P))
        return context.get_dummy_value()

    return types.void(types.int64, types.int64), codegen


@register_jitable
def rule_at(rows_at, nrows, address):
    """The address of the row covering ``address`` (0: none; a GAP row is returned as is)."""
    lo, hi = 0, nrows
    while lo < hi:
        mid = (lo + hi) >> 1
        if load_word(rows_at + mid * (8 * ROW)) <= address:
            lo = mid + 1
        else:
            hi = mid
    return rows_at + (lo - 1) * (8 * ROW) if lo > 0 else 0


@register_jitable
def stops_at(table, address):
    """Whether ``address`` lies in one of the table's stop ranges."""
    for i in range(load_word(table + 8)):
        if load_word(table + 16 + 16 * i) <= address < load_word(table + 24 + 16 * i):
            return True
    return False


@register_jitable
def rule_of(table, libraries, address):
    """The row that says how to unwind the frame at ``address``: the twins' table's, else the
    libraries' (0: neither has one; a GAP row: past a function's end)."""
    row = rule_at(table + 16 + 16 * load_word(table + 8), load_word(table), address)
    if (row == 0 or load_word(row + 8) == GAP) and libraries != 0:
        row = rule_at(libraries + 16 + 16 * load_word(libraries + 8), load_word(libraries), address)
    return row


@register_jitable
def own_walk(table, libraries, pc, sp, bp, frames, limit):
    """Frames written at ``frames`` (the pc, then return addresses), or 0: libgcc must walk."""
    if table == 0 or limit < 2:
        return 0
    n, address = 0, pc
    while n < limit:
        row = rule_of(table, libraries, address)
        how = load_word(row + 8) if row != 0 else GAP
        if how == GAP:
            break
        store_word(frames + 8 * n, pc)
        n += 1
        if how == END:  # the thread's first frame: the walk is complete
            return n
        cfa = (sp if how == FROM_RSP else bp) + load_word(row + 16)
        if cfa <= sp or cfa - sp > MAX_FRAME:
            return 0
        saved_bp = load_word(row + 24)
        pc = load_word(cfa - 8)
        if saved_bp != 0:
            bp = load_word(cfa + saved_bp)
        sp, address = cfa, pc - 1
    if n == 0 or n >= limit or not stops_at(table, pc):
        return 0
    store_word(frames + 8 * n, pc)
    return n + 1


def checked(table, libraries, pc, sp, bp, frames, got, scratch, room):
    """For tests (the control block's ``VERIFY``): 1 when the own walk's frames, written at
    ``scratch``, are those libgcc's walk wrote at ``frames`` (``got`` of them) from the pc on;
    0 when they differ; -1 when the own walk gave up (libgcc walks such a stack anyway)."""
    n = own_walk(table, libraries, pc, sp, bp, scratch, room)
    if n == 0:
        return -1
    for j in range(min(6, got)):
        if load_word(frames + 8 * j) == pc:
            for i in range(n):
                if j + i >= got or load_word(frames + 8 * (j + i)) != load_word(scratch + 8 * i):
                    return 0
            return 1
    return 0
