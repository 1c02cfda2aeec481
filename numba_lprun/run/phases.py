"""The runs of one profiled call, as phase objects over one call context.

The user's run is one run of the statement on *counting* twins under the
sampler: exact hits from counters, per-line times from samples of code the
counters barely touch. Extra runs are made only where they cannot change what
the user sees: the state the call can reach was saved (``snapshot``) and is put
back after each, their output is discarded, and they come first, so the last
run, whose result, effects, output and exception the user gets, is the user's.
They are: a timed plain run (the overhead figure: the same call on plain twins,
sampled like the user's run so the sampler's own cost cancels), sampled repeats
of the plain run up to the sample target, a clock-probed run (``--probes``),
and a run counting allocations (``asm=True``).

Each phase appends frozen measurements to ``CallContext.made``; nothing else is
written anywhere. ``plan`` picks the phases; ``run_phases`` runs them.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from .compiles import Progress
from .measurements import (
    COUNTING,
    PLAIN,
    PROBED,
    Allocations,
    Counted,
    ExtraRun,
    FunctionCounts,
    Key,
    Measurement,
    RanOnce,
    Restored,
    Sampled,
)
from .quiet import quiet
from .runner import PhaseRun, Runner
from .sampled_run import SegmentedSampling, line_maps, measured, samples_inside
from .snapshot import Snapshot, describe

#: A run that is the only one starts sampling this many times faster (at most BOOST_MAX_HZ)
#: for its first BOOST_SAMPLES samples: about 0.1 s at the default rate.
BOOST_FACTOR, BOOST_MAX_HZ, BOOST_SAMPLES = 4.0, 10_000.0, 800


@dataclass(frozen=True)
class RunSettings:
    """How a call is to be profiled (what the options asked for)."""

    timing: bool = True  # False: hits only (no sampler, no clock probes)
    sample: bool = True  # sample the runs; False: times come from clock probes
    probes: bool = False  # also time every line with clock probes
    repeat: bool = True  # extra runs allowed where the call's state can be put back
    rate_hz: float = 2000.0
    sample_time: float = 1.0  # seconds of sampled repeats allowed
    min_samples: int = 2000  # samples in the profiled functions that end the repeats
    snapshot_budget: int | None = None
    asm: bool = False  # count allocations in one more run (machine-code view)


@dataclass
class CallContext:
    """What every phase of one call shares."""

    runner: Runner
    execute: Callable[[PhaseRun], Any]
    namespaces: list[dict]
    progress: Progress | None
    settings: RunSettings
    concurrent: bool  # a profiled function runs on several threads: sample every Numba thread
    snapshot: Snapshot | None = None
    made: list[Measurement] = field(default_factory=list)
    result: Any = None

    def sampling(self, boost: bool = False) -> SegmentedSampling:
        """A sampler for one phase; ``boost``: start faster (a run that is the only one)."""
        rate = self.settings.rate_hz
        fast = (min(BOOST_FACTOR * rate, BOOST_MAX_HZ), BOOST_SAMPLES) if boost else None
        return SegmentedSampling(rate, self.concurrent, fast)

    def restore(self) -> None:
        """Put back what the last extra run changed, and say what that was."""
        items = self.snapshot.restore()
        named = [i for i in items if i.kind != "bindings"]  # a statement binding its names is no news
        if named:
            self.made.append(
                Restored({i.name: describe([i]) for i in named}, {i.name: i.nbytes for i in named})
            )


class Phase(Protocol):
    def run(self, ctx: CallContext) -> None: ...


def _sampled(sampling: SegmentedSampling | None):
    return sampling.running() if sampling is not None else contextlib.nullcontext()


def _silently(ctx: CallContext, run: PhaseRun, silenced: bool = False) -> None:
    """An extra run: its output is discarded (``silenced``: already), its exception is not the user's."""
    with contextlib.nullcontext() if silenced else quiet():
        try:
            ctx.execute(run)
        except (Exception, SystemExit):
            pass


def _extra_run(ctx: CallContext, kind: str, sampled: bool, label: str) -> None:
    """One silent run of the statement on ``kind`` twins (sampled if asked), its counts and
    samples appended, and the state put back: the timed plain run and the probed run."""
    sampling = ctx.sampling() if sampled else None
    started = time.perf_counter()
    try:
        with ctx.runner.phase(kind, ctx.namespaces, ctx.progress, sampling) as run:
            started = time.perf_counter()
            with _sampled(sampling):
                _silently(ctx, run)
    finally:
        seconds = time.perf_counter() - started - (sampling.paused_seconds if sampling else 0.0)
        ctx.made.append(Counted(kind, False, _one_run(ctx.runner.take_counts(kind))))
        if sampling is not None:
            maps = line_maps(ctx.runner.twin_code(kind))
            ctx.made.append(measured(sampling, maps, kind, False, 1, seconds))
        ctx.made.append(ExtraRun(label))
        ctx.restore()


@dataclass(frozen=True)
class PlainRun:
    """The call on plain twins, timed (and sampled): the overhead figure's baseline."""

    sampled: bool

    def run(self, ctx: CallContext) -> None:
        _extra_run(ctx, PLAIN, self.sampled, "timed plain run")


@dataclass(frozen=True)
class SampledRepeats:
    """The plain run repeated under the sampler until the user's run will bring the total
    to ``min_samples`` in the profiled functions, or ``sample_time`` is spent.

    Repeats run in batches inside one sampler segment, sized from what the previous
    batch yielded: starting and stopping the sampler and counting samples after every
    repeat cost about 10 ms each, more than a quick statement itself. What the
    first batch compiles (a signature first seen) does not count against the time;
    later compiles do. A statement that defines its jitted code itself (a cell
    defining a jitclass) is not repeated at all: each repeat would compile it again.
    """

    def run(self, ctx: CallContext) -> None:
        settings = ctx.settings
        plain = [m for m in ctx.made if isinstance(m, Sampled) and m.twin == PLAIN]
        per_run = plain[-1].inside if plain else 0
        have = sum(m.inside for m in plain) + per_run  # the user's run brings about one run's worth
        if have >= settings.min_samples or settings.sample_time <= 0:
            return
        if ctx.runner.adopted:  # the statement defines its jitted code: each repeat compiles it again
            return
        sampling = ctx.sampling()
        repeats, batch, seen = 0, _first_batch(settings, per_run, have), 0
        counted: list = []  # each repeat's counts: the spread of the plain run's time
        started = time.perf_counter()
        maps = None

        warm_up = [0.0]  # compile time of the first batch (new signatures): not counted

        def spent() -> float:
            return time.perf_counter() - started - warm_up[0]

        try:
            with ctx.runner.phase(PLAIN, ctx.namespaces, ctx.progress, sampling) as run:
                started = time.perf_counter()
                while True:
                    batch_start = spent()
                    with sampling.running(), quiet():  # one redirection per batch: it costs 0.1 ms
                        for _ in range(batch):
                            if repeats and spent() > settings.sample_time:
                                break
                            try:
                                _silently(ctx, run, silenced=True)
                            finally:
                                ctx.restore()
                            counted.append(ctx.runner.take_totals(PLAIN))
                            repeats += 1
                    if repeats == batch:  # the first batch: what it compiled is set-up, not repeats
                        warm_up[0] = sampling.paused_seconds
                    per_repeat = (spent() - batch_start) / batch
                    if sampling.unavailable is not None:
                        break
                    maps = maps or line_maps(ctx.runner.twin_code(PLAIN))
                    got = samples_inside(sampling.segments[seen:], maps)
                    have, seen = have + got, len(sampling.segments)
                    left = settings.sample_time - spent()
                    if have >= settings.min_samples or left < per_repeat / 2:
                        break
                    wanted = math.ceil((settings.min_samples - have) * batch / max(got, 1))
                    batch = max(1, min(wanted, int(left / max(per_repeat, 1e-9))))
        finally:
            ctx.runner.take_counts(PLAIN)
            if counted:  # warm runs of the same call: the overhead figure's best baseline
                ctx.made.append(Counted(PLAIN, False, _runs_of(counted), runs=len(counted)))
                maps = maps or line_maps(ctx.runner.twin_code(PLAIN))
                ctx.made.append(measured(sampling, maps, PLAIN, False, repeats, spent()))
                ctx.made.append(ExtraRun("sampled repeat of the plain run", repeats))


def _runs_of(totals: list[list[tuple[Key, int, int]]]) -> dict[Key, FunctionCounts]:
    """Counts of several runs from each run's totals, each run's time kept (``per_run``)."""
    calls: dict[Key, int] = {}
    ticks: dict[Key, list[int]] = {}
    for run in totals:
        for key, n, t in run:
            calls[key] = calls.get(key, 0) + n
            ticks.setdefault(key, []).append(t)
    return {key: FunctionCounts(calls[key], sum(ticks[key]), per_run=tuple(ticks[key])) for key in calls}


def _one_run(counts: dict) -> dict:
    """Counts of one run, each function's time kept as that run's (``per_run``)."""
    return {key: replace(c, per_run=(c.ticks,)) for key, c in counts.items()}


def _first_batch(settings: RunSettings, per_run: int, have: int) -> int:
    """Repeats for the first batch: enough for the target at the plain run's yield, at most 1 s's worth."""
    if per_run <= 0:
        return 1
    return max(1, min(math.ceil((settings.min_samples - have) / per_run), 1000))


@dataclass(frozen=True)
class ProbedRun:
    """The call on clock-probed twins (``--probes``): per-line times from the probes.

    Sampled like the plain and the user's runs (``sampled``), so that the sampler's
    own cost cancels in the probed/plain ratio; its samples describe probed code
    and are kept apart from the shares (``Sampled.twin``)."""

    sampled: bool = False

    def run(self, ctx: CallContext) -> None:
        _extra_run(ctx, PROBED, self.sampled, "probed run")


@dataclass(frozen=True)
class AllocationRun:
    """One more plain run with every allocation of Numba's runtime recorded (``asm=True``).

    A run of its own: the hook that records each allocation's stack costs a
    backtrace per allocation, which would distort the timed run and the samples;
    the count is exact in any run of the same call.
    """

    def run(self, ctx: CallContext) -> None:
        from ..machine.allocations import allocations_per_line, counting, unavailable

        why = unavailable()
        if why is not None:
            ctx.made.append(Allocations(None, why))
            return
        try:
            with ctx.runner.phase(PLAIN, ctx.namespaces, ctx.progress) as run:
                with counting() as counted:
                    _silently(ctx, run)
        finally:
            ctx.runner.take_counts(PLAIN)
            ctx.restore()
        dropped = counted.get("dropped")
        if dropped or dropped is None:
            total = len(counted.get("stacks", ())) + (dropped or 0)
            ctx.made.append(
                Allocations(None, f"the counted run allocated {total:,} times, more than it can record")
            )
            return
        maps = line_maps(ctx.runner.twin_code(PLAIN))
        ctx.made.append(Allocations(allocations_per_line(counted["stacks"], maps)))
        ctx.made.append(ExtraRun("plain run counting allocations"))


@dataclass(frozen=True)
class UserRun:
    """The user's run: on ``kind`` twins (counting, or probed), sampled or not.

    Its result, effects, output and exception are the user's. When it is the only
    run (``boost``), it is sampled faster at first: a short run still gets a few
    hundred samples, and a long one pays the faster rate for its first
    ``BOOST_SAMPLES`` samples only."""

    kind: str
    sampled: bool
    boost: bool = False

    def run(self, ctx: CallContext) -> None:
        sampling = ctx.sampling(self.boost) if self.sampled else None
        started = time.perf_counter()
        try:
            with ctx.runner.phase(self.kind, ctx.namespaces, ctx.progress, sampling) as run:
                started = time.perf_counter()
                with _sampled(sampling):
                    ctx.result = ctx.execute(run)
        finally:
            seconds = time.perf_counter() - started - (sampling.paused_seconds if sampling else 0.0)
            ctx.made.append(Counted(self.kind, True, ctx.runner.take_counts(self.kind)))
            if sampling is not None:
                maps = line_maps(ctx.runner.twin_code(self.kind))
                ctx.made.append(measured(sampling, maps, self.kind, True, 1, seconds))


def user_twin(settings: RunSettings, sampler_unavailable: str | None, extra_runs: bool) -> tuple[str, bool]:
    """What the user's run runs on, and whether it is sampled.

    Counting twins under the sampler by default; where no sampler can run (or
    ``--no-sample``) times must come from clock probes, so the user's run is
    probed; with ``--probes`` and no extra run allowed, the probes ride on the
    user's run too. Hits only: counting, unsampled.
    """
    if not settings.timing:
        return COUNTING, False
    sampled = settings.sample and sampler_unavailable is None
    if not sampled or (settings.probes and not extra_runs):
        return PROBED, sampled
    return COUNTING, True


@dataclass(frozen=True)
class PlainBuild:
    """Compile the plain twins without running them, after a user's run that had no extra run.

    The overhead cannot be measured then, but both twins carry line tables, so
    which loops LLVM vectorized in each can still be compared: evidence of
    distortion that needs no run.
    """

    user_kind: str = COUNTING

    def run(self, ctx: CallContext) -> None:
        with ctx.runner.phase(PLAIN, ctx.namespaces, ctx.progress):
            ctx.runner.compile_like_user(self.user_kind)
        ctx.runner.take_counts(PLAIN)


@dataclass(frozen=True)
class Plan:
    """The phases of one call: extra runs, the user's run, and what comes after it."""

    before: tuple[Phase, ...]
    user: UserRun
    after: tuple[Phase, ...] = ()


def plan(settings: RunSettings, once: str | None, sampler_unavailable: str | None) -> Plan:
    """The phases of one call; ``once`` says why no extra run may be made (None: they may)."""
    kind, sampled = user_twin(settings, sampler_unavailable, once is None)
    before: list[Phase] = []
    after: list[Phase] = []
    if once is None and settings.timing:
        before.append(PlainRun(sampled))
        if sampled:
            before.append(SampledRepeats())
        if settings.probes and kind != PROBED:
            before.append(ProbedRun(sampled))
        if settings.asm:
            before.append(AllocationRun())
    elif settings.timing:
        after.append(PlainBuild(kind))
    return Plan(tuple(before), UserRun(kind, sampled, boost=once is not None), tuple(after))


def run_phases(ctx: CallContext, planned: Plan, once: str | None) -> Any:
    """Run the planned phases in order; the user's run's result is returned (its exception
    raised). The phases after it run only when it completed."""
    if once is not None:
        ctx.made.append(RanOnce(once))
    for phase in planned.before:
        phase.run(ctx)
    planned.user.run(ctx)
    for phase in planned.after:
        phase.run(ctx)
    return ctx.result
