"""line_profiler's exact text layout, followed by the diagnostics as plain sentences."""

from __future__ import annotations

import contextlib
import io
import linecache
from collections.abc import Iterator

from line_profiler.line_profiler import show_func

from ..stats import ProfileStats
from .view import DEFAULT_OUTPUT_UNIT


@contextlib.contextmanager
def _linecache_kept() -> Iterator[None]:
    """line_profiler's show_func clears linecache, which drops sources that live
    only there (notebook cells, ``%%nlprun`` cells): put them back afterwards."""
    in_memory = {k: v for k, v in linecache.cache.items() if len(v) == 4 and v[1] is None}
    try:
        yield
    finally:
        for name, entry in in_memory.items():
            linecache.cache.setdefault(name, entry)


def _sample_lines(stats, profile: ProfileStats) -> str:
    """The sampled view as extra lines (line_profiler's table has no column for it)."""
    info = profile.sampling
    if info.unavailable is not None:
        return f"sampling unavailable: {info.unavailable}\n"
    if not stats.sampled:
        return "sampled view: no samples landed in this function\n"
    rows = [f"sampled view (plain run, {sum(stats.sample_counts.values())} samples): line: % samples"]
    for line in sorted(stats.sampled):
        mark = "  ! differs from % Time" if line in stats.disagree else ""
        rows.append(f"  {line}: {stats.sample_share(line):.1f}%{mark}")
    return "\n".join(rows) + "\n"


def profile_text(profile: ProfileStats, output_unit: float | None = None, stripzeros: bool = False) -> str:
    """The whole profile as line_profiler prints it (``Timer unit`` first), plus notes."""
    out = io.StringIO()
    unit = DEFAULT_OUTPUT_UNIT if output_unit is None else output_unit
    out.write(f"Timer unit: {unit:g} s\n\n")
    for stats in profile.functions:
        rows = stats.timings()
        if stripzeros and not rows:
            continue
        with _linecache_kept():
            show_func(
                stats.filename,
                stats.first_lineno,
                stats.qualname,
                rows,
                profile.unit,
                output_unit=unit,
                stream=out,
                stripzeros=stripzeros,
            )
        if profile.sampling is not None:
            out.write(_sample_lines(stats, profile))
        for note in stats.notes:
            prefix = "WARNING: " if note.level == "warning" else ""
            out.write(f"{prefix}{note.text}\n")
        out.write("\n")
    return out.getvalue()
