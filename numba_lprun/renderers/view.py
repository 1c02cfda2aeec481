"""The numbers every renderer shows, derived once from the stats (no I/O, no styling)."""

from __future__ import annotations

from dataclasses import dataclass

from ..stats import FunctionStats, ProfileStats

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


@dataclass(frozen=True)
class FunctionView:
    stats: FunctionStats
    output_unit: float
    total_seconds: float
    lines: list[LineView]

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
            said = ", ".join(f"{kind} twin {sec:.2f} s" for kind, sec in sorted(s.compile_seconds.items()))
            rows.append(("Compile", said))
        return rows


def function_view(stats: FunctionStats, unit: float, output_unit: float) -> FunctionView:
    """Per-line figures of one function in ``output_unit`` seconds."""
    total = stats.total_ticks() if stats.timed else 0.0
    scale = unit / output_unit
    lines = []
    last = stats.first_lineno + len(stats.source_lines) - 1
    for lineno in range(stats.first_lineno, last + 1):
        hits = stats.hits.get(lineno)
        text = stats.line_text(lineno)
        if not hits:
            lines.append(LineView(lineno, text, None, None, None, None, False, False))
            continue
        ticks = stats.line_ticks(lineno)
        percent = 100.0 * ticks / total if stats.timed and total > 0 else None
        time = ticks * scale if stats.timed else None
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
            )
        )
    return FunctionView(stats, output_unit, total * unit, lines)


def profile_views(profile: ProfileStats, output_unit: float | None, stripzeros: bool) -> list[FunctionView]:
    unit = output_unit if output_unit is not None else DEFAULT_OUTPUT_UNIT
    views = [function_view(f, profile.unit, unit) for f in profile.functions]
    if stripzeros:
        views = [v for v in views if any(line.hits for line in v.lines)]
    return views
