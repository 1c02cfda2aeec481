"""Rich renderables for a profile: a header, a highlighted table, and the notes."""

from __future__ import annotations

import shutil
import sys
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ..stats import ProfileStats
from .view import FunctionView, profile_views

THEME = "ansi_dark"


def _number(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _code_lines(view: FunctionView) -> list[Text]:
    """Each source line highlighted in the context of the whole function."""
    source = "\n".join(line.text for line in view.lines)
    highlighted = Syntax(source, "python", theme=THEME).highlight(source)
    parts = highlighted.split("\n", allow_blank=True)
    return [parts[i] if i < len(parts) else Text(line.text) for i, line in enumerate(view.lines)]


def interval_text(interval: tuple[float, float] | None) -> str:
    """A 95% interval as ``49.7-54.1`` (empty without samples)."""
    return "" if interval is None else f"{interval[0]:.1f}-{interval[1]:.1f}"


def function_renderable(view: FunctionView) -> RenderableType:
    stats = view.stats
    estimates = any(line.sampled_time is not None for line in view.lines)
    header = Table.grid(padding=(0, 1))
    header.add_column(style="bold")
    header.add_column()
    for label, value in view.header:
        header.add_row(f"{label}:", value)

    table = Table(show_edge=False, header_style="bold", pad_edge=False, box=None)
    table.add_column("Line #", justify="right", style="dim")
    table.add_column("Hits", justify="right")
    if stats.timed:
        table.add_column("Time", justify="right")
        table.add_column("Per Hit", justify="right")
        table.add_column("% Time", justify="right")
    if view.sampled:
        table.add_column("% Samples", justify="right")
        table.add_column("95% CI", justify="right", style="dim")
        if estimates:
            table.add_column("Est. Time", justify="right")
            table.add_column("Est./Hit", justify="right")
    table.add_column("Line Contents", no_wrap=True, overflow="ellipsis")
    for line, code in zip(view.lines, _code_lines(view), strict=True):
        cells: list[RenderableType] = [str(line.lineno), "" if line.hits is None else str(line.hits)]
        if stats.timed:
            per_hit = _number(line.per_hit)
            if line.below_resolution and per_hit:
                per_hit = "~" + per_hit
            percent = Text(_number(line.percent), style="bold red" if line.heavy else "")
            cells += [_number(line.time), per_hit, percent]
        if view.sampled:
            share = _number(line.sampled)
            mark = "! " if line.disagree else ""
            cells.append(Text(mark + share, style="bold yellow" if line.disagree else ""))
            cells.append(interval_text(line.interval))
            if estimates:
                cells += [_number(line.sampled_time), _number(line.sampled_per_hit)]
        cells.append(code)
        table.add_row(*cells, style="bold" if line.heavy else None)

    parts: list[RenderableType] = [header, Text(""), table]
    for note in stats.notes:
        if note.level == "warning":
            panel = Panel(Text(note.text), title="distortion warning", border_style="yellow", expand=False)
            parts.append(panel)
        else:
            parts.append(Text(note.text, style="dim"))
    return Group(*parts)


def profile_renderables(
    profile: ProfileStats, output_unit: float | None = None, stripzeros: bool = False
) -> list[RenderableType]:
    views = profile_views(profile, output_unit, stripzeros)
    if not views:
        return [Text("numba_lprun: no profiled function ran", style="dim")]
    out: list[RenderableType] = []
    for view in views:
        out += [function_renderable(view), Text("")]
    return out


def print_profile(
    profile: ProfileStats,
    output_unit: float | None = None,
    stripzeros: bool = False,
    file: TextIO | None = None,
) -> None:
    """Print the profile to ``file`` (stdout), using the terminal's width (at least 100)."""
    file = sys.stdout if file is None else file
    width = max(100, shutil.get_terminal_size((120, 24)).columns)
    console = Console(file=file, width=width, highlight=False, force_jupyter=False)
    for renderable in profile_renderables(profile, output_unit, stripzeros):
        console.print(renderable)
