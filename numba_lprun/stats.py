"""The profile as plain, frozen data.

Nothing here knows how the numbers were measured or how they will be shown: run
phases return measurements, ``assemble`` folds them into these values once, and
renderers read them. A function's profile (``FunctionStats``) is made of small parts
(``stats_parts``): its source, the user's run's counts, the samples, the probes, the
distortion, the machine code, the extras, and the diagnosis judged from the others.
``to_line_stats`` hands a profile to line_profiler (``.lprof`` files, ``python -m
line_profiler``); ``to_json``/``from_json`` save and load it (older formats migrated).

What Time means: by default each line's time is its share of the function's
samples times the function's measured time in the user's run (``time_source ==
"samples"``): probe-free, from the optimized code. Where there are no samples
(sampling unavailable, ``--no-sample``) the times come from clock probes
(``"probes"``), and in hits-only mode there are none (``None``). With ``--probes``
the probe times are kept beside the sampled ones (``probes``).

Profiles of other hardware use the same value, so one set of renderers shows
them all: ``ProfileStats.tick`` keeps times in named ticks ("cycle": a GPU's
clock, with no fixed length in seconds), ``FunctionStats.extras.rows`` adds rows
to a function's header (a launch's geometry and device), and
``FunctionStats.extras.columns`` adds per-line columns after % Time (warps, lanes).
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field

try:  # VERSION: line_profiler 5 has a LineStats of its own (with to_file/from_files)
    from line_profiler.line_profiler import LineStats
except ImportError:  # line_profiler 4.x: the C extension's, pickled as line_profiler 4 does
    from line_profiler._line_profiler import LineStats

from .codec import from_data, to_data
from .machine.values import Hint, Instruction, LineCode
from .stats_parts import (
    PROBES,
    SAMPLES,
    Counts,
    Diagnosis,
    Distortion,
    ExtraColumn,
    Extras,
    LineSamples,
    MachineCode,
    Measured,
    Note,
    Probes,
    Source,
    from_flat,
    share_interval,
    time_share,
)
from .twin_kind import COUNTING, TwinKind

__all__ = [
    "PROBES",
    "SAMPLES",
    "Counts",
    "Diagnosis",
    "Distortion",
    "ExtraColumn",
    "DEFAULT_THRESHOLD",
    "FORMAT",
    "Extras",
    "FunctionStats",
    "Hint",
    "Instruction",
    "LineCode",
    "LineStats",
    "MachineCode",
    "Measured",
    "Note",
    "Probes",
    "ProcessPart",
    "ProfileStats",
    "RunsSummary",
    "LineSamples",
    "SamplingSummary",
    "Source",
    "read_line_stats",
    "share_interval",
    "time_share",
    "write_line_stats",
]

DEFAULT_THRESHOLD = 1.2  # run/plain ratio above which a view is only a guide (every front end's default)
FORMAT = 2  # the JSON format ``to_json`` writes (1: no "format" key, flat FunctionStats)


@dataclass(frozen=True)
class FunctionStats:
    """Per-line hits and times of one profiled function, over the profiled calls.

    Made of parts (``stats_parts``), each from one kind of measurement, and the
    diagnosis judged from them. Each figure is read from its part, one way only
    (``f.counts.hits``, ``f.source.name``, ``f.diagnosis.notes``); the methods here are the
    figures that need more than one part (a line's time needs the counts, the samples, the
    probes, and whether the diagnosis takes the probes' own cost out)."""

    source: Source
    counts: Counts = field(default_factory=Counts)
    samples: LineSamples = field(default_factory=LineSamples)
    probes: Probes = field(default_factory=Probes)
    distortion: Distortion = field(default_factory=Distortion)
    machine: MachineCode = field(default_factory=MachineCode)
    extras: Extras = field(default_factory=Extras)
    diagnosis: Diagnosis = field(default_factory=Diagnosis)

    @property
    def heading(self) -> str:
        """The function's name as its table shows it."""
        return self.source.title or self.source.qualname

    @property
    def measured(self) -> Measured:
        """The measured parts, as the diagnosis reads them."""
        return Measured(self.source, self.counts, self.samples, self.probes, self.distortion)

    # -- shares ---------------------------------------------------------------------
    def probe_line_ticks(self, line: int, raw: bool = False) -> float:
        """Probe ticks of ``line``, the probes' own cost taken out (unless raw, or the diagnosis
        shows them raw), never below 0."""
        return self.probes.line_ticks(line, raw or not self.diagnosis.probes_corrected)

    def probe_total(self, raw: bool = False) -> float:
        return self.probes.total(raw or not self.diagnosis.probes_corrected)

    def probe_share(self, line: int) -> float | None:
        """% of the function's probe time on ``line`` (None without probes)."""
        return self.probes.share(line, not self.diagnosis.probes_corrected)

    # -- the Time column ----------------------------------------------------------
    def time_share(self, line: int) -> float | None:
        """% of the function's time on ``line``, from the Time column's source."""
        raw = not self.diagnosis.probes_corrected
        return time_share(line, self.counts, self.samples, self.probes, raw)

    def line_ticks(self, line: int) -> float | None:
        """Time of ``line`` in ticks (None: not measured)."""
        if self.counts.time_source == PROBES:
            return self.probe_line_ticks(line)
        share = self.time_share(line)
        return None if share is None else self.counts.ticks * share / 100.0

    def line_interval_ticks(self, line: int) -> tuple[float, float] | None:
        """95% interval of ``line``'s sampled time, in ticks."""
        interval = self.samples.interval(line) if self.counts.time_source == SAMPLES else None
        if interval is None:
            return None
        return (self.counts.ticks * interval[0] / 100.0, self.counts.ticks * interval[1] / 100.0)

    def total_ticks(self) -> float:
        if self.counts.time_source == PROBES:
            return self.probe_total()
        return float(self.counts.ticks) if self.counts.time_source == SAMPLES else 0.0

    def timings(self) -> list[tuple[int, int, int]]:
        """line_profiler's rows: (lineno, hits, time) for every line that ran."""
        rows = []
        for line in sorted(self.counts.hits):
            if self.counts.hits[line]:
                ticks = self.line_ticks(line)
                rows.append((line, self.counts.hits[line], round(ticks) if ticks is not None else 0))
        return rows

    def line_text(self, lineno: int) -> str:
        index = lineno - self.source.first_lineno
        lines = self.source.lines
        return lines[index].rstrip("\n") if 0 <= index < len(lines) else ""


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
    threshold: float = DEFAULT_THRESHOLD  # overhead ratio above which the profile is flagged as distorted
    tick: str | None = None  # times shown in these ticks ("cycle"), not converted to seconds
    # where the work was done: every process's own profile (the main one first), whose sums
    # ``functions`` are, and the processes that sent none (``merge``); empty: this process only
    parts: tuple[ProcessPart, ...] = ()
    missing: tuple[str, ...] = ()  # a sentence per process that sent no part, saying why
    # functions the program made during the run that ran as themselves, unprofiled: why, per function
    unprofiled: tuple[str, ...] = ()
    # entries of the program's own Numba cache the run did not write (linked against a twin)
    cache_kept: tuple[str, ...] = ()
    # profiled functions whose hits may be short, and why: a sentence each (``run.HitsShort``)
    short: tuple[str, ...] = ()

    def to_line_stats(self) -> LineStats:
        return LineStats({f.source.key: f.timings() for f in self.functions}, self.unit)

    def to_json(self) -> str:
        """The profile as JSON, in format ``FORMAT`` (its ``"format"`` key)."""
        return json.dumps({"format": FORMAT, **to_data(self)}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> ProfileStats:
        """The profile ``to_json`` wrote, in this format or an earlier one (migrated)."""
        data = json.loads(text)
        version = data.pop("format", 1)
        if version > FORMAT:
            raise ValueError(f"a profile in JSON format {version}: this numba_lprun reads up to {FORMAT}")
        return from_data(cls, data if version == FORMAT else _from_format_1(data))


def _from_format_1(profile: dict) -> dict:
    """A profile's data in format 1 (flat functions, in its processes' parts too) as format 2's."""
    functions = [from_flat(f) for f in profile.get("functions", ())]
    parts = [{**p, "profile": _from_format_1(p["profile"])} for p in profile.get("parts", ())]
    return {**profile, "functions": functions, "parts": parts}


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
