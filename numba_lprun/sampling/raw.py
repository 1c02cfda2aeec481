"""What the SIGPROF handler recorded, as arrays: the interrupted code and its callers.

Kept apart from ``sampler`` (which arms and disarms timers) because it is plain
data work: trimming each backtrace to the interrupted frame and its callers, and
telling where each walk ended (for ``walks`` to say why it stopped).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import walks

#: How many leading backtrace frames may precede the interrupted pc.
SEARCH_FRAMES = 6
#: Words before the frames in each record: pc, thread index, cpu ns, frames, blocked (``_handler``).
HEADER = 5
#: The longest wait, in periods of the rate sampled at, that a handler sets its thread's next
#: signal for (``_handler``: waits are drawn in [1/2, 3/2) periods), and the lateness allowed a
#: signal on top (timer slack, 50 us for a normal thread; delivery after a short system call
#: or page fault). A sample stands for at most that much CPU time. A thread that used more
#: since its previous sample was not interrupted when its timer said: it was in the kernel,
#: or a dear handler (the first walk after new code was loaded) stretched the wait. That
#: time's place is unknown, and charged to the one line where the thread was next sampled it
#: moved a whole share: under load, one sample in 12,000 carried 170 ms of CPU time (1,700
#: periods at 10 kHz) and read a line of true share 10% as 18.9%, where the unweighted
#: counts said 10.1%.
LONGEST_WAIT = 1.5
LATE_SIGNAL = 1e-3  # seconds


@dataclass
class RawSamples:
    """What the handler recorded, trimmed to the interrupted frame and its callers.

    ``addresses[i, 0]`` is the interrupted instruction, ``addresses[i, 1:]`` the
    return addresses of its callers, innermost first, 0 past the end of the stack
    that was unwound. ``threads[i]`` indexes ``tids``. ``cpu_ns[i]`` is the CPU time
    the thread used since its previous sample (-1 when unknown): the weight that
    turns wall-clock samples into CPU time.

    ``blocked[i]`` is True when the signal found the thread blocked in a system call
    (waiting, not running): such a sample weighs nothing in ``weights``.

    ``stops[i]`` says why sample ``i``'s walk ended: ``walks.COMPLETE`` (-1) when it
    reached the thread's first frame, else an index into ``stop_causes`` (the walk
    stopped early: what lies above it is unknown; see ``walks``).
    """

    addresses: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), np.uint64))
    blocked: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    stops: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    stop_causes: list[str] = field(default_factory=list)
    threads: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    cpu_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tids: list[int] = field(default_factory=list)
    dropped: int = 0  # signals that found the buffer full
    overruns: int = 0  # timer expirations merged by the kernel (signal still pending)
    foreign: int = 0  # SIGPROFs not sent by our timers, ignored
    unwind_skipped: int = 0  # samples taken without a backtrace (pc inside the unwinder)
    own_walks: int = 0  # samples the handler walked itself (``own_walk``; with VERIFY: checked and equal)
    walk_mismatches: int = 0  # with VERIFY: own walks that differed from libgcc's
    elapsed: float = 0.0  # seconds the timers were armed
    rate_hz: float = 0.0  # the rate sampled at
    lowered: str | None = None  # why that is below the rate asked for (``Sampler._afford``)

    @property
    def count(self) -> int:
        return int(self.addresses.shape[0])

    @property
    def per_thread(self) -> dict[int, int]:
        """Samples recorded per thread id."""
        counts = np.bincount(self.threads, minlength=len(self.tids)) if self.count else []
        return {tid: int(c) for tid, c in zip(self.tids, counts, strict=False)}

    def weights(self) -> np.ndarray:
        """CPU seconds each sample stands for (the nominal period where unknown, 0 when
        the thread was blocked: what it used then was the sampler's own cost), at most
        ``LONGEST_WAIT`` periods and ``LATE_SIGNAL`` (see there)."""
        period = 1.0 / self.rate_hz if self.rate_hz > 0 else 0.0
        cpu = self.cpu_ns.astype(np.float64) * 1e-9
        if period > 0:
            cpu = np.minimum(cpu, LONGEST_WAIT * period + LATE_SIGNAL)
        weights = np.where(self.cpu_ns >= 0, cpu, period)
        if self.blocked.shape == weights.shape:
            weights[self.blocked] = 0.0
        return weights

    @property
    def signals(self) -> int:
        """Signals handled, recorded or dropped."""
        return self.count + self.dropped

    @property
    def thread_seconds(self) -> float:
        """Seconds the timers were armed, summed over the threads they were armed on."""
        return self.elapsed * len(self.tids)

    @property
    def achieved_hz(self) -> float:
        """Signals handled per thread per second (recorded and dropped)."""
        return self.signals / self.thread_seconds if self.thread_seconds > 0 else 0.0


def trim_frames(pc: np.ndarray, nframes: np.ndarray, frames: np.ndarray, depth: int) -> np.ndarray:
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
    search = min(SEARCH_FRAMES, width)
    cols = np.arange(search)
    hit = (frames[:, :search] == pc[:, None]) & (cols[None, :] < nframes[:, None])
    found = hit.any(axis=1)
    start = hit.argmax(axis=1) + 1
    take = start[:, None] + np.arange(depth - 1)[None, :]
    ok = found[:, None] & (take < nframes[:, None]) & (take < width)
    rows = np.arange(n)[:, None]
    out[:, 1:] = np.where(ok, frames[rows, np.minimum(take, width - 1)], 0)
    return out


def walk_ends(pc: np.ndarray, nframes: np.ndarray, frames: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per sample: whether the walk reached the pc, its last frame, and whether that is the pc."""
    n, width = frames.shape
    nframes = np.minimum(nframes.astype(np.int64), width)
    if n == 0 or width == 0:
        return np.zeros(n, bool), pc.copy(), np.ones(n, bool)
    search = min(SEARCH_FRAMES, width)
    cols = np.arange(search)
    hit = (frames[:, :search] == pc[:, None]) & (cols[None, :] < nframes[:, None])
    found = hit.any(axis=1)
    at_pc = hit.argmax(axis=1)
    last_index = np.maximum(nframes - 1, 0)
    last = np.where(found, frames[np.arange(n), last_index], pc)
    return found, last, ~found | (last_index == at_pc)


def samples_from(records: np.ndarray, width: int, depth: int, code: tuple, **run: object) -> RawSamples:
    """The handler's records (``_handler``'s layout, ``width`` frames each) as ``RawSamples``,
    each walk trimmed to ``depth`` frames and told how it ended (``code``: the mappings, for
    ``walks.classify``); ``run``: the other fields."""
    pc, nframes = records[:, 0], records[:, 3]
    frames = records[:, HEADER : HEADER + width]
    found, last, last_is_pc = walk_ends(pc, nframes, frames)
    stops, causes = walks.classify(found, nframes.astype(np.int64), last, last_is_pc, width, depth, code)
    return RawSamples(
        addresses=trim_frames(pc, nframes, frames, depth),
        blocked=records[:, 4] != 0,
        stops=stops,
        stop_causes=causes,
        threads=records[:, 1].astype(np.int32),
        cpu_ns=records[:, 2].view(np.int64).copy(),
        **run,
    )
