"""The runs before the user's run: a timed plain run, then sampled repeats of it.

Both start from the state the user's call starts from (``snapshot``), and both
are silenced; the instrumented run that follows is the user's. The plain run is
timed without the sampler, for the overhead figure. The repeats are sampled: a
probe-free view of the optimized code needs thousands of samples, and a single
call of a quick kernel gives a handful.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..sampling import SampledLines
from .quiet import quiet
from .runner import PLAIN, Key, PhaseRun, Progress, Runner
from .sampled_run import SegmentedSampling, Where, charge, line_maps, samples_inside
from .snapshot import Snapshot


@dataclass
class SampledRepeats:
    """What the sampled repeats gave."""

    repeats: int = 0
    seconds: float = 0.0
    samples: SampledLines | None = None  # None: nothing sampled
    unavailable: str | None = None
    achieved_hz: float = 0.0
    restored: list = field(default_factory=list)  # snapshot items put back after some repeat


def plain_code(runner: Runner) -> dict[Key, Where]:
    """Where each target's plain twin code is, for the sampler's line maps."""
    where = {}
    for key, target in runner.targets.items():
        twin = target.twins.get(PLAIN)
        if twin is not None:
            last = target.source.first_lineno + len(target.source.lines) - 1
            where[key] = (twin.code, target.source.filename, target.source.first_lineno, last)
    return where


def plain_run(
    runner: Runner,
    execute: Callable[[PhaseRun], Any],
    namespaces: list[dict],
    progress: Progress | None,
    collect: Callable[[], None],
    snapshot: Snapshot,
) -> list:
    """The timed plain run; ``collect`` folds its counters. Returns the snapshot items put back."""
    try:
        with runner.phase(PLAIN, namespaces, progress) as run:
            try:
                with quiet():
                    execute(run)
            except (Exception, SystemExit):  # the instrumented run is the one the user sees
                pass
    finally:
        collect()
        restored = snapshot.restore()
    return restored


def sampled_repeats(
    runner: Runner,
    execute: Callable[[PhaseRun], Any],
    namespaces: list[dict],
    progress: Progress | None,
    snapshot: Snapshot,
    sampling: SegmentedSampling,
    min_samples: int,
    sample_time: float,
) -> SampledRepeats:
    """Repeat the plain run under the sampler until ``min_samples`` or ``sample_time`` seconds.

    At least one repeat runs, so the probe-free view is never empty; state is
    put back after each. Repeats run in batches inside one sampler segment,
    sized from what the previous batch yielded: starting and stopping the
    sampler and counting samples after every repeat cost about 10 ms each, more
    than a quick statement itself. Repeats are not part of the overhead figure
    (their counters are dropped).
    """
    result = SampledRepeats()
    started = time.perf_counter()
    maps = None
    inside, counted, batch = 0, 0, 1

    def spent() -> float:
        """Seconds of repeats so far: compiles (the twins', or a new signature's) do not count."""
        return time.perf_counter() - started - sampling.paused_seconds

    try:
        with runner.phase(PLAIN, namespaces, progress, sampling) as run:
            started = time.perf_counter()  # the twins compiled on entering the phase
            while True:
                batch_start = spent()
                with sampling.running(), quiet():
                    for _ in range(batch):
                        try:
                            execute(run)
                        except (Exception, SystemExit):
                            pass
                        finally:
                            result.restored += snapshot.restore(run.replacements)
                        result.repeats += 1
                per_repeat = (spent() - batch_start) / batch
                if sampling.unavailable is not None:
                    break
                if maps is None:
                    maps = line_maps(plain_code(runner))
                got = samples_inside(sampling.segments[counted:], maps)
                inside, counted = inside + got, len(sampling.segments)
                left = sample_time - spent()
                if inside >= min_samples or left < per_repeat / 2:
                    break
                wanted = math.ceil((min_samples - inside) * batch / max(got, 1))
                batch = max(1, min(wanted, int(left / max(per_repeat, 1e-9))))
    finally:
        runner.take_counts(PLAIN)
        result.seconds = spent()
        result.unavailable = sampling.unavailable
        if sampling.segments and sampling.unavailable is None:
            result.samples = charge(sampling, maps if maps is not None else line_maps(plain_code(runner)))
            result.unavailable = sampling.unavailable
            result.achieved_hz = sampling.achieved_hz
    return result
