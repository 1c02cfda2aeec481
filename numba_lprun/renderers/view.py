"""The numbers every renderer shows, derived once from the profile (no I/O, no styling)."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, replace

from ..stats import PROBES, SAMPLES, FunctionStats, ProfileStats, RunsSummary, SamplingSummary
from ..twin_kind import COUNTING, PROBED

#: the title each level of note is shown under (info notes have none)
NOTE_TITLES = {"error": "compile failed", "warning": "distortion warning", "caution": "uncertain figures"}
HEAVY_SHARE = 10.0  # % Time at or above which a line is highlighted
DEFAULT_OUTPUT_UNIT = 1e-9  # nanoseconds, as line_profiler 5 reports by default


@dataclass(frozen=True, kw_only=True)
class LineView:
    lineno: int
    text: str
    hits: int | None  # None: the line never produced a line event
    time: float | None  # in output units (from samples, or probes: the function's time source)
    per_hit: float | None
    percent: float | None  # % Time
    interval: tuple[float, float] | None = None  # 95% interval of % Time (sampled times)
    below_resolution: bool = False  # a probe time within the probe's own cost
    heavy: bool = False
    probe_time: float | None = None  # clock probes' time beside the sampled one (--probes)
    probe_percent: float | None = None
    disagree: bool = False  # the probe share lies outside the sampled interval
    samples: int | None = None  # how many samples landed on the line (the Samples column)
    extra: tuple[str, ...] = ()  # the cells of the profile's extra columns (``ExtraColumn``)
    through: int | None = None  # a folded row (the docstring): the last line it stands for

    @property
    def label(self) -> str:
        """The Line # cell: ``12``, or ``270-330`` for a folded row."""
        return f"{self.lineno}-{self.through}" if self.through is not None else str(self.lineno)


@dataclass(frozen=True)
class FunctionView:
    stats: FunctionStats
    output_unit: float  # seconds per output unit (1.0 where ``tick`` is named)
    total: float  # the function's time: in seconds, or in ticks where ``tick`` is named
    lines: tuple[LineView, ...]
    sampling: SamplingSummary | None
    runs: RunsSummary | None = None
    tick: str | None = None  # times stay in these ticks ("cycle"): no seconds conversion
    asked: frozenset[str] = frozenset()  # the optional columns the options ask for (``--sample-counts``)

    @property
    def extra_headers(self) -> tuple[str, ...]:
        return tuple(column.header for column in self.stats.extras.columns)

    def amount_text(self, value: float) -> str:
        """A time in output units, written with its unit: ``24.1 ms`` or ``12.3k cycles``."""
        return ticks_text(value, self.tick) if self.tick else seconds_text(value * self.output_unit)

    @property
    def unit_text(self) -> str:
        """What one unit of the Time column is: ``1e-09 s`` or ``1 cycle``."""
        return f"1 {self.tick}" if self.tick else f"{self.output_unit:g} s"

    @property
    def total_text(self) -> str:
        if not self.timed:
            return "not measured (hits only)"
        said = f"{self.total:.0f} {self.tick}s" if self.tick else f"{self.total:g} s"
        if self.sampled and not self.stats.counts.calls_timed:
            said += " (its samples' CPU time; calls are not timed)"
        return said

    @property
    def timed(self) -> bool:
        return self.stats.counts.time_source is not None

    @property
    def sampled(self) -> bool:
        """Whether the Time column comes from samples (then the 95% CI column shows)."""
        return self.stats.counts.time_source == SAMPLES

    @property
    def probes_beside(self) -> bool:
        """Whether probe times show beside the sampled ones (``--probes``)."""
        return self.sampled and bool(self.stats.probes.ticks)

    @property
    def header(self) -> list[tuple[str, str]]:
        s = self.stats
        rows = [
            ("Timer unit", self.unit_text),
            ("Total time", self.total_text),
            ("File", s.source.filename),
            ("Function", f"{s.heading} at line {s.source.first_lineno}"),
            *s.extras.rows,
        ]
        if s.source.signatures:
            rows.append(("Signatures", "; ".join(f"({sig})" for sig in s.source.signatures)))
        if s.source.compile_seconds:
            said = ", ".join(
                f"{kind} twin {sec:.2f} s" if sec > 0 else f"{kind} twin reused"
                for kind, sec in sorted(s.source.compile_seconds.items())
            )
            reasons = dict.fromkeys(why for _, why in sorted(s.source.uncached.items()))
            rows.append(("Compile", said + "".join(f"; not cached: {why}" for why in reasons)))
        source = time_source_text(s)
        if source:
            rows.append(("Time from", source))
        samples = samples_text(s, self.sampling)
        if samples:
            rows.append(("Samples", samples))
        runs = runs_text(self.runs)
        if runs:
            rows.append(("Runs", runs))
        return rows


def time_source_text(stats: FunctionStats) -> str:
    """Where the Time column comes from, for the header."""
    if stats.counts.time_source == SAMPLES:
        return "samples (share of samples x measured time); hits counted exactly"
    if stats.counts.time_source == PROBES:
        return "clock probes on every line (see the notes); hits counted exactly"
    return ""


def samples_text(stats: FunctionStats, info: SamplingSummary | None) -> str:
    """The sampling line of the header: how many samples, where from, what was lost."""
    if info is None:
        return ""
    if info.unavailable is not None:
        return f"sampling unavailable: {info.unavailable}"
    if stats.counts.time_source != SAMPLES:
        return ""
    outside = 100.0 * info.outside_cpu_seconds / info.cpu_seconds if info.cpu_seconds > 0 else 0.0
    said = (
        f"{stats.samples.total} in this function of {info.total} ({info.achieved_hz:.0f} Hz per thread, "
        f"{info.runs} run{'s' if info.runs != 1 else ''}, {info.seconds:.2f} s); "
        f"{outside:.0f}% of CPU time in other code"
    )
    if info.stopped:
        parts = [f"{n} ({100.0 * n / max(info.total, 1):.0f}%) {cause}" for cause, n in info.stopped.items()]
        said += "; not attributed: " + "; ".join(parts)
    if info.lowered:
        said += f"; {info.lowered}"
    return said


def runs_text(runs: RunsSummary | None) -> str:
    """What ran, for the header: the user's run, the extra runs, what was put back."""
    if runs is None:
        return ""
    twin = "clock-probed" if runs.user_twin == PROBED else COUNTING.value
    said = f"yours, on {twin} twins"
    if runs.once:
        said += f", only: {runs.once}"
    elif runs.extra:
        said += ", then " + ", ".join(runs.extra)
    if runs.restored:
        said += "; restored between runs: " + ", ".join(runs.restored.values())
    if runs.results:
        said += "; " + runs.results
    return said


def function_view(
    stats: FunctionStats,
    unit: float,
    output_unit: float,
    sampling: SamplingSummary | None = None,
    runs: RunsSummary | None = None,
    tick: str | None = None,
) -> FunctionView:
    """Per-line figures of one function in ``output_unit`` seconds (``unit``: seconds per tick),
    or in ticks where ``tick`` names them (then both units are ignored)."""
    if tick:
        unit = output_unit = 1.0
    scale = unit / output_unit
    extras = stats.extras.columns
    lines = []
    last = stats.source.first_lineno + len(stats.source.lines) - 1
    with_probes = stats.counts.time_source == SAMPLES and bool(stats.probes.ticks)
    for lineno in range(stats.source.first_lineno, last + 1):
        hits = stats.counts.hits.get(lineno)
        text = stats.line_text(lineno)
        ticks = stats.line_ticks(lineno)
        sampled_here = stats.samples.seconds.get(lineno) if stats.counts.time_source == SAMPLES else False
        sampled_here = sampled_here or hits
        if ticks is None or not sampled_here:
            time = percent = interval = None
        else:
            time, percent = ticks * scale, stats.time_share(lineno)
            interval = stats.samples.interval(lineno) if stats.counts.time_source == SAMPLES else None
        probe_time = probe_percent = None
        if with_probes and hits:
            probe_time = stats.probe_line_ticks(lineno) * scale
            probe_percent = stats.probe_share(lineno)
        probe_timed = stats.counts.time_source == PROBES
        lines.append(
            LineView(
                lineno=lineno,
                text=text,
                hits=hits or None,
                time=time,
                per_hit=time / hits if time is not None and hits else None,
                percent=percent,
                interval=interval,
                below_resolution=lineno in stats.diagnosis.below_resolution and (probe_timed or with_probes),
                heavy=percent is not None and percent >= HEAVY_SHARE,
                probe_time=probe_time,
                probe_percent=probe_percent,
                disagree=lineno in stats.diagnosis.disagree,
                samples=stats.samples.counts.get(lineno) or None,
                extra=tuple(column.cells.get(lineno, "") for column in extras),
            )
        )
    total = stats.total_ticks() * unit
    return FunctionView(stats, output_unit, total, _fold_docstring(stats, lines), sampling, runs, tick)


def _parsed_def(
    source_lines: tuple[str, ...],
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[bytes], int] | None:
    """The function's ``def`` node, the parsed text's lines (as bytes: ``ast`` offsets count
    UTF-8 bytes) and how many lines were put before the source to parse it; None if it
    does not parse. Parsed dedented; a method whose docstring runs back to column 0 does not
    dedent, so it is parsed again inside an ``if`` block."""
    source = "".join(line if line.endswith("\n") else line + "\n" for line in source_lines)
    for text, offset in ((textwrap.dedent(source), 0), ("if True:\n" + source, 1)):
        try:
            body = ast.parse(text).body
        except (SyntaxError, ValueError):
            continue
        if offset and body and isinstance(body[0], ast.If):
            body = body[0].body
        if body and isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return body[0], [line.encode("utf-8") for line in text.split("\n")], offset
        return None
    return None


def docstring_span(source_lines: tuple[str, ...]) -> tuple[int, int] | None:
    """Indexes into ``source_lines`` (first, last) of the function's own docstring when it
    spans several lines of its own; None for a one-line docstring (folding it saves nothing),
    none at all, or source that does not parse. A docstring that shares a line with code
    (``def f(): \"\"\"...`` or ``\"\"\"; x = 1``) is not folded: that line may run."""
    parsed = _parsed_def(source_lines)
    if parsed is None:
        return None
    node, lines, offset = parsed
    doc = node.body[0] if node.body else None
    if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)):
        return None
    if not isinstance(doc.value.value, str) or doc.end_lineno is None or doc.end_col_offset is None:
        return None
    if doc.end_lineno == doc.lineno:
        return None
    before = lines[doc.lineno - 1][: doc.col_offset].strip()
    after = lines[doc.end_lineno - 1][doc.end_col_offset :].strip()
    if before or (after and not after.startswith(b"#")):
        return None
    return doc.lineno - 1 - offset, doc.end_lineno - 1 - offset


def _measured(stats: FunctionStats, line: LineView) -> bool:
    """Whether a line carries any figure: such a line is never hidden in a folded row."""
    figures = (line.hits, line.time, line.percent, line.probe_time, line.probe_percent)
    n = line.lineno
    held = stats.samples.counts.get(n) or stats.probes.hits.get(n) or n in stats.machine.lines
    held = held or n in stats.counts.hits
    return any(f is not None for f in figures) or any(line.extra) or bool(held)


def _fold_docstring(stats: FunctionStats, lines: list[LineView]) -> tuple[LineView, ...]:
    """The lines with the function's docstring as one row: a 60-line docstring in a
    package function buries the code it documents, and it never runs (no line events, so
    no hits or time). The profile itself keeps every line (``.lprof``, ``LineStats``)."""
    span = docstring_span(stats.source.lines)
    if span is None or span[1] >= len(lines):
        return tuple(lines)
    first, last = span
    inside = lines[first : last + 1]
    if any(_measured(stats, line) for line in inside):
        return tuple(lines)
    head = inside[0].text
    said = f"{head[: len(head) - len(head.lstrip())]}(docstring, {len(inside)} lines)"
    row = replace(inside[0], text=said, through=inside[-1].lineno)
    return (*lines[:first], row, *lines[last + 1 :])


def _arguments(signature: str) -> list[str]:
    """A signature's arguments, split at its top-level commas (``array(float64, 1d, C), int64``)."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(signature):
        depth += (char in "([{") - (char in ")]}")
        if char == "," and depth == 0:
            out.append(signature[start:i].strip())
            start = i + 1
    return [*out, signature[start:].strip()]


def signature_lines(signatures: tuple[str, ...], width: int, most: int = 2) -> list[str]:
    """The Signatures header row for a terminal: at most ``most`` lines of ``width``.

    A function compiled for many types lists signatures over a screenful; the count and the
    first one say what a reader of the table needs (HTML, JSON and the profile keep them all).
    The first signature loses its last arguments (``...``), then characters (``…``), to fit.
    """
    count = len(signatures)
    if not count:
        return []
    head, tail = (f"{count} signatures: ", f" and {count - 1} more") if count > 1 else ("", "")
    width = max(width, 1)

    def fitted(shown: str) -> list[str] | None:
        lines = textwrap.wrap(f"{head}({shown}){tail}", width, break_on_hyphens=False)
        return lines if len(lines) <= most else None

    args = _arguments(signatures[0])
    for keep in range(len(args), 0, -1):
        lines = fitted(", ".join(args[:keep]) + (", ..." if keep < len(args) else ""))
        if lines:
            return lines
    low, high = 0, len(signatures[0])  # the longest start of it that fits
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fitted(signatures[0][:middle] + "…") else (low, middle - 1)
    return fitted(signatures[0][:low] + "…") or [
        line[:width] for line in textwrap.wrap(f"{head}(…){tail}", width)[:most]
    ]


def profile_views(
    profile: ProfileStats, output_unit: float | None, stripzeros: bool, asked: frozenset[str] = frozenset()
) -> list[FunctionView]:
    """Every function's view; ``asked``: the optional columns the options ask for."""
    out_unit = output_unit if output_unit is not None else DEFAULT_OUTPUT_UNIT
    made = (
        function_view(f, profile.unit, out_unit, profile.sampling, profile.runs, profile.tick)
        for f in profile.functions
    )
    views = [replace(view, asked=asked) for view in made]
    if stripzeros:
        views = [v for v in views if any(line.hits for line in v.lines)]
    return views


def profile_notes(profile: ProfileStats) -> list[str]:
    """Sentences about the whole profile rather than one function, after the tables: the
    functions the program made that ran as themselves, unprofiled, and why; the functions whose
    hits may be short, and why; the entries of the program's Numba cache the run did not write."""
    notes = [f"not profiled (it ran as itself): {why}" for why in profile.unprofiled]
    notes += [f"hits may be short: {why}" for why in profile.short]
    if profile.cache_kept:
        names = ", ".join(profile.cache_kept[:4]) + (", ..." if len(profile.cache_kept) > 4 else "")
        notes.append(
            f"Numba's cache: {len(profile.cache_kept)} entr{'y' if len(profile.cache_kept) == 1 else 'ies'} "
            f"compiled during the run against the profiled functions' twins not written ({names}); "
            "they compile again at their next call, from your code"
        )
    return notes


# -- how numbers are written: shared by the rich table and the HTML table, so both read alike --
def number(value: float | None, digits: int = 1) -> str:
    """A figure with ``digits`` decimals (empty when there is none)."""
    return "" if value is None else f"{value:.{digits}f}"


def interval_text(interval: tuple[float, float] | None) -> str:
    """A 95% interval as ``49.7-54.1`` (empty without samples)."""
    return "" if interval is None else f"{interval[0]:.1f}-{interval[1]:.1f}"


def per_hit_text(line: LineView) -> str:
    """Per Hit, with the ``~`` mark where it is a probe time below the timer's resolution."""
    text = number(line.per_hit)
    return "~" + text if line.below_resolution and line.probe_time is None and text else text


def probe_time_text(line: LineView) -> str:
    """Probe Time, with the ``~`` mark on lines below the timer's resolution."""
    text = number(line.probe_time)
    return "~" + text if line.below_resolution and text else text


def probe_percent_text(line: LineView) -> str:
    """Probe %, with the ``!`` mark where it disagrees with the sampled share."""
    text = number(line.probe_percent)
    return "! " + text if line.disagree and text else text


def ticks_text(value: float, tick: str) -> str:
    """A count of named ticks: ``850 cycles``, ``12.3k cycles``, ``4.1M cycles``."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix} {tick}s"
    return f"{value:.3g} {tick}{'' if value == 1 else 's'}"


def seconds_text(seconds: float) -> str:
    """A duration with a readable unit: ``24.1 ms``, ``850 ns``, ``1.20 s``."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(seconds) >= scale:
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
