"""One function's per-line table as a real HTML ``<table>``, built from the view.

A browser lays out a real table to fit its cells, so numbers are never cut (a
console recording cut them wherever the terminal was too narrow), and a source
line longer than the room wraps under itself rather than hiding behind a
scrollbar. Each row gets an inline bar of % Time (sampled, with its 95% interval
as a whisker) and, with ``--probes``, one of the probes' share under it, so lines
where the two views disagree stand out without reading numbers. Marks carry their
meaning in ``title`` attributes, and the source is highlighted with pygments
tokens mapped to a few classes whose colours the stylesheet sets. Alignment,
indentation, bars and the heaviest rows are inline styles (``html_style``): they
survive a notebook's sanitizer, which drops the stylesheet.
"""

from __future__ import annotations

from html import escape

from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, String, Token

from .columns import AFTER_EXTRAS, BEFORE_EXTRAS, Column, html_fold_class
from .html_cells import BELOW_RESOLUTION, DISAGREE, unbroken
from .html_style import (
    BARS_CELL,
    BARS_HEAD,
    FIGURES,
    HEAVY,
    HIDDEN,
    INSTRUMENTED,
    LINES_TABLE,
    SAMPLED,
    SCROLL,
    SOURCE_CELL,
    SOURCE_HEAD,
    code_style,
    swatch,
)
from .view import FunctionView, LineView, interval_text, number

__all__ = ["BELOW_RESOLUTION", "DISAGREE", "function_table", "highlighted_lines"]

HEAVY_TITLE = "one of the heaviest lines (10% of the time or more)"
FOLDED = "the function's docstring, as one row: it never runs (the profile keeps every line)"

#: pygments token types -> the short classes the stylesheet colours (first match wins)
_TOKEN_CLASSES = (
    (Comment, "c"),
    (String, "s"),
    (Number, "m"),
    (Name.Decorator, "d"),
    (Name.Builtin, "b"),
    (Name.Function, "f"),
    (Name.Class, "f"),
    (Keyword, "k"),
    (Token.Operator.Word, "k"),
)


def highlighted_lines(view: FunctionView) -> list[str]:
    """Each source line as HTML spans, lexed in the context of the whole function; a folded
    docstring's row is no code: it reads as a comment, with what it stands for on hover."""
    source = "\n".join(line.text for line in view.lines) + "\n"
    lines: list[list[str]] = [[]]
    spaces = ""  # blanks before a token, written inside it (see below)
    for kind, value in PythonLexer(stripnl=False, ensurenl=True).get_tokens(source):
        css = next((c for t, c in _TOKEN_CLASSES if kind in t), None)
        for i, piece in enumerate(value.split("\n")):
            if i:
                lines.append([])
                spaces = ""
            if piece and not piece.strip(" \t"):
                spaces += piece
            elif piece:
                # a text node of blanks alone between tags is one space once an HTML parser has
                # read it (BeautifulSoup does, in nbconvert's exports): the indentation goes in
                # the token's own node
                text = escape(spaces + piece)
                spaces = ""
                lines[-1].append(f'<span class="{css}">{text}</span>' if css else text)
    out = ["".join(parts) for parts in lines]
    return [
        f'<span class="c" title="{escape(FOLDED)}">{escape(line.text)}</span>'
        if line.through
        else (out[i] if i < len(out) else escape(line.text))
        for i, line in enumerate(view.lines)
    ]


_TRACK = "position:relative;height:5px;margin:2px 0;background:rgba(128,128,128,0.12)"
_FILL = "position:absolute;left:0;top:0;bottom:0"
_WHISKER = "position:absolute;top:-2px;bottom:-2px;border:1px solid;border-width:0 1px;opacity:0.75"
_WHISKER_LINE = "position:absolute;left:0;right:0;top:3px;border-top:1px solid"


def _bar(percent: float | None, css: str, interval: tuple[float, float] | None = None) -> str:
    """A bar on a 0-100% track, drawn by inline styles alone (a sanitizer keeps them), with the
    95% interval as a whisker: a bracket and the line across it."""
    track = f'<div class="bar {css}" style="{_TRACK}">'
    if percent is None:
        return track + "</div>"
    whisker = ""
    if interval is not None:
        low, high = interval
        box = f"{_WHISKER};left:{low:.1f}%;width:{max(high - low, 0.4):.1f}%"
        whisker = f'<i style="{box}"><i style="{_WHISKER_LINE}"></i></i>'
    colour = SAMPLED if css == "bs" else INSTRUMENTED
    return f'{track}<span style="{_FILL};width:{percent:.1f}%;background:{colour}"></span>{whisker}</div>'


def _bars(line: LineView, view: FunctionView) -> str:
    """% Time (sampled: orange with its interval; probes: blue) and, with --probes, the
    probes' share under it, on one 0-100% scale."""
    said = []
    if view.sampled:
        parts = [_bar(line.percent, "bs", line.interval)]
        if line.percent is not None:
            said.append(f"% Time {line.percent:.1f}, 95% interval {interval_text(line.interval)} (sampled)")
        if view.probes_beside:
            parts.append(_bar(line.probe_percent, "bt"))
            if line.probe_percent is not None:
                said.append(f"Probe % {line.probe_percent:.1f}, Probe Time {number(line.probe_time)}")
    else:
        parts = [_bar(line.percent, "bt")]
        if line.percent is not None:
            said.append(f"% Time {line.percent:.1f} (clock probes)")
    if not said:
        return f'<td class="bars" style="{BARS_CELL}"></td>'
    return f'<td class="bars" style="{BARS_CELL}" title="{escape("; ".join(said))}">{"".join(parts)}</td>'


def _asm(view: FunctionView, line: LineView, code_html: str, hottest: int) -> str:
    """The source cell: the line, expandable (``<details>``, no script) to its instructions,
    each with its samples and a background as hot as its share of the hottest one."""
    code = view.stats.machine.lines.get(line.lineno)
    if code is None or not code.instructions:
        return f'<code style="{code_style(line.text)}">{code_html}</code>'
    source = f'<code style="{code_style(line.text, "inline-block")}">{code_html}</code>'
    rows = []
    for ins in code.instructions:
        heat = ins.samples / hottest if hottest else 0.0
        style = f' style="background:rgba(232,89,12,{0.08 + 0.6 * heat:.2f})"' if ins.samples else ""
        target = ""
        if ins.target:
            target = f' <span class="tgt">&rarr; {escape(ins.target)} ({escape(ins.origin or "")})</span>'
        rows.append(
            f'<tr{style}><td class="n">{ins.samples or ""}</td>'
            f'<td class="ad" style="text-align:left">{ins.address:#x}</td>'
            f'<td style="text-align:left">{escape(ins.text)}{target}</td></tr>'
        )
    said = f"{len(code.instructions)} instructions, {code.samples} samples"
    return (
        f'<details class="asm"><summary>{source}</summary><table {FIGURES}><thead><tr>'
        f'<th class="n">samples</th><th style="text-align:left">address</th>'
        f'<th style="text-align:left">instruction ({said})</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></details>"
    )


def _num(text: str, extra: str = "") -> str:
    return f'<td class="n{extra}">{text}</td>'


def _shown(view: FunctionView) -> tuple[list[Column], list[Column]]:
    """The registry's columns this table has: before the profile's extra columns, and after."""
    return [c for c in BEFORE_EXTRAS if c.shown(view)], [c for c in AFTER_EXTRAS if c.shown(view)]


def _heads(view: FunctionView, human: bool) -> str:
    before, after = _shown(view)
    unit = f' title="in {view.tick}s"' if view.tick else f' title="in {view.output_unit:g} s"'
    unit = ' title="each with its unit"' if human and not view.tick else unit
    said = {c.header: f' title="{escape(c.explanation)}"' for c in view.stats.extras.columns if c.explanation}

    def head(name: str, css: str, title: str) -> str:
        return f'<th class="n{css}"{title}>{unbroken(name)}</th>'

    def title(c: Column) -> str:
        return unit if c.unit_title else f' title="{escape(c.explanation)}"' if c.html_title else ""

    heads = [head(c.name, html_fold_class(c), title(c)) for c in before]
    heads += [head(h, "", said.get(h, "")) for h in view.extra_headers]
    heads += [head(c.name, html_fold_class(c), title(c)) for c in after]
    head_html = "".join(heads)
    if view.timed:
        swatches = [("Time", SAMPLED if view.sampled else INSTRUMENTED)] + (
            [("Probes", INSTRUMENTED)] if view.probes_beside else []
        )
        # the swatches' names only with the stylesheet: sanitized, the column is as narrow as its
        # bars allow (the key under the table names the colours in either view)
        label = "".join(
            f'<b style="{swatch(c, 8, 8, "0 2px 0 4px")}"></b><span class="said" style="{HIDDEN}">{n}</span>'
            for n, c in swatches
        )
        colours = {SAMPLED: "orange", INSTRUMENTED: "blue"}
        said = "shares as bars on one 0-100% scale: " + ", ".join(f"{colours[c]} {n}" for n, c in swatches)
        head_html += f'<th class="bars" style="{BARS_HEAD}" title="{said}">{label}</th>'
    return head_html + f'<th class="src" style="{SOURCE_HEAD}">Line Contents</th>'


def _cell(view: FunctionView, line: LineView, spec: Column, human: bool) -> str:
    """One registry column's cell: its own HTML, or its text escaped, in its classes."""
    inner = spec.html_cell(view, line, human) if spec.html_cell else unbroken(spec.cell(view, line))
    css = spec.html_class(line) if callable(spec.html_class) else spec.html_class
    css += html_fold_class(spec)
    return _num(inner, css)


def _cells(view: FunctionView, line: LineView, human: bool) -> list[str]:
    before, after = _shown(view)
    cells = [_cell(view, line, spec, human) for spec in before]
    cells += [_num(unbroken(text)) for text in line.extra]
    cells += [_cell(view, line, spec, human) for spec in after]
    if view.timed:
        cells.append(_bars(line, view))
    return cells


def function_table(view: FunctionView, human: bool = False) -> str:
    """The per-line table: line_profiler's columns, the interval, probe times, the bars and the source."""
    rows = []
    hottest = max((i.samples for c in view.stats.machine.lines.values() for i in c.instructions), default=0)
    for line, code in zip(view.lines, highlighted_lines(view), strict=True):
        cells = _cells(view, line, human)
        cells.append(f'<td class="src" style="{SOURCE_CELL}">{_asm(view, line, code, hottest)}</td>')
        classes = " ".join(c for c, on in (("heavy", line.heavy), ("disagree", line.disagree)) if on)
        title = f' title="{HEAVY_TITLE}" style="background:{HEAVY}"' if line.heavy else ""
        rows.append(f'<tr class="{classes}"{title}>' if classes else "<tr>")
        rows[-1] += "".join(cells) + "</tr>"
    body = "\n".join(rows)
    heads = _heads(view, human)
    table = f'<table class="lines" {LINES_TABLE}><thead><tr>{heads}</tr></thead>\n<tbody>\n{body}\n</tbody>'
    table += "</table>"
    return f'<div class="scroll" style="{SCROLL}">{table}</div>'
