"""Sample plain runs, then charge the samples to source lines.

The plain twin carries line tables and no line probes, so sampling it shows the
optimized code as it really runs. Numba must not compile while the native
sampler is armed (its unwinder lock), so sampling pauses around every compile
during the run and resumes after it; each stretch is one segment.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

from ..sampling import LineMap, RawSamples, SampledLines, Sampler, attribute, line_map


@dataclass
class SegmentedSampling:
    """Samples of one run, in segments split by Numba compiles."""

    rate_hz: float
    parallel: bool
    segments: list[RawSamples] = field(default_factory=list)
    unavailable: str | None = None
    paused_seconds: float = 0.0  # time paused inside running blocks (Numba compiling)
    _sampler: Sampler | None = None
    _running: bool = False
    _paused_at: float | None = None

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        self._running = True
        self._paused_at = None
        self.resume()
        try:
            yield
        finally:
            self.pause()
            self._running = False
            self._paused_at = None

    def pause(self) -> None:
        if self._running and self._paused_at is None:
            self._paused_at = time.perf_counter()
        if self._sampler is not None:
            sampler, self._sampler = self._sampler, None
            sampler.__exit__(None, None, None)
            self.segments.append(sampler.samples)

    def resume(self) -> None:
        if self._running and self._paused_at is not None:
            self.paused_seconds += time.perf_counter() - self._paused_at
            self._paused_at = None
        if not self._running or self._sampler is not None or self.unavailable is not None:
            return
        sampler = Sampler(rate_hz=self.rate_hz, numba_threads=self.parallel)
        sampler.__enter__()
        if sampler.unavailable is not None:
            self.unavailable = sampler.unavailable
            return
        self._sampler = sampler

    @property
    def achieved_hz(self) -> float:
        rates = [s.achieved_hz for s in self.segments if s.count]
        return sum(rates) / len(rates) if rates else 0.0


Where = tuple[object, str, int, int]  # dispatcher, filename, first line, last line


def line_maps(functions: dict[Hashable, Where]) -> dict[Hashable, LineMap]:
    """Address-to-line maps of each function's compiled code (key -> where its code is).

    Each map also covers the function's code inlined into the others' (so a
    profiled callee inlined into a profiled caller keeps its samples)."""
    hosts = [where[0] for where in functions.values()]
    return {key: line_map(*where, hosts=hosts) for key, where in functions.items()}


def samples_inside(segments: list[RawSamples], maps: dict[Hashable, LineMap]) -> int:
    """How many samples of ``segments`` landed in any of the mapped functions."""
    inside = 0
    for raw in segments:
        part = attribute(raw, maps)
        inside += part.total - part.outside
    return inside


def charge(sampling: SegmentedSampling, maps: dict[Hashable, LineMap]) -> SampledLines:
    """Samples per line of each mapped function, over all segments."""
    missing = [lmap.unavailable for lmap in maps.values() if lmap.unavailable]
    if missing and sampling.unavailable is None and len(missing) == len(maps):
        sampling.unavailable = missing[0]
    total = SampledLines()
    for raw in sampling.segments:
        part = attribute(raw, maps)
        total.total += part.total
        total.outside += part.outside
        total.total_seconds += part.total_seconds
        total.outside_seconds += part.outside_seconds
        for key in maps:
            for line, count in part.lines.get(key, {}).items():
                total.lines.setdefault(key, {})[line] = total.lines.get(key, {}).get(line, 0) + count
            for line, secs in part.seconds.get(key, {}).items():
                total.seconds.setdefault(key, {})[line] = total.seconds.get(key, {}).get(line, 0.0) + secs
            addresses = total.addresses.setdefault(key, {})
            for address, count in part.addresses.get(key, {}).items():
                addresses[address] = addresses.get(address, 0) + count
    return total
