"""One function's per-line table as a real HTML ``<table>``, built from the view.

A browser lays out a real table to fit its cells, so numbers are never cut (a
console recording cut them wherever the terminal was too narrow). Each row gets
an inline bar of % Time (sampled, with its 95% interval as a whisker) and, with
``--probes``, one of the probes' share under it, so lines where the two views
disagree stand out without reading numbers. Marks carry their meaning in ``title`` attributes,
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
    interval_text,
    number,
)

BELOW_RESOLUTION = (
    "below the timer's resolution: the time per hit is within the probe's own cost, "
    "so this figure is an upper bound, not a measurement"
)
DISAGREE = (
    "the two views disagree: the probes' share lies outside the sampled share's 95% interval; "
    "here the probes distort, and % Time (sampled, probe-free) is the better guide"
)
HEAVY = "one of the heaviest lines (10% of the time or more)"
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
    for kind, value in PythonLexer(stripnl=False, ensurenl=True).get_tokens(source):
        css = next((c for t, c in _TOKEN_CLASSES if kind in t), None)
        for i, piece in enumerate(value.split("\n")):
            if i:
                lines.append([])
            if piece:
                text = escape(piece)
                lines[-1].append(f'<span class="{css}">{text}</span>' if css else text)
    out = ["".join(parts) for parts in lines]
    return [
        f'<span class="c" title="{escape(FOLDED)}">{escape(line.text)}</span>'
        if line.through
        else (out[i] if i < len(out) else escape(line.text))
        for i, line in enumerate(view.lines)
    ]


def _mark(symbol: str, title: str, css: str) -> str:
    return f'<span class="{css}" title="{escape(title)}">{symbol}</span>'


def _bar(percent: float | None, css: str, interval: tuple[float, float] | None = None) -> str:
    if percent is None:
        return f'<div class="bar {css}"></div>'
    whisker = ""
    if interval is not None:
        low, high = interval
        whisker = f'<i style="left:{low:.1f}%;width:{max(high - low, 0.4):.1f}%"></i>'
    return f'<div class="bar {css}"><span style="width:{percent:.1f}%"></span>{whisker}</div>'


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
        return '<td class="bars"></td>'
    return f'<td class="bars" title="{escape("; ".join(said))}">{"".join(parts)}</td>'


def _asm(view: FunctionView, lineno: int, code_html: str, hottest: int) -> str:
    """The source cell: the line, expandable (``<details>``, no script) to its instructions,
    each with its samples and a background as hot as its share of the hottest one."""
    code = view.stats.machine.lines.get(lineno)
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


def _heads(view: FunctionView, human: bool) -> str:
    heads = ["Line #", "Hits"]
    if view.timed:
        heads += ["Time", "Per Hit", "% Time"]
    heads += view.extra_headers
    if view.sampled:
        heads.append("95% CI")
    if view.probes_beside:
        heads += ["Probe Time", "Probe %"]
    fold = {"95% CI": " f3", "Probe Time": " f2"}
    unit = f' title="in {view.tick}s"' if view.tick else f' title="in {view.output_unit:g} s"'
    unit = ' title="each with its unit"' if human and not view.tick else unit
    said = {c.header: f' title="{escape(c.explanation)}"' for c in view.stats.extras.columns if c.explanation}
    head = "".join(
        f'<th class="n{fold.get(h, "")}"{unit if h[-4:] in ("Time", " Hit") else said.get(h, "")}>'
        f"{escape(h)}</th>"
        for h in heads
    )
    if view.timed:
        swatches = [("Time", "s" if view.sampled else "t")] + (
            [("Probes", "t")] if view.probes_beside else []
        )
        label = "".join(f'<b style="background:var(--{v})"></b>{n}' for n, v in swatches)
        head += f'<th class="bars" title="shares as bars on one 0-100% scale">{label}</th>'
    return head + '<th class="src">Line Contents</th>'


def _amount(view: FunctionView, value: float | None, human: bool) -> str:
    """A time cell: in output units as line_profiler writes them, or (``human``) with its own
    unit (``2.57 ms``), which a reader of a report expects."""
    if not human or value is None:
        return number(value)
    return view.amount_text(value)


def _cells(view: FunctionView, line: LineView, human: bool) -> list[str]:
    cells = [f'<td class="n ln">{line.label}</td>', _num("" if line.hits is None else str(line.hits))]
    if view.timed:
        per_hit = _amount(view, line.per_hit, human)
        if line.below_resolution and line.probe_time is None and per_hit:
            per_hit = _mark("~", BELOW_RESOLUTION, "mark") + per_hit
        percent = number(line.percent)
        time = _amount(view, line.time, human)
        cells += [_num(time), _num(per_hit), _num(percent, " heavy" if line.heavy else "")]
    cells += [_num(escape(text)) for text in line.extra]
    if view.sampled:
        cells.append(_num(interval_text(line.interval), " ci f3"))
    if view.probes_beside:
        share = number(line.probe_percent)
        if line.disagree and share:
            share = _mark("!", DISAGREE, "mark bang") + " " + share
        probe_time = _amount(view, line.probe_time, human)
        if line.below_resolution and probe_time:
            probe_time = _mark("~", BELOW_RESOLUTION, "mark") + probe_time
        cells += [_num(probe_time, " f2"), _num(share, " bang" if line.disagree else "")]
    if view.timed:
        cells.append(_bars(line, view))
    return cells


def function_table(view: FunctionView, human: bool = False) -> str:
    """The per-line table: line_profiler's columns, the interval, probe times, the bars and the source."""
    rows = []
    hottest = max((i.samples for c in view.stats.machine.lines.values() for i in c.instructions), default=0)
    for line, code in zip(view.lines, highlighted_lines(view), strict=True):
        cells = _cells(view, line, human)
        cells.append(f'<td class="src">{_asm(view, line.lineno, code, hottest)}</td>')
        classes = " ".join(c for c, on in (("heavy", line.heavy), ("disagree", line.disagree)) if on)
        title = f' title="{HEAVY}"' if line.heavy else ""
        rows.append(f'<tr class="{classes}"{title}>' if classes else "<tr>")
        rows[-1] += "".join(cells) + "</tr>"
    body = "\n".join(rows)
    heads = _heads(view, human)
    table = f'<table class="lines"><thead><tr>{heads}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'
    return f'<div class="scroll">{table}</div>'
