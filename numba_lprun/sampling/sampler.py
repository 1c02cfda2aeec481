"""Start and stop the SIGPROF sampler around one run; hand back its raw samples.

Why per-thread POSIX timers on CLOCK_MONOTONIC: ``setitimer(ITIMER_PROF)`` and
CPU-time clocks fire on the kernel tick (250 Hz here) whatever rate is asked, and a
process-directed signal reaches a single thread. One ``timer_create`` per thread of
``/proc/self/task`` with ``SIGEV_THREAD_ID`` reaches each thread at the asked rate,
including Numba's worker threads running ``prange`` bodies. The clock is wall time,
so idle threads are sampled too; their samples land outside profiled code.

Why stopping is careful: a timer signal can still be pending, or a handler running,
after the timers are deleted. So stopping (``_teardown``) stops watching for forks
and new threads, deletes the timers, switches the handler off (a late one returns at
once), sets SIGPROF to SIG_IGN for a moment (which discards pending SIGPROFs on
every thread), waits until no handler runs, and only then reinstalls the exact
``struct sigaction`` found at start. A late SIGPROF therefore can neither hit a
default disposition (which would kill the process) nor write into a freed buffer.

Threads started while the sampler runs get a timer when ``NewThreads`` sees them; each
timer's first wait is drawn here (``first_wait``), the later ones by the handler.

Forks. Keep a fork from copying a stack walk in progress, and the parent's sampler with it.

Why: ``os.fork`` copies only the forking thread, with every lock as it was at that
moment. A SIGPROF handler running on another thread may hold libgcc's unwinder lock
(GCC 12 searches the JIT-registered modules under one lock): the child's copy of it
never opens, and the child's first stack walk (the sampler of a pool worker) waits for
ever. So before a fork the armed sampler stops recording and waits until no handler
runs; after it the parent's timers are armed again (a handler that found recording off
did not re-arm its timer), and the child forgets the parent's sampler: POSIX timers are
not inherited, so nothing samples the child until it starts a sampler of its own.

The rate it can afford: a timer signal's cost (timed once per process) and, where libgcc
walks, a walk's (timed at start) are kept to ``WALK_BUDGET`` of the CPU (``sample_cost``).
"""

from __future__ import annotations

import ctypes
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np
from numba import config

from .. import settings
from ..interrupts import ctrl_c_deferred
from . import _handler as H
from . import _native as N
from .attribution import RawSamples, samples_from
from .sample_cost import afford, signal_seconds, walk_seconds
from .unwind_tables import library_table, own_table, python_calls_in

# -- forks -------------------------------------------------------------------------------


class Forkable(Protocol):
    def hold_for_fork(self) -> None: ...
    def resume_after_fork(self) -> None: ...
    def forked_away(self) -> None: ...


_armed: list[Forkable] = []  # the armed sampler (one at a time), process-wide as a fork is
_hooked: list[bool] = []


def watch(sampler: Forkable) -> None:
    """Hold ``sampler`` over every fork until :func:`unwatch`."""
    if not _hooked:
        os.register_at_fork(before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child)
        _hooked.append(True)
    _armed.append(sampler)


def unwatch(sampler: Forkable) -> None:
    if sampler in _armed:
        _armed.remove(sampler)


def _before() -> None:
    for sampler in _armed:
        sampler.hold_for_fork()


def _after_in_parent() -> None:
    for sampler in _armed:
        sampler.resume_after_fork()


def _after_in_child() -> None:
    for sampler in _armed:
        sampler.forked_away()
    _armed.clear()


# -- arming and stopping -----------------------------------------------------------------

#: Set to a non-empty value other than "0" to make every Sampler unavailable.
DISABLE_ENV = settings.NO_SAMPLER
#: Frames kept above ``depth`` for the handler and the kernel's signal trampoline.
_HANDLER_FRAMES = 4
#: Frames kept per sample by default. A sample inside an ``objmode`` block of a
#: profiled function sits some 25 frames above it (interpreter, dispatcher, NumPy),
#: and the Python stack under a profiled call (pytest, IPython) adds more; a walk
#: that fills the buffer without reaching a profiled frame is counted as stopped.
#: Each frame walked costs about half a microsecond.
DEFAULT_DEPTH = 64
#: Share of the CPU the sampler may take, its timer signals and stack walks (``afford``); the
#: rate is lowered to keep them under it, and a start boost to half of it. A timer signal costs
#: about 2 us on a plain Linux machine and 25-35 us in some virtual machines (``signal_seconds``):
#: there, 2 kHz on each thread took 7% of the run, and the 8 kHz boost made a 10 ms call 1.4x.
#: libgcc's unwinder searches the modules JIT-registered with it one by one on every
#: frame (GCC 12's list, under one lock for all threads), so a walk's cost grows with the
#: modules Numba compiled in the process: 4 us with none, 17 us with 600 (a test session,
#: a long notebook), 54 us with 1,200 here. Walks costing half the period biased the
#: ``prange`` shares by up to 17 points (25 -> 42%); at a tenth they were within a point.
#: A sampler that walks its profiled code itself (``own_code``) counts no walk.
WALK_BUDGET = 0.05
#: Set to another share (``1`` for no limit) to change ``WALK_BUDGET``.
WALK_BUDGET_ENV = settings.WALK_BUDGET
#: Most threads one run can sample (the handler's per-thread CPU-time slots).
_MAX_THREADS = 4096

#: CPU a resting thread must use before it is sampled (see ``Sampler._busy``).
_WAKE_NS = 1_000_000

_active = threading.Lock()  # one sampler at a time: the signal disposition is process-wide
_leaked: list[np.ndarray] = []  # arrays a stuck handler might still write to: never freed


def sampler_running() -> bool:
    """Whether a Sampler is armed in this process right now (one at a time: the signal
    disposition is process-wide)."""
    return _active.locked()


def sampler_unavailable() -> str | None:
    """Why no sampler can run in this process (None: it can), asked before any run: the switch
    (``DISABLE_ENV``), then the platform."""
    if settings.switch(DISABLE_ENV, False):
        return f"sampling disabled by {DISABLE_ENV}"
    return N.check_platform()


def prepare_handler() -> None:
    """Compile the handler now (or load it from Numba's cache), where no lock is held: a sampler
    started while threads compile (a compile's end resumes sampling) must not wait for Numba's
    compiler lock. Nothing to do where no sampler can run (its start says why)."""
    if sampler_unavailable() is not None:
        return
    try:
        H.get_handler(N.libc())
    except Exception:  # (the sampler's start meets it again, and says why)
        return


class Sampler:
    """Sample every thread's native stack at ``rate_hz`` while the ``with`` block runs.

    Never raises on start: when sampling cannot work, ``unavailable`` says why and
    the block runs unsampled. ``depth`` frames are kept per sample (the interrupted
    one and its callers); ``max_samples`` bounds the buffer (further samples are
    counted in ``dropped``). ``numba_threads=True`` arms every thread at once (Numba's
    workers sleep until a ``prange`` loop starts; see ``_busy``). Numba's thread pool is
    not launched here: launched in a process that then forks (a ``fork`` pool), its
    OpenMP layer ends every child that runs a ``prange`` loop ("fork() called from a
    process already using GNU OpenMP"); a pool launched during the block gets its timers
    from the watcher (``threads``).
    Do not compile Numba code inside the block (see the package docstring).
    """

    def __init__(
        self,
        rate_hz: float = 1000.0,
        depth: int = DEFAULT_DEPTH,
        max_samples: int = 1_000_000,
        numba_threads: bool = False,
        boost: tuple[float, int] | None = None,
        walk_budget: float | None = None,
        own_code: Iterable[object] = (),
        verify_walks: bool = False,
        existing_threads: str = "user",
        sample_signals: float = 1.0,
    ) -> None:
        self.rate_hz = self.asked_hz = float(rate_hz)
        if walk_budget is None:
            walk_budget = settings.number(WALK_BUDGET_ENV, WALK_BUDGET)
        self.walk_budget = walk_budget
        self.sample_signals = sample_signals  # what a sample costs, in timer signals (``afford``)
        self.lowered: str | None = None  # why the rate is below the one asked for
        self.boost = boost  # (faster rate, samples taken at it before slowing to rate_hz)
        self.depth = max(1, int(depth))
        self.max_samples = max(1, int(max_samples))
        self.numba_threads = numba_threads
        # the threads existing at the start that are sampled: "user", those that may run the program's
        # code (``_native.user_threads``); "main", the main thread only (a Ray worker, whose other
        # threads are all Ray's own, named like its process). Threads started later: "user" alike
        self.existing_threads = existing_threads
        self._engine: set[int] = set()  # threads existing at the start that are never sampled
        self.own_code = list(own_code)  # dispatchers whose code the handler walks itself (its own walk)
        self._table: np.ndarray | None = None  # the twins' unwind rules, and the libraries' (own walks)
        self._libraries: np.ndarray | None = None
        self.verify_walks = verify_walks  # libgcc walks every stack, and the own walk is checked against it
        self.unavailable: str | None = None
        self._samples = RawSamples(rate_hz=self.rate_hz)
        self._libc: N.Libc | None = None
        self._ctrl: np.ndarray | None = None
        self._buffer: np.ndarray | None = None
        self._old_action: N.kernel_sigaction_t | None = None
        self._timers: list[ctypes.c_void_p] = []
        self._tids: list[int] = []
        self._last_cpu: np.ndarray | None = None
        self._resting: dict[int, int] = {}  # idle threads left unarmed -> their CPU ns then
        self._timer_ids = None  # each thread's timer, which the handler re-arms
        # each timer's first signal at a random phase (see _handler); the user's random state is left alone
        self._random = random.Random(os.urandom(8))
        self._watcher = NewThreads(
            lambda: self._tids + list(self._resting) + list(self._engine), self._arm_timers, self._wake
        )
        self._started = 0.0
        self._locked = False
        self._pid = os.getpid()  # a forked child's copy of an armed sampler is not its own

    @property
    def samples(self) -> RawSamples:
        """The samples of the last completed run (empty while running or unavailable)."""
        return self._samples

    def __enter__(self) -> Sampler:
        self.unavailable = None
        self._pid = os.getpid()
        self._samples = RawSamples(rate_hz=self.rate_hz)
        try:
            with ctrl_c_deferred():  # armed whole or not at all: a Ctrl-C waits until it is either
                try:
                    self.unavailable = self._start()
                except Exception as exc:  # never let sampling break the run
                    self.unavailable = f"sampler failed to start: {type(exc).__name__}: {exc}"
                if self.unavailable is not None:
                    self._teardown()
        except BaseException:  # the held Ctrl-C, raised once armed: no `with` body will disarm
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._pid != os.getpid():  # the parent's, in a forked child (``watch``): nothing to undo here
            return None
        if self._locked and self.unavailable is None:
            elapsed = time.perf_counter() - self._started
            with ctrl_c_deferred():  # timers, handler and the sampler slot all go back
                try:
                    self._teardown()
                finally:
                    try:
                        self._collect(elapsed)
                    finally:
                        self._release()
        return None

    # --- start ---------------------------------------------------------------------
    def _start(self) -> str | None:
        reason = sampler_unavailable()
        if reason is not None:
            return reason
        if not self.rate_hz > 0:
            return f"rate_hz must be positive, got {self.rate_hz}"
        try:
            self._libc = libc = N.libc()
        except (OSError, AttributeError) as exc:
            return f"libc lacks what sampling needs: {exc}"
        # (compiled, or loaded from Numba's cache, on first use: before the slot is taken, so that
        # no code is generated while a sampler is running)
        ctrl, handler_address = H.get_handler(libc)
        if not _active.acquire(blocking=False):
            return "another Sampler is running in this process"
        self._locked = True
        self._ctrl = ctrl
        self._ctrl[H.ACTIVE] = 0  # (already: a sampler's teardown leaves it off) records nothing yet
        action = N.sigaction_t()
        action.sa_handler = handler_address
        action.sa_flags = N.SA_SIGINFO | N.SA_RESTART
        try:
            self._old_action = libc.get_action()
            libc.set_action(action)
        except OSError as exc:
            self._old_action = None
            return f"sigaction(SIGPROF) failed: {exc}"
        self._table = own_table(self.own_code, python_calls_in()) if self.own_code else None
        # never freed; also without own walks: the handler reads it to tell a thread inside libgcc's
        # unwinder, which its ``backtrace`` would wait for forever (``_handler.own_walk``)
        self._libraries = library_table()
        nframes = self.depth + _HANDLER_FRAMES
        self._buffer = np.empty((self.max_samples, H.HEADER + nframes), np.uint64)
        self._afford(nframes)
        self._configure(nframes)
        self._ctrl[H.ACTIVE] = 1
        self._tids = N.list_threads()
        self._started = time.perf_counter()
        self._last_cpu = np.full(_MAX_THREADS, -1, np.int64)
        self._ctrl[H.LAST_CPU] = self._last_cpu.ctypes.data
        self._ctrl[H.NTHREADS] = 0
        tids, self._tids = self._tids, []
        if self.existing_threads == "main":
            main = threading.main_thread().native_id
            first = [tid for tid in tids if tid == main]
        else:
            first = N.user_threads(tids)  # not an engine's own threads
        self._engine = set(tids) - set(first)
        # (the main thread is armed at once: it waits for its next task, and the sampler needs a timer)
        self._arm_timers(first if self.existing_threads == "main" else self._busy(first))
        if not self._timers:
            return "timer_create failed for every thread"
        self._watcher.start()
        watch(self)
        return None

    # --- over a fork (see ``watch``) ---------------------------------------------------
    def hold_for_fork(self) -> None:
        self._ctrl[H.ACTIVE] = 0
        self._wait_idle()

    def resume_after_fork(self) -> None:
        self._ctrl[H.ACTIVE] = 1
        period_ns = self._period_ns()
        for timer in self._timers:  # one-shot timers a handler met while recording was off
            self._libc.timer_settime(timer, 0, ctypes.byref(self._first_shot(period_ns)), None)

    def _first_shot(self, period_ns: int) -> N.itimerspec_t:
        """A timer's first signal, at a random phase (see _handler); one shot, no interval: each
        signal's handler re-arms it (_handler)."""
        spec = N.itimerspec_t()
        spec.it_value.tv_sec, spec.it_value.tv_nsec = divmod(first_wait(period_ns, self._random), 10**9)
        return spec

    def forked_away(self) -> None:
        global _active
        self._pid = -1
        _active = threading.Lock()  # the parent's sampler does not run here

    def _busy(self, tids: list[int]) -> list[int]:
        """The threads to sample from the start; the others rest until they use CPU.

        A signal costs its thread several microseconds even when the thread sleeps
        (it wakes, runs the handler, sleeps again), and a process holds idle native
        threads (OpenBLAS's pool: one per core). Only the calling thread and the
        running ones are armed at once; the watcher arms a resting thread once it
        has used a millisecond of CPU (``_wake``). With ``numba_threads`` every
        thread is armed: Numba's workers sleep until a ``prange`` loop starts.
        """
        if self.numba_threads:
            return tids
        me = threading.get_native_id()
        busy = [tid for tid in tids if tid == me or N.thread_running(tid)]
        self._resting = {tid: N.thread_cpu_ns(tid) for tid in tids if tid not in busy}
        return busy

    def _wake(self) -> None:
        """Arm the resting threads that used CPU since they were left (see ``_busy``)."""
        woken = [tid for tid, cpu in list(self._resting.items()) if N.thread_cpu_ns(tid) - cpu > _WAKE_NS]
        for tid in woken:
            self._resting.pop(tid, None)
        if woken:
            self._arm_timers(woken)

    def _set_boost(self) -> None:
        """What the handler needs to re-arm each timer: the timer ids and both periods."""
        self._timer_ids = np.zeros(_MAX_THREADS, np.int64)
        ctrl = self._ctrl
        ctrl[H.TIMERS] = self._timer_ids.ctypes.data
        boosted = self.boost is not None and self.boost[0] > self.rate_hz and self.boost[1] > 0
        ctrl[H.SLOW_NS] = period_ns(self.rate_hz)
        ctrl[H.FAST_NS] = period_ns(self.boost[0]) if boosted else ctrl[H.SLOW_NS]
        ctrl[H.BOOST_UNTIL] = int(self.boost[1]) if boosted else 0

    def _period_ns(self) -> int:
        """The period a newly armed timer starts at: the boost's while it lasts."""
        ctrl = self._ctrl
        boosting = ctrl[H.BOOST_UNTIL] > 0 and ctrl[H.NEXT] < ctrl[H.BOOST_UNTIL]
        return period_ns(self.boost[0] if boosting else self.rate_hz)

    def _afford(self, nframes: int) -> None:
        """Lower the rate (and the boost's) so that the timer signals and libgcc's stack walks
        take at most ``walk_budget`` of the CPU (see ``WALK_BUDGET``); no walk is counted where
        the handler walks the profiled code itself (``_handler.own_walk``: a walk there costs well
        under a microsecond). Called with the handler installed (``signal_seconds``)."""
        walk = walk_seconds(self._libc, nframes)  # also the warm-up the handler needs
        walk = 0.0 if self._table is not None else walk
        walkers = max(1, len(N.list_threads())) if self.numba_threads else 1
        # every thread armed, sleeping ones too: beyond one per core, their signals take the cores
        # the busy ones run on
        cores = len(os.sched_getaffinity(0))
        crowding = max(1.0, walkers / cores)
        signal = signal_seconds(self._libc) * crowding
        # the threads of a parallel loop (Numba's pool, at most one per core runs at once): read
        # from the configuration, since asking the pool (``numba.get_num_threads``) launches it
        loop_threads = min(config.NUMBA_NUM_THREADS, cores) if self.numba_threads else 1
        self.rate_hz, self.boost, self.lowered = afford(
            self.asked_hz,
            self.boost,
            self.walk_budget,
            walk,
            walkers,
            signal,
            self.sample_signals,
            loop_threads,
        )

    def _configure(self, nframes: int) -> None:
        ctrl = self._ctrl
        ctrl[H.ACTIVE] = 0
        for slot in (H.NEXT, H.INFLIGHT, H.NTHREADS, *H.COUNTERS.values()):
            ctrl[slot] = 0
        ctrl[H.CAPACITY] = self.max_samples
        ctrl[H.STRIDE] = self._buffer.shape[1]
        ctrl[H.BUFFER] = self._buffer.ctypes.data
        ctrl[H.NFRAMES] = nframes
        ctrl[H.LAST_CPU] = 0  # set with NTHREADS when the timers are armed
        ctrl[H.MAGIC] = (
            int.from_bytes(os.urandom(4), "little") % (2**31 - 1) + 1
        )  # leaves random's state alone
        lo, hi = N.library_range("libgcc_s")
        ctrl[H.SKIP_LO], ctrl[H.SKIP_HI] = lo, hi
        ctrl[H.OWN_TABLE] = self._table.ctypes.data if self._table is not None else 0
        ctrl[H.LIBRARY_TABLE] = self._libraries.ctypes.data if self._libraries is not None else 0
        ctrl[H.VERIFY] = int(self.verify_walks)
        self._set_boost()  # before the handler is active: it reads these arrays

    def _arm_timers(self, tids: list[int]) -> None:
        """One timer per thread of ``tids``, its index continuing those armed before."""
        libc = self._libc
        period_ns = self._period_ns()
        magic = int(self._ctrl[H.MAGIC])
        for tid in tids:
            index = len(self._tids)
            if index >= _MAX_THREADS:
                return
            event = N.sigevent_t()
            event.sigev_value = (magic << 32) | index
            event.sigev_signo = N.SIGPROF
            event.sigev_notify = N.SIGEV_THREAD_ID
            event.tid = tid
            timer = ctypes.c_void_p()
            if libc.timer_create(N.CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
                continue  # the thread exited since it was listed
            self._last_cpu[index] = N.thread_cpu_ns(tid)
            spec = self._first_shot(period_ns)
            self._timers.append(timer)
            self._timer_ids[index] = timer.value or 0
            self._tids.append(tid)
            self._ctrl[H.NTHREADS] = len(self._tids)  # after its slot is set: the handler reads it
            libc.timer_settime(timer, 0, ctypes.byref(spec), None)

    # --- stop ----------------------------------------------------------------------
    def _teardown(self) -> None:
        """Undo whatever _start did, in the safe order (see the module docstring)."""
        unwatch(self)
        self._watcher.stop()
        libc, ctrl = self._libc, self._ctrl
        for timer in self._timers:
            libc.timer_delete(timer)
        self._timers = []
        if ctrl is not None:
            ctrl[H.ACTIVE] = 0
        if self._old_action is not None:
            ignore = N.sigaction_t()
            ignore.sa_handler = 1  # SIG_IGN: discards pending SIGPROFs on every thread
            try:
                libc.set_action(ignore)
            finally:
                self._wait_idle()
                libc.restore_action(self._old_action)
                self._old_action = None
        elif ctrl is not None:
            self._wait_idle()
        if self._locked and self.unavailable is not None:
            self._release()

    def _wait_idle(self, timeout: float = 2.0) -> None:
        ctrl = self._ctrl
        if ctrl is None:
            return
        deadline = time.perf_counter() + timeout
        while ctrl[H.INFLIGHT] != 0:
            if time.perf_counter() > deadline:  # a handler is stuck: never free its buffer
                kept = (self._buffer, self._last_cpu, self._timer_ids, self._table)
                _leaked.extend(a for a in kept if a is not None)
                return
            time.sleep(0.0005)

    def _release(self) -> None:
        if self._locked:
            self._locked = False
            _active.release()

    def _collect(self, elapsed: float) -> None:
        ctrl = self._ctrl
        n = min(int(ctrl[H.NEXT]), self.max_samples)
        counted = {name: int(ctrl[slot]) for name, slot in H.COUNTERS.items()}
        self._samples = samples_from(
            self._buffer[:n], int(ctrl[H.NFRAMES]), self.depth, N.code_mappings(),
            tids=list(self._tids), elapsed=elapsed, rate_hz=self.rate_hz, lowered=self.lowered, **counted,
        )  # fmt: skip
        self._buffer = self._last_cpu = self._table = None


# -- the timers' waits ---------------------------------------------------------------
# How long each timer waits: the mean period at a rate, and a first wait at a random phase.
#
# Kept apart from the handler (which draws each later wait itself, in machine code) because
# the sampler draws the first ones in Python, when it arms a timer.


def period_ns(rate_hz: float) -> int:
    """A timer's mean wait between signals, in ns, at ``rate_hz``."""
    return max(2, int(round(1e9 / rate_hz)))


def first_wait(period: int, rng: random.Random) -> int:
    """When a timer first fires, in ns: drawn so that its signals, re-armed at uniform
    waits in [period / 2, 3 period / 2) (``_Body.rearm``), are as likely at every moment
    from the start on. That is the renewal process's forward-recurrence time: density
    1 / period below period / 2, falling linearly to 0 at 3 period / 2. A first signal at
    a fixed delay lands on the same lines in every short run."""
    if rng.random() < 0.5:
        return max(1, int(period * 0.5 * rng.random()))
    return max(1, int(period * (1.5 - (1.0 - rng.random()) ** 0.5)))


# -- threads started while the sampler runs ------------------------------------------
WATCH_PERIOD = 0.02  # seconds between two looks


class NewThreads:
    """Calls ``found(tids)`` with threads not in ``known()`` until ``stop``: threads started,
    or woken, while the sampler runs.

    Why: the sampler arms one timer per thread it lists at start, and threads started
    later (a ``ThreadPoolExecutor`` calling a ``nogil`` function, a pool made per
    call) would never be sampled. A watcher thread lists ``/proc/self/task`` again
    every ``WATCH_PERIOD`` and hands each new thread id to a callback (which arms its
    timer), so every thread that runs for longer than that is sampled. Each look
    also calls ``tick`` (the sampler wakes the idle threads it left unarmed that
    have used CPU since: see ``Sampler``). The watcher's own thread is never handed
    over: it only sleeps and looks.

    Why not more often: the watcher is a Python thread, so each look needs the GIL,
    which jitted code called from Python holds. It gets it when that code runs Python
    (an ``objmode`` block), and the hand-over costs the profiled thread CPU time in
    system calls, charged to that line: looking every millisecond made an ``objmode``
    block look 2-5 points heavier than it was at 10 kHz; every 20 ms, about half a point.
    """

    def __init__(
        self,
        known: Callable[[], list[int]],
        found: Callable[[list[int]], None],
        tick: Callable[[], None] | None = None,
    ):
        self._known, self._found, self._tick = known, found, tick
        self._running = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stopping.clear()
        self._running.set()
        self._thread = threading.Thread(target=self._watch, name="numba_lprun-threads", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        me = threading.get_native_id()
        engines: set[int] = set()  # an engine's own threads (``_native.user_threads``), judged once
        while self._running.is_set():
            known = set(self._known()) | engines | {me}
            unseen = [tid for tid in N.list_threads() if tid not in known]
            new = N.user_threads(unseen) if unseen else []
            engines.update(set(unseen) - set(new))
            if new:
                self._found(new)
            if self._tick is not None:
                self._tick()
            self._stopping.wait(WATCH_PERIOD)  # returns at once when stop() is called

    def stop(self) -> None:
        """Stop looking; returns once the watcher will call ``found`` no more."""
        self._running.clear()
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
