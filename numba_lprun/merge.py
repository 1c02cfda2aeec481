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
from dataclasses import replace

from .diagnose import diagnose
from .machine import hot_lines
from .run.measurements import fold
from .stats import FunctionStats, Note, ProcessPart, ProfileStats, SamplingSummary


def merged(
    main: ProfileStats, parts: Sequence[ProcessPart], missing: Sequence[str], corrected: bool = True
) -> ProfileStats:
    """``main`` (this process's own profile) with the functions of ``parts`` added in
    (``missing``: a sentence per process that sent nothing); ``main`` itself when no other
    process took part."""
    if not parts and not missing:
        return main
    own = ProcessPart("main", os.getpid(), main)
    found: dict[tuple, list[tuple[ProcessPart, FunctionStats]]] = {}
    for part in parts:
        for stats in part.profile.functions:
            found.setdefault(stats.key, []).append((part, stats))
    functions = [_function(f, found.pop(f.key, []), main.unit, len(parts)) for f in main.functions]
    for rest in found.values():  # a function only workers knew (defined in a worker's code)
        first = replace(rest[0][1], hits={}, calls=0, run_ticks=0, sample_counts={}, sample_seconds={})
        functions.append(_function(first, rest, main.unit, len(parts)))
    sampling = _sampling(main.sampling, [p.profile.sampling for p in parts])
    unavailable = sampling.unavailable if sampling is not None else None
    lost = tuple(Note("warning", why) for why in missing)
    functions = [_diagnosed(f, main, corrected, unavailable, lost) for f in functions]
    return replace(
        main, functions=tuple(functions), sampling=sampling, parts=(own, *parts), missing=tuple(missing)
    )


def _scaled(ticks: dict[int, int], scale: float) -> dict[int, int]:
    """Another process's ticks in this one's unit."""
    return {line: round(value * scale) for line, value in ticks.items()}


def _function(
    stats: FunctionStats, others: list[tuple[ProcessPart, FunctionStats]], unit: float, workers: int
) -> FunctionStats:
    """``stats`` (the main process's) plus each worker's figures of the same function."""
    hits, calls, ticks = dict(stats.hits), stats.calls, stats.run_ticks
    counts, seconds = dict(stats.sample_counts), dict(stats.sample_seconds)
    probe_ticks, probe_hits = dict(stats.probe_ticks), dict(stats.probe_hits)
    signatures = list(stats.signatures)
    source = stats.time_source
    worker_calls = worker_samples = 0
    for part, other in others:
        scale = part.profile.unit / unit  # the same tick of another process's clock, in ours
        hits = fold((hits, other.hits))
        calls += other.calls
        ticks += round(other.run_ticks * scale)
        counts = fold((counts, other.sample_counts))
        seconds = fold((seconds, other.sample_seconds))
        probe_ticks = fold((probe_ticks, _scaled(other.probe_ticks, scale)))
        probe_hits = fold((probe_hits, other.probe_hits))
        signatures += [s for s in other.signatures if s not in signatures]
        source = source or other.time_source
        worker_calls += other.calls
        worker_samples += other.samples
    row = (
        "Processes",
        f"main + {workers} worker{'s' if workers != 1 else ''}; in the workers: {worker_calls:,} of "
        f"{calls:,} calls, {worker_samples:,} of {sum(counts.values()):,} samples",
    )
    notes = stats.notes
    unmeasured = stats.overhead_unmeasured
    if worker_calls and not worker_samples and stats.time_source is not None:
        notes = (Note("caution", WORKERS_UNTIMED),)
    if worker_calls and not stats.calls:
        unmeasured = "its calls ran in worker processes, which run once (no plain run to compare with)"
    return replace(
        stats,
        hits=hits,
        calls=calls,
        run_ticks=ticks,
        sample_counts=counts,
        sample_seconds=seconds,
        probe_ticks=probe_ticks,
        probe_hits=probe_hits,
        signatures=tuple(signatures),
        time_source=source,
        header_rows=(*stats.header_rows, row),
        overhead_unmeasured=unmeasured,
        notes=notes,
    )


#: Why a function that ran in workers has times from the main process only.
WORKERS_UNTIMED = (
    "the worker processes' calls are counted exactly, but none of their samples landed in this function "
    "(too short for the sampler, or the workers were not sampled): the Time column holds the main "
    "process's samples only"
)


def _diagnosed(
    stats: FunctionStats, main: ProfileStats, corrected: bool, unavailable: str | None, lost: tuple[Note, ...]
) -> FunctionStats:
    verdict = diagnose(stats, main.unit, main.threshold, corrected, unavailable)
    kept = tuple(n for n in stats.notes if n.text == WORKERS_UNTIMED)
    said = verdict.notes
    if kept:  # the note above says why the workers' calls have no samples
        said = tuple(n for n in said if not n.text.startswith("no samples landed"))
    shares = {line: stats.time_share(line) or 0.0 for line in set(stats.hits) | set(stats.sample_seconds)}
    return replace(
        stats,
        notes=lost + kept + said,
        below_resolution=verdict.below_resolution,
        disagree=verdict.disagree,
        probes_corrected=verdict.probes_corrected,
        hot_lines=tuple(hot_lines(shares)) if not stats.hints else stats.hot_lines,
    )


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
