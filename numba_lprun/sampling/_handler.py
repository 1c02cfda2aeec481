"""The SIGPROF handler, a ``numba.cfunc`` writing one record per signal, and its own stack walk.

The SIGPROF handler: a ``numba.cfunc`` that writes one record per signal.

Why it is built this way:

* A signal may interrupt any thread anywhere, including inside Python's allocator
  or while it holds the GIL's internals. So the handler is machine code compiled once
  by Numba, calls no Python and allocates nothing: it bumps an atomic index into a
  preallocated buffer and writes the interrupted program counter, a thread index and
  a glibc ``backtrace`` into the slot. Once the buffer is full it counts drops.
* Everything the handler reads lives in a process-wide *control block* (an int64
  array allocated once and never freed), which the code names by a symbol, as it
  names the libc functions it calls: the JIT's linker resolves them when it loads
  the code, so a Numba cache keeps the compiled handler between processes (numba_lprun's
  own cache directory, ``sampler/``: never the program's ``NUMBA_CACHE_DIR``), and each
  ``Sampler`` only rewrites the block (buffer address, capacity, a fresh magic number).
* Each timer sends its thread index in ``si_value`` next to a magic number, so the
  handler knows the thread without a syscall and ignores SIGPROFs it did not ask for.
* ``inflight`` counts handlers running right now; the sampler waits for zero after
  switching ``active`` off, before it restores the old handler and frees the buffer
  (both are sequentially consistent atomics: a handler that starts after the switch
  sees it off and touches nothing).
* ``errno`` is saved and restored: ``backtrace`` may change it under the code it
  interrupted.
* The timers run on wall time (CPU-time timers only fire on the kernel tick), so a
  sample alone measures wall time: a thread that was descheduled, or idle, gets
  samples all the same. Each record therefore carries the CPU time the thread used
  since its previous sample (``CLOCK_THREAD_CPUTIME_ID``, one cheap system call),
  which lets attribution weigh samples by CPU time: shares then follow the work even
  on a loaded machine, and idle threads weigh nothing.

* The CPU time is read twice: at the handler's start (the delta since the previous
  sample) and again at its end (where the next delta starts). The handler's own work
  (``backtrace``, whose cost depends on where the thread was: a deep interpreter
  stack costs several times a jitted loop's) is then in no sample's weight; counted
  in, it made the places where unwinding is dear look heavier than they are.
* A thread blocked in a system call (waiting for the GIL, a lock, I/O) is woken by
  each of its timer's signals, and waking it, delivering the signal and putting it
  back to sleep cost CPU time (about 25 us here) that the next delta counts: a
  thread waiting for the GIL in an ``objmode`` block looked busy there. So the
  record says whether the signal found the thread in a system call it interrupted:
  the kernel left the pc *at* the ``syscall`` instruction (a call restarted after
  the handler, SA_RESTART) or just after it with rax = -EINTR; such a sample
  weighs nothing (``RawSamples.weights``). The two code bytes are read only when
  they lie in the pc's own page, which is mapped.
* ``backtrace`` stops at the first frame whose code has no unwind table entry (or at
  the thread's first frame, or after ``NFRAMES`` frames); the sampler tells these
  apart afterwards (``attribution.classify``).
* Each signal re-arms its own thread's timer (``timer_settime`` is async-signal-safe)
  at a random point between half and one and a half periods from now, as a one-shot
  timer: the next signal is timed from the handler's end. A periodic timer kept
  firing while a handler ran, and where a walk outlasted the period (walks from jitted
  code in a process that has compiled thousands of functions) each return from the
  handler met the next signal already pending: the thread sampled one pc over and over
  and barely ran (walks of a deep stack at 8 kHz: the thread kept 8% of its CPU time,
  about half with one-shot timers; test_sampling), and a 10-element call read 100-245
  samples in whole-suite runs. The wait is also never shorter than the handler's own
  CPU time, so a thread sampled faster than it can be walked still gets at least half
  of its time (the rate it got is what ``achieved_hz`` reports). A timer at a
  fixed period, started as each sampled run starts, hits the same phases of a
  periodic loop in every run: after a test session's compiles had slowed the walks
  and lowered the rate, one line of a 1 : 3 : 6 loop read 35 / 56% against 30 /
  60%, 12,000 samples over 353 short runs. Random intervals sample every phase alike
  (the interval's random number is a hash of the sample's index: no shared state).
* A short run gives few samples, so a sampler may start fast and slow down once the
  process has ``BOOST_UNTIL`` samples: the re-arming handler takes the slower period
  from then on. No other thread is needed, so the switch happens on time even while
  a jitted call holds the GIL.

Record layout (uint64 words): ``[pc, thread index, cpu ns since the thread's previous
sample (or -1 when unknown), n frames, 1 if blocked in a system call else 0, frame 0 ..
frame NFRAMES-1]``; libgcc's frames start with the handler's own and the kernel's signal
trampoline, then ``pc`` and its callers (the sampler trims the first ones); own walks
(below) start at ``pc``.

The own walk: the handler's own stack walk through profiled code (rules from ``unwind_tables``).

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

Two tables (``unwind_tables``' layout): the twins', made by each sampler with the stops,
and the shared libraries', made once per process.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np
from llvmlite import ir
from numba import cfunc, types
from numba.extending import intrinsic, register_jitable

from ..instrument.disk_cache import cache_root
from ..internals import cfunc_cached_under, register_symbol, stack_slot, stack_value
from . import _native as N
from .unwind_tables import END, FROM_RSP, GAP, ROW

#: Words before the frames in each record: pc, thread index, cpu ns, frames, blocked.
HEADER = 5

# -- the own walk ------------------------------------------------------------------------

#: A frame's CFA lies at most this far above the stack pointer (a sanity bound on the rules).
MAX_FRAME = 1 << 26
#: ``own_walk``'s answer where the interrupted thread is inside libgcc's unwinder: no walk at all
INSIDE_UNWINDER = -1
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
    """Whether ``address`` lies in one of the table's stop ranges (none without a table)."""
    if table == 0:
        return False
    for i in range(load_word(table + 8)):
        if load_word(table + 16 + 16 * i) <= address < load_word(table + 24 + 16 * i):
            return True
    return False


@register_jitable
def rule_of(table, libraries, address):
    """The row that says how to unwind the frame at ``address``: the twins' table's, else the
    libraries' (0: neither has one; a GAP row: past a function's end). ``table`` may be 0."""
    row = rule_at(table + 16 + 16 * load_word(table + 8), load_word(table), address) if table != 0 else 0
    if (row == 0 or load_word(row + 8) == GAP) and libraries != 0:
        row = rule_at(libraries + 16 + 16 * load_word(libraries + 8), load_word(libraries), address)
    return row


@register_jitable
def own_walk(table, libraries, pc, sp, bp, frames, limit, unwinder_lo, unwinder_hi):
    """Frames written at ``frames`` (the pc, then return addresses), or 0: libgcc must walk; or
    -1: a frame on the way is libgcc's unwinder's own code (``INSIDE_UNWINDER``).

    Why -1: a thread interrupted inside libgcc's unwinder may hold its lock (``_Unwind_Find_FDE``
    holds one while it searches the frames the JIT registered, and calls libc's mutex and
    ``malloc`` code meanwhile), and a ``backtrace`` from the handler on that thread then waits
    for it forever: the program hangs. NumPy calls ``backtrace`` on every binary operation on a
    large temporary array (its elision check), so a profiled statement doing array arithmetic
    hung within seconds. With no twins' table (own walks switched off), the libraries' rules
    still take the walk through libc to where it was called from, and only that is asked."""
    if (table == 0 and libraries == 0) or limit < 2:
        return 0
    n, address = 0, pc
    while n < limit:
        if unwinder_lo <= pc < unwinder_hi:
            return INSIDE_UNWINDER
        row = rule_of(table, libraries, address)
        how = load_word(row + 8) if row != 0 else GAP
        if how == GAP:
            break
        store_word(frames + 8 * n, pc)
        n += 1
        if how == END:  # the thread's first frame: the walk is complete
            return n if table != 0 else 0
        cfa = (sp if how == FROM_RSP else bp) + load_word(row + 16)
        if cfa <= sp or cfa - sp > MAX_FRAME:
            return 0
        saved_bp = load_word(row + 24)
        pc = load_word(cfa - 8)
        if saved_bp != 0:
            bp = load_word(cfa + saved_bp)
        sp, address = cfa, pc - 1
    if unwinder_lo <= pc < unwinder_hi:
        return INSIDE_UNWINDER
    if table == 0 or n == 0 or n >= limit or not stops_at(table, pc):
        return 0
    store_word(frames + 8 * n, pc)
    return n + 1


def checked(table, libraries, pc, sp, bp, frames, got, scratch, room):
    """For tests (the control block's ``VERIFY``): 1 when the own walk's frames, written at
    ``scratch``, are those libgcc's walk wrote at ``frames`` (``got`` of them) from the pc on;
    0 when they differ; -1 when the own walk gave up (libgcc walks such a stack anyway)."""
    n = own_walk(table, libraries, pc, sp, bp, scratch, room, 0, 0)
    if n <= 0:
        return -1
    for j in range(min(6, got)):
        if load_word(frames + 8 * j) == pc:
            for i in range(n):
                if j + i >= got or load_word(frames + 8 * (j + i)) != load_word(scratch + 8 * i):
                    return 0
            return 1
    return 0


# -- the handler -------------------------------------------------------------------------

# Control block slots.
ACTIVE, NEXT, DROPPED, CAPACITY, STRIDE, BUFFER, NFRAMES, FOREIGN = range(8)
MAGIC, SKIP_LO, SKIP_HI, SKIPPED, INFLIGHT, OVERRUNS, LAST_CPU, NTHREADS = range(8, 16)
BOOST_UNTIL, TIMERS, FAST_NS, SLOW_NS, OWN_TABLE, OWN_WALKS, VERIFY, MISMATCHES = range(16, 24)
LIBRARY_TABLE = 24
CONTROL_SIZE = 25
#: The counters the handler keeps, by the ``RawSamples`` field each becomes.
COUNTERS = {"dropped": DROPPED, "overruns": OVERRUNS, "foreign": FOREIGN, "unwind_skipped": SKIPPED,
            "own_walks": OWN_WALKS, "walk_mismatches": MISMATCHES}  # fmt: skip
CLOCK_THREAD_CPUTIME_ID = 3

_lock = threading.Lock()
_built: tuple[np.ndarray, object] | None = None
#: What the handler's code reaches, by symbol: the control block and the libc functions it calls.
SYMBOLS = {key: f"nlp_sampler_{key}" for key in ("ctrl", "backtrace", "errno", "clock", "settime")}
_WALK_SOURCES = [Path(__file__).with_name("unwind_tables.py")]  # the rules' layout the own walk reads
_SIGNATURE = types.void(types.int32, types.voidptr, types.voidptr)


_I8P = ir.IntType(8).as_pointer()
_I16 = ir.IntType(16)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


def _c64(value: int) -> ir.Constant:
    return ir.Constant(_I64, value - (1 << 64) if value >= 1 << 63 else value)


def _c32(value: int) -> ir.Constant:
    return ir.Constant(_I32, value)


class _Body:
    """The handler's LLVM, written into one function by ``builder`` (see the module docstring)."""

    def __init__(self, context, builder: ir.IRBuilder, info_p, uctx_p):
        self.context, self.b = context, builder
        self.info_p, self.uctx_p = info_p, uctx_p
        module = builder.module
        block = module.globals.get(SYMBOLS["ctrl"])
        if block is None:
            block = ir.GlobalVariable(module, ir.ArrayType(_I64, CONTROL_SIZE), SYMBOLS["ctrl"])
            block.linkage = "external"
        self.ctrl = builder.bitcast(block, _I64P)

    def function(self, key: str, ty: ir.FunctionType):
        """The C function ``key`` names, by its symbol (the JIT's linker resolves it)."""
        module = self.b.module
        return module.globals.get(SYMBOLS[key]) or ir.Function(module, ty, SYMBOLS[key])

    def slot(self, index: int):
        return self.b.gep(self.ctrl, [_c32(index)])

    def field(self, base, offset: int, ty):
        ptr = self.b.gep(base, [_c32(offset)])
        return self.b.load(self.b.bitcast(ptr, ty.as_pointer()))

    def thread_cpu(self):
        """(this thread's CPU ns, whether the clock could be read)."""
        b = self.b
        timespec = ir.LiteralStructType([_I64, _I64])
        ts = stack_slot(b, timespec)
        clock_ty = ir.FunctionType(_I32, [_I32, timespec.as_pointer()])
        clock_fn = self.function("clock", clock_ty)
        rc = b.call(clock_fn, [_c32(CLOCK_THREAD_CPUTIME_ID), ts])
        sec = b.load(b.gep(ts, [_c32(0), _c32(0)]))
        nsec = b.load(b.gep(ts, [_c32(0), _c32(1)]))
        return b.add(b.mul(sec, _c64(1_000_000_000)), nsec), b.icmp_signed("==", rc, _c32(0))

    def last_cpu(self, thread):
        """(pointer to this thread's end-of-last-handler CPU ns, whether it has one)."""
        b = self.b
        known = b.icmp_unsigned("<", thread, b.load(self.slot(NTHREADS)))
        base = b.inttoptr(b.load(self.slot(LAST_CPU)), _I64P)
        return b.gep(base, [b.select(known, thread, _c64(0))]), known

    def cpu_delta(self, thread):
        """(CPU ns of this thread since the end of its previous handler, -1 when not known;
        its CPU ns now, as the handler starts, and whether that could be read)."""
        b = self.b
        now, ok = self.thread_cpu()
        last_p, known = self.last_cpu(thread)
        delta_p = stack_value(b, _c64(-1))
        with b.if_then(b.and_(ok, known)):
            last = b.load(last_p)
            with b.if_then(b.icmp_signed(">=", last, _c64(0))):
                b.store(b.sub(now, last), delta_p)
        return b.load(delta_p), now, ok

    def stamp_cpu(self, thread):
        """Where the next delta starts: this thread's CPU ns now, as the handler ends
        (returned with whether it could be read)."""
        now, ok = self.thread_cpu()
        last_p, known = self.last_cpu(thread)
        with self.b.if_then(self.b.and_(ok, known)):
            self.b.store(now, last_p)  # one timer per thread: no other writer of this slot
        return now, ok

    def in_syscall(self, pc):
        """1 when the signal interrupted a blocking system call (see the module docstring)."""
        b = self.b
        offset = b.and_(pc, _c64(0xFFF))
        result = stack_value(b, _c64(0))
        with b.if_then(b.icmp_unsigned("<=", offset, _c64(0xFFE))):
            at = b.load(b.inttoptr(pc, _I16.as_pointer()))
            with b.if_then(b.icmp_unsigned("==", at, ir.Constant(_I16, N.SYSCALL_OPCODE))):
                b.store(_c64(1), result)
        with b.if_then(b.icmp_unsigned(">=", offset, _c64(2))):
            before = b.load(b.inttoptr(b.sub(pc, _c64(2)), _I16.as_pointer()))
            is_syscall = b.icmp_unsigned("==", before, ir.Constant(_I16, N.SYSCALL_OPCODE))
            ax = self.field(self.uctx_p, N.UCONTEXT_AX_OFFSET, _I64)
            eintr = b.icmp_signed("==", ax, _c64(N.EINTR_RESULT))
            with b.if_then(b.and_(is_syscall, eintr)):
                b.store(_c64(1), result)
        return b.load(result)

    def write_record(self, value, index) -> None:
        b = self.b
        buf = b.inttoptr(b.load(self.slot(BUFFER)), _I64P)
        record = b.gep(buf, [b.mul(index, b.load(self.slot(STRIDE)))])
        pc = self.field(self.uctx_p, N.UCONTEXT_PC_OFFSET, _I64)
        b.store(pc, record)
        thread = b.and_(value, _c64(0xFFFFFFFF))
        b.store(thread, b.gep(record, [_c32(1)]))
        delta, began, began_ok = self.cpu_delta(thread)
        b.store(delta, b.gep(record, [_c32(2)]))
        b.store(self.in_syscall(pc), b.gep(record, [_c32(4)]))
        count_p = b.gep(record, [_c32(3)])
        b.store(_c64(0), count_p)
        nframes = b.load(self.slot(NFRAMES))
        in_skip = b.and_(
            b.icmp_unsigned(">=", pc, b.load(self.slot(SKIP_LO))),
            b.icmp_unsigned("<", pc, b.load(self.slot(SKIP_HI))),
        )
        wanted = b.icmp_signed(">", nframes, _c64(0))
        with b.if_else(b.and_(wanted, b.not_(in_skip))) as (unwind, skip):
            with unwind:
                self.walk(pc, b.gep(record, [_c32(HEADER)]), nframes, count_p)
            with skip:
                b.atomic_rmw("add", self.slot(SKIPPED), _c64(1), "monotonic")
        ended, ended_ok = self.stamp_cpu(thread)
        cost = b.select(b.and_(began_ok, ended_ok), b.sub(ended, began), _c64(0))
        self.rearm(thread, index, cost)

    def walk(self, pc, frames, nframes, count_p) -> None:
        """The interrupted stack's frames: by the handler's own walk (``own_walk``) where it can,
        else glibc's ``backtrace``; with ``VERIFY``, by both, the own walk checked. None where
        the thread is inside libgcc's unwinder (``INSIDE_UNWINDER``): the sample is counted as
        ``unwind_skipped``."""
        b = self.b
        sp = self.field(self.uctx_p, N.UCONTEXT_SP_OFFSET, _I64)
        bp = self.field(self.uctx_p, N.UCONTEXT_BP_OFFSET, _I64)
        table, frames_at = b.load(self.slot(OWN_TABLE)), b.ptrtoint(frames, _I64)
        libraries = b.load(self.slot(LIBRARY_TABLE))
        verify = b.icmp_signed("!=", b.load(self.slot(VERIFY)), _c64(0))
        unwinder = [b.load(self.slot(SKIP_LO)), b.load(self.slot(SKIP_HI))]
        walked = self.internal(own_walk, [table, libraries, pc, sp, bp, frames_at, nframes, *unwinder])
        inside = b.icmp_signed("==", walked, _c64(INSIDE_UNWINDER))
        with b.if_then(inside):
            b.store(_c64(0), count_p)
            b.atomic_rmw("add", self.slot(SKIPPED), _c64(1), "monotonic")
        own = b.select(verify, _c64(0), walked)
        with b.if_then(b.not_(inside)):
            self.walked(own, verify, [table, libraries, pc, sp, bp, frames_at], frames, nframes, count_p)

    def walked(self, own, verify, walk_args, frames, nframes, count_p) -> None:
        """The frames of a stack outside libgcc's unwinder: the own walk's (``own`` of them), or
        where it could not walk (0), libgcc's."""
        b = self.b
        table, libraries, pc, sp, bp, frames_at = walk_args
        b.store(own, count_p)
        with b.if_else(b.icmp_signed("==", own, _c64(0))) as (libgcc, walked):
            with libgcc:
                bt_fn = self.function("backtrace", ir.FunctionType(_I32, [_I8P, _I32]))
                got = b.sext(b.call(bt_fn, [b.bitcast(frames, _I8P), b.trunc(nframes, _I32)]), _I64)
                b.store(got, count_p)
                with b.if_then(verify):
                    room = 64
                    scratch = b.ptrtoint(stack_slot(b, ir.ArrayType(_I64, room)), _I64)
                    both = [table, libraries, pc, sp, bp, frames_at, got, scratch, _c64(room)]
                    agreed = self.internal(checked, both)
                    with b.if_then(b.icmp_signed("==", agreed, _c64(1))):
                        b.atomic_rmw("add", self.slot(OWN_WALKS), _c64(1), "monotonic")
                    with b.if_then(b.icmp_signed("==", agreed, _c64(0))):
                        b.atomic_rmw("add", self.slot(MISMATCHES), _c64(1), "monotonic")
            with walked:
                b.atomic_rmw("add", self.slot(OWN_WALKS), _c64(1), "monotonic")

    def internal(self, func, args):
        """Call the jittable ``func`` (int64 arguments and result), compiled into the handler."""
        signature = types.int64(*[types.int64] * len(args))
        return self.context.compile_internal(self.b, func, signature, args)

    def rearm(self, thread, index, cost=None) -> None:
        """Re-arm this thread's timer to fire once more in [period / 2, 3 period / 2): the
        boost's period before ``BOOST_UNTIL`` samples, the slower one after; and never
        sooner than this handler's own ``cost`` (CPU ns) from now, so that the thread runs
        at least as long as its handlers do, however dear a walk is."""
        b = self.b
        known = b.icmp_unsigned("<", thread, b.load(self.slot(NTHREADS)))
        with b.if_then(known):
            until = b.load(self.slot(BOOST_UNTIL))
            boosting = b.and_(b.icmp_signed(">", until, _c64(0)), b.icmp_signed("<", index, until))
            period = b.select(boosting, b.load(self.slot(FAST_NS)), b.load(self.slot(SLOW_NS)))
            period = b.select(b.icmp_signed("<", period, _c64(2)), _c64(2), period)
            seed = b.mul(b.load(self.slot(MAGIC)), _c64(0x9E3779B97F4A7C15))
            random = _splitmix64(b, b.add(index, seed))
            wait = b.add(b.lshr(period, _c64(1)), b.urem(random, period))
            if cost is not None:
                wait = b.select(b.icmp_signed(">", cost, wait), cost, wait)
            spec = stack_slot(b, ir.ArrayType(_I64, 4))  # struct itimerspec: interval, then value
            billion = _c64(1_000_000_000)
            for offset, ns in ((0, _c64(0)), (2, wait)):  # one shot: no signal queues behind this one
                b.store(b.udiv(ns, billion), b.gep(spec, [_c32(0), _c32(offset)]))
                b.store(b.urem(ns, billion), b.gep(spec, [_c32(0), _c32(offset + 1)]))
            timer = b.load(b.gep(b.inttoptr(b.load(self.slot(TIMERS)), _I64P), [thread]))
            settime_ty = ir.FunctionType(_I32, [_I8P, _I32, _I8P, _I8P])
            settime = self.function("settime", settime_ty)
            no_old = ir.Constant(_I8P, None)
            b.call(settime, [b.inttoptr(timer, _I8P), _c32(0), b.bitcast(spec, _I8P), no_old])

    def record_if_ours(self) -> None:
        """One record for a signal of our timers (counted as dropped when the buffer is full)."""
        b = self.b
        code = self.field(self.info_p, N.SIGINFO_CODE_OFFSET, _I32)
        value = self.field(self.info_p, N.SIGINFO_VALUE_OFFSET, _I64)
        is_timer = b.icmp_signed("==", code, _c32(N.SI_TIMER))
        is_ours = b.icmp_unsigned("==", b.lshr(value, _c64(32)), b.load(self.slot(MAGIC)))
        with b.if_else(b.and_(is_timer, is_ours)) as (ours, foreign):
            with ours:
                overrun = b.sext(self.field(self.info_p, N.SIGINFO_OVERRUN_OFFSET, _I32), _I64)
                with b.if_then(b.icmp_signed(">", overrun, _c64(0))):
                    b.atomic_rmw("add", self.slot(OVERRUNS), overrun, "monotonic")
                index = b.atomic_rmw("add", self.slot(NEXT), _c64(1), "monotonic")
                with b.if_else(b.icmp_signed("<", index, b.load(self.slot(CAPACITY)))) as (store, full):
                    with store:
                        self.write_record(value, index)
                    with full:
                        b.atomic_rmw("add", self.slot(DROPPED), _c64(1), "monotonic")
                        self.rearm(b.and_(value, _c64(0xFFFFFFFF)), index)
            with foreign:
                b.atomic_rmw("add", self.slot(FOREIGN), _c64(1), "monotonic")

    def emit(self) -> None:
        """The whole body: errno saved, in-flight count kept, a record only while active."""
        b = self.b
        errno_ty = ir.FunctionType(_I32.as_pointer(), [])
        errno_p = b.call(self.function("errno", errno_ty), [])
        saved_errno = b.load(errno_p)
        b.atomic_rmw("add", self.slot(INFLIGHT), _c64(1), "seq_cst")
        active = b.load_atomic(self.slot(ACTIVE), "seq_cst", 8)
        with b.if_then(b.icmp_signed("!=", active, _c64(0))):
            self.record_if_ours()
        b.store(saved_errno, errno_p)
        b.atomic_rmw("sub", self.slot(INFLIGHT), _c64(1), "seq_cst")


def _splitmix64(b: ir.IRBuilder, x):
    """SplitMix64's output function: 64 well-mixed bits from a counter."""
    x = b.add(x, _c64(0x9E3779B97F4A7C15))
    x = b.mul(b.xor(x, b.lshr(x, _c64(30))), _c64(0xBF58476D1CE4E5B9))
    x = b.mul(b.xor(x, b.lshr(x, _c64(27))), _c64(0x94D049BB133111EB))
    return b.xor(x, b.lshr(x, _c64(31)))


@intrinsic
def _handle(typingctx, info, uctx):
    """The whole handler body; what it reaches is named by symbols, so its code holds no
    address of this process and Numba can cache it (``cache=True`` below)."""

    def codegen(context, builder, signature, args):
        _Body(context, builder, *args).emit()
        return context.get_dummy_value()

    return types.void(types.voidptr, types.voidptr), codegen


# Numba's cache keys the compiled handler by this file's stamp; the _native constants the body
# bakes in are the x86-64 Linux ABI's (uContext and siginfo offsets, the syscall opcode).
def _on_sigprof(signum, info, uctx):
    _handle(info, uctx)


def _compile(ctrl: np.ndarray, libc: N.Libc):
    """The handler, loaded from Numba's cache (about 0.05 s) or compiled (about 0.4 s): the
    symbols are registered first, so the JIT's linker resolves them when it loads the code."""
    addresses = {
        "ctrl": ctrl.ctypes.data,
        "backtrace": libc.address_of(libc.backtrace),
        "errno": libc.address_of(libc.errno_location),
        "clock": libc.address_of(libc.clock_gettime),
        "settime": libc.address_of(libc.timer_settime),
    }
    for key, address in addresses.items():
        register_symbol(SYMBOLS[key], address)
    # error_model="numpy": nothing in the body may take the error path that needs the GIL.
    options = {"nopython": True, "error_model": "numpy"}
    # Numba's cache checks this file's stamp only: the row layout compiled in from unwind_tables.py names
    # the cached code, so an edit of it compiles the handler afresh
    digest = hashlib.sha1(b"".join(Path(f).read_bytes() for f in _WALK_SOURCES)).hexdigest()[:12]
    _on_sigprof.__qualname__ = _on_sigprof.__name__ = f"_on_sigprof_{digest}"
    # cached in numba_lprun's own directory (``sampler/``), never in the program's Numba cache
    root = cache_root()
    if root is not None:
        try:
            return cfunc_cached_under(str(root / "sampler"), _SIGNATURE, _on_sigprof, **options)
        except Exception:  # the directory cannot hold Numba's files: compile without a cache
            pass
    return cfunc(_SIGNATURE, **options)(_on_sigprof)


def get_handler(libc: N.Libc) -> tuple[np.ndarray, int]:
    """The control block and the handler's C address, compiled on first use.

    Both stay alive for the life of the process: a late signal can never reach
    freed code or memory.
    """
    global _built
    with _lock:
        if _built is None:
            ctrl = np.zeros(CONTROL_SIZE, dtype=np.int64)
            _built = (ctrl, _compile(ctrl, libc))
        ctrl, handler = _built
    return ctrl, handler.address
