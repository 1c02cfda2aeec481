"""The numbers every renderer shows, derived once from the stats (no I/O, no styling)."""

from __future__ import annotations

from dataclasses import dataclass

from ..stats import FunctionStats, IsolationInfo, ProfileStats, SamplingInfo

HEAVY_SHARE = 10.0  # % Time at or above which a line is highlighted
DEFAULT_OUTPUT_UNIT = 1e-9  # nanoseconds, as line_profiler 5 reports by default


@dataclass(frozen=True)
class LineView:
    lineno: int
    text: str
    hits: int | None  # None: the line never produced a line event
    time: float | None  # in output units
    per_hit: float | None
    percent: float | None
    below_resolution: bool
    heavy: bool
    sampled: float | None = None  # % of the function's samples
    disagree: bool = False  # the instrumented share lies outside the sampled interval
    interval: tuple[float, float] | None = None  # 95% interval of ``sampled``, in %
    sampled_time: float | None = None  # probe-free time estimate, in output units
    sampled_per_hit: float | None = None


@dataclass(frozen=True)
class FunctionView:
    stats: FunctionStats
    output_unit: float
    total_seconds: float
    lines: list[LineView]
    sampling: SamplingInfo | None
    isolation: IsolationInfo | None = None

    @property
    def sampled(self) -> bool:
        """Whether to show the % Samples column."""
        return self.sampling is not None and self.sampling.unavailable is None

    @property
    def header(self) -> list[tuple[str, str]]:
        s = self.stats
        rows = [
            ("Timer unit", f"{self.output_unit:g} s"),
            ("Total time", f"{self.total_seconds:g} s" if s.timed else "not measured (hits only)"),
            ("File", s.filename),
            ("Function", f"{s.qualname} at line {s.first_lineno}"),
        ]
        if s.signatures:
            rows.append(("Signatures", "; ".join(f"({sig})" for sig in s.signatures)))
        if s.compile_seconds:
            said = ", ".join(
                f"{kind} twin {sec:.2f} s" if sec > 0 else f"{kind} twin reused"
                for kind, sec in sorted(s.compile_seconds.items())
            )
            rows.append(("Compile", said))
        info = self.sampling
        if info is not None and info.unavailable is not None:
            rows.append(("Samples", f"sampling unavailable: {info.unavailable}"))
        elif info is not None:
            outside = 100.0 * info.outside_cpu_seconds / info.cpu_seconds if info.cpu_seconds > 0 else 0.0
            repeats = f"{info.repeats} sampled repeat{'s' if info.repeats != 1 else ''} of the plain run"
            said = (
                f"{s.samples} here, {info.total} in all ({info.achieved_hz:.0f} Hz per thread, {repeats}, "
                f"{info.seconds:.2f} s); {outside:.0f}% of sampled CPU time elsewhere"
            )
            if info.not_repeated:
                said = f"none: {info.not_repeated}"
            rows.append(("Samples", said))
        runs = self.runs
        if runs:
            rows.append(("Runs", runs))
        return rows

    @property
    def runs(self) -> str:
        """How the call was kept to one call's effects, for the header."""
        iso = self.isolation
        if iso is None:
            return ""
        if iso.single_run:
            return f"once, instrumented only (no baseline, no overhead, no samples): {iso.single_run}"
        if iso.restored:
            return "restored between runs: " + ", ".join(iso.restored.values())
        return ""


def function_view(
    stats: FunctionStats,
    unit: float,
    output_unit: float,
    sampling: SamplingInfo | None = None,
    isolation: IsolationInfo | None = None,
) -> FunctionView:
    """Per-line figures of one function in ``output_unit`` seconds."""
    total = stats.total_ticks() if stats.timed else 0.0
    scale = unit / output_unit
    lines = []
    last = stats.first_lineno + len(stats.source_lines) - 1
    for lineno in range(stats.first_lineno, last + 1):
        hits = stats.hits.get(lineno)
        text = stats.line_text(lineno)
        sampled = stats.sample_share(lineno) if lineno in stats.sampled else None
        if sampled is None and stats.sampled and hits:
            sampled = 0.0
        interval = stats.sample_interval(lineno) if sampled is not None else None
        est = stats.sampled_ticks(lineno) if sampled is not None else None
        est = est * scale if est is not None else None
        if not hits:
            lines.append(
                LineView(lineno, text, None, None, None, None, False, False, sampled, False, interval, est)
            )
            continue
        percent = stats.time_share(lineno)
        time = stats.line_ticks(lineno) * scale if stats.timed else None
        lines.append(
            LineView(
                lineno,
                text,
                hits,
                time,
                time / hits if time is not None else None,
                percent,
                lineno in stats.below_resolution,
                percent is not None and percent >= HEAVY_SHARE,
                sampled,
                lineno in stats.disagree,
                interval,
                est,
                est / hits if est is not None else None,
            )
        )
    return FunctionView(stats, output_unit, total * unit, lines, sampling, isolation)


def profile_views(profile: ProfileStats, output_unit: float | None, stripzeros: bool) -> list[FunctionView]:
    unit = output_unit if output_unit is not None else DEFAULT_OUTPUT_UNIT
    views = [
        function_view(f, profile.unit, unit, profile.sampling, profile.isolation) for f in profile.functions
    ]
    if stripzeros:
        views = [v for v in views if any(line.hits for line in v.lines)]
    return views


# -- how numbers are written: shared by the rich table and the HTML table, so both read alike --
def number(value: float | None, digits: int = 1) -> str:
    """A figure with ``digits`` decimals (empty when there is none)."""
    return "" if value is None else f"{value:.{digits}f}"


def interval_text(interval: tuple[float, float] | None) -> str:
    """A 95% interval as ``49.7-54.1`` (empty without samples)."""
    return "" if interval is None else f"{interval[0]:.1f}-{interval[1]:.1f}"


def per_hit_text(line: LineView) -> str:
    """Per Hit, with the ``~`` mark on lines below the timer's resolution."""
    text = number(line.per_hit)
    return "~" + text if line.below_resolution and text else text


def samples_text(line: LineView) -> str:
    """% Samples, with the ``!`` mark where the two views disagree."""
    text = number(line.sampled)
    return "! " + text if line.disagree and text else text


def has_estimates(view: FunctionView) -> bool:
    """Whether the sampler gave probe-free time estimates (Est. Time, Est./Hit columns)."""
    return any(line.sampled_time is not None for line in view.lines)


def seconds_text(seconds: float) -> str:
    """A duration with a readable unit: ``24.1 ms``, ``850 ns``, ``1.20 s``."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(seconds) >= scale:
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
