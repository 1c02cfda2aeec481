"""What a sample costs here, and the rate that cost affords: a timer signal and a stack walk.

Why apart from the sampler: both are measured on this machine and in this process (a timer
interrupt's path in a virtual machine, libgcc's search through the modules compiled so far),
before any timer is armed; the sampler only asks ``afford`` for its rate.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time

from . import _native as N

# -- what a signal costs here ------------------------------------------------------------


@functools.cache
def signal_seconds(libc: N.Libc) -> float:
    """What one timer signal costs the thread it interrupts, in wall time: measured once per
    process (it is the machine's), with SIGPROF's handler installed and recording off.

    Why measured: the kernel's timer interrupt, the signal's delivery and its return cost
    about 2 us on a plain Linux machine but 25-35 us in some virtual machines (this project's
    CI: a C loop interrupted by an empty handler 8,000 times a second ran 1.3x slower), where
    the start boost alone made a 10 ms call 1.4x slower. A spin of the interpreter's is timed
    with and without a periodic timer on this thread (``_PROBE_PERIOD_NS`` apart), best of
    three each: about 15 ms once."""
    timer = ctypes.c_void_p()
    event = N.sigevent_t()
    event.sigev_value = 0  # no magic number: the handler counts nothing (it records nothing anyway)
    event.sigev_signo = N.SIGPROF
    event.sigev_notify = N.SIGEV_THREAD_ID
    event.tid = threading.get_native_id()
    if libc.timer_create(N.CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
        return 0.0
    every = N.itimerspec_t()
    every.it_value.tv_nsec = every.it_interval.tv_nsec = _PROBE_PERIOD_NS
    stop = N.itimerspec_t()
    try:
        plain = interrupted = float("inf")
        for _ in range(3):
            plain = min(plain, _spin())
            libc.timer_settime(timer, 0, ctypes.byref(every), None)
            try:
                interrupted = min(interrupted, _spin())
            finally:
                libc.timer_settime(timer, 0, ctypes.byref(stop), None)
    finally:
        libc.timer_delete(timer)
    signals = interrupted / (_PROBE_PERIOD_NS * 1e-9)
    return max(0.0, interrupted - plain) / signals


_PROBE_PERIOD_NS = 100_000  # 10 kHz: a cost up to 100 us is seen (a periodic timer's signals merge beyond)


def _spin(n: int = 40_000) -> float:
    """Seconds the interpreter takes to count to ``n`` (about 2 ms)."""
    began = time.perf_counter()
    for _ in range(n):
        pass
    return time.perf_counter() - began


# -- what a walk costs here --------------------------------------------------------------


def walk_seconds(libc: object, nframes: int) -> float:
    """How long a stack walk of ``nframes`` takes from here: the quickest of 20 (the first
    walks are cold, a preempted one is slow), after one that warms up outside the handler
    (glibc loads libgcc_s on first use, and libgcc sorts the unwind tables Numba registered:
    both allocate, which a signal handler must not)."""
    scratch = (ctypes.c_void_p * nframes)()
    libc.backtrace(scratch, nframes)
    walk = float("inf")
    for _ in range(20):
        began = time.perf_counter()
        libc.backtrace(scratch, nframes)
        walk = min(walk, time.perf_counter() - began)
    return walk


#: What a sample costs the user's run, in timer signals as ``signal_seconds`` times them: the
#: handler's own system calls (two CPU-clock reads, its timer re-armed) and what the interrupted
#: code refills after it (caches, pipeline, vector registers) come on top of the signal. On this
#: project's 2-core virtual machine, where a bare signal times at 18 us: 22-27 us a sample on a
#: scalar loop (``benchmarks/one_run_sampler.py``), about 50 us on conv's vector loop (its call
#: 1.11-1.13x sampled against 1.00-1.02x hits only, at 2 kHz). The extra runs, whose cost is
#: not the user's, count a sample as one signal (their samples are the short statement's).
USERS_RUN_SIGNALS = 2.0


def afford(
    asked_hz: float,
    boost: tuple[float, int] | None,
    budget: float,
    walk: float,
    walkers: int,
    signal: float = 0.0,
    signals_per_sample: float = 1.0,
    loop_threads: int = 1,
) -> tuple[float, tuple[float, int] | None, str | None]:
    """(rate, boost, why lowered or None): the rate lowered so that what a sample costs,
    ``signals_per_sample`` timer signals of ``signal`` seconds and a walk of ``walk`` seconds on
    ``walkers`` threads (taking turns under libgcc's lock), takes at most ``budget`` of the CPU;
    the boost, a faster start nobody asked for, at most half of it.

    ``loop_threads``: the threads a parallel loop runs on, which wait for each other at its end,
    so a sample that stops one of them keeps the others waiting: it costs the loop that much
    more (at most; the bound is what is budgeted). Counted once per sample, a ``prange``
    kernel's one-run profile on a 2-core machine cost its statement 11-14%, twice the budget
    (CHANGELOG.md has the runs)."""
    cost = (signal * signals_per_sample + walk * walkers) * max(1, loop_threads)
    affordable = budget / cost if cost > 0 else float("inf")
    if boost is not None and boost[0] > affordable / 2:
        boost = (affordable / 2, boost[1])
    if affordable >= asked_hz:
        return asked_hz, boost, None
    threads = f", on each of {walkers} threads" if walkers > 1 else ""
    walks = (
        f"a stack walk costs about {walk * 1e6:.0f} us here{threads}"
        " (the unwinder searches every module compiled in this process)"
    )
    signals = (
        f"a timer signal costs about {signal * 1e6:.0f} us here (the machine's timer interrupts are dear)"
    )
    if signals_per_sample != 1.0:
        signals += f", a sample about {signal * signals_per_sample * 1e6:.0f} us (the code it stops refills)"
    if walk > 0 and signal > 0:
        why = f"{walks}, a timer signal about {signal * 1e6:.0f} us"
    else:
        why = walks if walk > 0 else signals
    if loop_threads > 1:
        why += f"; a sample stops a parallel loop's {loop_threads} threads"
    # a sample counted above one signal is the user's run's (``USERS_RUN_SIGNALS``): the extra runs
    # may sample faster, and the header's rate is over all runs
    whose = "your run's rate" if signals_per_sample != 1.0 else "rate"
    return affordable, boost, f"{whose} lowered from {asked_hz:.0f} Hz: {why}"
