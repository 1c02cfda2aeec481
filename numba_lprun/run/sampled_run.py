"""Sample runs, then charge the samples to source lines.

Every twin carries line tables, so the samples of a run on plain or counting
twins map to source lines. Numba must not compile while the native sampler is
armed (its unwinder lock), so sampling pauses around every compile during the
run and resumes after it; each stretch is one segment.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field, replace

from ..instrument.twin_identity import symbol_mark
from ..interrupts import ctrl_c_deferred
from ..sampling import LineMap, RawSamples, Sampler, attribute, line_map, prepare_handler
from .measurements import LineSamples, Sampled, fold
from .runner import Runner, Where


@dataclass
class SegmentedSampling:
    """Samples of one phase, in segments split by Numba compiles."""

    rate_hz: float
    parallel: bool
    boost: tuple[float, int] | None = None  # (faster rate, samples at it): over all segments together
    #: The dispatchers whose code the handler walks itself (``sampling._handler.own_walk``), asked again at
    #: each segment's start: the twins compiled by then
    code: Callable[[], list[object]] | None = None
    existing_threads: str = "user"  # which threads existing at each segment's start are sampled (Sampler)
    sample_signals: float = 1.0  # what a sample costs, in timer signals (``sample_cost.afford``)
    #: Whether a profiled function runs on several threads now, asked again at each segment's
    #: start: a script or cell defines its functions as it runs (``Runner.adopt``), and a parallel
    #: one's samples cost its loop's threads (``sample_cost.afford``) from its first segment on
    threads_now: Callable[[], bool] | None = None
    segments: list[RawSamples] = field(default_factory=list)
    unavailable: str | None = None
    _sampler: Sampler | None = None
    _running: bool = False
    #: A sampler is being started: its start may compile (the handler, on a cold cache), and the
    #: compile listener's resume after that compile must not start a second sampler beside it
    _starting: bool = False
    _lock: threading.RLock = field(default_factory=threading.RLock)  # a worker's part: read from a thread

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        # the handler compiled here, with no lock held: a resume at a compile's end (under the
        # compile watcher's lock, while another thread may hold Numba's) then compiles nothing
        prepare_handler()
        self._running = True
        try:
            self.resume()
            yield
        finally:
            self.pause()
            self._running = False

    def pause(self) -> None:
        with self._lock, ctrl_c_deferred():  # a sampler handed over is always disarmed
            if self._sampler is not None:
                sampler, self._sampler = self._sampler, None
                sampler.__exit__(None, None, None)
                self.segments.append(sampler.samples)

    def stop(self) -> None:
        """Disarm for good, from any thread (a kept worker whose profile is over)."""
        with self._lock:
            self._running = False
            self.pause()

    def resume(self) -> None:
        with self._lock:
            self._resume()

    def so_far(self) -> SegmentedSampling:
        """The samples taken until now, as a sampling that is over (a worker's part written while
        it runs: asked for, or on SIGTERM); an armed sampler is armed again after."""
        with self._lock:
            armed = self._sampler is not None
            self.pause()
            over = replace(self, segments=list(self.segments), _sampler=None, _running=False)
            if armed:
                self.resume()
        return over

    def _resume(self) -> None:
        if not self._running or self._sampler is not None or self.unavailable is not None or self._starting:
            return
        boost = None
        if self.boost is not None:
            left = self.boost[1] - sum(seg.count for seg in self.segments)
            boost = (self.boost[0], left) if left > 0 else None
        with ctrl_c_deferred():  # an armed sampler is always kept, so that pause() disarms it
            own = self.code() if self.code is not None else ()
            sampler = Sampler(
                rate_hz=self.rate_hz,
                numba_threads=self.parallel or (self.threads_now is not None and self.threads_now()),
                boost=boost,
                own_code=own,
                existing_threads=self.existing_threads,
                sample_signals=self.sample_signals,
            )
            self._starting = True
            try:
                sampler.__enter__()
            finally:
                self._starting = False
            if sampler.unavailable is not None:
                self.unavailable = sampler.unavailable
                return
            self._sampler = sampler

    @property
    def lowered(self) -> str | None:
        """Why the segment with the most samples sampled below the asked rate (None: it did not).

        Not the first reason given: a script's first segment, before its twins compile, is walked
        by libgcc, and its reason (a walk's cost) was said of a run the twins' own walk sampled."""
        return max(self.segments, key=lambda s: s.count).lowered if self.segments else None

    @property
    def signals(self) -> int:
        return sum(s.signals for s in self.segments)

    @property
    def thread_seconds(self) -> float:
        """The segments' armed time per thread, added: their rate is ``signals`` over this (a mean
        of the segments' rates would let a short segment, whose few signals vary most, weigh as
        much as a long one)."""
        return sum(s.thread_seconds for s in self.segments)


def twins_line_maps(runner: Runner, kind: str) -> dict[Hashable, LineMap]:
    """Address-to-line maps of the code of ``runner``'s ``kind`` twins, each also covering its
    function inlined into other code (``twin_hosts``)."""
    functions = runner.twin_code(kind)
    return {
        key: line_map(*where, hosts=twin_hosts(runner, kind, where), symbol_mark=symbol_mark(where[0]))
        for key, where in functions.items()
    }


def twin_hosts(runner: Runner, kind: str, where: Where) -> list[object]:
    """The code that may hold the ``kind`` twin at ``where`` inlined (its map covers that code
    too, so a profiled callee inlined into a profiled caller keeps its samples): the other
    ``kind`` twins' code, but that of other dispatchers of the same source (``fast =
    njit(fastmath=True)(f)`` beside ``f``: their code has this function's very lines, not
    inlined); and the code of the unprofiled jitted callers relinked to call the twins (a helper
    profiled alone, which LLVM inlines into its caller's loop, runs there: its samples are the
    caller's addresses; loaded from the twin cache, that caller is the only code of the helper)."""
    others = [o[0] for o in runner.twin_code(kind).values() if o[0] is where[0] or o[1:] != where[1:]]
    return others + runner.relinked_code(kind)


def samples_inside(segments: list[RawSamples], maps: dict[Hashable, LineMap]) -> int:
    """How many samples of ``segments`` landed in any of the mapped functions."""
    inside = 0
    for raw in segments:
        inside += attribute(raw, maps).inside
    return inside


def measured(
    sampling: SegmentedSampling,
    maps: dict[Hashable, LineMap],
    twin: str,
    user: bool,
    runs: int,
    seconds: float,
    worth: float | None = None,
) -> Sampled:
    """The samples of ``sampling``'s segments charged to lines, as one measurement (``worth``:
    the user's runs' worth of calls the runs made, ``runs`` where each made all of them)."""
    unavailable = sampling.unavailable  # a function without a line map just gets no samples
    parts = []
    for raw in sampling.segments if unavailable is None else []:
        part = attribute(raw, maps)
        functions = {key: part.functions.get(key, LineSamples()) for key in maps}
        parts.append(
            Sampled(
                twin,
                user,
                total=part.total,
                outside=part.outside,
                cpu_seconds=part.total_seconds,
                outside_cpu_seconds=part.outside_seconds,
                stopped=dict(part.stopped),
                functions=functions,
            )
        )
    base = fold(parts) or Sampled(twin, user)
    return Sampled(
        twin,
        user,
        runs=runs,
        seconds=seconds,
        worth=runs if worth is None else worth,
        rate_hz=sampling.rate_hz,
        signals=sampling.signals,
        thread_seconds=sampling.thread_seconds,
        lowered=sampling.lowered,
        total=base.total,
        outside=base.outside,
        cpu_seconds=base.cpu_seconds,
        outside_cpu_seconds=base.outside_cpu_seconds,
        stopped=base.stopped,
        functions=base.functions,
        unavailable=unavailable,
    )
