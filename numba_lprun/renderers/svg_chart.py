"""A small inline SVG chart of time per line, drawn from the data.

No plotting library: a chart is a few dozen rectangles, and an inline SVG needs
nothing fetched, scales with the page, and takes its text colour from the page
(``currentColor``), so it reads on light and dark backgrounds alike. It sits
next to the table so the shape of the profile (which lines cost, and, with
``--probes``, whether the probes' view and the sampler's agree) shows at a glance.

It is shown by the report's stylesheet only: a notebook's sanitizer drops the
stylesheet and unwraps the SVG, keeping its labels and tooltips as one run-on
line of text ("0 ns20 ms40 msline 7: sampled..."); inside a box hidden by its
inline style, they are not seen. The table's bars, styled inline, still show the
shape there.
"""

from __future__ import annotations

import html
import math

from .html_style import HIDDEN, INSTRUMENTED, SAMPLED
from .view import FunctionView

_W, _H = 420, 150  # viewBox; the SVG scales to the width it is given
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 8, 22, 20


def _nice_step(top: float) -> float:
    """A round gridline step giving about three gridlines up to ``top``."""
    raw = top / 3
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def _rect(x: float, y: float, w: float, h: float, fill: str, tip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}">'
        f"<title>{html.escape(tip)}</title></rect>"
    )


def _series(view: FunctionView) -> list[tuple[str, str, list[float]]]:
    """(legend, colour, time per row in output units) of each series to draw."""
    rows = [line for line in view.lines if line.hits or line.time]
    if view.sampled:
        out = [("sampled (Time)", SAMPLED, [(line.time or 0.0) for line in rows])]
        if view.probes_beside:
            out.append(
                (
                    "clock probes (Probe Time)",
                    INSTRUMENTED,
                    [(line.probe_time or 0.0) for line in rows],
                )
            )
        return out
    if view.timed:
        return [("clock probes (Time)", INSTRUMENTED, [(line.time or 0.0) for line in rows])]
    return []


def time_chart(view: FunctionView) -> str:
    """Grouped bars per line, one per series (empty when nothing was timed), in a box that only
    the stylesheet shows."""
    rows = [line.lineno for line in view.lines if line.hits or line.time]
    series = _series(view)
    if not rows or not series:
        return ""
    top = max(max(values) for _, _, values in series)
    if top <= 0:
        return ""
    step = _nice_step(top)
    top = step * math.ceil(top / step)
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    out = [
        f'<div class="chart" style="{HIDDEN}"><svg viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="time per line of {html.escape(view.stats.heading)}">'
    ]
    for i in range(int(round(top / step)) + 1):  # gridlines and their labels
        y = _TOP + plot_h - plot_h * i * step / top
        out.append(
            f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="currentColor" stroke-opacity="0.2"/>'
            f'<text x="{_LEFT - 4}" y="{y + 3:.1f}" text-anchor="end">{view.amount_text(i * step)}</text>'
        )
    group = plot_w / len(rows)
    bar = min(18.0, group * 0.8 / len(series))
    label_every = max(1, math.ceil(len(rows) * 22 / plot_w))
    for i, lineno in enumerate(rows):
        x = _LEFT + group * i + (group - bar * len(series)) / 2
        for j, (label, fill, values) in enumerate(series):
            h = plot_h * values[i] / top
            tip = f"line {lineno}: {label.split(' (')[0]} {view.amount_text(values[i])}"
            out.append(_rect(x + j * bar, _TOP + plot_h - h, bar, max(h, 0.0), fill, tip))
        if i % label_every == 0:
            cx = _LEFT + group * (i + 0.5)
            out.append(f'<text x="{cx:.1f}" y="{_H - 6}" text-anchor="middle">{lineno}</text>')
    x = _LEFT
    for label, fill, _ in series:
        out.append(
            f'<rect x="{x}" y="6" width="10" height="10" fill="{fill}"/>'
            f'<text x="{x + 14}" y="15">{html.escape(label)}</text>'
        )
        x += 24 + 6.2 * len(label)
    out.append("</svg></div>")
    return "".join(out)
