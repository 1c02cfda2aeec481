"""Self-contained HTML of a profile, for notebooks and ``--html`` report files.

A page built from the data (``html_table``, ``svg_chart``), not a recording of
the terminal: tables the browser lays out to fit their numbers, bars and a
chart to read at a glance, and notes as styled boxes. Everything is inline (one
``<style>`` block, inline SVG): no script, font or stylesheet is fetched, so it
reads the same offline. Colours are mid-tones and translucent fills over the
surrounding page's own text and background colours, so the fragment reads in
light and dark notebook themes; the standalone page follows the system's
``prefers-color-scheme`` through ``color-scheme: light dark``.
"""

from __future__ import annotations

import hashlib
import re
from html import escape

from ..stats import ProfileStats
from .columns import REGISTRY, html_fold_class, html_folds
from .html_table import BELOW_RESOLUTION, DISAGREE, function_table
from .svg_chart import INSTRUMENTED, SAMPLED, time_chart
from .view import NOTE_TITLES, FunctionView, profile_notes, profile_views

#: Where the report's rules apply, weighted like an id: ``.nlprun`` (no element has the id, so
#: the ``:not()`` matches every report) with an id's specificity, so the report's own rules win
#: over a host page's class-scoped ones wherever it is shown: JupyterLab and Notebook 7
#: (``:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td {text-align: right}`` right-aligned
#: the code, losing its indentation), classic Notebook (``.rendered_html tr``), nbconvert's
#: exports of both, VS Code's notebook view. Every property a host sets on a table, a cell,
#: a heading, a list or ``code`` is set here too (``RESET``), so none of the host's leaks in.
SCOPE = ".nlprun:not(#nlprun-id-weight)"


def scoped(css: str) -> str:
    """``css`` written with ``.nlprun`` selectors, scoped by ``SCOPE``."""
    return re.sub(r"\.nlprun\b", SCOPE, css)


def fold_css() -> str:
    """The CSS that hides the registry's folding columns as the window narrows (``html_folds``),
    and shows the notice of what is hidden in each band (``_fold_notices``). At the widest
    fold the headers may wrap and the bars narrow too."""
    rules = []
    for i, (width, columns) in enumerate(html_folds()):
        hide = ", ".join(f".nlprun .{html_fold_class(c).strip()}" for c in columns)
        rules.append(f"@media (max-width: {width}px) {{ {hide} {{ display: none; }}")
        if i == 0:
            rules.append("  .nlprun th.n { white-space: normal; }")
            rules.append("  .nlprun .bars { min-width: 56px; width: 64px; }")
        else:
            rules.append(f"  .nlprun .folded.at{i - 1} {{ display: none; }}")
        rules.append(f"  .nlprun .folded.at{i} {{ display: block; }} }}")
    return "\n".join(rules) + "\n"


#: What notebook hosts set on the elements the report uses (tables striped, cells padded and
#: right-aligned with normal line height, tables centred with a fixed layout, ``code`` boxed,
#: headings and lists spaced), set back to the report's own values before its rules.
RESET = """
.nlprun { margin: 0; padding: 0; border-spacing: 0; text-align: left; white-space: normal; }
.nlprun table { border-collapse: collapse; border-spacing: 0; border: none; margin: 0; table-layout: auto;
  font-size: inherit; line-height: inherit; color: inherit; background: none; max-width: none;
  width: auto; }
.nlprun thead, .nlprun tbody, .nlprun tr { border: none; background: none; padding: 0; margin: 0;
  text-align: left; vertical-align: middle; line-height: inherit; white-space: normal; }
.nlprun tbody tr:hover { background: none; }
.nlprun th, .nlprun td { text-align: left; line-height: inherit; max-width: none; border: none;
  background: none; font-size: inherit; }
.nlprun h3 { font-style: normal; font-weight: 700; line-height: 1.45; padding: 0; }
.nlprun h3 small { font-size: 12px; line-height: inherit; }
.nlprun dl, .nlprun dt, .nlprun dd { line-height: inherit; padding: 0; }
.nlprun code { border: 0; border-radius: 0; text-align: inherit; white-space: inherit; line-height: inherit; }
.nlprun a { color: inherit; text-decoration: underline; }
"""

STYLE = scoped(
    RESET
    + f"""
.nlprun {{ font: 13px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: inherit;
  --line: rgba(128,128,128,.35); --soft: rgba(128,128,128,.09); --t: {INSTRUMENTED}; --s: {SAMPLED};
  --heavy: rgba(255,176,0,.16); --warn: #e0a000; }}
.nlprun h3 {{ font-size: 15px; margin: 18px 0 6px; }}
.nlprun h3 small {{ font-weight: normal; opacity: .7; }}
.nlprun .top {{ display: flex; flex-wrap: wrap; gap: 8px 28px; align-items: flex-start; }}
.nlprun dl {{ display: grid; grid-template-columns: max-content minmax(0, 46em); gap: 1px 10px; margin: 0; }}
.nlprun dt {{ font-weight: 600; opacity: .8; white-space: nowrap; margin: 0; }}
.nlprun dd {{ margin: 0; overflow-wrap: anywhere; }}
.nlprun .chart {{ width: 420px; max-width: 100%; height: auto; font-size: 10px; fill: currentColor; }}
.nlprun .scroll {{ overflow-x: auto; margin: 8px 0; }}
.nlprun table {{ font-variant-numeric: tabular-nums; }}
.nlprun th, .nlprun td {{ padding: 1px 5px; border-bottom: 1px solid var(--line); vertical-align: middle;
  white-space: normal; }}
.nlprun th {{ font-weight: 600; border-bottom-width: 2px; vertical-align: bottom; }}
.nlprun .n {{ text-align: right; white-space: nowrap; }}
.nlprun th.n {{ white-space: nowrap; }}
.nlprun .ln, .nlprun .ci {{ color: #888; color: color-mix(in srgb, currentColor 62%, transparent); }}
.nlprun tr.heavy > td {{ background: var(--heavy); }}
.nlprun td.heavy {{ font-weight: 700; }}
.nlprun .bang {{ color: #e8590c; font-weight: 700; }}
.nlprun .mark {{ cursor: help; text-decoration: underline dotted; }}
.nlprun .bars {{ min-width: 80px; width: 110px; }}
.nlprun th.bars {{ font-weight: normal; font-size: 11px; white-space: nowrap; }}
.nlprun th.bars b {{ display: inline-block; width: 8px; height: 8px; margin: 0 2px 0 4px; }}
.nlprun .bar {{ position: relative; height: 5px; margin: 2px 0; background: var(--soft); }}
.nlprun .bar span {{ position: absolute; left: 0; top: 0; bottom: 0; }}
.nlprun .bar.bt span {{ background: var(--t); }}
.nlprun .bar.bs span {{ background: var(--s); }}
.nlprun .bar i {{ position: absolute; top: -2px; bottom: -2px; border: 1px solid currentColor;
  border-width: 0 1px; opacity: .75; }}
.nlprun .bar i::after {{ content: ''; position: absolute; left: 0; right: 0; top: 4px;
  border-top: 1px solid; }}
.nlprun td.src, .nlprun th.src {{ text-align: left; padding-left: 8px; }}
.nlprun td.src {{ white-space: pre;
  font: 12px/1.45 ui-monospace, Menlo, 'DejaVu Sans Mono', Consolas, monospace; }}
.nlprun code {{ display: block; min-width: 16ch; font: inherit; background: none; color: inherit;
  padding: 0; margin: 0; }}
.nlprun .src .k {{ color: #a855f7; }} .nlprun .src .b {{ color: #0891b2; }}
.nlprun .src .f {{ color: #3b82f6; }}
.nlprun .src .s {{ color: #16a34a; }} .nlprun .src .m, .nlprun .src .d {{ color: #d97706; }}
.nlprun .src .c {{ color: #8b8b8b; font-style: italic; }}
.nlprun .note {{ margin: 6px 0; padding: 6px 10px; border-left: 4px solid var(--line);
  background: var(--soft); max-width: 60em; }}
.nlprun .note.warning {{ border-left-color: var(--warn); background: rgba(224,160,0,.12); }}
.nlprun .note b {{ display: block; }}
.nlprun .key {{ opacity: .8; font-size: 12px; }}
.nlprun .key i {{ display: inline-block; width: 18px; height: 6px; margin: 0 4px 1px 10px; }}
.nlprun .summary td, .nlprun .summary th {{ padding: 2px 10px; }}
.nlprun details.asm > summary {{ cursor: pointer; list-style: none; display: block; }}
.nlprun details.asm > summary::-webkit-details-marker {{ display: none; }}
.nlprun details.asm > summary::before {{ content: '\\25B8'; position: absolute; margin-left: -0.6em;
  font-size: 10px; opacity: .6; }}
.nlprun details.asm[open] > summary::before {{ content: '\\25BE'; }}
.nlprun details.asm > summary code {{ display: inline; }}
.nlprun details.asm table {{ margin: 2px 0 6px; font-size: 11px; white-space: nowrap; }}
.nlprun details.asm td, .nlprun details.asm th {{ border-bottom: none; padding: 0 6px; white-space: nowrap; }}
.nlprun details.asm .ad {{ opacity: .6; }} .nlprun details.asm .tgt {{ color: #0891b2; }}
.nlprun .note.hint {{ border-left-color: #0891b2; }}
.nlprun .folded {{ display: none; font-size: 12px; opacity: .8; }}
"""
    + fold_css()
)

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
        rows.append(
            f'<tr><td><a href="#{anchor}">{escape(s.heading)}</a></td><td class="n">{s.counts.calls}</td>'
            f'<td class="n">{total}</td><td{warn}>{over_text}</td><td class="n">{samples}</td></tr>'
        )
    head = "".join(
        f"<th{' class=n' if i else ''}>{h}</th>"
        for i, h in enumerate(("Function", "Calls", "Total time", "Overhead", "Samples"))
    )
    return f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _key(view: FunctionView) -> str:
    """What the bars and marks mean, under each table."""
    parts = []
    if view.sampled:
        parts.append(
            "<i style='background:var(--s)'></i>% Time (sampled, probe-free), whisker: its 95% interval"
        )
        if view.probes_beside:
            parts.append("<i style='background:var(--t)'></i>Probe % (clock probes)")
    elif view.timed:
        parts.append("<i style='background:var(--t)'></i>% Time (clock probes)")
    marks = []
    if any(line.below_resolution for line in view.lines):
        marks.append(f'<span title="{escape(BELOW_RESOLUTION)}">~ below the timer\'s resolution</span>')
    if any(line.disagree for line in view.lines):
        marks.append(f'<span title="{escape(DISAGREE)}">! the two views disagree</span>')
    text = " ".join(parts) + ("; marks: " + ", ".join(marks) if marks else "")
    folded = _fold_notices(view)
    return (f'<div class="key">{text}</div>' if text else "") + folded


def _fold_notices(view: FunctionView) -> str:
    """One notice per band of window widths (``fold_css`` shows the band's): the columns of this
    table hidden there, narrowest-folded first, and what still shows their figures."""
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
        notices.append(f'<div class="folded at{i}">{said}</div>')
    return "".join(notices)


def _notes(view: FunctionView) -> str:
    boxes = []
    for note in view.stats.diagnosis.notes:
        if note.level in NOTE_TITLES:
            title = NOTE_TITLES[note.level]
            boxes.append(f'<div class="note warning"><b>{title}</b>{escape(note.text)}</div>')
        else:
            boxes.append(f'<div class="note">{escape(note.text)}</div>')
    for hint in view.stats.machine.hints:
        boxes.append(f'<div class="note hint">{escape(hint.text)}</div>')
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
    parts += [f'<p class="note">{escape(note)}</p>' for note in profile_notes(profile)]
    parts.append("</div>")
    fragment = "\n".join(parts)
    return _PAGE.format(title=escape(title), body=fragment) if page else fragment
