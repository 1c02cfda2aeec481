"""Measurements in, the frozen profile out: one pure function.

Each profiled call leaves a ``CallRecord`` (what its phases measured, and what
is known of each function's twins), and the profiler adds each one to what it
holds (``merge_records``); :func:`assemble` turns that record into a
``ProfileStats``: per function the measured parts first, then the diagnosis judged
from them, then the machine code and its hints on the hot lines, and the
``FunctionStats`` made once of them all. Nothing here runs code or reads a twin,
so the same measurements always give the same profile (only
:func:`assembly_settings` reads something: the probes' cost, measured once per
process, where probes ran).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .diagnose import DEFAULT_THRESHOLD, diagnose
from .instrument.calibrate import probe_cost_ticks
from .instrument.clock import ClockInfo
from .machine import CodeFacts, CodeReading, function_hints, with_allocations
from .run.measurements import (
    COUNTING,
    PLAIN,
    PROBED,
    Allocations,
    CacheKept,
    CallRecord,
    CodeUncompared,
    Compared,
    Comparison,
    CompileFailed,
    Counted,
    Differed,
    ExtraRun,
    FunctionCounts,
    FunctionFacts,
    HitsShort,
    Key,
    LineSamples,
    RanOnce,
    Restored,
    Sampled,
    Unprofiled,
    Unreached,
    fold,
    restored_union,
)
from .run.phases import RunSettings
from .sampling import sampler_unavailable
from .stats import (
    PROBES,
    SAMPLES,
    Counts,
    Diagnosis,
    Distortion,
    FunctionStats,
    MachineCode,
    Measured,
    Probes,
    ProfileStats,
    RunsSummary,
    SamplingSummary,
    Source,
)

HINTED_LINES = 3  # hot lines the hints describe


@dataclass(frozen=True)
class AssemblySettings:
    """What the profile is read with: the options and the clock."""

    unit: float  # seconds per tick
    clock: str  # a sentence about the clock
    probe_cost: float = 0.0  # ticks one probe adds per hit
    threshold: float = DEFAULT_THRESHOLD
    corrected: bool = True  # take the probes' cost out of probe times
    timing: bool = True
    sample: bool = True  # sampling was asked for
    sampler_unavailable: str | None = None
    rate_hz: float = 2000.0
    min_samples: int = 2000
    asm: bool = False


def assembly_settings(
    settings: RunSettings, clock: ClockInfo, threshold: float, corrected: bool, record: CallRecord
) -> AssemblySettings:
    """How to read ``record``: the clock's unit, the options, and the probe cost where probes ran
    (measured once per process, so only when needed)."""
    probed = any(any(f.line_ticks for f in m.functions.values()) for m in record.of(Counted))
    return AssemblySettings(
        unit=clock.seconds_per_tick,
        clock=clock.note,
        probe_cost=probe_cost_ticks(clock.kind) if probed else 0.0,
        threshold=threshold,
        corrected=corrected,
        timing=settings.timing,
        sample=settings.sample,
        sampler_unavailable=sampler_unavailable() if settings.sample else None,
        rate_hz=settings.rate_hz,
        min_samples=settings.min_samples,
        asm=settings.asm,
    )


def assemble(
    record: CallRecord | None,
    settings: AssemblySettings,
    readings: dict[Key, CodeReading] | None = None,
) -> ProfileStats:
    """The profile of every call ``record`` holds."""
    record = record or CallRecord()
    allocations = fold(record.of(Allocations))
    sampling = _sampling(record, settings)
    unavailable = sampling.unavailable if sampling is not None else settings.sampler_unavailable
    ran = sampling.total if sampling is not None else 0  # the run's samples
    functions = []
    for fact in record.facts:
        measured = _measured(fact, record, settings, sampling)
        verdict = diagnose(measured, settings.unit, settings.threshold, settings.corrected, unavailable, ran)
        machine = _machine(measured, verdict, (readings or {}).get(fact.key), allocations, record)
        parts = (measured.counts, measured.samples, measured.probes, measured.distortion, machine)
        functions.append(FunctionStats(measured.source, *parts, diagnosis=verdict))
    unprofiled = fold(record.of(Unprofiled))
    reasons = tuple(unprofiled.reasons.values()) if unprofiled is not None else ()
    kept = fold(record.of(CacheKept))
    short = fold(record.of(HitsShort))
    return ProfileStats(
        settings.unit,
        settings.clock,
        tuple(functions),
        sampling,
        _runs(record),
        settings.threshold,
        unprofiled=reasons,
        cache_kept=tuple(dict.fromkeys(kept.entries)) if kept is not None else (),
        short=tuple(short.reasons.values()) if short is not None else (),
    )


def _counts(record: CallRecord, key: Key, twin: str | None, user: bool | None) -> FunctionCounts:
    found = [
        m.functions[key]
        for m in record.of(Counted)
        if key in m.functions and (twin is None or m.twin == twin) and (user is None or m.user == user)
    ]
    return fold(found) or FunctionCounts()


def _compared(record: CallRecord, key: Key, twin: str, user: bool) -> Compared:
    found = [
        m.functions[key]
        for m in record.of(Comparison)
        if m.twin == twin and m.user == user and key in m.functions
    ]
    return fold(found) or Compared()


def _user_twin(record: CallRecord) -> str:
    users = [m.twin for m in record.of(Counted) if m.user]
    return users[-1] if users else COUNTING


def _measured(
    fact: FunctionFacts, record: CallRecord, settings: AssemblySettings, sampling: SamplingSummary | None
) -> Measured:
    """Every measured part of one function's profile: what its diagnosis is judged from."""
    key, run_twin = fact.key, _user_twin(record)
    user = _counts(record, key, None, True)
    # clock probes: the user's run carried them for this function, or an extra probed run did
    probed = user if user.line_ticks else _counts(record, key, PROBED, False)
    sampled = fold(m.functions[key] for m in _sampled(record) if key in m.functions) or LineSamples()
    if not settings.timing:
        time_source = None
    elif sampling is not None and sampling.unavailable is None and not fact.unsampled:
        time_source = SAMPLES
    elif probed.line_ticks:
        time_source = PROBES
    else:
        time_source = None
    run_ticks = user.ticks
    if not fact.calls_timed and time_source == SAMPLES:  # a helper: its time is its samples'
        run_ticks = round(_sampled_seconds(record, key) / settings.unit)
    vs_plain = _too_short(_compared(record, key, run_twin, True), settings.unit)
    if not fact.calls_timed and time_source == SAMPLES:
        vs_plain = Compared(skipped=vs_plain.calls + vs_plain.skipped, why=UNTIMED_CALLS)
    vs_probed = _compared(record, key, PROBED, False)
    vectorized = fact.vectorized
    lost = gained = frozenset()
    if PLAIN in vectorized:
        lost = vectorized[PLAIN] - vectorized.get(run_twin, frozenset())
        gained = vectorized.get(run_twin, frozenset()) - vectorized[PLAIN]
    source = Source(
        filename=fact.filename,
        first_lineno=fact.first_lineno,
        name=fact.name,
        qualname=fact.qualname,
        lines=fact.source_lines,
        signatures=fact.signatures,
        compile_seconds=dict(fact.compile_seconds),
        uncached=dict(fact.uncached),
        objmode_lines=fact.objmode_lines,
        unsampled=fact.unsampled,
        title=fact.title if fact.title != fact.qualname else "",
        compile_error=next((m.functions[key] for m in record.of(CompileFailed) if key in m.functions), ""),
        unreached=next((m.functions[key] for m in record.of(Unreached) if key in m.functions), ()),
    )
    counts = Counts(
        hits=dict(user.hits),
        calls=user.calls,
        ticks=run_ticks,
        calls_timed=fact.calls_timed,
        twin=run_twin,
        time_source=time_source,
    )
    samples = sampled  # the one per-line record, as attribution made it and the runs added it up
    cost = settings.probe_cost if probed.line_ticks else 0.0
    probes = Probes(dict(probed.line_ticks), dict(probed.hits), cost)
    uncompared = record.of(CodeUncompared)
    why = uncompared[-1].why if uncompared and PLAIN not in vectorized else None
    distortion = _distortion(vs_plain, vs_probed, probed, user, (lost, gained), why, fact.faster_callees)
    return Measured(source, counts, samples, probes, distortion)


def _distortion(
    vs_plain: Compared,
    vs_probed: Compared,
    probed: FunctionCounts,
    user: FunctionCounts,
    vectorization: tuple[frozenset, frozenset],
    uncompared: str | None,
    faster_callees: frozenset[str],
) -> Distortion:
    """The user's run (and a probed run) against the plain runs of the same calls
    (``vectorization``: the loops SIMD in the plain twin only, and in the user's only;
    ``faster_callees``: the callees the twins run faster than the program, from its code)."""
    return Distortion(
        overhead=vs_plain.ticks / vs_plain.baseline if vs_plain.baseline > 0 else None,
        plain_ticks=vs_plain.baseline if vs_plain.baseline > 0 else None,
        spread=(min(vs_plain.lows), max(vs_plain.highs)) if vs_plain.lows else None,
        unmeasured=_unmeasured(vs_plain),
        probe_overhead=vs_probed.ticks / vs_probed.baseline if vs_probed.baseline > 0 else None,
        # probe times from a probed run of their own (not the user's run): why it has no figure
        probe_unmeasured=_unmeasured(vs_probed) if probed.line_ticks and not user.line_ticks else None,
        lost_vectorization=frozenset(vectorization[0]),
        gained_vectorization=frozenset(vectorization[1]),
        page_faults=_page_faults(vs_plain),
        uncompared=uncompared,
        plain_left_out=vs_plain.left_out if vs_plain.baseline > 0 else 0,
        compiled=vs_plain.compiled > 0,
        faster_callees=faster_callees,
    )


def _page_faults(compared: Compared) -> tuple[int, int] | None:
    """The user's run's page faults and the plain runs' median, over the calls compared, where
    every one of them is known (``run.page_faults``)."""
    if compared.baseline <= 0 or not compared.calls or len(compared.faults) != compared.calls:
        return None
    return sum(compared.faults), round(sum(compared.plain_faults))


#: Why a helper, a recursive function or a stencil has no overhead figure of its own.
UNTIMED_CALLS = (
    "its calls are not timed (a helper other jitted code calls, often inlined in a loop, or a stencil's "
    "kernel, which runs once per point: two clock reads per call would cost more than the call; a "
    "recursive function, whose calls nest: each would count its inner calls' time again); where "
    "jitted code calls it, the caller's figure includes it"
)


#: A plain run of a call shorter than this is not compared: the clock's and the machine's noise
#: are as large as the call (plain runs of a 2 us call spread 1-470x their median).
SHORTEST_COMPARED = 10e-6


def _too_short(compared: Compared, unit: float) -> Compared:
    """``compared`` with its figure dropped where the calls are too short to time."""
    if compared.baseline <= 0 or compared.baseline / max(compared.calls, 1) * unit >= SHORTEST_COMPARED:
        return compared
    each = compared.baseline / max(compared.calls, 1) * unit * 1e6
    why = f"its plain runs take {each:.1f} us, too short for the clock to compare the twins"
    return Compared(skipped=compared.calls + compared.skipped, why=why)


def _unmeasured(compared: Compared) -> str | None:
    """Why the overhead is not measured (or measured over some of the calls only)."""
    if compared.baseline > 0 and compared.skipped:
        return f"measured over {compared.calls} of {compared.calls + compared.skipped} profiled calls"
    if compared.baseline > 0:
        return None
    return compared.why or "no call of it completed"


def _machine(
    measured: Measured,
    verdict: Diagnosis,
    reading: CodeReading | None,
    allocations: Allocations | None,
    record: CallRecord,
) -> MachineCode:
    """The machine code by line (``asm=True``), allocations, and the hints on the hot lines."""
    if reading is None:
        return MachineCode()
    key, hits = measured.source.key, measured.counts.hits
    unavailable = None
    counts = None
    if allocations is not None and allocations.lines is not None:
        counts = allocations.lines.get(key, {})
    elif allocations is not None:
        unavailable = allocations.unavailable
    elif record.of(RanOnce):
        unavailable = "the statement ran once, so no counted run was made"
    code = with_allocations(reading.code, counts, hits)
    hints = ()
    if reading.unavailable is None:
        facts = CodeFacts(code, hits, measured.counts.calls, unavailable)
        hints = tuple(function_hints(facts, list(verdict.hot_lines[:HINTED_LINES])))
    twin = reading.twin
    counts = fold(m.functions[key].counts for m in _sampled(record) if m.twin == twin and key in m.functions)
    return MachineCode(
        lines=code,
        twin=reading.twin,
        sample_counts=counts or {},
        seconds=reading.seconds,
        unavailable=reading.unavailable,
        allocations_unavailable=unavailable,
        hints=hints,
    )


def _sampled_seconds(record: CallRecord, key: Key) -> float:
    """A function whose calls are not timed (a helper jitted code calls): its samples' CPU seconds
    in the user's runs, estimated from every sampled run's, replays' too, each counted for the
    user's runs' worth of calls it made (``Sampled.worth``).

    Why not the user's runs' samples alone: a statement of 10 ms gives a helper a sample or
    none, and its time read 0 s beside shares taken from the thousands of its replays'."""
    runs = [(m, m.worth or (m.runs if m.user else 0)) for m in _sampled(record)]
    seconds = sum(sum(m.functions[key].seconds.values()) for m, worth in runs if worth and key in m.functions)
    users = sum(worth for m, worth in runs if m.user)
    worth = sum(worth for _, worth in runs)
    return seconds * users / worth if worth > 0 else 0.0


def _sampled(record: CallRecord) -> list[Sampled]:
    """The samples the shares come from: every sampled run but an extra probed one
    (its samples describe the probes' code, not yours)."""
    return [m for m in record.of(Sampled) if m.twin != PROBED or m.user]


def _sampling(record: CallRecord, settings: AssemblySettings) -> SamplingSummary | None:
    if not settings.sample or not settings.timing:
        return None
    if settings.sampler_unavailable is not None:
        return SamplingSummary(settings.rate_hz, unavailable=settings.sampler_unavailable)
    sampled = _sampled(record)
    unavailable = next((m.unavailable for m in sampled if m.unavailable), None)
    total = fold(replace(m, functions={}) for m in sampled)  # its rate: all signals over all armed time
    if total is None:
        return SamplingSummary(settings.rate_hz, unavailable=unavailable, target=settings.min_samples)
    return SamplingSummary(
        settings.rate_hz,
        achieved_hz=total.achieved_hz,
        total=total.total,
        outside=total.outside,
        cpu_seconds=total.cpu_seconds,
        outside_cpu_seconds=total.outside_cpu_seconds,
        stopped=dict(total.stopped),
        unavailable=unavailable,
        runs=sum(m.runs for m in sampled),
        extra_runs=sum(m.runs for m in sampled if not m.user),
        seconds=sum(m.seconds for m in sampled),
        target=settings.min_samples,
        lowered=next((m.lowered for m in sampled if m.lowered), None),
    )


def _runs(record: CallRecord) -> RunsSummary:
    restored = restored_union(record.of(Restored))
    once = record.of(RanOnce)
    return RunsSummary(
        user_twin=_user_twin(record),
        extra=tuple(str(m) for m in record.of(ExtraRun)),
        once=once[-1].why if once else None,
        restored=dict(restored.items),
        restored_bytes=sum(restored.nbytes.values()),
        results=_results(record.of(Differed)),
    )


def _results(found: list[Differed]) -> str | None:
    """How the user's run's results compare with the plain run's, where that is news: they
    differ, or a function is ``fastmath`` (whose sums LLVM may reorder, and the counters
    change how)."""
    if not found:
        return None
    values = {name: max(m.values.get(name, 0.0) for m in found) for m in found for name in m.values}
    fastmath = ", ".join(dict.fromkeys(f for m in found for f in m.fastmath))
    if values:
        where = ", ".join(values)
        said = (
            f"your run's floating-point results differ from the plain run's (the unprofiled code) by up "
            f"to {max(values.values()):.1e} (relative), in {where}"
        )
        if fastmath:
            return said + f": fastmath ({fastmath}) lets LLVM reorder sums, and the counters change how"
        return said + ": not expected without fastmath; please report it"
    if any(m.measured for m in found):
        return f"fastmath ({fastmath}): your run's results equal the plain run's, bit for bit"
    return (
        f"fastmath ({fastmath}): your run's floating-point results may differ from an unprofiled run's "
        "in the last bits (LLVM may reorder sums, and the counters change how; no plain run was made "
        "to compare)"
    )
