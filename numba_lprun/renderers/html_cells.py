"""The HTML cells of the registry's columns that carry more than their text: marks with
their meaning in ``title`` and times with their own unit, its words held together. Here, not in
``html_table``, so the registry (``columns``) can name them without importing the table that
reads it."""

from __future__ import annotations

from html import escape

from .view import FunctionView, LineView, interval_text, number

BELOW_RESOLUTION = (
    "below the timer's resolution: the time per hit is within the probe's own cost, "
    "so this figure is an upper bound, not a measurement"
)
DISAGREE = (
    "the two views disagree: the probes' share lies outside the sampled share's 95% interval; "
    "here the probes distort, and % Time (sampled, probe-free) is the better guide"
)


def unbroken(text: str) -> str:
    """``text`` escaped, its words held together (``&nbsp;``): a figure with its unit (``6.93 ms``)
    or a column's name never breaks over two lines, whatever a host's stylesheet says of cells."""
    return escape(text).replace(" ", "&nbsp;")


def mark(symbol: str, title: str, css: str) -> str:
    """A mark (``~``, ``!``) whose meaning shows on hover (unboxed: Bootstrap, in the classic
    Notebook, shades and pads anything of class ``mark``)."""
    return f'<span class="{css}" style="background:none;padding:0" title="{escape(title)}">{symbol}</span>'


def amount(view: FunctionView, value: float | None, human: bool) -> str:
    """A time cell: in output units as line_profiler writes them, or (``human``) with its own
    unit (``2.57 ms``), which a reader of a report expects."""
    if not human or value is None:
        return number(value)
    return unbroken(view.amount_text(value))


def time_cell(view: FunctionView, line: LineView, human: bool) -> str:
    """The Time cell."""
    return amount(view, line.time, human)


def per_hit_amount(view: FunctionView, line: LineView) -> str:
    """Per Hit with its own unit, never finer than a nanosecond (or one tick), a few cycles:
    a line that ran 100,000 times in 3 us reads "<1 ns" a hit, not "0.0305 ns" or, with no
    sample on it, "0 ns" (where its 95% interval keeps it under a nanosecond too)."""
    if line.per_hit is None:
        return ""
    floor = 1.0 if view.tick else 1e-9 / view.output_unit  # in output units
    below = f"<1 {view.tick}" if view.tick else "<1 ns"
    if line.per_hit >= floor:
        return view.amount_text(line.per_hit)
    if line.per_hit > 0:
        return below
    if line.hits and line.interval is not None:  # no sample landed on it: its interval bounds it
        bound = line.interval[1] / 100.0 * view.total / view.output_unit / line.hits
        return below if bound < floor else view.amount_text(0.0)
    return view.amount_text(line.per_hit)


def per_hit_cell(view: FunctionView, line: LineView, human: bool) -> str:
    """The Per Hit cell, marked ``~`` below the timer's resolution (``human``: with its own unit,
    never finer than a nanosecond: ``per_hit_amount``)."""
    per_hit = unbroken(per_hit_amount(view, line)) if human else amount(view, line.per_hit, human)
    if line.below_resolution and line.probe_time is None and per_hit:
        per_hit = mark("~", BELOW_RESOLUTION, "mark") + per_hit
    return per_hit


def interval_cell(view: FunctionView, line: LineView, human: bool) -> str:
    """The 95% CI cell, held on one line (a browser breaks ``99.8-100.0`` after its hyphen)."""
    text = interval_text(line.interval)
    return f'<span style="white-space:nowrap">{text}</span>' if text else ""


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
        share = mark("!", DISAGREE, "mark bang") + "&nbsp;" + share
    return share
