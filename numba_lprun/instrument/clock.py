"""Which clock the probes read, and how its ticks convert to seconds.

The probes read the CPU timestamp counter (``llvm.readcyclecounter``, one
``rdtsc``: about 10 ns) when the CPU says it ticks at a constant rate whatever the
power state (``constant_tsc`` and ``nonstop_tsc``). Anywhere else they call
``clock_gettime(CLOCK_MONOTONIC)``, which costs more but is portable and already
counts nanoseconds. Set ``NUMBA_LPRUN_CLOCK=monotonic`` to force the fallback.

Calibrating the TSC compiles a reader and times a 30 ms interval (0.05 s of a start), and
its result is kept in the cache directory per machine and boot
(``disk_cache.machine_key``: the kernel sets the TSC up at boot, and a VM may come
back on another host) and read back by later processes.
"""

from __future__ import annotations

import functools
import os
import platform
import time
from dataclasses import dataclass

from llvmlite import ir

from ..internals import stack_slot
from . import disk_cache

CLOCK_MONOTONIC = 1  # Linux and macOS value of the clock id
_I64 = ir.IntType(64)


@dataclass(frozen=True)
class ClockInfo:
    """The clock chosen for this process: what it is and what one tick is worth."""

    kind: str  # "tsc" or "monotonic"
    seconds_per_tick: float
    note: str  # why this clock was chosen, shown to the user on request


def _tsc_is_invariant() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            flags = next((line for line in handle if line.startswith("flags")), "")
    except OSError:
        return False
    words = set(flags.split())
    return "constant_tsc" in words and "nonstop_tsc" in words


def emit_read(builder: ir.IRBuilder, kind: str) -> ir.Value:
    """Emit LLVM that reads the clock ``kind`` and yields an i64 tick count."""
    module = builder.module
    if kind == "tsc":
        fn = module.declare_intrinsic("llvm.readcyclecounter", fnty=ir.FunctionType(_I64, []))
        return builder.call(fn, [])
    timespec = ir.LiteralStructType([_I64, _I64])
    fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), timespec.as_pointer()])
    fn = module.globals.get("clock_gettime") or ir.Function(module, fnty, "clock_gettime")
    slot = stack_slot(builder, timespec, name="nlp.timespec")
    builder.call(fn, [ir.Constant(ir.IntType(32), CLOCK_MONOTONIC), slot])
    zero = ir.Constant(ir.IntType(32), 0)
    sec = builder.load(builder.gep(slot, [zero, zero]))
    nsec = builder.load(builder.gep(slot, [zero, ir.Constant(ir.IntType(32), 1)]))
    return builder.add(builder.mul(sec, ir.Constant(_I64, 1_000_000_000)), nsec)


def _make_reader(kind: str):
    """A jitted function that returns one clock reading, for calibration."""
    from numba import njit, types
    from numba.extending import intrinsic

    @intrinsic
    def read_clock(typingctx):
        def codegen(context, builder, sig, args):
            return emit_read(builder, kind)

        return types.int64(), codegen

    @njit(cache=False)
    def read():
        return read_clock()

    return read


def _mark(read, tries: int = 7) -> tuple[int, int]:
    """One (perf_counter_ns, clock reading) pair: of ``tries`` readings, the one most tightly
    bracketed by perf_counter_ns (a preemption between the two reads would skew the pair)."""
    best = None
    for _ in range(tries):
        before = time.perf_counter_ns()
        ticks = read()
        after = time.perf_counter_ns()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) // 2, ticks)
    return best[1], best[2]


def _calibrate_tsc(read, interval: float = 0.03) -> float:
    """Seconds per TSC tick, over ``interval`` against perf_counter_ns. Each end is a tightly
    bracketed pair (``_mark``: within about 100 ns), so 30 ms of sleep give the rate to about
    5e-6, where three 50 ms spins, each end one unguarded pair, took 0.15 s of a cold start."""
    read()  # compile outside the measured interval
    t0, c0 = _mark(read)
    time.sleep(interval)  # the TSC is invariant (``_tsc_is_invariant``): it counts while we sleep
    t1, c1 = _mark(read)
    return (t1 - t0) * 1e-9 / (c1 - c0) if c1 > c0 else 0.0


@functools.cache
def current_clock() -> ClockInfo:
    """The clock for this process, calibrated once and then cached."""
    forced = os.environ.get("NUMBA_LPRUN_CLOCK", "").strip().lower()
    if forced not in ("", "tsc", "monotonic"):
        raise ValueError(f"NUMBA_LPRUN_CLOCK must be 'tsc' or 'monotonic', not {forced!r}")
    if forced != "monotonic" and _tsc_is_invariant():
        seconds = tsc_seconds_per_tick()
        if seconds > 0:
            return ClockInfo("tsc", seconds, f"invariant TSC at {1e-9 / seconds:.3f} GHz")
    why = "forced by NUMBA_LPRUN_CLOCK" if forced == "monotonic" else "no invariant TSC"
    return ClockInfo("monotonic", 1e-9, f"clock_gettime(CLOCK_MONOTONIC), {why}")


def tsc_seconds_per_tick() -> float:
    """Seconds per TSC tick on this machine: from the cache when this boot measured it, else
    measured now (and kept). 0.0 when the measurement failed (nothing is kept then)."""
    key = disk_cache.machine_key()
    if key is not None:
        kept = disk_cache.load_record("machine", key).get("tsc_seconds_per_tick")
        if isinstance(kept, float) and 0 < kept < 1e-6:  # anything else is not a TSC rate
            return kept
    seconds = _calibrate_tsc(_make_reader("tsc"))
    if key is not None and seconds > 0:
        disk_cache.update_record("machine", key, tsc_seconds_per_tick=seconds)
    return seconds


@functools.cache
def clock_reader(kind: str):
    """A cached jitted reader of clock ``kind`` (used by calibration and tests)."""
    return _make_reader(kind)
