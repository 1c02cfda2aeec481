"""The per-line columns, each declared once: its header, its cell, when it shows, how it folds.

The renderers read this registry instead of each keeping its own list of headers in
lockstep (a new column was four edits, joined by header strings). A column says:

- ``name``: its header, the key every renderer knows it by;
- ``cell``: its text for one line (from the line's view and the function's view);
- ``shown``: whether the function's table has it (only sampled, only with probes...);
- ``fold``: where it stands in the order columns give way on a narrow terminal
  (``None``: never folds), with the source width below which it folds and whether the
  headers wrap first, and the width of the HTML report (not of the window: a notebook's side
  panels share it) at which the report hides it (its CSS and the "narrow window" notice are
  generated from these: ``html_folds``);
- ``explanation``: a sentence for the legend and the HTML ``title``;
- ``text``: whether line_profiler's text layout has it (that layout must match line_profiler).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import html_cells
from .view import (
    FunctionView,
    LineView,
    interval_text,
    number,
    per_hit_text,
    probe_percent_text,
    probe_time_text,
)

SAMPLE_COUNTS = "Samples"  # the name ``--sample-counts`` asks for
CODE_MIN = 20  # the source column is cropped down to this before any column folds
WHISKER = "the whisker shows the interval"  # the HTML bars' whisker, once 95% CI is folded
PROBES_CODE_MIN = 8  # Probe % folds only when the source would get fewer characters


@dataclass(frozen=True, kw_only=True)
class Fold:
    """Where a column stands when a narrow terminal folds columns away."""

    order: int  # lower folds first
    floor: int  # the source width below which it folds
    wrap_first: bool  # whether the column headers wrap onto two lines before it folds
    html_width: int | None = None  # the report's width (px) at or below which the HTML hides it
    html_hint: str = ""  # what still shows its figures once the HTML hides it


@dataclass(frozen=True, kw_only=True)
class Column:
    """One per-line column, as every renderer shows it."""

    name: str
    explanation: str
    cell: Callable[[FunctionView, LineView], str]
    shown: Callable[[FunctionView], bool]
    fold: Fold | None = None
    text: bool = False  # in line_profiler's text layout
    style: str = ""  # the rich column's style
    line_style: Callable[[LineView], str] | None = None  # a rich cell's style from its line
    #: the HTML cell's inner HTML (``human``: times with their unit); None: the cell, escaped
    html_cell: Callable[[FunctionView, LineView, bool], str] | None = None
    html_class: Callable[[LineView], str] | str = ""  # the HTML cell's classes after ``n``
    unit_title: bool = False  # the HTML header's title says the time unit
    text_line: bool = False  # line_profiler's layout has no room: the text writes it as a line
    html_title: bool = False  # the HTML header's title is the explanation (new columns)


def _always(view: FunctionView) -> bool:
    return True


def _timed(view: FunctionView) -> bool:
    return view.timed


def _sampled(view: FunctionView) -> bool:
    return view.sampled


def _probes(view: FunctionView) -> bool:
    return view.probes_beside


#: line_profiler's columns first, then the ones it has no room for; the profile's extra
#: columns (``ExtraColumn``) come after % Time (``AFTER_EXTRAS`` follow them)
BEFORE_EXTRAS = (
    Column(
        name="Line #",
        explanation="the line's number in its file (a folded docstring: the lines it stands for)",
        cell=lambda view, line: line.label,
        shown=_always,
        text=True,
        style="dim",
        html_class=" ln",
    ),
    Column(
        name="Hits",
        explanation="how many times the line ran, counted exactly",
        cell=lambda view, line: "" if line.hits is None else str(line.hits),
        shown=_always,
        text=True,
    ),
    Column(
        name="Time",
        explanation="the line's time in the timer unit",
        cell=lambda view, line: number(line.time),
        shown=_timed,
        text=True,
        html_cell=html_cells.time_cell,
        unit_title=True,
    ),
    Column(
        name="Per Hit",
        explanation="the line's time per hit (~: below the timer's resolution)",
        cell=lambda view, line: per_hit_text(line),
        shown=_timed,
        text=True,
        html_cell=html_cells.per_hit_cell,
        unit_title=True,
    ),
    Column(
        name="% Time",
        explanation="the line's share of the function's time",
        cell=lambda view, line: number(line.percent),
        shown=_timed,
        text=True,
        line_style=lambda line: "bold red" if line.heavy else "",
        html_class=lambda line: " heavy" if line.heavy else "",
        unit_title=True,  # as before the registry: its header's title reads like Time's
    ),
)
AFTER_EXTRAS = (
    Column(
        name="95% CI",
        explanation="the 95% interval of the sampled % Time",
        cell=lambda view, line: interval_text(line.interval),
        shown=_sampled,
        fold=Fold(order=1, floor=CODE_MIN, wrap_first=True, html_width=900, html_hint=WHISKER),
        style="dim",
        html_cell=html_cells.interval_cell,
        html_class=" ci",
    ),
    Column(
        name="Probe Time",
        explanation="the clock probes' time beside the sampled one (--probes; ~: below resolution)",
        cell=lambda view, line: probe_time_text(line),
        shown=_probes,
        fold=Fold(order=0, floor=CODE_MIN, wrap_first=False, html_width=1100),
        html_cell=html_cells.probe_time_cell,
        unit_title=True,
    ),
    Column(
        name="Probe %",
        explanation="the clock probes' share (!: outside the sampled share's 95% interval)",
        cell=lambda view, line: probe_percent_text(line),
        shown=_probes,
        fold=Fold(order=2, floor=PROBES_CODE_MIN, wrap_first=True),
        line_style=lambda line: "bold yellow" if line.disagree else "",
        html_cell=html_cells.probe_percent_cell,
        html_class=lambda line: " bang" if line.disagree else "",
    ),
    Column(
        name="Samples",
        explanation="how many samples landed on the line (--sample-counts)",
        cell=lambda view, line: "" if line.samples is None else str(line.samples),
        shown=lambda view: SAMPLE_COUNTS in view.asked,
        fold=Fold(order=3, floor=PROBES_CODE_MIN, wrap_first=True),
        html_title=True,
        text_line=True,
    ),
)
REGISTRY = BEFORE_EXTRAS + AFTER_EXTRAS


def fold_order() -> tuple[tuple[str, int, bool], ...]:
    """The registry's folding columns, first folded first: (header, floor, headers wrap first)."""
    folding = sorted((c for c in REGISTRY if c.fold is not None), key=lambda c: c.fold.order)
    return tuple((c.name, c.fold.floor, c.fold.wrap_first) for c in folding if c.fold is not None)


def html_fold_class(column: Column) -> str:
    """The class (with its leading space) by which the HTML report's CSS hides ``column``."""
    fold = column.fold
    return f" fold{fold.order}" if fold is not None and fold.html_width is not None else ""


def html_folds() -> tuple[tuple[int, tuple[Column, ...]], ...]:
    """Each report width at which the HTML report hides columns, widest first, with the columns
    it hides there (each narrower width hides those of the wider ones too)."""
    folding = [c for c in REGISTRY if c.fold is not None and c.fold.html_width is not None]
    widths = sorted({c.fold.html_width for c in folding}, reverse=True)
    return tuple((w, tuple(c for c in folding if c.fold.html_width == w)) for w in widths)
