"""The profile as plain, frozen data.

Nothing here knows how the numbers were measured or how they will be shown: run
phases return measurements, ``assemble`` folds them into these values once, and
renderers read them. ``to_line_stats`` hands a profile to line_profiler (``.lprof``
files, ``python -m line_profiler``); ``to_json``/``from_json`` save and load it.

What Time means: by default each line's time is its share of the function's
samples times the function's measured time in the user's run (``time_source ==
"samples"``): probe-free, from the optimized code. Where there are no samples
(sampling unavailable, ``--no-sample``) the times come from clock probes
(``"probes"``), and in hits-only mode there are none (``None``). With ``--probes``
the probe times are kept beside the sampled ones (``probe_ticks``).

Profiles of other hardware use the same value, so one set of renderers shows
them all: ``ProfileStats.tick`` keeps times in named ticks ("cycle": a GPU's
clock, with no fixed length in seconds), ``FunctionStats.header_rows`` adds rows
to a function's header (a launch's geometry and device), and
``FunctionStats.extra_columns`` adds per-line columns after % Time (warps, lanes).
"""

from __future__ import annotations

import json
import math
import pickle
from dataclasses import dataclass, field

try:  # VERSION: line_profiler 5 has a LineStats of its own (with to_file/from_files)
    from line_profiler.line_profiler import LineStats
except ImportError:  # line_profiler 4.x: the C extension's, pickled as line_profiler 4 does
    from line_profiler._line_profiler import LineStats

from .codec import from_data, to_data
from .machine.values import Hint, Instruction, LineCode
from .twin_kind import COUNTING, TwinKind

__all__ = [
    "ExtraColumn",
    "FunctionStats",
    "Hint",
    "Instruction",
    "LineCode",
    "LineStats",
    "Note",
    "ProcessPart",
    "ProfileStats",
    "RunsSummary",
    "SamplingSummary",
    "read_line_stats",
    "share_interval",
    "write_line_stats",
]

Z95 = 1.959964  # two-sided 95% normal quantile
SAMPLES, PROBES = "samples", "probes"  # where a function's Time column comes from


def share_interval(share: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval, in %, of a share (in %) measured with ``n`` samples.

    Each sample lands on a line or not, so the count is binomial in the
    function's sample total; the Wilson interval stays inside 0-100% and is
    honest for lines with few or no samples.
    """
    p = share / 100.0
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return (100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half))


@dataclass(frozen=True)
class Note:
    """One diagnostic sentence about a function's profile.

    ``level``: "warning" (the run was distorted: read the figures as a guide),
    "caution" (the figures are uncertain: few samples), or "info"."""

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
class FunctionStats:
    """Per-line hits and times of one profiled function, over the profiled calls."""

    filename: str
    first_lineno: int
    name: str
    qualname: str
    source_lines: tuple[str, ...]  # the source from first_lineno to the end of the def
    signatures: tuple[str, ...] = ()
    compile_seconds: dict[str, float] = field(default_factory=dict)  # twin kind -> seconds (0: reused)
    objmode_lines: frozenset[int] = frozenset()
    # the user's run: exact counts, and the function's own measured time
    hits: dict[int, int] = field(default_factory=dict)  # line -> hits
    calls: int = 0  # completed calls in the user's run(s)
    run_ticks: int = 0  # entry-to-return clock ticks of those calls (calls_timed False: their samples')
    calls_timed: bool = True  # False: a helper other jitted code calls, whose calls read no clock
    run_twin: TwinKind = COUNTING  # what the user's run ran on: counting or probed twins
    time_source: str | None = SAMPLES  # SAMPLES, PROBES, or None (no times)
    # samples of every sampled run (extra plain runs and the user's)
    sample_counts: dict[int, int] = field(default_factory=dict)  # line -> samples
    sample_seconds: dict[int, float] = field(default_factory=dict)  # line -> CPU seconds they stand for
    sample_addresses: dict[int, int] = field(default_factory=dict)  # address charged -> samples
    # clock probes (the user's run with --no-sample, or an extra run with --probes)
    probe_ticks: dict[int, int] = field(default_factory=dict)  # line -> raw ticks
    probe_hits: dict[int, int] = field(default_factory=dict)  # line -> hits of the probed run
    probe_cost: float = 0.0  # ticks one probe adds to the line it charges, per hit
    probes_corrected: bool = True  # probe times have probe_cost per hit taken out
    # distortion: the user's run against a plain run of the same calls
    overhead: float | None = None  # user's run / the plain runs' median (None: not measured)
    plain_ticks: float | None = None  # that median: the plain twin's time for the same calls
    overhead_spread: tuple[float, float] | None = None  # fastest and slowest plain run / their median
    overhead_unmeasured: str | None = None  # why not
    probe_overhead: float | None = None  # probed run / plain run
    probe_unmeasured: str | None = None  # why a probed run's times have no such figure
    lost_vectorization: frozenset[int] = frozenset()  # loops SIMD in the plain twin, not in the user's
    # the process's minor page faults in the user's run and the plain runs' median, over the calls
    # compared (None: unknown): a first run touching fresh memory is slower for that alone
    page_faults: tuple[int, int] | None = None
    # judgement (diagnose)
    notes: tuple[Note, ...] = ()
    below_resolution: frozenset[int] = frozenset()  # probe times too quick for a probe to time
    disagree: frozenset[int] = frozenset()  # probe share outside the sampled interval
    # the optimized code (asm=True)
    code: dict[int, LineCode] = field(default_factory=dict)
    code_twin: str | None = None  # whose code was read
    code_sample_counts: dict[int, int] = field(default_factory=dict)  # line -> samples of that twin's runs
    code_seconds: float = 0.0
    code_unavailable: str | None = None
    allocations_unavailable: str | None = None
    hot_lines: tuple[int, ...] = ()  # hottest first: what the hints and listings describe
    hints: tuple[Hint, ...] = ()
    # what other hardware adds (a GPU launch): header rows after "Function", columns after % Time
    header_rows: tuple[tuple[str, str], ...] = ()  # (label, value)
    extra_columns: tuple[ExtraColumn, ...] = ()
    # what the table is headed with: the function as the user holds it, where that is not its
    # qualified name ("fast_sum_log_nz (sum_log_nz, fastmath)"); "": the qualified name
    title: str = ""

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.filename, self.first_lineno, self.name)

    @property
    def heading(self) -> str:
        """The function's name as its table shows it."""
        return self.title or self.qualname

    @property
    def timed(self) -> bool:
        return self.time_source is not None

    @property
    def has_probes(self) -> bool:
        return bool(self.probe_ticks)

    # -- samples ------------------------------------------------------------------
    @property
    def samples(self) -> int:
        """Samples that landed in this function."""
        return sum(self.sample_counts.values())

    def sample_share(self, line: int) -> float | None:
        """% of the function's sampled CPU time on ``line`` (None without samples)."""
        total = sum(self.sample_seconds.values())
        return 100.0 * self.sample_seconds.get(line, 0.0) / total if total > 0 else None

    def sample_interval(self, line: int) -> tuple[float, float] | None:
        """95% interval of ``line``'s sampled share, in % (Wilson score interval)."""
        share, n = self.sample_share(line), self.samples
        if share is None or n == 0:
            return None
        return share_interval(share, n)

    # -- probes -------------------------------------------------------------------
    def probe_line_ticks(self, line: int, raw: bool = False) -> float:
        """Probe ticks of ``line``, the probes' own cost taken out (unless raw), never below 0."""
        ticks = self.probe_ticks.get(line, 0)
        if raw or not self.probes_corrected:
            return float(ticks)
        return max(0.0, ticks - self.probe_hits.get(line, 0) * self.probe_cost)

    def probe_total(self, raw: bool = False) -> float:
        return sum(self.probe_line_ticks(line, raw) for line in self.probe_ticks)

    def probe_share(self, line: int) -> float | None:
        """% of the function's probe time on ``line`` (None without probes)."""
        total = self.probe_total()
        return 100.0 * self.probe_line_ticks(line) / total if total > 0 else None

    # -- the Time column ----------------------------------------------------------
    def time_share(self, line: int) -> float | None:
        """% of the function's time on ``line``, from the Time column's source."""
        if self.time_source == SAMPLES:
            return self.sample_share(line)
        if self.time_source == PROBES:
            return self.probe_share(line)
        return None

    def line_ticks(self, line: int) -> float | None:
        """Time of ``line`` in ticks (None: not measured)."""
        if self.time_source == PROBES:
            return self.probe_line_ticks(line)
        share = self.time_share(line)
        return None if share is None else self.run_ticks * share / 100.0

    def line_interval_ticks(self, line: int) -> tuple[float, float] | None:
        """95% interval of ``line``'s sampled time, in ticks."""
        interval = self.sample_interval(line) if self.time_source == SAMPLES else None
        if interval is None:
            return None
        return (self.run_ticks * interval[0] / 100.0, self.run_ticks * interval[1] / 100.0)

    def total_ticks(self) -> float:
        if self.time_source == PROBES:
            return self.probe_total()
        return float(self.run_ticks) if self.time_source == SAMPLES else 0.0

    def timings(self) -> list[tuple[int, int, int]]:
        """line_profiler's rows: (lineno, hits, time) for every line that ran."""
        rows = []
        for line in sorted(self.hits):
            if self.hits[line]:
                ticks = self.line_ticks(line)
                rows.append((line, self.hits[line], round(ticks) if ticks is not None else 0))
        return rows

    def line_text(self, lineno: int) -> str:
        index = lineno - self.first_lineno
        return self.source_lines[index].rstrip("\n") if 0 <= index < len(self.source_lines) else ""


@dataclass(frozen=True)
class SamplingSummary:
    """How the runs were sampled (or why they were not)."""

    rate_hz: float
    achieved_hz: float = 0.0
    total: int = 0  # samples taken, over all threads
    outside: int = 0  # samples whose whole stack lies outside the profiled functions
    cpu_seconds: float = 0.0  # CPU time the samples stand for (idle threads weigh nothing)
    outside_cpu_seconds: float = 0.0  # of which outside every profiled function
    stopped: dict[str, int] = field(default_factory=dict)  # cause -> samples whose walk stopped short
    unavailable: str | None = None  # why there are no samples
    runs: int = 0  # runs sampled: the user's and extra runs of the plain twin
    extra_runs: int = 0  # of which extra runs
    seconds: float = 0.0  # wall time of the sampled runs
    target: int = 0  # samples the extra runs aimed for in the profiled functions
    lowered: str | None = None  # why the rate sampled at is below ``rate_hz`` (stack walks' cost)

    @property
    def stopped_total(self) -> int:
        return sum(self.stopped.values())


@dataclass(frozen=True)
class RunsSummary:
    """What ran: the user's run, the extra runs, and what was put back between them."""

    user_twin: TwinKind = COUNTING  # what the user's run ran on
    extra: tuple[str, ...] = ()  # the extra runs, in words ("timed plain run", ...)
    once: str | None = None  # why no extra run was made
    restored: dict[str, str] = field(default_factory=dict)  # what the extra runs changed -> its kind
    restored_bytes: int = 0
    results: str | None = None  # how the user's run's results compare with the plain run's (fastmath)


@dataclass(frozen=True)
class ProfileStats:
    """Everything one profiler measured: its functions, the clock, the sampling and the runs."""

    unit: float  # seconds per tick (1.0 where ``tick`` is named: ticks of no fixed length)
    clock: str  # a sentence about the clock, for headers
    functions: tuple[FunctionStats, ...] = ()
    sampling: SamplingSummary | None = None  # None: sampling was not asked for
    runs: RunsSummary | None = field(default_factory=RunsSummary)  # None: no CPU run model
    threshold: float = 1.2  # overhead ratio above which the profile is flagged as distorted
    tick: str | None = None  # times shown in these ticks ("cycle"), not converted to seconds
    # where the work was done: every process's own profile (the main one first), whose sums
    # ``functions`` are, and the processes that sent none (``merge``); empty: this process only
    parts: tuple[ProcessPart, ...] = ()
    missing: tuple[str, ...] = ()  # a sentence per process that sent no part, saying why

    def to_line_stats(self) -> LineStats:
        return LineStats({f.key: f.timings() for f in self.functions}, self.unit)

    def to_json(self) -> str:
        return json.dumps(to_data(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> ProfileStats:
        return from_data(cls, json.loads(text))


@dataclass(frozen=True)
class ProcessPart:
    """What one process measured: ``label`` ("main", "worker ForkPoolWorker-1"), its pid, and
    its own profile, as it wrote it (its clock's unit, its own notes)."""

    label: str
    pid: int
    profile: ProfileStats


def write_line_stats(stats: LineStats, filename: str) -> None:
    """Write ``stats`` as an ``.lprof`` file (a pickle, which ``python -m line_profiler`` reads).

    VERSION: line_profiler 5's ``LineStats.to_file``; line_profiler 4 has no such
    method and its ``dump_stats`` pickles the stats the same way.
    """
    if hasattr(stats, "to_file"):
        stats.to_file(filename)
        return
    with open(filename, "wb") as f:
        pickle.dump(stats, f, pickle.HIGHEST_PROTOCOL)


def read_line_stats(filename: str) -> LineStats:
    """The stats in an ``.lprof`` file (line_profiler 5's ``from_files``, or 4's pickle)."""
    if hasattr(LineStats, "from_files"):
        return LineStats.from_files(filename)
    with open(filename, "rb") as f:
        return pickle.load(f)
