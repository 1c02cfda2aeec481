"""Judge how far a function's profile can be trusted, in sentences for the user.

A pure function of the measured parts (``Measured``): ``assemble`` calls it once per
function and makes the frozen profile with what it returns; renderers only show it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .machine import hot_lines
from .run.page_faults import FRESH_PAGES, PAGE_BYTES
from .stats import (
    DEFAULT_THRESHOLD,
    PROBES,
    SAMPLES,
    Counts,
    Diagnosis,
    Distortion,
    LineSamples,
    Measured,
    Note,
    Probes,
    time_share,
)
from .twin_kind import COUNTING, PLAIN, PROBED

DISAGREE_POINTS = 1.0  # a probe share this far outside the sampled interval: probes distort
MIN_SAMPLES = 100  # fewer samples in a function: shares too coarse to compare line by line
RESOLUTION_FACTOR = 2.0  # raw probe time per hit under this many probe costs: not measurable
PROBE_DOMINATED = 0.25  # corrected/raw probe total below this: the probes' cost is most of what was timed
# A minor page fault's cost to a first run, the zeroing and the cache misses of fresh memory included:
# 30 ms over 3,846 faults measured on a stencil's first call (8 us), rounded up, so that the faults
# are blamed only where even the dearest of them could explain the excess
FAULT_SECONDS = 10e-6


def disagreeing_lines(
    samples: LineSamples, probes: Probes, margin: float = DISAGREE_POINTS, raw: bool = False
) -> frozenset[int]:
    """Lines whose probe share lies outside their sampled 95% interval by more than ``margin``.

    The interval carries the sampling error; the small margin keeps differences
    that no reader would act on (a fraction of a point) out of the marks. ``raw``: the
    shares of the raw probe times, where those are the ones shown (``--raw``, or probes
    whose own cost is most of what they timed: their corrected shares are differences of
    nearly equal numbers, and a mark must stand beside the share it judges).
    """
    found = set()
    for line in set(probes.ticks) | set(samples.seconds):
        probed, interval = probes.share(line, raw), samples.interval(line)
        if probed is None or interval is None:
            continue
        low, high = interval
        if probed < low - margin or probed > high + margin:
            found.add(line)
    return frozenset(found)


def diagnose(
    measured: Measured,
    unit: float,
    threshold: float = DEFAULT_THRESHOLD,
    correct: bool = True,
    sampling_unavailable: str | None = None,
    run_samples: int = 0,
) -> Diagnosis:
    """Notes, marks and hot lines for what was ``measured`` of one function (``run_samples``:
    the samples of the whole run, every function's and the rest)."""
    counts, samples, probes = measured.counts, measured.samples, measured.probes
    notes: list[Note] = []
    if not counts.calls and not counts.hits and measured.source.compile_error:  # called, never ran
        name = measured.source.title or measured.source.qualname
        notes.append(Note("error", f"{name} did not compile: {measured.source.compile_error}"))
    elif not counts.calls and not counts.hits and measured.source.unreached:
        notes.append(Note("warning", unreached_note(measured.source.unreached)))
    elif not counts.calls and not counts.hits:
        notes.append(Note("info", "not called during the run"))
    notes += _time_notes(counts, samples, sampling_unavailable, measured.source.unsampled, run_samples)
    notes += _overhead_notes(measured, threshold, unit)
    below = _below_resolution(probes)
    if below:
        cost_ns = probes.cost * unit * 1e9
        notes.append(
            Note(
                "info",
                f"~ marks {len(below)} line(s) whose probe time per hit is within the probe's own cost "
                f"({cost_ns:.0f} ns): below the timer's resolution",
            )
        )
    corrected = correct and bool(probes.ticks)
    raw_total = probes.total(raw=True)
    if corrected and raw_total > 0:
        kept = probes.total()
        if kept < PROBE_DOMINATED * raw_total:
            corrected = False
            notes.append(
                Note(
                    "info",
                    f"the probes' own cost is {100.0 * (1.0 - kept / raw_total):.0f}% of the probe-measured "
                    "time, so probe times are shown raw (probe cost included) rather than corrected",
                )
            )
    elif probes.ticks and not correct:
        notes.append(Note("info", "probe times are raw: they include the probes' own cost"))
    disagree = frozenset()
    if probes.ticks and samples.total >= MIN_SAMPLES:  # the shares of corrected probe times
        disagree = disagreeing_lines(samples, probes, raw=not corrected)
        if disagree:
            notes.append(
                Note(
                    "warning",
                    f"! marks {len(disagree)} line(s) whose probe share lies outside the sampled share's "
                    f"95% interval (by more than {DISAGREE_POINTS:g} point): there the probes distort, and "
                    "the sampled Time (probe-free, optimized code) is the better guide",
                )
            )
    if measured.source.objmode_lines:
        notes.append(Note("info", "lines inside objmode blocks: their time is charged to the with line"))
    return Diagnosis(tuple(notes), below, disagree, corrected, hottest(counts, samples, probes))


def unreached_note(names: tuple[str, ...]) -> str:
    """Why a function that counted nothing may still have run: code it is linked into that the
    profiler could not run on twins (``Source.unreached``)."""
    shown = ", ".join(f"`{n}`" for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (
        f"no hits counted, but code compiled before the profile that the profiler cannot run on twins "
        f'calls it: {shown} (such as a target="parallel" ufunc or a cfunc); its calls are not counted: '
        "profile the statement or script that builds that code (code compiled during the profile is counted)"
    )


def hottest(counts: Counts, samples: LineSamples, probes: Probes) -> tuple[int, ...]:
    """The lines by their share of the Time column (of corrected probe times), hottest first."""
    lines = set(counts.hits) | set(samples.seconds)
    return tuple(hot_lines({line: time_share(line, counts, samples, probes) or 0.0 for line in lines}))


def _time_notes(
    counts: Counts, samples: LineSamples, sampling_unavailable: str | None, unsampled: str, run_samples: int
) -> list[Note]:
    """Where the Time column comes from, when that needs saying, and how sure it is
    (``unsampled``: why the function's kind puts no sample on its lines, ``Source.unsampled``).

    A function that counted hits but got none of a run's many samples was either brief, or
    ran inside code that maps no sample to its lines: a helper inlined into code without line
    tables (a ufunc's loops; a jitted caller is relinked with line tables, so one inlined there
    is sampled there). The note says both, not "the run was too short"."""
    if not counts.hits:
        return []
    if counts.time_source is None:
        return [Note("info", "hits only: no clock and no sampler, so no times are shown")]
    if counts.time_source == PROBES:
        if sampling_unavailable:
            why = f"sampling unavailable: {sampling_unavailable}"
        elif counts.twin == PROBED:
            why = "--no-sample"
        elif unsampled:
            why = unsampled
        else:  # a profile saved before its function's kind said why (JSON without Source.unsampled)
            why = (
                "Numba builds a ufunc's loops without line tables, and inlines a stencil into its "
                "parallel caller's loops: no sample can be placed on their lines"
            )
        return [Note("info", f"times come from clock probes ({why}); they include the probes' distortion")]
    n = samples.total
    if n == 0 and run_samples >= MIN_SAMPLES:
        return [
            Note(
                "caution",
                f"none of the run's {run_samples} samples landed in this function, so its times are not "
                f"known: it ran for under about 1/{run_samples} of the sampled time, or inlined into "
                "code without line tables (a ufunc's loops): profile its callers too (-f), or time it "
                "with clock probes (--probes)",
            )
        ]
    if n == 0:
        return [
            Note(
                "caution",
                "no samples landed in this function, so its times are not known: the run was too "
                "short for the sampler (raise --rate, or let a repeatable statement take --sample-time; "
                "--probes times it with clock probes)",
            )
        ]
    if n < MIN_SAMPLES:
        return [
            Note(
                "caution",
                f"only {n} sample{'s' if n != 1 else ''} landed in this function: its times are rough "
                "(see the 95% intervals); "
                "a longer run, a higher --rate or --probes gives more",
            )
        ]
    return []


@dataclass(frozen=True)
class FirstTouch:
    """What the fresh memory the user's run touched says of its overhead figure."""

    said: str  # the clause the note adds
    explains_all: bool  # the faults can account for the whole excess over the plain runs


def _first_touch(distortion: Distortion, ratio: float, unit: float) -> FirstTouch | None:
    """None where the run faulted no more than the plain runs.

    The user's run comes first and often is the call's first in the process: a kernel that
    allocates large arrays pays for fresh pages there, and the plain runs after it reuse them
    (``run.page_faults``), so the figure charges that to the counters."""
    if distortion.page_faults is None or not distortion.plain_ticks:
        return None
    mine, plain = distortion.page_faults
    fresh = mine - plain
    if fresh < max(FRESH_PAGES, plain):
        return None
    excess = (ratio - 1.0) * distortion.plain_ticks * unit
    said = (
        f"; but that run was the first to touch {fresh * PAGE_BYTES / 1e6:,.0f} MB of fresh memory "
        f"({mine:,} page faults, the plain runs after it {plain:,} each), which slows a first run by itself"
    )
    return FirstTouch(said, fresh * FAULT_SECONDS >= excess)


def _overhead_notes(measured: Measured, threshold: float, unit: float) -> list[Note]:
    """How much the user's run was distorted, measured or not (never silent)."""
    counts, distortion = measured.counts, measured.distortion
    if not counts.calls:
        return []
    notes = []
    twin = PROBED if counts.twin == PROBED else COUNTING
    # a ufunc's or stencil's counting twin times its lines with clock probes (no line tables)
    clocked = twin == PROBED or counts.time_source == PROBES
    ratio = distortion.overhead
    if ratio is None:
        why = distortion.unmeasured or "no plain run of the same calls"
        said = f"overhead not measured: {why}"
        if distortion.lost_vectorization:
            said += f"; the machine code shows the {'probes' if twin == PROBED else 'counters'} cost SIMD"
        elif distortion.gained_vectorization:
            said += f"; the machine code shows the {twin} twin vectorized loops the plain twin did not"
        elif measured.source.compile_seconds.get(PLAIN) is not None:
            said += f"; the {twin} twin's loops vectorized as the plain twin's did"
        elif distortion.uncompared:
            said += f"; {distortion.uncompared}"
        if clocked:  # a clock read per line costs 10-100x in tight loops: never silent
            said += (
                ". Clock probes on every line slow tight loops 10-100x, so times of lines in tight "
                "loops are inflated: read this table as a guide, not a measurement."
            )
        notes.append(Note("warning" if clocked else "info", said))
    else:
        notes.append(_measured(distortion, ratio, twin, clocked, threshold, unit))
    if distortion.probe_overhead is not None and twin != PROBED:
        level = "warning" if distortion.probe_overhead > threshold else "info"
        tail = ": probe times of lines in tight loops are inflated" if level == "warning" else ""
        figure = distortion.probe_overhead
        said = (
            f" {figure:.2f}x the plain run"
            if figure >= 1
            else f": no measurable cost ({figure:.2f}x the plain run)"
        )
        notes.append(Note(level, f"probed run{said}{tail}"))
    elif distortion.probe_unmeasured is not None and twin != PROBED:  # probe times, but no figure: say why
        why = distortion.probe_unmeasured
        notes.append(Note("info", f"probed run not compared with the plain run: {why}"))
    for line in sorted(distortion.gained_vectorization):
        # line 0: code placed on no line of its own (a stencil's loop nest, Numba's array code)
        where = f"the loop at line {line}" if line else "a loop on no line of its own (a stencil's loop nest)"
        notes.append(
            Note(
                "warning",
                f"{where} was vectorized (SIMD) in the {twin} build but not in the plain one (your "
                f"code's): its samples describe faster code than yours, so its times understate yours",
            )
        )
    for line in sorted(distortion.lost_vectorization):
        notes.append(
            Note(
                "warning",
                f"the loop at line {line} was vectorized (SIMD) in the plain build but not in the "
                f"{twin} one: its samples describe slower code than yours",
            )
        )
    for callee in sorted(distortion.faster_callees):
        notes.append(
            Note(
                "warning",
                f"your program runs {callee} as Numba compiled it on its own, not vectorized (a call "
                f"LLVM does not inline runs the callee's first compile); the twins run the copy "
                f"optimized with this function, vectorized: the line calling it is faster here than in "
                f"your program, and its times understate yours",
            )
        )
    return notes


#: A counting run this far below the fastest plain run (and not explained by the plain runs'
#: fresh memory) ran other code: a stencil's counting twin vectorized a loop nest the plain
#: code kept scalar and ran 0.23x the plain runs' median, their fastest 0.87x.
FASTER_CODE = 0.8


def _measured(
    distortion: Distortion, ratio: float, twin: str, clocked: bool, threshold: float, unit: float
) -> Note:
    """The note on a measured overhead figure (``ratio``: the user's run / the plain runs' median).

    Counters and probes add work, so a figure below 1 is the machine's noise, or a
    difference between the runs that is not theirs: it reads "no measurable cost", never as
    a speed-up; except far below every plain run (``FASTER_CODE``), where the probes made LLVM
    compile other, faster code, which the note says. A first run's costs are told apart:
    plain runs that paid a compile or fresh memory are left out of the median
    (``Compared.left_out``), and the user's run, which cannot be, says what it paid."""
    spread = distortion.spread
    left = ""
    if distortion.plain_left_out:
        n = distortion.plain_left_out
        left = (
            f"; {n} that paid a compile or fresh memory left out"
            if n > 1
            else "; one that paid a compile or fresh memory left out"
        )
    if ratio < 1.0:
        if spread is None:
            return Note("info", f"{twin} run: no measurable cost ({ratio:.2f}x the plain run)")
        low, high = spread
        if ratio >= low:
            said = f"inside their own spread, {low:.2f}-{high:.2f}x{left}"
        elif ratio < FASTER_CODE * low and not _plain_paid(distortion):
            return Note(
                "caution",
                f"{twin} run {ratio:.2f}x the plain runs' median, far below even the fastest of them "
                f"({low:.2f}x{left}): the {twin} twin compiled to faster code than yours (its probes "
                "changed how LLVM optimized it: a loop the plain code keeps scalar vectorized, or a "
                "check moved out of it), so times from your run on it understate your code's",
            )
        else:
            said = (
                f"below even the fastest of them, {low:.2f}x{left}: the runs differed by "
                "more than the counters" + _plain_paid(distortion)
            )
        return Note("info", f"{twin} run: no measurable cost ({ratio:.2f}x the plain runs' median, {said})")
    noise = ""
    if spread is not None:
        low, high = spread
        within = ", so within the noise" if ratio <= high else ""
        noise = f" (plain runs: {low:.2f}-{high:.2f}x their median{left}{within})"
    compiled = (
        "; Numba compiled during your run (its time leaves the compile out, not the cold caches after it)"
        if distortion.compiled
        else ""
    )
    touch = _first_touch(distortion, ratio, unit) if ratio > threshold else None
    if touch is not None and touch.explains_all and not clocked and not distortion.lost_vectorization:
        return Note(
            "caution",
            f"{twin} run {ratio:.2f}x the plain run{noise}{touch.said}{compiled}: part or all of the "
            "difference is that, not the counters (the machine code shows no loop that lost SIMD)",
        )
    if ratio > threshold and (spread is None or ratio > spread[1]):
        return Note(
            "warning",
            f"{twin} run {ratio:.2f}x the plain run{noise}, above {threshold:g}x"
            + (touch.said + ", but not by that alone" if touch is not None else "")
            + compiled
            + ": the "
            f"{'probes' if clocked else 'counters'} hinder the optimizer (vectorization, "
            "hoisting, keeping values in registers), so "
            + (
                "times of lines in tight loops are inflated. "
                if clocked
                else "the samples of this run describe slower code than yours. "
            )
            + "Read this table as a guide, not a measurement.",
        )
    return Note(
        "info", f"{twin} run {ratio:.2f}x the plain run{noise}{compiled if ratio > threshold else ''}"
    )


def _plain_paid(distortion: Distortion) -> str:
    """Why the plain runs were slower than the user's, where their page faults say it: they
    touched fresh memory the user's run did not."""
    if distortion.page_faults is None:
        return ""
    mine, plain = distortion.page_faults
    if plain - mine < max(FRESH_PAGES, mine):
        return ""
    return f" (each plain run touched fresh memory: {plain:,} page faults, yours {mine:,})"


def _below_resolution(probes: Probes) -> frozenset[int]:
    if not probes.ticks or probes.cost <= 0:
        return frozenset()
    limit = RESOLUTION_FACTOR * probes.cost
    ticks = probes.ticks
    return frozenset(line for line, hits in probes.hits.items() if hits and ticks.get(line, 0) / hits < limit)


__all__ = ["DEFAULT_THRESHOLD", "SAMPLES", "Diagnosis", "diagnose", "disagreeing_lines", "hottest"]
