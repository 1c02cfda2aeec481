"""Judge how far a function's profile can be trusted, in sentences for the user.

Runs after the stats are collected; renderers only show what is decided here.
"""

from __future__ import annotations

from .stats import FunctionStats, Note

DEFAULT_THRESHOLD = 1.2  # instrumented/plain ratio above which the table is only a guide
DISAGREE_POINTS = 1.0  # an instrumented share this far outside the sampled interval: probes distort
MIN_SAMPLES = 100  # fewer samples in a function: shares too coarse to compare line by line
RESOLUTION_FACTOR = 2.0  # raw time per hit under this many probe costs: not measurable


PROBE_DOMINATED = 0.25  # corrected/raw total below this: the probes' cost is most of what was timed


def disagreeing_lines(stats: FunctionStats, margin: float = DISAGREE_POINTS) -> set[int]:
    """Lines whose instrumented share lies outside their sampled 95% interval by more than ``margin``.

    The interval carries the sampling error; the small margin keeps differences
    that no reader would act on (a fraction of a point) out of the marks.
    """
    found = set()
    for line in set(stats.hits) | set(stats.sampled):
        timed, interval = stats.time_share(line), stats.sample_interval(line)
        if timed is None or interval is None:
            continue
        low, high = interval
        if timed < low - margin or timed > high + margin:
            found.add(line)
    return found


def diagnose(
    stats: FunctionStats,
    unit: float,
    threshold: float = DEFAULT_THRESHOLD,
    correct: bool = True,
    disagree_points: float = DISAGREE_POINTS,
) -> None:
    """Fill ``stats.notes``, ``stats.below_resolution`` and ``stats.corrected`` from its numbers.

    Taking the probe cost out of every hit brings coarse lines close to their
    true times; where the probes' cost is most of what was timed, what is left is
    noise, so the raw times are shown instead and the notes say so.
    """
    notes: list[Note] = []
    ratio = stats.overhead
    if not stats.calls and not stats.hits:
        notes.append(Note("info", "not called during the run"))
    elif ratio is None:
        why = "no plain baseline run" if not stats.plain_calls else "the two runs made different calls"
        notes.append(Note("info", f"overhead not measured ({why})"))
    elif ratio > threshold:
        notes.append(
            Note(
                "warning",
                f"instrumented run {ratio:.2f}x the plain run (above {threshold:g}x): the probes "
                "hinder the optimizer (vectorization, hoisting, keeping values in registers), so "
                "times of lines in tight loops are inflated. Read this table as a guide, not a "
                "measurement.",
            )
        )
    else:
        notes.append(Note("info", f"instrumented run {ratio:.2f}x the plain run"))
    for line in sorted(stats.lost_vectorization):
        notes.append(
            Note(
                "warning",
                f"the loop at line {line} was vectorized (SIMD) in the plain build but not in the "
                "instrumented one: times inside it are inflated (--hits counts without this loss)",
            )
        )
    if not stats.timed:
        notes.append(Note("info", "hits only: counters without clock reads, so no times are shown"))
    stats.below_resolution = set()
    if stats.timed and stats.probe_ticks > 0:
        limit = RESOLUTION_FACTOR * stats.probe_ticks
        stats.below_resolution = {
            line for line, hits in stats.hits.items() if hits and stats.ticks.get(line, 0) / hits < limit
        }
        if stats.below_resolution:
            cost_ns = stats.probe_ticks * unit * 1e9
            notes.append(
                Note(
                    "info",
                    f"~ marks {len(stats.below_resolution)} line(s) whose time per hit is within the "
                    f"probe's own cost ({cost_ns:.0f} ns): below the timer's resolution",
                )
            )
    stats.corrected = correct and stats.timed
    raw_total = stats.total_ticks(raw=True)
    if stats.corrected and raw_total > 0 and stats.total_ticks() < PROBE_DOMINATED * raw_total:
        share = 100.0 * (1.0 - stats.total_ticks() / raw_total)
        stats.corrected = False
        notes.append(
            Note(
                "info",
                f"the probes' own cost is {share:.0f}% of the measured time, so times are shown raw "
                "(probe cost included) rather than corrected",
            )
        )
    elif stats.timed and not stats.corrected:
        notes.append(Note("info", "times are raw: they include the probes' own cost"))
    stats.disagree = set()
    sampled = stats.samples
    if stats.timed and 0 < sampled < MIN_SAMPLES:
        notes.append(
            Note(
                "info",
                f"only {sampled} samples landed in this function: too few to compare shares line by line",
            )
        )
    elif stats.timed and stats.sampled:
        stats.disagree = disagreeing_lines(stats, disagree_points)
        if stats.disagree:
            notes.append(
                Note(
                    "warning",
                    f"! marks {len(stats.disagree)} line(s) whose instrumented share lies outside the "
                    f"sampled share's 95% interval (by more than {disagree_points:g} point): there the "
                    "probes distort, and the sampled share (probe-free, optimized code) is the better guide",
                )
            )
    if stats.objmode_lines:
        notes.append(
            Note(
                "info", "lines inside objmode blocks count hits only; their time is charged to the with line"
            )
        )
    stats.notes = notes
