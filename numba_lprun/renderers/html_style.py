"""How the HTML report looks, in two layers, so that it degrades instead of breaking.

A notebook reopened untrusted (by someone who did not run it, or once its signature no longer
matches) shows its HTML through the host's sanitizer: JupyterLab, Notebook 7 and the classic
Notebook drop ``<style>`` blocks, unwrap ``<svg>`` and its shapes (keeping the text inside them),
and keep inline ``style`` attributes whose values are plain: colours as hex or ``rgba()``,
lengths in px, em or %, keywords; never ``var()``, ``calc()`` or ``color-mix()``. So:

- what makes the report readable is inline (the constants and functions below): code
  left-aligned with its indentation, wrapping under itself instead of hiding behind a
  scrollbar; numbers right-aligned and never broken; the bars, the heaviest rows, the notes
  and the key's swatches;
- what only a stylesheet can do is in ``STYLE``: the host's rules set back, syntax colours
  mixed with the page's own text colour (readable in light and dark themes alike), the
  optional columns folding as the report narrows (container queries: the report's own
  width, not the window's, which a notebook's side panels share), the chart;
- what would mislead without the stylesheet is hidden inline (``display:none``) and shown by
  it (an ``!important`` rule outweighs an inline style): the chart, whose labels would spill
  out as run-on text, and the "narrow window" notices, true only where a column is folded.
"""

from __future__ import annotations

import re

from .columns import html_fold_class, html_folds

INSTRUMENTED = "#4e79a7"  # mid blue and orange: bars that read on white and on near-black
SAMPLED = "#f28e2b"

#: Where the report's rules apply, weighted like an id: ``.nlprun`` (no element has the id, so
#: the ``:not()`` matches every report) with an id's specificity, so the report's own rules win
#: over a host page's class-scoped ones wherever it is shown: JupyterLab and Notebook 7
#: (``:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td {text-align: right}`` right-aligned
#: the code, losing its indentation), classic Notebook (``.rendered_html tr``), nbconvert's
#: exports of both, VS Code's notebook view. Every property a host sets on a table, a cell,
#: a heading, a list or ``code`` is set here too (``RESET``), so none of the host's leaks in.
SCOPE = ".nlprun:not(#nlprun-id-weight)"

#: Text colours by role, each a hue mixed with the page's own text colour (``currentColor``):
#: darker on a light page, lighter on a dark one, so one rule reads in every theme. The share
#: of the hue (%) keeps every role at 4.5:1 or more (WCAG AA) on the page and on the heaviest
#: rows in JupyterLab's light and dark themes, the classic Notebook and a dim dark theme (#ccc
#: on #1e1e1e); ``tests/test_html_untrusted.py`` measures them. A browser without ``color-mix``
#: drops the rule and shows the text in the page's colour.
TINTS: tuple[tuple[str, str, int], ...] = (
    (".src .k", "#a855f7", 50),  # keywords
    (".src .b", "#0891b2", 55),  # builtins
    (".src .f", "#3b82f6", 55),  # function and class names
    (".src .s", "#16a34a", 60),  # strings
    (".src .m, .src .d", "#d97706", 65),  # numbers, decorators
    (".src .c", "#8b8b8b", 65),  # comments
    (".bang", "#e8590c", 50),  # the ! mark, the summary's warned overhead
    ("details.asm .tgt", "#0891b2", 55),  # a call's target in the machine code
)
#: Secondary text (line numbers, intervals, the key, labels): the text colour at this opacity (%)
DIM = 72
DIMMED = (".ln", ".ci", ".key", ".folded", "dt", "h3 small", "details.asm .ad")
HEAVY = "rgba(255,176,0,0.16)"  # the rows of the heaviest lines, over the page's own background


def tint(hue: str, share: int) -> str:
    """The CSS colour of a role: ``share`` % of ``hue``, the rest the page's text colour."""
    return f"color-mix(in srgb, {hue} {share}%, currentColor)"


def dim() -> str:
    """The CSS colour of secondary text: the page's text colour at ``DIM`` % opacity."""
    return f"color-mix(in srgb, currentColor {DIM}%, transparent)"


def scoped(css: str) -> str:
    """``css`` written with ``.nlprun`` selectors, scoped by ``SCOPE``."""
    return re.sub(r"\.nlprun\b", SCOPE, css)


# Inline styles: the layout that must survive a sanitizer (plain values only, see above).

_FIGURES = "text-align:right;white-space:nowrap;border-collapse:collapse;table-layout:auto"
#: a table of figures: cells right-aligned and unbroken unless they say otherwise (a host's
#: cell rules outweigh what cells inherit, so figures keep their words together with ``&nbsp;``),
#: a little apart (``cellpadding``: any stylesheet's padding outweighs it)
FIGURES = f'cellpadding="3" style="{_FIGURES}"'
#: The per-line table is made compact inline, for the sanitized view: nothing folds there, and
#: the source column has what its nine columns of figures leave. In JupyterLab beside its file
#: browser (an 830 px output at 1280 px), with the host's 13 px figures, its half-em cell padding
#: and bars 110 px wide, that was 15 characters: the 79-character line broke every few characters
#: under its hanging indent. So its figures are 12 px (the host's padding shrinks with them; the
#: stylesheet sets the report's 13 px back), and the bars' column is 64 px, its head the swatches
#: without their names (the stylesheet makes it 110 px and names them): 32 characters there.
LINES_TABLE = f'cellpadding="3" style="{_FIGURES};font-size:12px"'
LEFT = "text-align:left"  # a cell of words in a table of figures
#: the source column's head and cells: left-aligned, a little apart from the bars
SOURCE_HEAD = "text-align:left;white-space:nowrap;padding-left:8px"
SOURCE_CELL = "text-align:left;padding-left:8px"
SCROLL = "overflow-x:auto;margin:8px 0"  # a table too wide for the report scrolls, not the page
HIDDEN = "display:none"  # shown by the stylesheet only (the chart, the narrow-window notices)
BARS_CELL = "min-width:64px"
BARS_HEAD = BARS_CELL + ";white-space:nowrap;font-weight:normal;font-size:11px"  # its swatches and names
CHAR_EM = 0.6  # a monospace character's width, in em (DejaVu Sans Mono, Menlo: 0.602)
CONTINUED = 4  # how much further than its line's indentation a wrapped line's rest starts


def code_style(text: str, display: str = "block") -> str:
    """The inline style of a source line's ``<code>``: a block, left-aligned, its spaces kept;
    a line longer than the room wraps, its rest starting under the line's own code and a step
    further (a hanging indent), so the wrap never reads as a line of its own. Inline, it may
    break inside a word (``break-all``: no table column is then too narrow for its longest
    word, and no column folds without the stylesheet); the stylesheet breaks between words
    where it can (``overflow-wrap: anywhere``). ``inline-block`` in a ``<summary>``: beside its
    disclosure marker, not under it."""
    indent = len(text.expandtabs(8)) - len(text.expandtabs(8).lstrip(" "))
    hang = round((indent + CONTINUED) * CHAR_EM, 2)
    return (
        f"display:{display};text-align:left;white-space:pre-wrap;word-break:break-all;background:none;"
        f"border:0;margin:0;padding:0 0 0 {hang:g}em;text-indent:-{hang:g}em"
    )


def swatch(colour: str, width: int, height: int, margin: str) -> str:
    """A small block of colour, as the key and the bars' header show it."""
    return f"display:inline-block;width:{width}px;height:{height}px;margin:{margin};background:{colour}"


def note_style(level: str) -> str:
    """A note's box: a bar on its left and a faint fill (warnings amber, hints blue)."""
    edge, fill = {
        "warning": ("#e0a000", "rgba(224,160,0,0.12)"),
        "hint": ("#0891b2", "rgba(128,128,128,0.09)"),
    }.get(level, ("rgba(128,128,128,0.35)", "rgba(128,128,128,0.09)"))
    return f"margin:6px 0;padding:6px 10px;border-left:4px solid {edge};background:{fill};max-width:60em"


def fold_css() -> str:
    """The CSS that hides the registry's folding columns as the report narrows (``html_folds``),
    and shows the notice of what is hidden in each band (``html._fold_notices``). At the widest
    fold the bars narrow too. Container queries: the report's own width decides, so a notebook
    whose side panels take half the window folds as a narrow window does."""
    rules = []
    for i, (width, columns) in enumerate(html_folds()):
        hide = ", ".join(f".nlprun .{html_fold_class(c).strip()}" for c in columns)
        rules.append(f"@container nlprun (max-width: {width}px) {{ {hide} {{ display: none; }}")
        if i == 0:
            bars = ".nlprun td.bars, .nlprun th.bars"
            rules.append(f"  {bars} {{ width: 64px !important; min-width: 56px !important; }}")
        else:
            rules.append(f"  .nlprun .folded.at{i - 1} {{ display: none !important; }}")
        rules.append(f"  .nlprun .folded.at{i} {{ display: block !important; }} }}")
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


def _colours() -> str:
    rules = [f".nlprun {', .nlprun '.join(s.split(', '))} {{ color: {tint(h, p)}; }}" for s, h, p in TINTS]
    rules.append(f".nlprun {', .nlprun '.join(DIMMED)} {{ color: {dim()}; }}")
    rules.append(".nlprun .bang .bang { color: inherit; }")  # a ! mark in a warned cell: tinted once
    return "\n".join(rules) + "\n"


STYLE = scoped(
    RESET
    + """
.nlprun { font: 13px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: inherit;
  container: nlprun / inline-size; --line: rgba(128,128,128,.35); }
.nlprun h3 { font-size: 15px; margin: 18px 0 6px; }
.nlprun h3 small { font-weight: normal; }
.nlprun .top { display: flex; flex-wrap: wrap; gap: 8px 28px; align-items: flex-start; }
.nlprun dl { display: grid; grid-template-columns: max-content minmax(0, 46em); gap: 1px 10px; margin: 0; }
.nlprun dt { font-weight: 600; white-space: nowrap; margin: 0; }
.nlprun dd { margin: 0; overflow-wrap: anywhere; }
.nlprun .chart { display: block !important; width: 420px; max-width: 100%; }
.nlprun .chart svg { display: block; width: 100%; max-width: 100%; height: auto; font-size: 10px;
  fill: currentColor; }
.nlprun table { font-variant-numeric: tabular-nums; }
.nlprun th, .nlprun td { padding: 1px 5px; border-bottom: 1px solid var(--line); white-space: normal; }
.nlprun th { font-weight: 600; border-bottom-width: 2px; vertical-align: bottom; }
.nlprun td { vertical-align: baseline; }
.nlprun td.bars { vertical-align: middle; }
.nlprun .n { text-align: right; white-space: nowrap; }
.nlprun td.heavy { font-weight: 700; }
.nlprun .bang { font-weight: 700; }
.nlprun .mark { cursor: help; text-decoration: underline dotted; }
.nlprun th.bars { font-size: 11px; }
.nlprun td.bars, .nlprun th.bars { width: 110px; }
.nlprun th.bars .said { display: inline !important; }
.nlprun table.lines { font-size: inherit !important; }
.nlprun td.src, .nlprun th.src { text-align: left; padding-left: 8px; }
.nlprun td.src { font: 12px/1.45 ui-monospace, Menlo, 'DejaVu Sans Mono', Consolas, monospace; }
.nlprun td.src code { font: inherit; color: inherit; word-break: normal !important; overflow-wrap: anywhere; }
.nlprun .src .c { font-style: italic; }
.nlprun .note b { display: block; }
.nlprun .key { font-size: 12px; }
.nlprun .summary td, .nlprun .summary th { padding: 2px 10px; }
.nlprun details.asm > summary { cursor: pointer; list-style: none; display: block; }
.nlprun details.asm > summary::-webkit-details-marker { display: none; }
.nlprun details.asm > summary::before { content: '\\25B8'; position: absolute; margin-left: -0.6em;
  font-size: 10px; }
.nlprun details.asm[open] > summary::before { content: '\\25BE'; }
.nlprun details.asm table { margin: 2px 0 6px; font-size: 11px; white-space: nowrap; }
.nlprun details.asm td, .nlprun details.asm th { border-bottom: none; padding: 0 6px; white-space: nowrap; }
.nlprun .folded { font-size: 12px; }
"""
    + _colours()
    + fold_css()
)
