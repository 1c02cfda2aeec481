"""Which clock the probes read, and how its ticks convert to seconds.

The probes read the CPU timestamp counter (``llvm.readcyclecounter``, one
``rdtsc``: about 10 ns) when the CPU says it ticks at a constant rate whatever the
power state (``constant_tsc`` and ``nonstop_tsc``). Anywhere else they call
``clock_gettime(CLOCK_MONOTONIC)``, which costs more but is portable and already
counts nanoseconds. Set ``NUMBA_LPRUN_CLOCK=monotonic`` to force the fallback.

Calibrating the TSC compiles a reader and times an interval of at least 30 ms, from the
start to the first use of the rate (after the run: ``TscRate``), and its result is kept in
the cache directory per machine and boot
(``disk_cache.machine_key``: the kernel sets the TSC up at boot, and a VM may come
back on another host) and read back by later processes.
"""

from __future__ import annotations

import functools
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from .. import settings
from ..internals import stack_slot
from . import disk_cache

CLOCK_MONOTONIC = 1  # Linux and macOS value of the clock id
_I64 = ir.IntType(64)


@dataclass(frozen=True)
class ClockInfo:
    """The clock chosen for this process: what it is and what one tick is worth.

    The TSC's worth may be measured only when first asked (``TscRate``): the profile needs it
    after the run, and the interval it is measured over then passes during the run."""

    kind: str  # "tsc" or "monotonic"
    rate: Callable[[], float]  # seconds per tick
    why: str  # why this clock was chosen

    @property
    def seconds_per_tick(self) -> float:
        return self.rate()

    @property
    def note(self) -> str:
        """Why this clock was chosen, shown to the user on request."""
        if self.kind == "tsc":
            return f"{self.why} at {1e-9 / self.seconds_per_tick:.3f} GHz"
        return self.why


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


class TscRate:
    """Seconds per TSC tick against perf_counter_ns: the first mark is taken when the clock is
    chosen, the second when the rate is first asked for, at least ``interval`` later (slept
    only where the profile asks sooner). Each end is a tightly bracketed pair (``_mark``:
    within about 100 ns), so 30 ms give the rate to about 5e-6; a start no longer waits for
    them (three 50 ms spins once took 0.15 s of a cold start, a 30 ms sleep 0.03 s)."""

    def __init__(
        self, read: Callable[[], int], interval: float = 0.03, keep: Callable[[float], None] | None = None
    ):
        read()  # compile outside the measured interval
        self._read, self._interval, self._keep = read, interval, keep
        self._first = _mark(read)
        self._seconds: float | None = None
        self._lock = threading.Lock()

    def ticking(self) -> bool:
        """Whether the counter moved since the first mark (a TSC that stands still is no clock)."""
        return self._read() > self._first[1]

    def __call__(self) -> float:
        with self._lock:
            if self._seconds is None:
                t0, c0 = self._first
                time.sleep(max(0.0, self._interval - (time.perf_counter_ns() - t0) * 1e-9))
                t1, c1 = _mark(self._read)
                self._seconds = (t1 - t0) * 1e-9 / (c1 - c0) if c1 > c0 else 0.0
                if self._keep is not None and self._seconds > 0:
                    self._keep(self._seconds)
            return self._seconds


def _constant(value: float) -> Callable[[], float]:
    return lambda: value


@functools.cache
def current_clock() -> ClockInfo:
    """The clock for this process, chosen once (its TSC rate is measured or read back once)."""
    forced = settings.text(settings.CLOCK).lower()
    if forced not in ("", "tsc", "monotonic"):
        raise ValueError(f"NUMBA_LPRUN_CLOCK must be 'tsc' or 'monotonic', not {forced!r}")
    if forced != "monotonic" and _tsc_is_invariant():
        rate = tsc_rate()
        if rate is not None:
            return ClockInfo("tsc", rate, "invariant TSC")
    why = "forced by NUMBA_LPRUN_CLOCK" if forced == "monotonic" else "no invariant TSC"
    return ClockInfo("monotonic", _constant(1e-9), f"clock_gettime(CLOCK_MONOTONIC), {why}")


def tsc_rate() -> Callable[[], float] | None:
    """Seconds per TSC tick on this machine: from the cache when this boot measured it, else
    measured from now on (``TscRate``, kept once measured). None when the TSC does not tick."""
    key = disk_cache.machine_key()
    if key is not None:
        kept = disk_cache.load_record("machine", key).get("tsc_seconds_per_tick")
        if isinstance(kept, float) and 0 < kept < 1e-6:  # anything else is not a TSC rate
            return _constant(kept)

    def keep(seconds: float) -> None:
        if key is not None:
            disk_cache.update_record("machine", key, tsc_seconds_per_tick=seconds)

    rate = TscRate(_make_reader("tsc"), keep=keep)
    return rate if rate.ticking() else None


@functools.cache
def clock_reader(kind: str):
    """A cached jitted reader of clock ``kind`` (used by calibration and tests)."""
    return _make_reader(kind)
