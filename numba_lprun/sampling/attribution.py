"""From the handler's records to source lines: raw samples, where each walk ended, lines charged.

Why walk the stack: most time in numeric code is spent in callees that have no
line of the profiled function (libm's ``sin``, Numba's runtime allocating an array,
a jitted helper that is not profiled). Each sample is charged, for every profiled
function, to the innermost frame inside that function: a line's count includes the
time of what it calls, as in line_profiler. Caller frames hold return addresses, so
they are looked up one byte earlier (inside the call instruction).

Why stopped samples are counted apart: a sample whose walk reaches no profiled
function and ended at the thread's first frame was genuinely elsewhere (an idle
thread, the interpreter, code that is not profiled). One whose walk stopped early
(code without unwind information, a stack deeper than the sampler keeps) may belong
to a profiled line: its time is unknown, not elsewhere. ``stopped`` counts those by
cause (``RawSamples.stop_causes``), so a report can say what it could not place.

Why two measures: ``lines`` counts samples (wall-clock ticks of each thread);
``seconds`` weighs each sample by the CPU time its thread used since its previous
sample. On a loaded machine, or with threads waiting, the second follows the work
where the first follows the clock; idle threads weigh nothing in it.

Raw samples (``samples_from``): what the SIGPROF handler recorded, as arrays, after the timers
are stopped: trimming each backtrace to the
interrupted frame and its callers, and telling where each walk ended (below).

Where walks end (``classify``). A sample whose walk reaches no profiled function is either genuinely elsewhere
(an idle thread, the interpreter, code that is not profiled: its walk ran to the
thread's first frame) or lost: the walk stopped early, and where the time belongs
is unknown. The second kind must be reported by cause, never counted as time spent
elsewhere. ``backtrace`` returns the frames it walked and nothing else, so the
cause is read from the last frame afterwards:

* the walk filled its buffer: the stack is deeper than the sampler keeps. Where no
  frame walked is profiled, the sample is counted elsewhere but marked
  (``TRUNCATED``): a profiled frame could lie deeper only under code called from
  Python inside it (an ``objmode`` block more than ``depth`` frames deep), while the
  same walk comes from every sample of a thread running Python code under a deep
  stack (pytest, IPython), which is genuinely elsewhere;
* libgcc has no unwind table entry (FDE) for the last frame's code: the walk
  stopped there (``backtrace`` records the frame whose FDE is missing, then ends).
  A thread's first frame (``_start``, ``clone3``) *has* an FDE, which says the
  stack ends: a walk that ended there is complete;
* no walk at all: the signal interrupted the unwinder itself (``unwind_skipped``),
  or the walk never reached the interrupted frame.

The FDE lookup is libgcc's own ``_Unwind_Find_FDE`` (what ``backtrace`` asked), run
here after sampling, outside any signal handler, once per distinct address.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from ._handler import HEADER
from ._native import _find_fde, dl_info, has_unwind_info
from .dwarf import LineMap

Z95 = 1.959964  # two-sided 95% normal quantile


def share_interval(share: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval, in %, of a share (in %) measured with ``n`` samples.

    Each sample lands on a line or not, so the count is binomial in the
    function's sample total; the Wilson interval stays inside 0-100% and is
    honest for lines with few or no samples.
    """
    p = share / 100.0
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return (100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half))


@dataclass(frozen=True)
class LineSamples:
    """One function's samples: the one per-line record, from :func:`attribute` to the table.

    Why one record: it is made here and carried unchanged through the run's measurements
    (added up with ``run.measurements.fold``), the profile (``FunctionStats.samples``, saved
    as JSON field by field) and the renderers (a column reads ``view.stats.samples``), so a
    new per-line figure is a field here, what :func:`attribute` puts in it, and a column.

    ``counts``: line -> samples charged to it; ``seconds``: line -> the CPU seconds they
    stand for (each sample weighed by its thread's CPU time); ``addresses``: the same samples
    by the address they were charged at (a caller frame's return address less one, inside its
    call instruction: the per-instruction view), this process's code only, so a profile
    merged from several processes keeps the main one's; ``threads``: thread id -> samples.
    """

    counts: dict[int, int] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)
    addresses: dict[int, int] = field(default_factory=dict)
    threads: dict[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Samples that landed in this function."""
        return sum(self.counts.values())

    @property
    def cpu_seconds(self) -> float:
        """The CPU seconds of the samples that landed in this function."""
        return sum(self.seconds.values())

    def share(self, line: int) -> float | None:
        """% of the function's sampled CPU time on ``line`` (None without samples)."""
        total = self.cpu_seconds
        return 100.0 * self.seconds.get(line, 0.0) / total if total > 0 else None

    def interval(self, line: int) -> tuple[float, float] | None:
        """95% interval of ``line``'s sampled share, in % (Wilson score interval)."""
        share, n = self.share(line), self.total
        if share is None or n == 0:
            return None
        return share_interval(share, n)


@dataclass
class SampledLines:
    """What one segment's samples say: each profiled function's :class:`LineSamples`, and the rest.

    ``functions[key]`` is the function's record (empty where no sample landed). ``outside``
    counts samples in none of the profiled functions (other code, idle threads), ``total``
    all samples; ``*_seconds`` the same in CPU seconds. A sample inside a profiled function
    called from another one counts for both. ``stopped`` counts by cause the samples whose
    walk stopped before any profiled frame.
    """

    functions: dict[Hashable, LineSamples] = field(default_factory=dict)
    outside: int = 0
    total: int = 0
    outside_seconds: float = 0.0
    total_seconds: float = 0.0
    stopped: dict[str, int] = field(default_factory=dict)
    stopped_seconds: dict[str, float] = field(default_factory=dict)
    truncated: int = 0

    @property
    def inside(self) -> int:
        """Samples charged to at least one profiled function."""
        return self.total - self.outside - sum(self.stopped.values())

    @property
    def inside_seconds(self) -> float:
        """CPU seconds of the samples charged to at least one profiled function."""
        return self.total_seconds - self.outside_seconds - sum(self.stopped_seconds.values())


def attribute(raw: RawSamples, maps: dict[Hashable, LineMap]) -> SampledLines:
    """Count ``raw``'s samples per line of each function in ``maps`` (key -> line map).

    Linear in the samples and the functions, not their product: each distinct address
    is looked up once per function (a run has far fewer distinct addresses than frames),
    and only the frames a function's addresses hold are visited for it (``FrameIndex``).
    A profile of 344 functions spent 13 minutes here when every function scanned every
    frame of every sample.
    """
    result = SampledLines(total=raw.count)
    n = raw.count
    if n == 0:
        result.functions = {key: LineSamples() for key in maps}
        return result
    weights = raw.weights()
    lookup = raw.addresses.astype(np.uint64, copy=True)
    callers = lookup[:, 1:]
    callers[callers != 0] -= np.uint64(1)
    frames = FrameIndex(lookup)
    anywhere = np.zeros(n, bool)
    tids = np.asarray(raw.tids + [-1], np.int64)
    for key, lmap in maps.items():
        rows, line, address = frames.innermost(lmap)
        anywhere[rows] = True
        values, where, counts = np.unique(line, return_inverse=True, return_counts=True)
        sums = np.bincount(where.ravel(), weights=weights[rows], minlength=len(values))
        result.functions[key] = LineSamples(
            counts={int(v): int(c) for v, c in zip(values, counts, strict=True)},
            seconds={int(v): float(w) for v, w in zip(values, sums, strict=True)},
            addresses=_counted(address),
            threads=_counted(tids[np.minimum(raw.threads[rows], len(raw.tids))]),
        )
    stops = raw.stops if raw.stops.shape == (n,) else np.full(n, COMPLETE, np.int32)
    lost = ~anywhere & (stops >= 0)
    for index in np.unique(stops[lost]).tolist():
        which = lost & (stops == index)
        cause = raw.stop_causes[index]
        result.stopped[cause] = int(which.sum())
        result.stopped_seconds[cause] = float(weights[which].sum())
    elsewhere = ~anywhere & ~lost
    result.outside = int(elsewhere.sum())
    result.truncated = int((elsewhere & (stops == TRUNCATED)).sum())
    result.total_seconds = float(weights.sum())
    result.outside_seconds = float(weights[elsewhere].sum())
    return result


def _counted(values: np.ndarray) -> dict[int, int]:
    """How many times each distinct value occurs."""
    distinct, counts = np.unique(values, return_counts=True)
    return {int(v): int(c) for v, c in zip(distinct, counts, strict=True)}


class FrameIndex:
    """The frames of a set of samples (rows of return addresses, innermost first, 0 past the
    last frame), indexed by distinct address: where each one occurs.

    Only the filled frames are sorted (about one in ten of a row's cells: a row is as deep as
    the deepest stack kept), once: sorting every cell, twice, took 60 ms of a one-second run's
    profile."""

    def __init__(self, addresses: np.ndarray):
        self.depth = addresses.shape[1]
        self.flat = addresses.ravel()
        filled = np.flatnonzero(self.flat)
        self.order = filled[np.argsort(self.flat[filled])]  # frames grouped by address
        grouped = self.flat[self.order]
        opens = np.ones(len(grouped), bool)  # where a new address's group starts
        opens[1:] = grouped[1:] != grouped[:-1]
        starts = np.flatnonzero(opens)
        self.distinct = grouped[starts]
        self.bounds = np.append(starts, len(grouped))

    def innermost(self, lmap: LineMap) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The samples with a frame in ``lmap``'s code (row numbers, ascending), the line of
        their innermost such frame, and its address."""
        lines = lmap.lookup(self.distinct)  # one lookup per distinct address
        found = np.nonzero(lines >= 0)[0]
        if not len(found):
            return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint64)
        starts, sizes = self.bounds[found], self.bounds[found + 1] - self.bounds[found]
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
        positions = self.order[offsets + np.arange(int(sizes.sum()))]
        groups = np.repeat(found, sizes)  # each position's distinct address
        by_position = np.argsort(positions)  # by sample, then frame: a sample's first is its innermost
        positions, groups = positions[by_position], groups[by_position]
        rows = positions // max(self.depth, 1)
        first = np.concatenate(([True], rows[1:] != rows[:-1]))
        return rows[first], lines[groups[first]], self.flat[positions[first]]


def innermost_lines(found: np.ndarray, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the first line that is not -1 (innermost frame), or -1; and its address (or 0)."""
    if found.shape[1] == 0:
        return np.full(found.shape[0], -1, np.int32), np.zeros(found.shape[0], np.uint64)
    hit = found >= 0
    rows, first = np.arange(found.shape[0]), hit.argmax(axis=1)
    anywhere = hit.any(axis=1)
    line = np.where(anywhere, found[rows, first], -1)
    return line, np.where(anywhere, addresses[rows, first], np.uint64(0)).astype(np.uint64)


# -- raw samples -------------------------------------------------------------------------

#: How many leading backtrace frames may precede the interrupted pc.
SEARCH_FRAMES = 6
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

    ``stops[i]`` says why sample ``i``'s walk ended: ``COMPLETE`` (-1) when it
    reached the thread's first frame, else an index into ``stop_causes`` (the walk
    stopped early: what lies above it is unknown; see ``classify``).
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
    own_walks: int = 0  # samples the handler walked itself (its own walk; with VERIFY: checked and equal)
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
    ``classify``); ``run``: the other fields."""
    pc, nframes = records[:, 0], records[:, 3]
    frames = records[:, HEADER : HEADER + width]
    found, last, last_is_pc = walk_ends(pc, nframes, frames)
    stops, causes = classify(found, nframes.astype(np.int64), last, last_is_pc, width, depth, code)
    return RawSamples(
        addresses=trim_frames(pc, nframes, frames, depth),
        blocked=records[:, 4] != 0,
        stops=stops,
        stop_causes=causes,
        threads=records[:, 1].astype(np.int32),
        cpu_ns=records[:, 2].view(np.int64).copy(),
        **run,
    )


# -- where walks end ------------------------------------------------------------------

#: The walk ended at a frame with unwind information: the thread's first frame.
COMPLETE = -1


#: The walk filled the frames kept (see the module docstring).
TRUNCATED = -2


def code_name(address: int, code: tuple[np.ndarray, np.ndarray, np.ndarray]) -> str:
    """A reader's name for the code at ``address``: ``library: symbol``, or what kind of code.

    ``code`` is :func:`_native.code_mappings` (taken while the code was mapped).
    """
    starts, ends, named = code
    index = int(np.searchsorted(starts, np.uint64(address), side="right")) - 1
    if index < 0 or address >= int(ends[index]):
        return "an address outside any code (a corrupt stack?)"
    if not named[index]:
        return "jitted code that numba_lprun did not compile"
    found = dl_info(address)
    if found is None:
        return "a shared library"
    library, symbol = found
    return f"{library}: {symbol}" if symbol else library


def classify(
    found: np.ndarray,
    nframes: np.ndarray,
    last: np.ndarray,
    last_is_pc: np.ndarray,
    width: int,
    depth: int,
    code: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, list[str]]:
    """Per sample, an index into the returned causes, ``COMPLETE`` or ``TRUNCATED``.

    ``found``: the walk reached the interrupted frame; ``nframes``: frames it filled
    (of ``width``); ``last``: its last frame's address (a return address unless
    ``last_is_pc``); ``depth``: frames the sampler keeps.
    """
    n = len(found)
    stops = np.full(n, COMPLETE, np.int32)
    causes: list[str] = []
    index: dict[str, int] = {}

    def cause(text: str) -> int:
        if text not in index:
            index[text] = len(causes)
            causes.append(text)
        return index[text]

    not_walked = ~found
    if not_walked.any():
        stops[not_walked] = cause("not walked: the signal interrupted the unwinder itself")
    stops[found & (nframes >= width)] = TRUNCATED
    rest = np.flatnonzero(found & (nframes < width))
    lookup = last[rest] - np.where(last_is_pc[rest], 0, 1).astype(np.uint64)
    if _find_fde() is None or len(rest) == 0:
        return stops, causes
    values, inverse = np.unique(lookup, return_inverse=True)
    verdict = np.full(len(values), COMPLETE, np.int32)
    for i, address in enumerate(values.tolist()):
        if not has_unwind_info(address):
            verdict[i] = cause(f"stopped in code without unwind information: {code_name(address, code)}")
    stops[rest] = verdict[inverse.ravel()]
    return stops, causes
