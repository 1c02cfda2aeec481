"""The parts a function's profile is made of: small frozen values, one per kind of figure.

Why parts: a function's profile holds what different phases measured (the user's run's
counts, the samples, the clock probes, the plain runs it is compared with, the machine
code) and what was judged of them (the diagnosis). Each part is made by one step of
``assemble`` (or summed by ``merge``) and read by the renderers; the diagnosis is
computed from the measured parts (:class:`Measured`) before the ``FunctionStats`` that
holds them all is made, so nothing is written into a profile after it exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .machine.values import Hint, LineCode
from .sampling.attribution import LineSamples, share_interval
from .twin_kind import COUNTING, TwinKind

SAMPLES, PROBES = "samples", "probes"  # where a function's Time column comes from


@dataclass(frozen=True)
class Note:
    """One diagnostic sentence about a function's profile.

    ``level``: "error" (the function did not compile), "warning" (the run was distorted:
    read the figures as a guide), "caution" (the figures are uncertain: few samples), or "info"."""

    level: str
    text: str


@dataclass(frozen=True)
class ExtraColumn:
    """A per-line figure line_profiler has no column for, shown after % Time.

    Why: profiles measured on other hardware carry per-line figures of their own
    (a GPU's warp executions and active lanes); the renderers show them as text
    cells without knowing what they mean, so one set of renderers serves all.
    """

    header: str
    cells: dict[int, str] = field(default_factory=dict)  # line -> the cell as shown
    explanation: str = ""  # what the figure means (a hover in HTML)


@dataclass(frozen=True)
class Source:
    """Which function this is and its source: what every table is headed and lined with.

    Why apart: it is known before anything runs (the function's facts), and it is the
    same in every process's part of a profile."""

    filename: str
    first_lineno: int
    name: str
    qualname: str
    lines: tuple[str, ...]  # the source from first_lineno to the end of the def
    signatures: tuple[str, ...] = ()
    compile_seconds: dict[str, float] = field(default_factory=dict)  # twin kind -> seconds (0: reused)
    uncached: dict[str, str] = field(default_factory=dict)  # twin kind compiled -> why not cached on disk
    objmode_lines: frozenset[int] = frozenset()
    unsampled: str = ""  # why no sample maps to its lines, in its kind's words ("": they do)
    # what the table is headed with: the function as the user holds it, where that is not its
    # qualified name ("fast_sum_log_nz (sum_log_nz, fastmath)"); "": the qualified name
    title: str = ""
    compile_error: str = ""  # why it did not compile in the user's run, in one line ("": it did)
    # compiled code the run could not send to a twin that links this function's own, where it counted
    # nothing (``run.unreached``): its calls from there were not counted
    unreached: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, int, str]:
        """The function as line_profiler keys it: (filename, first line, name)."""
        return (self.filename, self.first_lineno, self.name)


@dataclass(frozen=True)
class Counts:
    """The user's run: exact counts, and the function's own measured time.

    Why apart: these are the figures that add exactly over calls and processes, and the
    Time column scales its shares by ``ticks``."""

    hits: dict[int, int] = field(default_factory=dict)  # line -> hits
    calls: int = 0  # completed calls in the user's run(s)
    ticks: int = 0  # entry-to-return clock ticks of those calls (calls_timed False: their samples')
    calls_timed: bool = True  # False: a helper other jitted code calls, whose calls read no clock
    twin: TwinKind = COUNTING  # what the user's run ran on: counting or probed twins
    time_source: str | None = SAMPLES  # SAMPLES, PROBES, or None (no times)


@dataclass(frozen=True)
class Probes:
    """Clock probes' times (the user's run with --no-sample, or an extra run with --probes).

    Why apart: probe times carry the probes' own cost, which is taken out per hit
    (unless ``raw``: the diagnosis decides whether it may be)."""

    ticks: dict[int, int] = field(default_factory=dict)  # line -> raw ticks
    hits: dict[int, int] = field(default_factory=dict)  # line -> hits of the probed run
    cost: float = 0.0  # ticks one probe adds to the line it charges, per hit

    def line_ticks(self, line: int, raw: bool = False) -> float:
        """Probe ticks of ``line``, the probes' own cost taken out (unless raw), never below 0."""
        ticks = self.ticks.get(line, 0)
        if raw:
            return float(ticks)
        return max(0.0, ticks - self.hits.get(line, 0) * self.cost)

    def total(self, raw: bool = False) -> float:
        return sum(self.line_ticks(line, raw) for line in self.ticks)

    def share(self, line: int, raw: bool = False) -> float | None:
        """% of the function's probe time on ``line`` (None without probes)."""
        total = self.total(raw)
        return 100.0 * self.line_ticks(line, raw) / total if total > 0 else None


def time_share(
    line: int, counts: Counts, samples: LineSamples, probes: Probes, raw: bool = False
) -> float | None:
    """% of the function's time on ``line``, from the Time column's source (``counts.time_source``)."""
    if counts.time_source == SAMPLES:
        return samples.share(line)
    if counts.time_source == PROBES:
        return probes.share(line, raw)
    return None


@dataclass(frozen=True)
class Distortion:
    """How far the user's run differed from a plain run of the same calls (the unprofiled code).

    Why apart: these figures come from comparing runs, not from any one line; the
    diagnosis reads them to say how far the table can be trusted."""

    overhead: float | None = None  # user's run / the plain runs' median (None: not measured)
    plain_ticks: float | None = None  # that median: the plain twin's time for the same calls
    spread: tuple[float, float] | None = None  # fastest and slowest plain run / their median
    unmeasured: str | None = None  # why the overhead is not measured
    probe_overhead: float | None = None  # probed run / plain run
    probe_unmeasured: str | None = None  # why a probed run's times have no such figure
    lost_vectorization: frozenset[int] = frozenset()  # loops SIMD in the plain twin, not in the user's
    # loops SIMD in the user's twin, not in the plain twin (line 0: a stencil's loop nest): its
    # samples describe faster code than the program's
    gained_vectorization: frozenset[int] = frozenset()
    # callees the program runs as their own build, not vectorized, where the twins run a copy
    # LLVM vectorized (``vectorized.callees_faster_in_copies``): the samples describe faster code
    faster_callees: frozenset[str] = frozenset()
    # the process's minor page faults in the user's run and the plain runs' median, over the calls
    # compared (None: unknown): a first run touching fresh memory is slower for that alone
    page_faults: tuple[int, int] | None = None
    uncompared: str | None = None  # why the twins' vectorization was not compared (no plain twin compiled)
    # plain runs left out of the median: a compile just before them, or fresh memory the others reused
    plain_left_out: int = 0
    compiled: bool = False  # Numba compiled during the user's run (its time leaves the compile out)


@dataclass(frozen=True)
class MachineCode:
    """The optimized code by line (``asm=True``), with its allocations and the hints read from it.

    Why apart: it is read from one twin's code, once, and belongs to the main process only."""

    lines: dict[int, LineCode] = field(default_factory=dict)
    twin: str | None = None  # whose code was read
    sample_counts: dict[int, int] = field(default_factory=dict)  # line -> samples of that twin's runs
    seconds: float = 0.0  # time spent reading it
    unavailable: str | None = None  # why there is no code
    allocations_unavailable: str | None = None  # why allocations are not counted
    hints: tuple[Hint, ...] = ()  # about the hot lines (``Diagnosis.hot_lines``)


@dataclass(frozen=True)
class Extras:
    """What other hardware (a GPU launch) or other processes add to the table.

    Why: the renderers show these as text without knowing what they mean, so one set of
    renderers serves every profile."""

    rows: tuple[tuple[str, str], ...] = ()  # header rows after "Function": (label, value)
    columns: tuple[ExtraColumn, ...] = ()  # per-line columns after % Time


@dataclass(frozen=True)
class Measured:
    """Everything measured of one function, nothing judged: what the diagnosis reads.

    Why a value of its own: the diagnosis is computed from it, and only then is the
    ``FunctionStats`` that holds both made."""

    source: Source
    counts: Counts = field(default_factory=Counts)
    samples: LineSamples = field(default_factory=LineSamples)
    probes: Probes = field(default_factory=Probes)
    distortion: Distortion = field(default_factory=Distortion)


@dataclass(frozen=True)
class Diagnosis:
    """What ``diagnose`` judged of the measured parts: the notes, the marks, the hot lines.

    Why apart: it is computed from the other parts, once, and changes none of them."""

    notes: tuple[Note, ...] = ()
    below_resolution: frozenset[int] = frozenset()  # probe times too quick for a probe to time
    disagree: frozenset[int] = frozenset()  # probe share outside the sampled interval
    probes_corrected: bool = True  # probe times are shown with the probes' cost per hit taken out
    hot_lines: tuple[int, ...] = ()  # hottest first: what the hints and listings describe


#: Fields of the parts that format 1 had no name for (added since: absent in a format-1 profile).
SINCE_FORMAT_2: frozenset[tuple[str, str]] = frozenset(
    {
        ("samples", "threads"),
        ("distortion", "uncompared"),
        ("distortion", "plain_left_out"),
        ("distortion", "compiled"),
        ("distortion", "gained_vectorization"),
        ("distortion", "faster_callees"),
        ("source", "uncached"),
        ("source", "unsampled"),
        ("source", "compile_error"),
        ("source", "unreached"),
    }
)

#: Where each field of format 1's flat FunctionStats went: its part and its name there (format 2).
FLAT_FIELDS: dict[str, tuple[str, str]] = {
    **{name: ("source", name) for name in ("filename", "first_lineno", "name", "qualname", "title")},
    **{name: ("source", name) for name in ("signatures", "compile_seconds", "objmode_lines")},
    "source_lines": ("source", "lines"),
    **{name: ("counts", name) for name in ("hits", "calls", "calls_timed", "time_source")},
    "run_ticks": ("counts", "ticks"),
    "run_twin": ("counts", "twin"),
    "sample_counts": ("samples", "counts"),
    "sample_seconds": ("samples", "seconds"),
    "sample_addresses": ("samples", "addresses"),
    "probe_ticks": ("probes", "ticks"),
    "probe_hits": ("probes", "hits"),
    "probe_cost": ("probes", "cost"),
    **{name: ("distortion", name) for name in ("overhead", "plain_ticks", "probe_overhead")},
    **{name: ("distortion", name) for name in ("probe_unmeasured", "lost_vectorization", "page_faults")},
    "overhead_spread": ("distortion", "spread"),
    "overhead_unmeasured": ("distortion", "unmeasured"),
    "code": ("machine", "lines"),
    "code_twin": ("machine", "twin"),
    "code_sample_counts": ("machine", "sample_counts"),
    "code_seconds": ("machine", "seconds"),
    "code_unavailable": ("machine", "unavailable"),
    "allocations_unavailable": ("machine", "allocations_unavailable"),
    "hints": ("machine", "hints"),
    "header_rows": ("extras", "rows"),
    "extra_columns": ("extras", "columns"),
    **{name: ("diagnosis", name) for name in ("notes", "below_resolution", "disagree", "hot_lines")},
    "probes_corrected": ("diagnosis", "probes_corrected"),
}


def from_flat(function: dict) -> dict:
    """A function's data in format 1 (one flat dict) as format 2's parts (a dict per part).

    Why: profiles saved before the parts (``to_json``) still load; a field format 1 did
    not know is left out, as the codec leaves out names a class does not know."""
    parts: dict[str, dict] = {}
    for old, value in function.items():
        if old in FLAT_FIELDS:
            part, name = FLAT_FIELDS[old]
            parts.setdefault(part, {})[name] = value
    return parts


__all__ = [
    "PROBES",
    "SAMPLES",
    "Counts",
    "Diagnosis",
    "Distortion",
    "FLAT_FIELDS",
    "ExtraColumn",
    "Extras",
    "MachineCode",
    "Measured",
    "Note",
    "Probes",
    "LineSamples",
    "Source",
    "from_flat",
    "share_interval",
    "time_share",
]
