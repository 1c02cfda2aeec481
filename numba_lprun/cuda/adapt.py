"""CUDA launches as the common profile value, so the common renderers show them.

One rich table, one line_profiler text layout and one HTML report serve CPU and
GPU profiles alike (a second set of renderers would drift from the first). The
mapping: hits -> hits; GPU cycles -> probe times (``time_source`` "probes") in
ticks named "cycle", with no conversion to seconds (an SM's clock has no fixed
rate a profile could rely on); none in the simulator, which has no clock; warp
executions and mean active lanes -> two extra columns after % Time; the launch
(geometry, device, restored arguments) -> header rows; what GPU cycles mean, the
simulator's limits and the overhead figure (with the distortion warning as on
the CPU) -> notes of the kernel's table.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnose import DEFAULT_THRESHOLD  # one threshold for the CPU's profiles and the GPU's
from ..stats import (
    PROBES,
    Counts,
    Diagnosis,
    Distortion,
    ExtraColumn,
    Extras,
    FunctionStats,
    Note,
    Probes,
    ProfileStats,
    Source,
)
from ..twin_kind import COUNTING, PROBED
from .model import CudaFunctionProfile, CudaLaunch, CudaProfile, merge_profiles

TICK = "cycle"
CYCLES_MEANING = (
    "Time is GPU cycles (%clock64) one warp spent from the line's probe to its next probe, summed over "
    "the line's warp executions: the latency a warp saw (memory, barriers, the other side of a divergent "
    "branch), which overlaps with other warps running on the same SM, so % Time says where warps spend "
    "their time, not a share of the launch's duration. Per Hit = Time / Hits (cycles per thread execution)."
)
WARPS_MEANING = "warp executions of the line: a warp running it counts once, however many lanes are active"
LANES_MEANING = (
    "mean active lanes per warp execution (Hits / Warps): fewer than 32 is divergence or a partial warp"
)
SIMULATED = " (modelled in the simulator, where threads run one by one)"


def dims_text(d: tuple[int, int, int]) -> str:
    """(64, 1, 1) as "64", (8, 8, 1) as "(8, 8, 1)", as the launch was written."""
    return str(d[0]) if d[1:] == (1, 1) else str(tuple(d))


def launch_text(launches: Sequence[CudaLaunch]) -> str:
    """The Launch row: geometry and how many launches the figures add up."""
    last = launches[-1]
    geometry = f"{last.kernel}[{dims_text(last.grid)}, {dims_text(last.block)}]: {last.threads} threads"
    if len(launches) > 1:
        return f"{len(launches)} launches of the user's, added up; the last {geometry}"
    if last.launches > 1:
        return f"{geometry}; {last.launches} launches, the last one the user's"
    return f"{geometry}; 1 launch (the user's)"


def overhead_of(launches: Sequence[CudaLaunch]) -> tuple[float, float, float] | None:
    """(probed / plain, probed ms, plain ms) over the launches that timed both."""
    timed = [x for x in launches if x.plain_ms and x.probed_ms]
    if not timed:
        return None
    probed, plain = sum(x.probed_ms for x in timed), sum(x.plain_ms for x in timed)
    return probed / plain, probed, plain


def launch_notes(launches: Sequence[CudaLaunch], timed: bool, threshold: float) -> tuple[Note, ...]:
    """The kernel table's notes: what the times mean, the simulator, the overhead."""
    last = launches[-1]
    notes = [Note("info", CYCLES_MEANING)] if timed else []
    if not timed and not last.simulator:
        notes.append(Note("info", "hits only: counters without clock reads, so no times are shown"))
    said = dict.fromkeys(text for launch in launches for text in launch.notes)  # in order, once each
    notes += [Note("info", text) for text in said]
    overhead = overhead_of(launches)
    if overhead is None:
        if not last.simulator and not any("no overhead figure" in text for text in said):
            notes.append(Note("info", "no overhead figure: only the user's launch ran"))
        return tuple(notes)
    ratio, probed, plain = overhead
    how = "wall time in the simulator" if last.simulator else "CUDA events"
    text = (
        f"probed launch {ratio:.2f}x the plain launch ({probed:.3f} ms / {plain:.3f} ms, best of each, {how})"
    )
    if ratio > threshold and not last.simulator:
        text += (
            f"; above {threshold:g}x: the probes change register use, scheduling and occupancy, so times "
            "of lines in tight loops are inflated. Read this table as a guide, not a measurement."
        )
        notes.append(Note("warning", text))
    else:
        notes.append(Note("info", text))
    return tuple(notes)


def header_rows(f: CudaFunctionProfile, launches: Sequence[CudaLaunch]) -> tuple[tuple[str, str], ...]:
    """Launch, device, calls (and, for a kernel, what was put back between launches)."""
    last = launches[-1]
    rows = [("Launch", launch_text(launches)), ("Device", last.device)]
    if f.kind == "kernel":
        rows.append(("Calls", f"{f.calls} threads (kernel)"))
        if last.restored:
            rows.append(("Restored", f"{', '.join(last.restored)} (device copies) before each extra launch"))
    else:
        rows.append(("Calls", f"{f.calls} thread calls (device function, in launches of {last.kernel})"))
    return tuple(rows)


def function_stats(f: CudaFunctionProfile, launches: Sequence[CudaLaunch], threshold: float) -> FunctionStats:
    """One kernel or device function, added up over ``launches`` (those that ran it)."""
    timed = f.total_cycles is not None
    ran = [ln for ln in f.lines if ln.hits]
    simulated = launches[-1].simulator
    warps = {ln.lineno: str(ln.warps) for ln in ran}
    lanes = {ln.lineno: f"{ln.lanes:.1f}" for ln in ran if ln.lanes is not None}
    columns = (
        ExtraColumn("Warps", warps, WARPS_MEANING + (SIMULATED if simulated else "")),
        ExtraColumn("Lanes", lanes, LANES_MEANING),
    )
    overhead = overhead_of(launches)
    return FunctionStats(
        source=Source(f.filename, f.first_lineno, f.name, f.qualname, f.source),
        counts=Counts(
            hits=f.hits,
            calls=f.calls,
            ticks=f.total_cycles or 0,
            twin=PROBED if timed else COUNTING,  # a timed GPU twin reads the clock per line
            time_source=PROBES if timed else None,
        ),
        probes=Probes({ln.lineno: ln.cycles for ln in ran}, f.hits) if timed else Probes(),
        distortion=Distortion(
            overhead=None if overhead is None else overhead[0],
            unmeasured=None if overhead is not None else "only the user's launch ran",
        ),
        extras=Extras(header_rows(f, launches), columns),
        diagnosis=Diagnosis(
            notes=launch_notes(launches, timed, threshold) if f.kind == "kernel" else (),
            probes_corrected=False,  # a probe's own work is charged to no line: nothing to take out
        ),
    )


def profile_stats(
    profiles: CudaProfile | Sequence[CudaProfile], threshold: float = DEFAULT_THRESHOLD
) -> ProfileStats:
    """The common profile of one launch or of several added up (``CudaLineProfiler``)."""
    profiles = [profiles] if isinstance(profiles, CudaProfile) else list(profiles)
    clock = "%clock64 of each SM, in cycles"
    if not profiles:
        return ProfileStats(1.0, clock, runs=None, threshold=threshold, tick=TICK)
    if profiles[-1].launch.simulator:
        clock = "none: the CUDA simulator has no GPU clock"
    functions = []
    for f in merge_profiles(profiles).functions:
        launches = [p.launch for p in profiles if any(g.key == f.key for g in p.functions)]
        functions.append(function_stats(f, launches, threshold))
    return ProfileStats(1.0, clock, tuple(functions), None, None, threshold, TICK)
