"""Self-contained HTML of a profile, for notebooks and ``--html`` report files.

A page built from the data (``html_table``, ``svg_chart``), not a recording of
the terminal: tables the browser lays out to fit their numbers, bars and a
chart to read at a glance, and notes as boxes. Everything is inline (one
``<style>`` block, inline styles, inline SVG): no script, font or stylesheet is
fetched, so it reads the same offline. Its look is in two layers (``html_style``):
inline styles that a notebook's sanitizer keeps, so a notebook reopened untrusted
still reads (code indented, numbers aligned, bars drawn), and a stylesheet that
adds what only it can (syntax colours mixed with the page's own text colour, so
the fragment reads in light and dark notebook themes; columns that fold as the
report narrows; the chart). The standalone page follows the system's
``prefers-color-scheme`` through ``color-scheme: light dark``.
"""

from __future__ import annotations

import hashlib
from html import escape

from ..stats import ProfileStats
from .columns import REGISTRY, html_folds
from .html_cells import unbroken
from .html_style import FIGURES, HIDDEN, INSTRUMENTED, LEFT, SAMPLED, STYLE, note_style, swatch
from .html_table import BELOW_RESOLUTION, DISAGREE, function_table
from .svg_chart import time_chart
from .view import NOTE_TITLES, FunctionView, profile_notes, profile_views

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>body {{ margin: 16px 20px; background: Canvas; color: CanvasText; }}</style>
</head><body>
{body}
</body></html>
"""


def _anchor_prefix(profile: ProfileStats) -> str:
    """Ids unique to this report, so several reports in one notebook do not share anchors."""
    said = repr(
        [
            (f.source.key, f.counts.calls, f.counts.ticks, f.counts.hits, f.samples.total)
            for f in profile.functions
        ]
    )
    return "nlp-" + hashlib.sha1(said.encode()).hexdigest()[:8]


def _summary(views: list[FunctionView], ids: list[str]) -> str:
    """One row per function, linking to its table."""
    rows = []
    for view, anchor in zip(views, ids, strict=True):
        s = view.stats
        total = view.amount_text(view.total / view.output_unit) if view.timed else "not timed"  # total: s
        over = s.distortion.overhead
        over_text = "not measured" if over is None else f"{over:.2f}x" if over >= 1 else "none measurable"
        if s.distortion.probe_overhead is not None:  # the warning colour may be the probed run's
            over_text += f" (probes {s.distortion.probe_overhead:.2f}x)"
        warn = ' class="n bang"' if any(n.level == "warning" for n in s.diagnosis.notes) else ' class="n"'
        samples = str(s.samples.total) if view.sampled else ""
        cells = [f'<td style="{LEFT}"><a href="#{anchor}">{escape(s.heading)}</a></td>']
        cells += [f'<td class="n">{unbroken(t)}</td>' for t in (str(s.counts.calls), total)]
        cells += [f"<td{warn}>{unbroken(over_text)}</td>", f'<td class="n">{samples}</td>']
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = "".join(
        f'<th class="n">{unbroken(h)}</th>' if i else f'<th style="{LEFT}">{h}</th>'
        for i, h in enumerate(("Function", "Calls", "Total time", "Overhead", "Samples"))
    )
    return (
        f'<table class="summary" {FIGURES}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _key(view: FunctionView) -> str:
    """What the bars and marks mean, under each table."""
    parts = []
    sampled, probes = (
        f'<i style="{swatch(c, 18, 6, "0 4px 1px 10px")}"></i>' for c in (SAMPLED, INSTRUMENTED)
    )
    if view.sampled:
        parts.append(f"{sampled}% Time (sampled, probe-free), whisker: its 95% interval")
        if view.probes_beside:
            parts.append(f"{probes}Probe % (clock probes)")
    elif view.timed:
        parts.append(f"{probes}% Time (clock probes)")
    marks = []
    if any(line.below_resolution for line in view.lines):
        marks.append(f'<span title="{escape(BELOW_RESOLUTION)}">~ below the timer\'s resolution</span>')
    if any(line.disagree for line in view.lines):
        marks.append(f'<span title="{escape(DISAGREE)}">! the two views disagree</span>')
    text = " ".join(parts) + ("; marks: " + ", ".join(marks) if marks else "")
    folded = _fold_notices(view)
    return (f'<div class="key">{text}</div>' if text else "") + folded


def _fold_notices(view: FunctionView) -> str:
    """One notice per band of report widths (``html_style.fold_css`` shows the band's): the columns
    of this table hidden there, narrowest-folded first, and what still shows their figures. Each
    is hidden inline: without the stylesheet (a sanitized notebook) no column folds, and no notice
    may say one did."""
    shown = [c for c in REGISTRY if c.shown(view)]
    notices, hidden = [], []
    for i, (_, columns) in enumerate(html_folds()):
        hidden = [c for c in columns if c in shown] + hidden
        if not hidden:
            continue
        names = " and ".join(c.name for c in hidden)
        hints = [c.fold.html_hint for c in hidden if c.fold.html_hint] + ["hover a bar for the figures"]
        verb = "is" if len(hidden) == 1 else "are"
        said = f"narrow window: {names} {verb} folded ({'; '.join(hints)})"
        notices.append(f'<div class="folded at{i}" style="{HIDDEN}">{said}</div>')
    return "".join(notices)


def _note(text: str, level: str = "", title: str = "") -> str:
    """A note's box, styled inline (its title on a line of its own)."""
    css = f"note {level}".strip()
    head = f'<b style="display:block">{title}</b>' if title else ""
    return f'<div class="{css}" style="{note_style(level)}">{head}{escape(text)}</div>'


def _notes(view: FunctionView) -> str:
    boxes = []
    for note in view.stats.diagnosis.notes:
        if note.level in NOTE_TITLES:
            boxes.append(_note(note.text, "warning", NOTE_TITLES[note.level]))
        else:
            boxes.append(_note(note.text))
    for hint in view.stats.machine.hints:
        boxes.append(_note(hint.text, "hint"))
    if view.stats.machine.lines:
        boxes.append(
            f'<div class="key">click a line for its machine code ({view.stats.machine.twin} twin), '
            "hot instructions shaded</div>"
        )
    return "".join(boxes)


def _function(view: FunctionView, anchor: str, human: bool) -> str:
    s = view.stats
    shown = [(label, value) for label, value in view.header if label not in ("Timer unit", "Function")]
    rows = "".join(f"<dt>{escape(label)}</dt><dd>{escape(value)}</dd>" for label, value in shown)
    if view.tick:
        unit = f"{view.tick}s"
    else:
        unit = "each with its unit (s, ms, µs, ns)" if human else f"{view.output_unit:g} s"
    rows += f"<dt>Times in</dt><dd>{escape(unit)}</dd>"
    title = f"{escape(s.heading)} <small>at line {s.source.first_lineno}</small>"
    return (
        f'<section id="{anchor}"><h3>{title}</h3>'
        f'<div class="top"><dl>{rows}</dl>{time_chart(view)}</div>'
        f"{function_table(view, human)}{_key(view)}{_notes(view)}</section>"
    )


def profile_html(
    profile: ProfileStats,
    output_unit: float | None = None,
    stripzeros: bool = False,
    page: bool = False,
    title: str = "numba_lprun profile",
    columns: frozenset[str] = frozenset(),
) -> str:
    """The profile as an HTML fragment (for notebooks) or, with ``page``, a whole document."""
    views = profile_views(profile, output_unit, stripzeros, columns)
    prefix = _anchor_prefix(profile)
    ids = [f"{prefix}-{i}" for i in range(len(views))]
    parts = [f"<style>{STYLE}</style>", '<div class="nlprun">']
    if not views:
        parts.append("<p>numba_lprun: no profiled function ran</p>")
    if len(views) > 1:
        parts.append(_summary(views, ids))
    # times in s/ms/us/ns unless a unit was asked for (the text layout keeps line_profiler's)
    human = output_unit is None
    parts += [_function(view, anchor, human) for view, anchor in zip(views, ids, strict=True)]
    parts += [_note(note) for note in profile_notes(profile)]
    parts.append("</div>")
    fragment = "\n".join(parts)
    return _PAGE.format(title=escape(title), body=fragment) if page else fragment
