"""One function's per-line table as a real HTML ``<table>``, built from the view.

A browser lays out a real table to fit its cells, so numbers are never cut (a
console recording cut them wherever the terminal was too narrow). Each row gets
two inline bars side by side, % Time (instrumented) over % Samples (probe-free,
with its 95% interval as a whisker), so lines where the views disagree stand
out without reading numbers. Marks carry their meaning in ``title`` attributes,
and the source is highlighted with pygments tokens mapped to a few classes
whose colours the stylesheet sets (readable on light and dark backgrounds).
"""

from __future__ import annotations

from html import escape

from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, String, Token

from .view import (
    FunctionView,
    LineView,
    has_estimates,
    interval_text,
    number,
)

BELOW_RESOLUTION = (
    "below the timer's resolution: the time per hit is within the probe's own cost, "
    "so this figure is an upper bound, not a measurement"
)
DISAGREE = (
    "the two views disagree: the instrumented share lies outside the sampled share's 95% interval; "
    "here the probes distort, and % Samples (probe-free, optimized code) is the better guide"
)
HEAVY = "one of the heaviest lines (10% of the time or more)"

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
    """Each source line as HTML spans, lexed in the context of the whole function."""
    source = "\n".join(line.text for line in view.lines) + "\n"
    lines: list[list[str]] = [[]]
    for kind, value in PythonLexer(stripnl=False, ensurenl=True).get_tokens(source):
        css = next((c for t, c in _TOKEN_CLASSES if kind in t), None)
        for i, piece in enumerate(value.split("\n")):
            if i:
                lines.append([])
            if piece:
                text = escape(piece)
                lines[-1].append(f'<span class="{css}">{text}</span>' if css else text)
    out = ["".join(parts) for parts in lines]
    return [out[i] if i < len(out) else escape(line.text) for i, line in enumerate(view.lines)]


def _mark(symbol: str, title: str, css: str) -> str:
    return f'<span class="{css}" title="{escape(title)}">{symbol}</span>'


def _bars(line: LineView, timed: bool, sampled: bool) -> str:
    """% Time over % Samples as two thin bars on one 0-100% scale, the interval as a whisker."""
    parts, said = [], []
    if timed and line.percent is not None:
        parts.append(f'<div class="bar bt"><span style="width:{line.percent:.1f}%"></span></div>')
        said.append(f"% Time {line.percent:.1f} (instrumented)")
    elif timed:
        parts.append('<div class="bar bt"></div>')
    if sampled and line.sampled is not None:
        whisker = ""
        if line.interval is not None:
            low, high = line.interval
            whisker = f'<i style="left:{low:.1f}%;width:{max(high - low, 0.4):.1f}%"></i>'
        parts.append(f'<div class="bar bs"><span style="width:{line.sampled:.1f}%"></span>{whisker}</div>')
        said.append(f"% Samples {line.sampled:.1f}, 95% interval {interval_text(line.interval)} (probe-free)")
        if line.sampled_time is not None:
            said.append(f"Est. Time {number(line.sampled_time)}, Est./Hit {number(line.sampled_per_hit)}")
    elif sampled:
        parts.append('<div class="bar bs"></div>')
    if not said:
        return '<td class="bars"></td>'
    return f'<td class="bars" title="{escape("; ".join(said))}">{"".join(parts)}</td>'


def _asm(view: FunctionView, lineno: int, code_html: str, hottest: int) -> str:
    """The source cell: the line, expandable (``<details>``, no script) to its instructions,
    each with its samples and a background as hot as its share of the hottest one."""
    code = view.stats.code.get(lineno)
    if code is None or not code.instructions:
        return f"<code>{code_html}</code>"
    rows = []
    for ins in code.instructions:
        heat = ins.samples / hottest if hottest else 0.0
        style = f' style="background:rgba(232,89,12,{0.08 + 0.6 * heat:.2f})"' if ins.samples else ""
        target = ""
        if ins.target:
            target = f' <span class="tgt">&rarr; {escape(ins.target)} ({escape(ins.origin or "")})</span>'
        rows.append(
            f'<tr{style}><td class="n">{ins.samples or ""}</td><td class="ad">{ins.address:#x}</td>'
            f"<td>{escape(ins.text)}{target}</td></tr>"
        )
    said = f"{len(code.instructions)} instructions, {code.samples} samples"
    return (
        f'<details class="asm"><summary><code>{code_html}</code></summary>'
        f'<table><thead><tr><th class="n">samples</th><th>address</th><th>instruction ({said})</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></details>"
    )


def _num(text: str, extra: str = "") -> str:
    return f'<td class="n{extra}">{text}</td>'


def function_table(view: FunctionView) -> str:
    """The per-line table: line_profiler's columns, the sampled ones, the bars and the source."""
    timed, sampled, estimates = view.stats.timed, view.sampled, has_estimates(view)
    heads = ["Line #", "Hits"]
    if timed:
        heads += ["Time", "Per Hit", "% Time"]
    if sampled:
        heads += ["% Samples", "95% CI"]
        if estimates:
            heads += ["Est. Time", "Est./Hit"]
    fold = {"95% CI": " f3", "Est. Time": " f2", "Est./Hit": " f1"}
    unit = f' title="in {view.output_unit:g} s"'
    head = "".join(
        f'<th class="n{fold.get(h, "")}"{unit if h[-4:] in ("Time", " Hit", "/Hit") else ""}>{h}</th>'
        for h in heads
    )
    if timed or sampled:
        key = " / ".join(n for n, on in (("% Time", timed), ("% Samples", sampled)) if on)
        swatches = [(n, v) for n, v, on in (("Time", "t", timed), ("Samples", "s", sampled)) if on]
        label = "".join(f'<b style="background:var(--{v})"></b>{n}' for n, v in swatches)
        head += f'<th class="bars" title="{key} as bars on one 0-100% scale">{label}</th>'
    head += '<th class="src">Line Contents</th>'
    rows = []
    hottest = max((i.samples for c in view.stats.code.values() for i in c.instructions), default=0)
    for line, code in zip(view.lines, highlighted_lines(view), strict=True):
        cells = [f'<td class="n ln">{line.lineno}</td>', _num("" if line.hits is None else str(line.hits))]
        if timed:
            per_hit = number(line.per_hit)
            if line.below_resolution and per_hit:
                per_hit = _mark("~", BELOW_RESOLUTION, "mark") + per_hit
            percent = number(line.percent)
            cells += [_num(number(line.time)), _num(per_hit), _num(percent, " heavy" if line.heavy else "")]
        if sampled:
            share = number(line.sampled)
            if line.disagree and share:
                share = _mark("!", DISAGREE, "mark bang") + " " + share
            cells += [
                _num(share, " bang" if line.disagree else ""),
                _num(interval_text(line.interval), " ci f3"),
            ]
            if estimates:
                cells += [_num(number(line.sampled_time), " f2"), _num(number(line.sampled_per_hit), " f1")]
        if timed or sampled:
            cells.append(_bars(line, timed, sampled))
        cells.append(f'<td class="src">{_asm(view, line.lineno, code, hottest)}</td>')
        classes = " ".join(c for c, on in (("heavy", line.heavy), ("disagree", line.disagree)) if on)
        title = f' title="{HEAVY}"' if line.heavy else ""
        rows.append(f'<tr class="{classes}"{title}>' if classes else "<tr>")
        rows[-1] += "".join(cells) + "</tr>"
    body = "\n".join(rows)
    table = f'<table class="lines"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'
    return f'<div class="scroll">{table}</div>'
