"""The SIGPROF handler: a ``numba.cfunc`` that writes one record per signal.

Why it is built this way:

* A signal may interrupt any thread anywhere, including inside Python's allocator
  or while it holds the GIL's internals. So the handler is machine code compiled once
  by Numba, calls no Python and allocates nothing: it bumps an atomic index into a
  preallocated buffer and writes the interrupted program counter, a thread index and
  a glibc ``backtrace`` into the slot. Once the buffer is full it counts drops.
* Everything the handler reads lives in a process-wide *control block* (an int64
  array allocated once and never freed) whose address is a constant in the code, so
  the handler compiles once per process and each ``Sampler`` only rewrites the
  block (buffer address, capacity, a fresh magic number).
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

* ``backtrace`` stops at the first frame whose code has no unwind table entry. LLVM
  emits none for a function it proved ``nounwind`` unless the module has debug info:
  a jitted helper compiled without ``debug=True`` that is a leaf loop, or only calls
  libm, has none, and a sample inside it used to lose its calling line. So when the
  walk comes back short, the handler also copies the ``STACK_WORDS`` words above the
  interrupted stack pointer (at most ``MAX_STACK_WORDS``), among which the sampler
  later finds the return address the walk could not reach. These are the thread's
  own stack, and always mapped: above the interrupted frame lie its callers' frames,
  and above a thread's first frame glibc's thread descriptor (pthreads) or argv,
  envp and the ELF auxiliary vector (the main thread: more than 256 bytes).

Record layout (uint64 words): ``[pc, thread index, cpu ns since the thread's previous
sample (or -1 when unknown), n frames, n stack words, frame 0 .. frame NFRAMES-1,
stack word 0 .. stack word STACK_WORDS-1]``; the frames start with the handler's own
frame and the kernel's signal trampoline, followed by ``pc`` itself and its callers
(the sampler trims the first ones); stack word ``i`` is the word at ``sp + 8 * i``.
"""

from __future__ import annotations

import threading

import numpy as np
from llvmlite import ir
from numba import cfunc, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import _native as N

# Control block slots.
ACTIVE, NEXT, DROPPED, CAPACITY, STRIDE, BUFFER, NFRAMES, FOREIGN = range(8)
MAGIC, SKIP_LO, SKIP_HI, SKIPPED, INFLIGHT, OVERRUNS, LAST_CPU, NTHREADS = range(8, 16)
STACK_WORDS = 16
CONTROL_SIZE = 17
HEADER = 5  # pc, thread index, cpu ns, number of frames, number of stack words
#: Most stack words a record may hold (see the module docstring for why 256 bytes are safe).
MAX_STACK_WORDS = 32
CLOCK_THREAD_CPUTIME_ID = 3

_lock = threading.Lock()
_built: tuple[np.ndarray, object] | None = None


def _make_intrinsic(ctrl_addr: int, backtrace_addr: int, errno_addr: int, clock_addr: int):
    """An intrinsic emitting the whole handler body with the four addresses baked in."""
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    i64 = ir.IntType(64)
    i64p = i64.as_pointer()

    def c64(value: int) -> ir.Constant:
        return ir.Constant(i64, value)

    @intrinsic
    def handle(typingctx, info, uctx):
        sig = types.void(types.voidptr, types.voidptr)

        def _cpu_delta(builder, slot, thread):
            """CPU ns of this thread since its previous sample; -1 when not known."""
            timespec = ir.LiteralStructType([i64, i64])
            ts = cgutils.alloca_once(builder, timespec)
            clock_ty = ir.FunctionType(i32, [i32, timespec.as_pointer()])
            clock_fn = builder.inttoptr(c64(clock_addr), clock_ty.as_pointer())
            rc = builder.call(clock_fn, [ir.Constant(i32, CLOCK_THREAD_CPUTIME_ID), ts])
            sec = builder.load(builder.gep(ts, [ir.Constant(i32, 0), ir.Constant(i32, 0)]))
            nsec = builder.load(builder.gep(ts, [ir.Constant(i32, 0), ir.Constant(i32, 1)]))
            now = builder.add(builder.mul(sec, c64(1_000_000_000)), nsec)
            known = builder.and_(
                builder.icmp_signed("==", rc, ir.Constant(i32, 0)),
                builder.icmp_unsigned("<", thread, builder.load(slot(NTHREADS))),
            )
            delta_p = cgutils.alloca_once_value(builder, c64(-1))
            with builder.if_then(known):
                last_p = builder.gep(builder.inttoptr(builder.load(slot(LAST_CPU)), i64p), [thread])
                last = builder.load(last_p)
                builder.store(now, last_p)  # one timer per thread: no other writer of this slot
                with builder.if_then(builder.icmp_signed(">=", last, c64(0))):
                    builder.store(builder.sub(now, last), delta_p)
            return builder.load(delta_p)

        def _write_record(builder, slot, field, uctx_p, value, index):
            buf = builder.inttoptr(builder.load(slot(BUFFER)), i64p)
            record = builder.gep(buf, [builder.mul(index, builder.load(slot(STRIDE)))])
            pc = field(uctx_p, N.UCONTEXT_PC_OFFSET, i64)
            builder.store(pc, record)
            thread = builder.and_(value, c64(0xFFFFFFFF))
            builder.store(thread, builder.gep(record, [ir.Constant(i32, 1)]))
            builder.store(_cpu_delta(builder, slot, thread), builder.gep(record, [ir.Constant(i32, 2)]))
            count_p = builder.gep(record, [ir.Constant(i32, 3)])
            builder.store(c64(0), count_p)
            nframes = builder.load(slot(NFRAMES))
            got_p = cgutils.alloca_once_value(builder, c64(0))
            in_skip = builder.and_(
                builder.icmp_unsigned(">=", pc, builder.load(slot(SKIP_LO))),
                builder.icmp_unsigned("<", pc, builder.load(slot(SKIP_HI))),
            )
            wanted = builder.icmp_signed(">", nframes, c64(0))
            with builder.if_else(builder.and_(wanted, builder.not_(in_skip))) as (unwind, skip):
                with unwind:
                    bt_ty = ir.FunctionType(i32, [i8p, i32])
                    bt_fn = builder.inttoptr(c64(backtrace_addr), bt_ty.as_pointer())
                    frames = builder.bitcast(builder.gep(record, [ir.Constant(i32, HEADER)]), i8p)
                    got = builder.call(bt_fn, [frames, builder.trunc(nframes, i32)])
                    builder.store(builder.sext(got, i64), count_p)
                    builder.store(builder.sext(got, i64), got_p)
                with skip:
                    builder.atomic_rmw("add", slot(SKIPPED), c64(1), "monotonic")
            _copy_stack(builder, slot, field, uctx_p, record, nframes, builder.load(got_p))

        def _copy_stack(builder, slot, field, uctx_p, record, nframes, got):
            """Copy the words above the interrupted sp when the walk came back short."""
            sp = field(uctx_p, N.UCONTEXT_SP_OFFSET, i64)
            words = builder.load(slot(STACK_WORDS))
            wanted = builder.and_(
                builder.and_(
                    builder.icmp_signed("<", got, nframes),
                    builder.icmp_signed(">", words, c64(0)),
                ),
                builder.and_(
                    builder.icmp_unsigned("!=", sp, c64(0)),
                    builder.icmp_unsigned("==", builder.and_(sp, c64(7)), c64(0)),
                ),
            )
            words = builder.select(
                builder.icmp_signed(">", words, c64(MAX_STACK_WORDS)), c64(MAX_STACK_WORDS), words
            )
            copied = builder.select(wanted, words, c64(0))
            out = builder.gep(record, [builder.add(c64(HEADER), nframes)])
            with cgutils.for_range(builder, copied) as loop:
                src = builder.inttoptr(builder.add(sp, builder.mul(loop.index, c64(8))), i64p)
                builder.store(builder.load(src), builder.gep(out, [loop.index]))
            builder.store(copied, builder.gep(record, [ir.Constant(i32, 4)]))

        def codegen(context, builder, signature, args):
            info_p, uctx_p = args
            ctrl = builder.inttoptr(c64(ctrl_addr), i64p)

            def slot(index: int):
                return builder.gep(ctrl, [ir.Constant(i32, index)])

            def field(base, offset: int, ty):
                ptr = builder.gep(base, [ir.Constant(i32, offset)])
                return builder.load(builder.bitcast(ptr, ty.as_pointer()))

            errno_ty = ir.FunctionType(i32.as_pointer(), [])
            errno_fn = builder.inttoptr(c64(errno_addr), errno_ty.as_pointer())
            errno_p = builder.call(errno_fn, [])
            saved_errno = builder.load(errno_p)

            builder.atomic_rmw("add", slot(INFLIGHT), c64(1), "seq_cst")
            active = builder.load_atomic(slot(ACTIVE), "seq_cst", 8)
            with builder.if_then(builder.icmp_signed("!=", active, c64(0))):
                code = field(info_p, N.SIGINFO_CODE_OFFSET, i32)
                value = field(info_p, N.SIGINFO_VALUE_OFFSET, i64)
                magic = builder.load(slot(MAGIC))
                is_timer = builder.icmp_signed("==", code, ir.Constant(i32, N.SI_TIMER))
                is_ours = builder.icmp_unsigned("==", builder.lshr(value, c64(32)), magic)
                with builder.if_else(builder.and_(is_timer, is_ours)) as (ours, foreign):
                    with ours:
                        overrun = builder.sext(field(info_p, N.SIGINFO_OVERRUN_OFFSET, i32), i64)
                        with builder.if_then(builder.icmp_signed(">", overrun, c64(0))):
                            builder.atomic_rmw("add", slot(OVERRUNS), overrun, "monotonic")
                        index = builder.atomic_rmw("add", slot(NEXT), c64(1), "monotonic")
                        capacity = builder.load(slot(CAPACITY))
                        fits = builder.icmp_signed("<", index, capacity)
                        with builder.if_else(fits) as (store, full):
                            with store:
                                _write_record(builder, slot, field, uctx_p, value, index)
                            with full:
                                builder.atomic_rmw("add", slot(DROPPED), c64(1), "monotonic")
                    with foreign:
                        builder.atomic_rmw("add", slot(FOREIGN), c64(1), "monotonic")
            builder.store(saved_errno, errno_p)
            builder.atomic_rmw("sub", slot(INFLIGHT), c64(1), "seq_cst")
            return context.get_dummy_value()

        return sig, codegen

    return handle


def _compile(ctrl: np.ndarray, libc: N.Libc):
    handle = _make_intrinsic(
        ctrl.ctypes.data,
        libc.address_of(libc.backtrace),
        libc.address_of(libc.errno_location),
        libc.address_of(libc.clock_gettime),
    )

    # error_model="numpy": nothing in the body may take the error path that needs the GIL.
    @cfunc(types.void(types.int32, types.voidptr, types.voidptr), nopython=True, error_model="numpy")
    def on_sigprof(signum, info, uctx):
        handle(info, uctx)

    return on_sigprof


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
