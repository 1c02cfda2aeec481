"""The HTML cells of the registry's columns that carry more than their text: marks with
their meaning in ``title`` and times with their own unit. Here, not in ``html_table``, so the
registry (``columns``) can name them without importing the table that reads it."""

from __future__ import annotations

from html import escape

from .view import FunctionView, LineView, number

BELOW_RESOLUTION = (
    "below the timer's resolution: the time per hit is within the probe's own cost, "
    "so this figure is an upper bound, not a measurement"
)
DISAGREE = (
    "the two views disagree: the probes' share lies outside the sampled share's 95% interval; "
    "here the probes distort, and % Time (sampled, probe-free) is the better guide"
)


def mark(symbol: str, title: str, css: str) -> str:
    """A mark (``~``, ``!``) whose meaning shows on hover."""
    return f'<span class="{css}" title="{escape(title)}">{symbol}</span>'


def amount(view: FunctionView, value: float | None, human: bool) -> str:
    """A time cell: in output units as line_profiler writes them, or (``human``) with its own
    unit (``2.57 ms``), which a reader of a report expects."""
    if not human or value is None:
        return number(value)
    return view.amount_text(value)


def time_cell(view: FunctionView, line: LineView, human: bool) -> str:
    """The Time cell."""
    return amount(view, line.time, human)


def per_hit_cell(view: FunctionView, line: LineView, human: bool) -> str:
    """The Per Hit cell, marked ``~`` below the timer's resolution (``human``: with its own unit,
    never finer than a nanosecond: ``FunctionView.per_hit_amount``)."""
    per_hit = view.per_hit_amount(line) if human else amount(view, line.per_hit, human)
    if line.below_resolution and line.probe_time is None and per_hit:
        per_hit = mark("~", BELOW_RESOLUTION, "mark") + per_hit
    return per_hit


def probe_time_cell(view: FunctionView, line: LineView, human: bool) -> str:
    """The Probe Time cell, marked ``~`` below the timer's resolution."""
    probe_time = amount(view, line.probe_time, human)
    if line.below_resolution and probe_time:
        probe_time = mark("~", BELOW_RESOLUTION, "mark") + probe_time
    return probe_time


def probe_percent_cell(view: FunctionView, line: LineView, human: bool) -> str:
    """The Probe % cell, marked ``!`` where the two views disagree."""
    share = number(line.probe_percent)
    if line.disagree and share:
        share = mark("!", DISAGREE, "mark bang") + " " + share
    return share
