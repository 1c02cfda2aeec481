"""line_profiler's exact text layout, followed by the diagnostics as plain sentences.

The table is written here rather than by line_profiler's ``show_func`` for two
reasons: the ``~`` mark on times below the probe's resolution must read the same
in every front end (the rich table, this text, ``print_stats``), and ``show_func``
re-reads the source through ``linecache`` (and clears it, losing notebook cells),
while the stats already hold the function's source. Column widths, number
formats and headers follow line_profiler 5 so the text diffs cleanly against it,
but for one row: a docstring of several lines is folded into one (``view``), as in
every table numba_lprun shows; the ``.lprof`` keeps its lines for line_profiler.
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from typing import TextIO

from .. import settings
from ..stats import ProfileStats
from .asm import hint_lines, listing_lines
from .columns import AFTER_EXTRAS, REGISTRY
from .view import DEFAULT_OUTPUT_UNIT, FunctionView, LineView, profile_notes, profile_views

#: line_profiler 5's default minimum column widths (``get_column_widths()``).
_WIDTHS = {"line": 6, "hits": 9, "time": 12, "perhit": 8, "percent": 8}
#: line_profiler's headers: the registry's columns it has (``Column.text``; shown even in a
#: hits-only table, as line_profiler does), then the source
_HEADER = (*(c.name for c in REGISTRY if c.text), "Line Contents")


def _fit(value: float, width: int) -> str:
    """line_profiler's number format: one decimal, or 3 significant digits if too wide."""
    text = f"{value:5.1f}"
    return text if len(text) <= width else f"{value:5.3g}"


def _cells(line: LineView) -> tuple[str, str, str, str]:
    """Hits, time, per hit and percent of one line, as line_profiler writes them."""
    if not line.hits:
        return ("", "", "", "")
    hits = f"{line.hits:d}"
    if len(hits) > _WIDTHS["hits"]:
        hits = f"{line.hits:g}"
    if line.time is None:  # hits only
        return (hits, "", "", "")
    per_hit = _fit(line.per_hit, _WIDTHS["perhit"])
    if line.below_resolution:
        per_hit = "~" + per_hit.strip()
    percent = "" if line.percent is None else f"{line.percent:5.1f}"
    return (hits, _fit(line.time, _WIDTHS["time"]), per_hit, percent)


def function_table(view: FunctionView) -> str:
    """One function's table in line_profiler's layout (``Total time`` to the last line); a
    profile's extra columns (``ExtraColumn``) come after % Time, right-aligned like the rest.
    A folded docstring is one row (``19-34``): Line # widens to hold it."""
    stats = view.stats
    cells = {line.lineno: _cells(line) + line.extra for line in view.lines}
    widths = dict(_WIDTHS, line=max([_WIDTHS["line"]] + [len(line.label) for line in view.lines]))
    for index, key in enumerate(("hits", "time", "perhit")):
        widths[key] = max([widths[key]] + [len(c[index]) for c in cells.values()])
    extras = view.extra_headers
    for index, header in enumerate(extras, start=4):
        widths[header] = max([len(header)] + [len(c[index]) for c in cells.values()])
    order = ("line", "hits", "time", "perhit", "percent", *extras)
    template = " ".join(f"%{widths[k]}s" for k in order) + "  %-s"
    out = io.StringIO()
    out.write(f"Total time: {view.total_text}\n")
    out.write(f"File: {stats.source.filename}\n")
    out.write(f"Function: {stats.heading} at line {stats.source.first_lineno}\n\n")
    header = template % (*_HEADER[:5], *extras, _HEADER[5])
    out.write(header + "\n" + "=" * len(header) + "\n")
    for line in view.lines:
        out.write(template % (line.label, *cells[line.lineno], line.text.rstrip("\r")) + "\n")
    out.write("\n")
    return out.getvalue()


def _interval_lines(view: FunctionView) -> str:
    """The 95% intervals of sampled % Time, and probe times beside (``--probes``):
    line_profiler's table has no column for them."""
    rows = []
    if view.sampled and view.stats.counts.hits:
        cells = [
            f"{line.lineno}: {line.interval[0]:.1f}-{line.interval[1]:.1f}"
            for line in view.lines
            if line.interval is not None and line.hits
        ]
        if cells:
            rows.append(f"95% intervals of % Time ({view.stats.samples.total} samples): " + ", ".join(cells))
    if view.probes_beside:
        cells = [
            f"{line.lineno}: {'~' if line.below_resolution else ''}"
            f"{_seconds(line.probe_time * view.output_unit)} "
            f"({line.probe_percent or 0.0:.1f}%{' !' if line.disagree else ''})"
            for line in view.lines
            if line.probe_time is not None
        ]
        rows.append("probe times (--probes): " + ", ".join(cells))
    for spec in AFTER_EXTRAS:  # the registry's columns line_profiler's table has no room for
        if spec.text_line and spec.shown(view):
            said = [f"{line.label}: {spec.cell(view, line)}" for line in view.lines if spec.cell(view, line)]
            rows.append(f"{spec.name} per line: " + ", ".join(said))
    return "".join(row + "\n" for row in rows)


def _seconds(value: float) -> str:
    """A time with the unit that reads best: ``1.56 ms``, ``15.6 ns``."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if value >= scale or unit == "ns":
            return f"{value / scale:.3g} {unit}"
    return f"{value:g} s"


def output_width(file: TextIO) -> int | None:
    """The width of the terminal ``file`` writes to, or None when it is not a terminal.

    A pipe or a file has no width, and ``COLUMNS`` is not asked there: processes
    that load GNU readline export it to every child (80 under pytest), which
    would crop tables written to logs. On a terminal the tty's own size wins.
    """
    try:
        if not file.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    try:
        return os.get_terminal_size(file.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return settings.terminal_columns()


def _wrapped(text: str, width: int) -> str:
    """Sentences under the table wrapped to ``width`` (table rows are never wrapped: they diff)."""
    if not width:
        return text
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        out.append(
            textwrap.fill(
                line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
            )
        )
    return "\n".join(out) + "\n" if out else ""


def profile_text(
    profile: ProfileStats,
    output_unit: float | None = None,
    stripzeros: bool = False,
    width: int | None = None,
    asm_lines: int = 0,
    columns: frozenset[str] = frozenset(),
) -> str:
    """The whole profile as line_profiler prints it (``Timer unit`` first), plus notes.

    The notes and the sampled view's lines are wrapped to ``width``: by default
    the terminal's width when stdout is a terminal, otherwise not at all (``0``:
    never). The table itself keeps line_profiler's layout at any width. Hints
    about the hot lines' machine code follow the notes (when the profiler read
    it: ``asm=True``), and ``asm_lines`` hottest lines are listed instruction by
    instruction (listings are not wrapped).
    """
    width = (output_width(sys.stdout) or 0) if width is None else width
    out = io.StringIO()
    views = profile_views(profile, output_unit, stripzeros, columns)
    unit = DEFAULT_OUTPUT_UNIT if output_unit is None else output_unit
    unit = f"1 {profile.tick}" if profile.tick else f"{unit:g} s"
    out.write(f"Timer unit: {unit}\n\n")
    for view in views:
        stats = view.stats
        out.write(function_table(view))
        below = io.StringIO()
        for label, value in view.header[4:]:  # after line_profiler's own header lines
            if label not in ("Signatures", "Compile"):
                below.write(f"{label.lower()}: {value}\n")
        below.write(_interval_lines(view))
        for note in stats.diagnosis.notes:
            prefix = {"error": "ERROR: ", "warning": "WARNING: ", "caution": "CAUTION: "}.get(note.level, "")
            below.write(f"{prefix}{note.text}\n")
        for hint in hint_lines(stats):
            below.write(hint + "\n")
        out.write(_wrapped(below.getvalue(), width))
        listing = listing_lines(stats, asm_lines) if stats.machine.lines or stats.machine.unavailable else []
        out.write("".join(line + "\n" for line in listing) + "\n")
    out.write(_wrapped("".join(note + "\n" for note in profile_notes(profile)), width))
    return out.getvalue()
