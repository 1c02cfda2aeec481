"""Profiles of several processes as one: exact sums, diagnosed again.

Why profiles and not measurements: a worker process (a pool's, joblib's, a Dask
worker's) measures its own work and writes its own frozen profile, in its own
clock's unit; the parent never measures it again, it adds the parts up. Hits,
calls, samples and their CPU time add exactly. Each function's measured time adds
too (converted to the main process's clock unit), so a line's time is its share of
every process's samples times every process's measured time. What belongs to one
process only stays the main one's: the overhead figure and the machine code (a
worker runs once, with no plain run). The notes are written again from the sums:
a function the main process never called is no longer "not called".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .diagnose import diagnose
from .run.measurements import fold
from .stats import (
    Diagnosis,
    Extras,
    FunctionStats,
    LineSamples,
    Measured,
    Note,
    ProcessPart,
    ProfileStats,
    SamplingSummary,
)


def merged(
    main: ProfileStats,
    parts: Sequence[ProcessPart],
    missing: Sequence[str],
    corrected: bool = True,
    ranks: int = 0,
) -> ProfileStats:
    """``main`` (this process's own profile) with the functions of ``parts`` added in
    (``missing``: a sentence per process that sent nothing); ``main`` itself when no other
    process took part. ``ranks``: the processes are the ranks of an MPI job of that size, rank
    0 the main one (a ``Ranks`` row, and the lines where the ranks' time differs most)."""
    if not parts and not missing:
        return main
    own = ProcessPart("rank 0" if ranks else "main", os.getpid(), main)
    found: dict[tuple, list[tuple[ProcessPart, FunctionStats]]] = {}
    keys = {f.source.key for f in main.functions}
    elsewhere = {_code_of(f): f.source.key for f in main.functions}
    for part in parts:
        for stats in part.profile.functions:
            key = (
                stats.source.key
                if stats.source.key in keys
                else elsewhere.get(_code_of(stats), stats.source.key)
            )
            found.setdefault(key, []).append((part, stats))
    sums = [_summed(f, found.pop(f.source.key, []), main.unit, len(parts), ranks) for f in main.functions]
    for rest in found.values():  # a function only workers knew (defined in a worker's code)
        first = rest[0][1]
        counts = replace(first.counts, hits={}, calls=0, ticks=0)
        samples = LineSamples(addresses=first.samples.addresses)  # its code's, in that worker
        probes = replace(first.probes, ticks={}, hits={})  # each worker's figures are added below, once
        first = replace(first, counts=counts, samples=samples, probes=probes)
        sums.append(_summed(first, rest, main.unit, len(parts), ranks))
    sampling = _sampling(main.sampling, [p.profile.sampling for p in parts])
    unavailable = sampling.unavailable if sampling is not None else None
    lost = tuple(Note("warning", why) for why in missing)
    run_samples = sampling.total if sampling is not None else 0
    functions = tuple(_diagnosed(s, main, corrected, unavailable, lost, run_samples) for s in sums)
    unprofiled = tuple(dict.fromkeys(main.unprofiled + tuple(u for p in parts for u in p.profile.unprofiled)))
    kept = tuple(dict.fromkeys(main.cache_kept + tuple(k for p in parts for k in p.profile.cache_kept)))
    short = tuple(dict.fromkeys(main.short + tuple(s for p in parts for s in p.profile.short)))
    return replace(
        main,
        functions=functions,
        sampling=sampling,
        parts=(own, *parts),
        missing=tuple(missing),
        unprofiled=unprofiled,
        cache_kept=kept,
        short=short,
    )


def _code_of(stats: FunctionStats) -> tuple:
    """What identifies a function wherever its file is: a worker on another machine imports the
    same package from another folder (another virtual environment's site-packages), or a file
    ``Client.upload_file`` shipped, so its key names another file; the same code at the same lines
    is the same function."""
    return (stats.source.qualname, stats.source.first_lineno, stats.source.lines)


def _scaled(ticks: dict[int, int], scale: float) -> dict[int, int]:
    """Another process's ticks in this one's unit."""
    return {line: round(value * scale) for line, value in ticks.items()}


@dataclass(frozen=True)
class Summed:
    """One function's figures added up over the processes, before they are diagnosed again."""

    main: FunctionStats  # the main process's (its machine code, its diagnosis' hot lines)
    measured: Measured  # the sums
    extras: Extras  # the main process's, and a row on the processes
    untimed: str  # why the workers' calls took no sample ("": they did; ``WORKERS_UNTIMED``)
    imbalance: Note | None = None  # an MPI job's ranks spend their time on this function's lines unlike


def _summed(
    stats: FunctionStats,
    others: list[tuple[ProcessPart, FunctionStats]],
    unit: float,
    workers: int,
    ranks: int = 0,
) -> Summed:
    """``stats`` (the main process's) plus each worker's figures of the same function."""
    hits, calls, ticks = dict(stats.counts.hits), stats.counts.calls, stats.counts.ticks
    probe_ticks, probe_hits = dict(stats.probes.ticks), dict(stats.probes.hits)
    signatures = list(stats.source.signatures)
    source = stats.counts.time_source
    worker_calls = worker_samples = 0
    # every per-line figure adds, except the addresses: each process's code lies elsewhere
    samples = fold([stats.samples, *(other.samples for _, other in others)])
    samples = replace(samples, addresses=stats.samples.addresses)
    for part, other in others:
        scale = part.profile.unit / unit  # the same tick of another process's clock, in ours
        hits = fold((hits, other.counts.hits))
        calls += other.counts.calls
        ticks += round(other.counts.ticks * scale)
        probe_ticks = fold((probe_ticks, _scaled(other.probes.ticks, scale)))
        probe_hits = fold((probe_hits, other.probes.hits))
        signatures += [s for s in other.source.signatures if s not in signatures]
        source = source or other.counts.time_source
        worker_calls += other.counts.calls
        worker_samples += other.samples.total
    row = (
        "Processes",
        f"main + {workers} worker{'s' if workers != 1 else ''}; in the workers: {worker_calls:,} of "
        f"{calls:,} calls, {worker_samples:,} of {samples.total:,} samples{_callers(others)}",
    )
    if ranks:
        per_rank = [("rank 0", stats), *((part.label, other) for part, other in others)]
        each = ", ".join(f"{label} {s.counts.calls:,}" for label, s in per_rank)
        row = ("Ranks", f"{ranks} ranks, {len(per_rank)} profiled; calls: {each}")
    unmeasured = stats.distortion.unmeasured
    if worker_calls and not stats.counts.calls:
        where = "on the MPI job's other ranks" if ranks else "in worker processes"
        unmeasured = f"its calls ran {where}, which run once (no plain run to compare with)"
    measured = Measured(
        source=replace(stats.source, signatures=tuple(signatures)),
        counts=replace(stats.counts, hits=hits, calls=calls, ticks=ticks, time_source=source),
        samples=samples,
        probes=replace(stats.probes, ticks=probe_ticks, hits=probe_hits),
        distortion=replace(stats.distortion, unmeasured=unmeasured),
    )
    return Summed(
        main=stats,
        measured=measured,
        # no process sent a part (only warnings of those that sent none): no row to show
        extras=replace(stats.extras, rows=(*stats.extras.rows, row)) if workers or ranks else stats.extras,
        untimed=(RANKS_UNTIMED if ranks else WORKERS_UNTIMED)
        if worker_calls and not worker_samples and stats.counts.time_source is not None
        else "",
        imbalance=_imbalance(stats, others) if ranks else None,
    )


#: Samples a rank needs in a function for its line shares to be compared with another's.
RANK_SAMPLES = 50
#: Percentage points between two ranks' shares of one line that make an imbalance worth a note.
RANK_SPREAD = 20.0


def _imbalance(stats: FunctionStats, others: list[tuple[ProcessPart, FunctionStats]]) -> Note | None:
    """The line whose share of the function's samples differs most between two ranks, where it
    differs by ``RANK_SPREAD`` points or more: where the fast ranks wait for the slow ones (a
    collective call inside the kernel, or the kernel's loop that one rank runs longer).

    A line every rank ran equally often comes first: the same calls taking different times is
    a wait (a collective call), where different counts are different work. Why: the ranks'
    shares sum to 100 each, so a slow rank's loop and a fast rank's wait differ by about the
    same points, and which read larger was the samples' noise (a run under load named the loop)."""
    ranks = [("rank 0", stats), *((part.label, other) for part, other in others)]
    shares = {
        label: {line: 100.0 * n / s.samples.total for line, n in s.samples.counts.items()}
        for label, s in ranks
        if s.samples.total >= RANK_SAMPLES
    }
    if len(shares) < 2:
        return None
    hits = {label: s.counts.hits for label, s in ranks if label in shares}
    lines = {line for found in shares.values() for line in found}
    best = None
    for line in lines:
        high = max(shares, key=lambda label: shares[label].get(line, 0.0))
        low = min(shares, key=lambda label: shares[label].get(line, 0.0))
        spread = shares[high].get(line, 0.0) - shares[low].get(line, 0.0)
        if spread < RANK_SPREAD:
            continue
        same_calls = len({found.get(line, 0) for found in hits.values()}) == 1
        if best is None or (same_calls, spread) > best[0]:
            best = ((same_calls, spread), line, high, low)
    if best is None:
        return None
    _, line, high, low = best
    text = stats.line_text(line).strip()
    return Note(
        "info",
        f"the ranks differ most on line {line} ({text}): {high} spends {shares[high].get(line, 0.0):.0f}% of "
        f"{stats.source.name}'s samples there, {low} {shares[low].get(line, 0.0):.1f}% (a rank waiting in a "
        "collective call spends its time on it while the others work)",
    )


#: Workers named in a function's Processes row, at most (the rest are counted).
NAMED_WORKERS = 3


def _callers(others: list[tuple[ProcessPart, FunctionStats]]) -> str:
    """The workers whose calls the row counts, by name and calls (folded past ``NAMED_WORKERS``):
    a Dask worker by its address, a pool's by its name, by its pid where names repeat."""
    calling = [(part, stats.counts.calls) for part, stats in others if stats.counts.calls]
    if not calling:
        return ""
    names = [part.label.removeprefix("dask worker ") for part, _ in calling]
    named = [
        f"{name if names.count(name) == 1 else f'pid {part.pid}'} ({calls:,})"
        for name, (part, calls) in zip(names, calling, strict=True)
    ]
    more = len(named) - NAMED_WORKERS
    return "; calls in " + ", ".join(named[:NAMED_WORKERS]) + (f" and {more} more" if more > 0 else "")


#: A function no process that sent its part called, where others sent none (the warnings say which).
NOT_COUNTED_HERE = (
    "no call counted in this process or in the processes that sent their parts; calls made where "
    "nothing was sent (the warning above) are not counted"
)

#: Why a function that ran in workers has times from the main process only.
WORKERS_UNTIMED = (
    "the worker processes' calls are counted exactly, but none of their samples landed in this function "
    "(too short for the sampler, or the workers were not sampled): the Time column holds the main "
    "process's samples only"
)
#: The same, of an MPI job's ranks.
RANKS_UNTIMED = (
    "the other ranks' calls are counted exactly, but none of their samples landed in this function "
    "(too short for the sampler): the Time column holds rank 0's samples only"
)


def _diagnosed(
    summed: Summed,
    main: ProfileStats,
    corrected: bool,
    unavailable: str | None,
    lost: tuple[Note, ...],
    run_samples: int,
) -> FunctionStats:
    """The function's profile of every process: its sums, and a diagnosis of them."""
    measured = summed.measured
    verdict = diagnose(measured, main.unit, main.threshold, corrected, unavailable, run_samples)
    kept = (Note("caution", summed.untimed),) if summed.untimed else ()
    if summed.imbalance is not None:
        kept += (summed.imbalance,)
    said = verdict.notes
    if lost:  # some processes sent nothing: no call here does not mean no call at all
        said = tuple(
            Note(n.level, NOT_COUNTED_HERE) if n.text == "not called during the run" else n for n in said
        )
    if kept:  # the note above says why the workers' calls have no samples
        said = tuple(n for n in said if not n.text.startswith("no samples landed"))
    machine = summed.main.machine  # the hot lines its hints describe stay the main process's
    hot = summed.main.diagnosis.hot_lines if machine.hints else verdict.hot_lines
    diagnosis = Diagnosis(
        lost + kept + said, verdict.below_resolution, verdict.disagree, verdict.probes_corrected, hot
    )
    parts = (measured.counts, measured.samples, measured.probes, measured.distortion)
    return FunctionStats(measured.source, *parts, machine, summed.extras, diagnosis)


def _sampling(main: SamplingSummary | None, others: list[SamplingSummary | None]) -> SamplingSummary | None:
    """The main process's sampling summary with every worker's samples added."""
    if main is None:
        return None
    total = main
    for other in others:
        if other is None or other.unavailable is not None:
            continue
        total = replace(
            total,
            total=total.total + other.total,
            outside=total.outside + other.outside,
            cpu_seconds=total.cpu_seconds + other.cpu_seconds,
            outside_cpu_seconds=total.outside_cpu_seconds + other.outside_cpu_seconds,
            stopped=fold((total.stopped, other.stopped)),
            runs=total.runs + other.runs,
            seconds=total.seconds + other.seconds,
            lowered=total.lowered or other.lowered,
        )
    return total
