"""The runs of one profiled call, as phase objects over one call context.

The user's run comes first and is the only run of the user's statement: its result,
effects, output and exception are the user's. It runs on *counting* twins under the
sampler (exact hits from counters, per-line times from samples of code the counters
barely touch), and its Python-level calls of the profiled functions (and of their jitted
callers) are recorded (``replay.CallRecorder``). If it raised, nothing else runs. Extra
runs replay those calls, never the statement, each on fresh copies of the arguments, so
nothing outside the jitted code runs twice (a file appended to, a database written, a job
submitted); the random states (Numba's own, NumPy's, Python's) are put back before each
and left as the user's run left them after the last (``snapshot``). Their output is
discarded. They are a timed plain replay (the overhead figure: the same calls on plain
twins, sampled like the user's run so the sampler's own cost cancels) and sampled replays
up to the sample target, made only when the user's run was short enough
(``RunSettings.extra_limit``: a replay costs about what the user's calls did); a
clock-probed replay (``--probes``) and a replay counting allocations (``asm=True``), made
whenever asked for. A replay that raises stops the extra runs.

Each phase appends frozen measurements to ``CallContext.made``; nothing else is
written anywhere. ``plan`` picks the phases; ``run_phases`` runs them.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, replace
from typing import Any

from .call_context import CallContext, Phase, RunSettings, sampled_by, silently, too_long
from .compiles import failed_compiles
from .measurements import (
    COUNTING,
    MIN_PLAIN_RUNS,
    PLAIN,
    PROBED,
    Allocations,
    CacheKept,
    Counted,
    Differed,
    ExtraRun,
    FunctionCounts,
    HitsShort,
    Key,
    RanOnce,
    Sampled,
    Unprofiled,
)
from .naming import options_of
from .page_faults import faults_since, minor_faults
from .phase_run import PhaseRun
from .plain_build import PlainBuild
from .quiet import quiet
from .sampled_run import measured, samples_inside, twins_line_maps
from .targets import sampled_lines
from .unreached import unreached_linkers

__all__ = ["CallContext", "Phase", "Plan", "RunSettings", "plan", "run_phases"]


def _own_seconds(run: PhaseRun | None, started: float, ended: float | None = None) -> float:
    """A run's wall time from ``started`` to ``ended`` (now, where it did not end), the compiles
    inside it left out (sampled or not: a ufunc's twin compiles on its first call, and that is
    not the user's code's time)."""
    now = time.perf_counter() if ended is None else ended
    return now - started - (run.compiling_since(started) if run is not None else 0.0)


def _own_faults(run: PhaseRun | None, started: float, faults_at: int) -> int:
    """A run's page faults since ``faults_at`` (counted at ``started``), its compiles' left out;
    -1 where unknown (``page_faults``: why a first run is slower)."""
    compiling = run.faults_compiling_since(started) if run is not None else 0
    total = faults_since(faults_at)
    return -1 if total < 0 or compiling < 0 else max(0, total - compiling)


def _extra_run(ctx: CallContext, kind: str, sampled: bool, label: str) -> None:
    """One silent run of the statement on ``kind`` twins (sampled if asked), its counts and
    samples appended, and the state put back: the timed plain run and the probed run."""
    sampling = ctx.sampling(kind) if sampled else None
    started, ended, faults_at = time.perf_counter(), None, -1
    completed = False
    run = None
    try:
        with ctx.runner.phase(kind, ctx.namespaces, ctx.progress, sampling, replaying=True) as run:
            with sampled_by(sampling):  # the run's time starts once the sampler has (see UserRun)
                started, faults_at = time.perf_counter(), minor_faults()
                completed = silently(ctx, run, compare=kind == PLAIN)
                ended = time.perf_counter()
    finally:
        seconds = _own_seconds(run, started, ended)
        faults = _own_faults(run, started, faults_at)
        counts = ctx.runner.take_counts(kind)
        _cache_kept(ctx, run)
        if completed:  # a run cut short measured part of a call: nothing to compare or add up
            if kind == PLAIN:
                _compare_results(ctx)
            compiled = run is not None and run.compiling_since(started) > 0
            ctx.made.append(Counted(kind, False, _one_run(counts), faults=(faults,), compiled=compiled))
            if sampling is not None:
                maps = twins_line_maps(ctx.runner, kind)
                ctx.made.append(measured(sampling, maps, kind, False, 1, seconds, ctx.replay_share))
            ctx.made.append(ExtraRun(label))
        ctx.restore()


def _cache_kept(ctx: CallContext, run: PhaseRun | None) -> None:
    """Say which entries of the program's own cache the run kept out (linked against a twin)."""
    if run is not None and run.cache_refused:
        ctx.made.append(CacheKept(tuple(dict.fromkeys(run.cache_refused))))


def _compare_results(ctx: CallContext) -> None:
    """The plain replay's results against the user's run's calls' (``differences``): what each
    call returned and changed. Only where every call was replayed (a sample of them, or calls
    left out, would compare other calls' effects on shared state)."""
    if any(isinstance(m, Differed) for m in ctx.made):
        return  # compared with the first plain run already
    fastmath = _fastmath(ctx)
    if ctx.recorder is None or not ctx.recorder.complete or ctx.extra_result is None:
        if fastmath:  # fastmath results may differ, and no replay could say how much
            ctx.made.append(Differed({}, fastmath, measured=False))
        return
    if ctx.extra_result or fastmath:
        ctx.made.append(Differed(ctx.extra_result, fastmath))


def _fastmath(ctx: CallContext) -> tuple[str, ...]:
    """The profiled functions compiled with ``fastmath``."""
    found = [t.original for t in ctx.runner.targets.values()]
    return tuple(getattr(d, "__name__", "?") for d in found if "fastmath" in options_of(d))


@dataclass(frozen=True)
class PlainRun:
    """The call on plain twins, timed (and sampled): the overhead figure's baseline."""

    sampled: bool

    def run(self, ctx: CallContext) -> None:
        described = ctx.recorder.described() if ctx.recorder is not None else "your run's calls"
        _extra_run(ctx, PLAIN, self.sampled, f"timed plain replay of {described}")


@dataclass(frozen=True)
class SampledRepeats:
    """The plain replay repeated under the sampler until the user's run will bring the total
    to ``min_samples`` in the profiled functions, or ``sample_time`` is spent.

    Repeats run in batches inside one sampler segment, sized from what the previous
    batch yielded: starting and stopping the sampler and counting samples after every
    repeat cost about 10 ms each, more than a quick statement itself. What the
    first batch compiles (a signature first seen) does not count against the time;
    later compiles do.
    """

    def run(self, ctx: CallContext) -> None:
        settings = ctx.settings
        # a ufunc's code has no line tables: where nothing profiled can be sampled, the repeats
        # are for the plain runs' spread only
        sampled = any(sampled_lines(t, PLAIN) for t in ctx.runner.targets.values())
        wanted = settings.min_samples if sampled else 0
        plain = [m for m in ctx.made if isinstance(m, Sampled) and m.twin == PLAIN]
        per_run = plain[-1].inside if plain else 0
        have = sum(m.inside for m in ctx.made if isinstance(m, Sampled) and (m.twin == PLAIN or m.user))
        # enough plain runs for an overhead figure (measurements.MIN_PLAIN_RUNS), time allowing
        need = MIN_PLAIN_RUNS - sum(m.runs for m in ctx.made if isinstance(m, Counted) and m.twin == PLAIN)
        if (have >= wanted and need <= 0) or settings.sample_time <= 0 or ctx.stopped:
            return
        sampling = ctx.sampling(PLAIN)
        repeats, batch, seen = 0, max(need, _first_batch(settings, per_run, have)), 0
        counted: list = []  # each repeat's counts: the spread of the plain run's time
        faults: list[int] = []  # and its page faults
        started = time.perf_counter()
        maps = None

        warm_up = [0.0]  # compile time of the first batch (new signatures): not counted

        def spent() -> float:
            return time.perf_counter() - started - warm_up[0]

        try:
            with ctx.runner.phase(PLAIN, ctx.namespaces, ctx.progress, sampling, replaying=True) as run:
                started = time.perf_counter()
                while True:
                    batch_start = spent()
                    with sampling.running(), quiet():  # one redirection per batch: it costs 0.1 ms
                        for _ in range(batch):
                            if repeats and spent() > settings.sample_time:
                                break
                            began, faults_at = time.perf_counter(), minor_faults()
                            try:
                                completed = silently(ctx, run, silenced=True)
                            finally:
                                faults.append(_own_faults(run, began, faults_at))
                                ctx.restore(quick=True)
                            if not completed:
                                ctx.runner.take_totals(PLAIN)
                                break
                            counted.append(ctx.runner.take_totals(PLAIN))
                            repeats += 1
                    if repeats == batch:  # the first batch: what it compiled is set-up, not repeats
                        warm_up[0] = run.compiling_since(started)
                    per_repeat = (spent() - batch_start) / batch
                    if sampling.unavailable is not None or ctx.stopped:
                        break
                    maps = maps or twins_line_maps(ctx.runner, PLAIN)
                    got = samples_inside(sampling.segments[seen:], maps)
                    have, seen = have + got, len(sampling.segments)
                    left = settings.sample_time - spent()
                    if (have >= wanted and repeats >= need) or left < per_repeat / 2:
                        break
                    more = max(need - repeats, math.ceil((wanted - have) * batch / max(got, 1)))
                    batch = max(1, min(more, int(left / max(per_repeat, 1e-9))))
        finally:
            ctx.restore()  # every item checked again: the quick ones left some unchecked
            ctx.runner.take_counts(PLAIN)
            if counted:  # warm runs of the same call: the overhead figure's best baseline
                faults = faults[: len(counted)]
                ctx.made.append(Counted(PLAIN, False, _runs_of(counted), len(counted), tuple(faults)))
                maps = maps or twins_line_maps(ctx.runner, PLAIN)
                worth = repeats * ctx.replay_share  # each replay made that share of your run's calls
                ctx.made.append(measured(sampling, maps, PLAIN, False, repeats, spent(), worth))
                ctx.made.append(ExtraRun("sampled replay", repeats))


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
        _extra_run(ctx, PROBED, self.sampled, "probed replay")


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
            with ctx.runner.phase(PLAIN, ctx.namespaces, ctx.progress, replaying=True) as run:
                with counting() as counted:
                    silently(ctx, run)
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
        maps = twins_line_maps(ctx.runner, PLAIN)
        ctx.made.append(Allocations(allocations_per_line(counted["stacks"], maps)))
        ctx.made.append(ExtraRun("plain replay counting allocations"))


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
    records: bool = False  # its calls are recorded, for the extra runs to replay
    # seconds of the run past which the recorded calls are of no use (only the runs a run this
    # long leaves out would replay them): recording stops and what it kept is dropped
    records_until: float | None = None

    def run(self, ctx: CallContext) -> None:
        sampling = ctx.sampling(self.kind, self.boost, users_run=True) if self.sampled else None
        started, ended, faults_at = time.perf_counter(), None, -1
        run = None
        try:
            recorder = ctx.recorder if self.records else None
            with ctx.runner.phase(
                self.kind, ctx.namespaces, ctx.progress, sampling, recorder=recorder
            ) as run:
                watching = ctx.children.watching() if ctx.children else contextlib.nullcontext()
                with sampled_by(sampling), watching:
                    # the run's own time: from once the sampler has started (its tables read, its
                    # handler loaded: 0.2 s or more in a process's first profile, over --extra-limit
                    # for a short run on a busy machine) to the statement's end, not the stop
                    started, faults_at = time.perf_counter(), minor_faults()
                    if recorder is not None and self.records_until is not None:
                        recorder.stop_after(self.records_until, lambda: _own_seconds(run, started))
                    try:
                        ctx.result = ctx.execute(run)
                    finally:
                        ended = time.perf_counter()
        finally:
            seconds = _own_seconds(run, started, ended)
            ctx.user_seconds = seconds
            faults = (_own_faults(run, started, faults_at),)
            compiled = run is not None and run.compiling_since(started) > 0  # its time leaves that out
            counts = ctx.runner.take_counts(self.kind)
            ctx.made.append(Counted(self.kind, True, counts, faults=faults, compiled=compiled))
            silent = [k for k, c in counts.items() if not c.calls and not c.hits]
            unreached = unreached_linkers({k: ctx.runner.targets[k].original for k in silent})
            if unreached is not None:
                ctx.made.append(unreached)
            if run is not None and run.unprofiled:
                ctx.made.append(Unprofiled(dict(run.unprofiled)))
            if run is not None and run.short:
                ctx.made.append(HitsShort(dict(run.short)))
            _cache_kept(ctx, run)
            failed = failed_compiles(ctx.runner.targets, run.compiles if run is not None else None, self.kind)
            if failed is not None:
                ctx.made.append(failed)
            if sampling is not None:
                maps = twins_line_maps(ctx.runner, self.kind)
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
class Plan:
    """The phases of one call: the user's run, then extra runs, then what needs no run."""

    user: UserRun
    extra: tuple[Phase, ...] = ()
    after: tuple[Phase, ...] = ()


def plan(settings: RunSettings, once: str | None, sampler_unavailable: str | None) -> Plan:
    """The phases of one call; ``once`` says why no extra run may be made (None: they may)."""
    kind, sampled = user_twin(settings, sampler_unavailable, once is None)
    extra: list[Phase] = []
    if once is None and settings.timing:
        extra.append(PlainRun(sampled))
        if sampled:
            extra.append(SampledRepeats())
        if settings.probes and kind != PROBED:
            extra.append(ProbedRun(sampled))
        if settings.asm:
            extra.append(AllocationRun())
    after = (PlainBuild(kind),) if settings.timing else ()
    # a run longer than --extra-limit gets no plain run and no sampled repeats (``too_long``)
    until = settings.extra_limit if all(isinstance(p, (PlainRun, SampledRepeats)) for p in extra) else None
    user = UserRun(kind, sampled, boost=once is not None, records=bool(extra), records_until=until)
    return Plan(user, tuple(extra), after)


def run_phases(ctx: CallContext, planned: Plan, once: str | None) -> Any:
    """Run the user's run, then the extra runs (where allowed), then what needs no run; the
    user's run's result is returned (its exception raised, and nothing more run)."""
    if once is not None:
        ctx.made.append(RanOnce(once))
    try:
        planned.user.run(ctx)
    except BaseException as exc:
        if once is None:  # say so where the run model is told: the header and the overhead note
            what = "was interrupted" if isinstance(exc, KeyboardInterrupt) else f"raised {type(exc).__name__}"
            ctx.made.append(RanOnce(f"your run {what}, so nothing more was run"))
        raise
    extra = list(planned.extra)
    elsewhere = ctx.children.elsewhere() if ctx.children is not None and extra else None
    if elsewhere:  # a second run would do that work again, and it would be counted twice
        extra = []
        ctx.made.append(RanOnce(elsewhere))
    long = too_long(ctx) if extra else None
    if long is not None:  # (first: a recorder that stopped past the limit kept no call)
        extra = [p for p in extra if not isinstance(p, (PlainRun, SampledRepeats))]
        if not extra:
            ctx.made.append(RanOnce(long))
    if extra and ctx.recorder is not None and ctx.recorder.calls:
        # what the user's run left, written back after the replays (a call that only read an
        # array the statement changed since is dropped: no replay could start from what it read)
        ctx.recorder.keep_final()
    if extra and (ctx.recorder is None or not ctx.recorder.calls):
        extra = []
        ctx.made.append(
            RanOnce(ctx.recorder.why_none() if ctx.recorder is not None else "no call was recorded")
        )
    if extra:
        try:
            ctx.restore()
            for phase in extra:
                if ctx.stopped is None:
                    phase.run(ctx)
        finally:
            ctx.recorder.put_back()
    plain_runs = any(isinstance(m, Counted) and m.twin == PLAIN for m in ctx.made)
    fastmath = () if plain_runs else _fastmath(ctx)
    if fastmath:  # fastmath results may differ, and no plain run says how much
        ctx.made.append(Differed({}, fastmath, measured=False))
    if ctx.stopped is not None and not plain_runs:
        ctx.made.append(RanOnce(ctx.stopped))
    if not plain_runs:
        for phase in planned.after:
            phase.run(ctx)
    return ctx.result
