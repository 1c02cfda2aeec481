"""Start and stop the SIGPROF sampler around one run; hand back raw samples.

Why per-thread POSIX timers on CLOCK_MONOTONIC: ``setitimer(ITIMER_PROF)`` and
CPU-time clocks fire on the kernel tick (250 Hz here) whatever rate is asked, and a
process-directed signal reaches a single thread. One ``timer_create`` per thread of
``/proc/self/task`` with ``SIGEV_THREAD_ID`` reaches each thread at the asked rate,
including Numba's worker threads running ``prange`` bodies. The clock is wall time,
so idle threads are sampled too; their samples land outside profiled code.

Why stopping is careful: a timer signal can still be pending, or a handler running,
after the timers are deleted. So stopping switches the handler off, deletes the
timers, sets SIGPROF to SIG_IGN for a moment (which discards pending SIGPROFs on
every thread), waits until no handler runs, and only then reinstalls the exact
``struct sigaction`` found at start. A late SIGPROF therefore can neither hit a
default disposition (which would kill the process) nor write into a freed buffer.

Threads started while the sampler runs get a timer when ``threads.NewThreads`` sees them.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from . import _handler as H
from . import _native as N
from .threads import NewThreads

#: Set to a non-empty value other than "0" to make every Sampler unavailable.
DISABLE_ENV = "NUMBA_LPRUN_NO_SAMPLER"
#: Frames kept above ``depth`` for the handler and the kernel's signal trampoline.
_HANDLER_FRAMES = 4
#: How many leading backtrace frames may precede the interrupted pc.
_SEARCH_FRAMES = 6
#: Most threads one run can sample (the handler's per-thread CPU-time slots).
_MAX_THREADS = 4096
#: Words copied from above the interrupted stack pointer when the walk stops short.
_STACK_WORDS = H.MAX_STACK_WORDS

_active = threading.Lock()  # one sampler at a time: the signal disposition is process-wide
_leaked: list[np.ndarray] = []  # arrays a stuck handler might still write to: never freed


@dataclass
class RawSamples:
    """What the handler recorded, trimmed to the interrupted frame and its callers.

    ``addresses[i, 0]`` is the interrupted instruction, ``addresses[i, 1:]`` the
    return addresses of its callers, innermost first, 0 past the end of the stack
    that was unwound. ``threads[i]`` indexes ``tids``. ``cpu_ns[i]`` is the CPU time
    the thread used since its previous sample (-1 when unknown): the weight that
    turns wall-clock samples into CPU time.

    ``recovered[i]`` is, for a sample whose walk was cut short by code without unwind
    tables, the return address found on its stack above that code (0 otherwise, and
    when nothing was found): the caller the walk could not reach (see
    :func:`_recover_returns`).
    """

    addresses: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), np.uint64))
    recovered: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    threads: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    cpu_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tids: list[int] = field(default_factory=list)
    dropped: int = 0  # signals that found the buffer full
    overruns: int = 0  # timer expirations merged by the kernel (signal still pending)
    foreign: int = 0  # SIGPROFs not sent by our timers, ignored
    unwind_skipped: int = 0  # samples taken without a backtrace (pc inside the unwinder)
    elapsed: float = 0.0  # seconds the timers were armed
    rate_hz: float = 0.0  # the rate asked for

    @property
    def count(self) -> int:
        return int(self.addresses.shape[0])

    @property
    def per_thread(self) -> dict[int, int]:
        """Samples recorded per thread id."""
        counts = np.bincount(self.threads, minlength=len(self.tids)) if self.count else []
        return {tid: int(c) for tid, c in zip(self.tids, counts, strict=False)}

    def weights(self) -> np.ndarray:
        """CPU seconds each sample stands for (the nominal period where unknown)."""
        period = 1.0 / self.rate_hz if self.rate_hz > 0 else 0.0
        cpu = self.cpu_ns.astype(np.float64) * 1e-9
        return np.where(self.cpu_ns >= 0, cpu, period)

    @property
    def achieved_hz(self) -> float:
        """Signals handled per thread per second (recorded and dropped)."""
        if self.elapsed <= 0 or not self.tids:
            return 0.0
        return (self.count + self.dropped) / self.elapsed / len(self.tids)


def _trim(pc: np.ndarray, nframes: np.ndarray, frames: np.ndarray, depth: int) -> np.ndarray:
    """(n, depth) addresses: the pc, then the callers found after it in the backtrace.

    ``nframes[i]`` frames of ``frames[i]`` were filled. The backtrace starts inside the
    handler; the pc reappears after the signal trampoline. When it does not
    (unwinding failed or was skipped) only the pc is kept.
    """
    n = frames.shape[0]
    nframes = nframes.astype(np.int64)
    width = frames.shape[1]
    out = np.zeros((n, depth), np.uint64)
    out[:, 0] = pc
    if n == 0 or width == 0 or depth == 1:
        return out
    search = min(_SEARCH_FRAMES, width)
    cols = np.arange(search)
    hit = (frames[:, :search] == pc[:, None]) & (cols[None, :] < nframes[:, None])
    found = hit.any(axis=1)
    start = hit.argmax(axis=1) + 1
    take = start[:, None] + np.arange(depth - 1)[None, :]
    ok = found[:, None] & (take < nframes[:, None]) & (take < width)
    rows = np.arange(n)[:, None]
    out[:, 1:] = np.where(ok, frames[rows, np.minimum(take, width - 1)], 0)
    return out


def _recover_returns(
    pc: np.ndarray,
    nframes: np.ndarray,
    frames: np.ndarray,
    ncopied: np.ndarray,
    words: np.ndarray,
    code: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Per sample, the return address that a cut-short walk could not reach, or 0.

    A walk is cut short when it found no caller of the pc at all, or when its last
    frame is in anonymous memory (JIT code: a file's code has unwind tables, so a walk
    ends there only at a thread's first frame). The frame the walk stopped at is then
    a function without unwind table, and the first word above it that points into
    executable code is taken for its return address: a leaf keeps no frame, and what
    other such functions push (saved registers, spills) is data. The search starts at
    the stack pointer when the walk stopped at the pc, else just above the slot that
    holds the last frame's return address (the frames below it, already walked, may
    hold stale words); when that slot was not copied, nothing is recovered. Walks
    that ended normally recover nothing: an idle thread's stack holds stale return
    addresses. ``code`` is :func:`_native.code_mappings`.
    """
    n, width = words.shape
    out = np.zeros(n, np.uint64)
    if n == 0 or width == 0:
        return out
    starts, ends, named = code
    nframes = np.minimum(nframes.astype(np.int64), frames.shape[1])
    has_frames = nframes > 0
    last = np.where(has_frames, frames[np.arange(n), np.maximum(nframes - 1, 0)], pc)
    ended_at_pc = ~has_frames | (last == pc)
    cut = ended_at_pc | ~_inside(last, starts, ends, named)
    cols = np.arange(width)[None, :]
    copied = cols < ncopied.astype(np.int64)[:, None]
    slot = (words == last[:, None]) & copied
    first = np.where(ended_at_pc, 0, np.where(slot.any(axis=1), slot.argmax(axis=1) + 1, width))
    candidate = cut[:, None] & copied & (cols >= first[:, None])
    candidate &= _inside(words, starts, ends, np.ones(len(starts), bool))
    found = candidate.any(axis=1)
    out[found] = words[found, candidate[found].argmax(axis=1)]
    return out


def _inside(addresses: np.ndarray, starts: np.ndarray, ends: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Whether each address lies in one of the ranges [starts, ends) selected by ``which``."""
    if len(starts) == 0:
        return np.zeros(addresses.shape, bool)
    index = np.searchsorted(starts, addresses, side="right") - 1
    safe = np.maximum(index, 0)
    return (index >= 0) & (addresses < ends[safe]) & which[safe]


class Sampler:
    """Sample every thread's native stack at ``rate_hz`` while the ``with`` block runs.

    Never raises on start: when sampling cannot work, ``unavailable`` says why and
    the block runs unsampled. ``depth`` frames are kept per sample (the interrupted
    one and its callers); ``max_samples`` bounds the buffer (further samples are
    counted in ``dropped``). ``numba_threads=True`` launches Numba's thread pool
    first, so that ``parallel=True`` code runs on threads that have a timer.
    Do not compile Numba code inside the block (see the package docstring).
    """

    def __init__(
        self,
        rate_hz: float = 1000.0,
        depth: int = 16,
        max_samples: int = 1_000_000,
        numba_threads: bool = False,
    ) -> None:
        self.rate_hz = float(rate_hz)
        self.depth = max(1, int(depth))
        self.max_samples = max(1, int(max_samples))
        self.numba_threads = numba_threads
        self.unavailable: str | None = None
        self._samples = RawSamples(rate_hz=self.rate_hz)
        self._libc: N.Libc | None = None
        self._ctrl: np.ndarray | None = None
        self._buffer: np.ndarray | None = None
        self._old_action: N.kernel_sigaction_t | None = None
        self._timers: list[ctypes.c_void_p] = []
        self._tids: list[int] = []
        self._last_cpu: np.ndarray | None = None
        self._watcher = NewThreads(lambda: self._tids, self._arm_timers)
        self._started = 0.0
        self._locked = False

    @property
    def samples(self) -> RawSamples:
        """The samples of the last completed run (empty while running or unavailable)."""
        return self._samples

    def __enter__(self) -> Sampler:
        self.unavailable = None
        self._samples = RawSamples(rate_hz=self.rate_hz)
        try:
            self.unavailable = self._start()
        except Exception as exc:  # never let sampling break the run
            self.unavailable = f"sampler failed to start: {type(exc).__name__}: {exc}"
        if self.unavailable is not None:
            self._teardown()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._locked and self.unavailable is None:
            elapsed = time.perf_counter() - self._started
            try:
                self._teardown()
            finally:
                self._collect(elapsed)
                self._release()
        return None

    # --- start ---------------------------------------------------------------------
    def _start(self) -> str | None:
        if os.environ.get(DISABLE_ENV, "0") not in ("", "0"):
            return f"sampling disabled by {DISABLE_ENV}"
        reason = N.check_platform()
        if reason is not None:
            return reason
        if not self.rate_hz > 0:
            return f"rate_hz must be positive, got {self.rate_hz}"
        if not _active.acquire(blocking=False):
            return "another Sampler is running in this process"
        self._locked = True
        try:
            self._libc = libc = N.libc()
        except (OSError, AttributeError) as exc:
            return f"libc lacks what sampling needs: {exc}"
        if self.numba_threads:
            from numba.np.ufunc import parallel

            parallel._launch_threads()
        self._ctrl, handler_address = H.get_handler(libc)
        nframes = self.depth + _HANDLER_FRAMES
        self._buffer = np.empty((self.max_samples, H.HEADER + nframes + _STACK_WORDS), np.uint64)
        self._warm_up(nframes)
        self._configure(nframes)
        action = N.sigaction_t()
        action.sa_handler = handler_address
        action.sa_flags = N.SA_SIGINFO | N.SA_RESTART
        try:
            self._old_action = libc.get_action()
            libc.set_action(action)
        except OSError as exc:
            self._old_action = None
            return f"sigaction(SIGPROF) failed: {exc}"
        self._ctrl[H.ACTIVE] = 1
        self._tids = N.list_threads()
        self._started = time.perf_counter()
        self._last_cpu = np.full(_MAX_THREADS, -1, np.int64)
        self._ctrl[H.LAST_CPU] = self._last_cpu.ctypes.data
        self._ctrl[H.NTHREADS] = 0
        tids, self._tids = self._tids, []
        self._arm_timers(tids)
        if not self._timers:
            return "timer_create failed for every thread"
        self._watcher.start()
        return None

    def _warm_up(self, nframes: int) -> None:
        """Call backtrace once outside the handler: glibc loads libgcc_s on first use,
        and libgcc sorts the unwind tables Numba registered (both allocate)."""
        scratch = (ctypes.c_void_p * nframes)()
        self._libc.backtrace(scratch, nframes)

    def _configure(self, nframes: int) -> None:
        ctrl = self._ctrl
        ctrl[H.ACTIVE] = 0
        for slot in (H.NEXT, H.DROPPED, H.FOREIGN, H.SKIPPED, H.INFLIGHT, H.OVERRUNS, H.NTHREADS):
            ctrl[slot] = 0
        ctrl[H.CAPACITY] = self.max_samples
        ctrl[H.STRIDE] = self._buffer.shape[1]
        ctrl[H.BUFFER] = self._buffer.ctypes.data
        ctrl[H.NFRAMES] = nframes
        ctrl[H.STACK_WORDS] = _STACK_WORDS
        ctrl[H.LAST_CPU] = 0  # set with NTHREADS when the timers are armed
        ctrl[H.MAGIC] = (
            int.from_bytes(os.urandom(4), "little") % (2**31 - 1) + 1
        )  # leaves random's state alone
        lo, hi = N.mapped_range("libgcc_s")
        ctrl[H.SKIP_LO], ctrl[H.SKIP_HI] = lo, hi

    def _arm_timers(self, tids: list[int]) -> None:
        """One timer per thread of ``tids``, its index continuing those armed before."""
        libc = self._libc
        period_ns = max(1, int(round(1e9 / self.rate_hz)))
        magic = int(self._ctrl[H.MAGIC])
        for position, tid in enumerate(tids):
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
            first_ns = period_ns + period_ns * position // max(1, len(tids))  # stagger threads
            spec = N.itimerspec_t()
            spec.it_interval.tv_sec, spec.it_interval.tv_nsec = divmod(period_ns, 1_000_000_000)
            spec.it_value.tv_sec, spec.it_value.tv_nsec = divmod(first_ns, 1_000_000_000)
            self._timers.append(timer)
            self._tids.append(tid)
            self._ctrl[H.NTHREADS] = len(self._tids)  # after its slot is set: the handler reads it
            libc.timer_settime(timer, 0, ctypes.byref(spec), None)

    # --- stop ----------------------------------------------------------------------
    def _teardown(self) -> None:
        """Undo whatever _start did, in the safe order (see the module docstring)."""
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
                _leaked.extend(a for a in (self._buffer, self._last_cpu) if a is not None)
                return
            time.sleep(0.0005)

    def _release(self) -> None:
        if self._locked:
            self._locked = False
            _active.release()

    def _collect(self, elapsed: float) -> None:
        ctrl = self._ctrl
        n = min(int(ctrl[H.NEXT]), self.max_samples)
        records = self._buffer[:n]
        width = int(ctrl[H.NFRAMES])
        pc, nframes, ncopied = records[:, 0], records[:, 3], records[:, 4]
        frames = records[:, H.HEADER : H.HEADER + width]
        words = records[:, H.HEADER + width : H.HEADER + width + _STACK_WORDS]
        self._samples = RawSamples(
            addresses=_trim(pc, nframes, frames, self.depth),
            recovered=_recover_returns(pc, nframes, frames, ncopied, words, N.code_mappings()),
            threads=records[:, 1].astype(np.int32),
            cpu_ns=records[:, 2].view(np.int64).copy(),
            tids=list(self._tids),
            dropped=int(ctrl[H.DROPPED]),
            overruns=int(ctrl[H.OVERRUNS]),
            foreign=int(ctrl[H.FOREIGN]),
            unwind_skipped=int(ctrl[H.SKIPPED]),
            elapsed=elapsed,
            rate_hz=self.rate_hz,
        )
        self._buffer = self._last_cpu = None
