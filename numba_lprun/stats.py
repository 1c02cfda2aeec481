"""The profile as plain data.

Nothing here knows how the numbers were measured or how they will be shown:
renderers read these objects, and ``to_line_stats`` hands them to line_profiler
(``.lprof`` files, ``python -m line_profiler``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from line_profiler.line_profiler import LineStats

Z95 = 1.959964  # two-sided 95% normal quantile


def share_interval(share: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval, in %, of a share (in %) measured with ``n`` samples."""
    p = share / 100.0
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return (100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half))


@dataclass
class Note:
    """One diagnostic sentence about a function's profile."""

    level: str  # "warning" or "info"
    text: str


@dataclass
class Instruction:
    """One machine instruction of the plain twin, as the disassembler wrote it."""

    address: int  # where it runs
    size: int  # bytes
    text: str  # mnemonic and operands
    samples: int = 0  # samples charged here (the interrupted pc, or a call whose callee was running)
    target: str | None = None  # the called function's name, for a call or jump out of the function
    origin: str | None = None  # where that function comes from: libm.so.6, Numba's runtime, jitted code
    packed: bool = False  # packed (SIMD) arithmetic on several lanes at once


@dataclass
class LineCode:
    """The plain twin's machine code for one source line, and what it can be said to do."""

    line: int
    instructions: list[Instruction] = field(default_factory=list)
    allocations: int | None = None  # arrays allocated from this line in a counted run (None: not counted)
    executions: int | None = None  # the line's hits in that same counted run

    @property
    def samples(self) -> int:
        return sum(i.samples for i in self.instructions)

    @property
    def calls(self) -> list[str]:
        """Names of what the line's code calls, each once, in address order."""
        return list(self.call_origins)

    @property
    def call_origins(self) -> dict[str, str]:
        """Name -> origin of what the line's code calls, in address order."""
        seen: dict[str, str] = {}
        for ins in self.instructions:
            if ins.target is not None:
                seen.setdefault(ins.target, ins.origin or "")
        return seen

    @property
    def packed(self) -> list[str]:
        """Mnemonics of the line's packed (SIMD) arithmetic, each once."""
        seen: dict[str, None] = {}
        for ins in self.instructions:
            if ins.packed:
                seen.setdefault(ins.text.split()[0])
        return list(seen)


@dataclass
class Hint:
    """One fact read from a line's machine code, as a sentence (``kind``: alloc, simd,
    hot-call, refcount, call, no-code)."""

    line: int
    kind: str
    text: str


@dataclass
class FunctionStats:
    """Per-line counts and times of one profiled function, over all runs so far."""

    filename: str
    first_lineno: int
    name: str
    qualname: str
    source_lines: list[str]  # the source from first_lineno to the end of the def
    hits: dict[int, int] = field(default_factory=dict)  # line -> hits
    ticks: dict[int, int] = field(default_factory=dict)  # line -> clock ticks (raw)
    calls: int = 0  # completed calls of the instrumented twin
    instrumented_ticks: int = 0  # entry-to-return time of those calls
    plain_calls: int = 0
    plain_ticks: int = 0
    signatures: list[str] = field(default_factory=list)
    compile_seconds: dict[str, float] = field(default_factory=dict)  # twin kind -> seconds
    objmode_lines: set[int] = field(default_factory=set)  # times folded into the with line
    timed: bool = True  # False in hits-only mode: ticks are not measured
    probe_ticks: float = 0.0  # what one probe adds to the line it charges, per hit
    corrected: bool = True  # line times have probe_ticks per hit taken out
    notes: list[Note] = field(default_factory=list)  # diagnostics to show under the table
    below_resolution: set[int] = field(default_factory=set)  # lines too quick for a probe to time
    lost_vectorization: set[int] = field(default_factory=set)  # loops SIMD in plain, not instrumented
    sampled: dict[int, float] = field(default_factory=dict)  # line -> CPU seconds sampled (plain run)
    sample_counts: dict[int, int] = field(default_factory=dict)  # line -> samples
    disagree: set[int] = field(default_factory=set)  # instrumented share outside the sampled interval
    sample_addresses: dict[int, int] = field(default_factory=dict)  # address charged -> samples
    code: dict[int, LineCode] = field(default_factory=dict)  # line -> plain twin's machine code
    code_seconds: float = 0.0  # time spent disassembling and reading the code
    code_unavailable: str | None = None  # why there is no machine code view
    allocations_unavailable: str | None = None  # why allocations per line were not counted
    hints: list[Hint] = field(default_factory=list)  # facts about the hot lines' code

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.filename, self.first_lineno, self.name)

    @property
    def overhead(self) -> float | None:
        """Instrumented time / plain time over the same calls (None if not comparable)."""
        if not self.plain_calls or self.plain_calls != self.calls or self.plain_ticks <= 0:
            return None
        return self.instrumented_ticks / self.plain_ticks

    def line_ticks(self, line: int, raw: bool = False) -> float:
        """Ticks charged to ``line``: with the probes' own cost taken out when
        ``self.corrected`` (and not ``raw``), never below zero."""
        ticks = self.ticks.get(line, 0)
        if raw or not self.corrected:
            return ticks
        return max(0.0, ticks - self.hits.get(line, 0) * self.probe_ticks)

    def total_ticks(self, raw: bool = False) -> float:
        return sum(self.line_ticks(line, raw) for line in self.hits)

    def timings(self) -> list[tuple[int, int, int]]:
        """line_profiler's rows: (lineno, hits, time) for every line that ran."""
        return [
            (line, self.hits[line], round(self.line_ticks(line)))
            for line in sorted(self.hits)
            if self.hits[line]
        ]

    def time_share(self, line: int) -> float | None:
        """% of the function's instrumented time on ``line``."""
        total = self.total_ticks()
        return 100.0 * self.line_ticks(line) / total if self.timed and total > 0 else None

    def sample_share(self, line: int) -> float | None:
        """% of the function's sampled CPU time on ``line`` (None without samples)."""
        total = sum(self.sampled.values())
        return 100.0 * self.sampled.get(line, 0.0) / total if total > 0 else None

    @property
    def samples(self) -> int:
        """Samples that landed in this function."""
        return sum(self.sample_counts.values())

    def sample_interval(self, line: int) -> tuple[float, float] | None:
        """95% interval of ``line``'s sampled share, in % (Wilson score interval).

        Each sample lands on ``line`` or not, so the count is binomial in the
        function's sample total; the Wilson interval stays inside 0-100% and is
        honest for lines with few or no samples.
        """
        share, n = self.sample_share(line), self.samples
        if share is None or n == 0:
            return None
        return share_interval(share, n)

    def sampled_ticks(self, line: int) -> float | None:
        """Probe-free time estimate of ``line``: the plain runs' measured time times its sampled share."""
        share = self.sample_share(line)
        if share is None or not self.plain_calls:
            return None
        return self.plain_ticks * share / 100.0

    def line_text(self, lineno: int) -> str:
        index = lineno - self.first_lineno
        return self.source_lines[index].rstrip("\n") if 0 <= index < len(self.source_lines) else ""


@dataclass
class SamplingInfo:
    """How the plain run was sampled (or why it was not)."""

    rate_hz: float
    achieved_hz: float = 0.0
    total: int = 0  # samples taken, over all threads
    outside: int = 0  # samples in no profiled function (other code, idle threads)
    cpu_seconds: float = 0.0  # CPU time the samples stand for (idle threads weigh nothing)
    outside_cpu_seconds: float = 0.0  # of which outside every profiled function
    unavailable: str | None = None  # why there are no samples
    repeats: int = 0  # sampled repeats of the plain run, over all profiled calls
    seconds: float = 0.0  # wall time spent in sampled repeats
    target: int = 0  # samples the repeats aimed for in the profiled functions
    not_repeated: str | None = None  # why the plain run was not repeated under the sampler


@dataclass
class IsolationInfo:
    """How the profiled call was kept to one call's effects across its runs."""

    restored: dict[str, str] = field(default_factory=dict)  # what the extra runs changed -> its kind
    restored_bytes: int = 0  # size of the state put back, summed over distinct items
    single_run: str | None = None  # why the call ran once only (no baseline, no samples)


@dataclass
class ProfileStats:
    """Everything one profiler measured: its functions and the clock's unit."""

    unit: float  # seconds per tick
    clock: str  # a sentence about the clock, for headers
    functions: list[FunctionStats] = field(default_factory=list)
    sampling: SamplingInfo | None = None  # None: sampling was not asked for
    isolation: IsolationInfo = field(default_factory=IsolationInfo)

    def to_line_stats(self) -> LineStats:
        return LineStats({f.key: f.timings() for f in self.functions}, self.unit)
