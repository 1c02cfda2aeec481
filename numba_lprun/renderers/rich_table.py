"""Rich renderables for a profile: a header, a highlighted table, and the notes.

The numbers are the product, so the table is laid out for the console's width
by hand rather than left to rich's column shrinking (which cuts every column to
``Hi…`` when one source line is long). Giving way, in this order:

1. the source column is cropped (with ``…``), down to ``CODE_MIN`` characters;
2. the gaps between columns narrow from two spaces to one;
3. optional columns fold, in ``FOLD_ORDER``: Probe Time, then (after the column
   headers wrap onto two lines, ``% Time`` -> ``%`` / ``Time``) 95% CI, and, only
   when the source would get fewer than ``PROBES_CODE_MIN`` characters, Probe %,
   then the profile's extra columns (``ExtraColumn``, shown after % Time), the
   last one first; a note under the table names what was folded;
4. the source column takes whatever is left.

Line #, Hits, Time, Per Hit and % Time never fold and are never cut at any
width of 60 columns or more.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ..stats import ProfileStats
from .asm import hint_lines, listing_lines
from .columns import AFTER_EXTRAS, BEFORE_EXTRAS, CODE_MIN, PROBES_CODE_MIN, Column
from .columns import fold_order as registry_fold_order
from .text import output_width
from .view import NOTE_TITLES, FunctionView, interval_text, profile_notes, profile_views, signature_lines

THEME = "ansi_dark"
#: optional columns, first folded first: (header, the source width below which it folds,
#: whether the column headers wrap before it folds), from the registry
FOLD_ORDER = registry_fold_order()
CODE_HEADER = "Line Contents"
NATURAL_MIN = 100  # width for files and pipes: the table's own width, notes wrapped at least here

__all__ = [
    "CODE_MIN",
    "FOLD_ORDER",
    "function_renderable",
    "interval_text",
    "print_profile",
    "profile_renderables",
]


@dataclass
class _Column:
    header: str
    cells: list[Text]
    style: str = ""
    extra: bool = False  # one of the profile's extra columns: folds after the others

    def width(self, compact: bool) -> int:
        """Widest cell, and the header whole (or, ``compact``, its longest word; "Line #" stays whole)."""
        wraps = compact and self.header != "Line #"
        head = max(len(word) for word in self.header.split()) if wraps else len(self.header)
        return max([head] + [cell.cell_len for cell in self.cells])

    def heading(self, width: int) -> str:
        return self.header if len(self.header) <= width else "\n".join(self.header.split())


def _code_lines(view: FunctionView, colour: bool = True) -> list[Text]:
    """Each source line highlighted in the context of the whole function; a folded docstring's
    row (``(docstring, 16 lines)``) is no code, so it is dimmed, not highlighted. Without
    ``colour`` (a pipe, a log) nothing is highlighted: no style would be printed, and setting
    up the lexer took 0.05 s of a script's profile."""
    source = "\n".join(line.text for line in view.lines)
    if colour:
        parts = Syntax(source, "python", theme=THEME).highlight(source).split("\n", allow_blank=True)
    else:
        parts = [Text(line.text) for line in view.lines]
    return [
        Text(line.text, style="dim italic")
        if line.through
        else (parts[i] if i < len(parts) else Text(line.text))
        for i, line in enumerate(view.lines)
    ]


def _header(view: FunctionView, width: int) -> Table:
    """The rows above the table; the Signatures row in at most two lines (``signature_lines``:
    a function compiled for many types would list them over a screenful)."""
    header = Table.grid(padding=(0, 1))
    header.add_column(style="bold", no_wrap=True)
    header.add_column(overflow="fold")
    label_width = max(len(label) + 1 for label, _ in view.header)
    for label, value in view.header:
        if label == "Signatures":
            value = "\n".join(signature_lines(view.stats.source.signatures, width - label_width - 1))
        header.add_row(f"{label}:", value)
    return header


def _columns(view: FunctionView) -> list[_Column]:
    """The numeric columns with their cells, in the registry's order (``columns.REGISTRY``),
    the profile's extra columns after % Time."""

    def column(spec: Column) -> _Column:
        styles = [spec.line_style(line) if spec.line_style else "" for line in view.lines]
        texts = [spec.cell(view, line) for line in view.lines]
        return _Column(spec.name, [Text(t, style=s) for t, s in zip(texts, styles, strict=True)], spec.style)

    cols = [column(spec) for spec in BEFORE_EXTRAS if spec.shown(view)]
    for index, header in enumerate(view.extra_headers):
        cols.append(_Column(header, [Text(line.extra[index]) for line in view.lines], extra=True))
    return cols + [column(spec) for spec in AFTER_EXTRAS if spec.shown(view)]


def fold_order(cols: list[_Column]) -> tuple[tuple[str, int, bool], ...]:
    """``FOLD_ORDER``, then the extra columns among ``cols``, the last one first."""
    extras = [(c.header, PROBES_CODE_MIN, True) for c in reversed(cols) if c.extra]
    return FOLD_ORDER + tuple(extras)


def layout(cols: list[_Column], code_natural: int, width: int) -> tuple[list[_Column], bool, int, int]:
    """Columns to show, whether headers wrap, the source's width and the gap between columns."""
    shown = list(cols)
    by_header = {c.header: c for c in cols}

    def room(compact: bool, gap: int) -> int:  # what is left for the source
        return width - sum(c.width(compact) for c in shown) - gap * len(shown)

    for gap in (2, 1):
        if room(False, gap) >= min(code_natural, CODE_MIN):
            return shown, False, min(code_natural, room(False, gap)), gap
    compact = False
    for header, floor, wrap_first in fold_order(cols):
        compact = compact or wrap_first
        if room(compact, 1) >= min(code_natural, floor):
            break
        if header in by_header:
            shown.remove(by_header[header])
    return shown, compact, max(1, min(code_natural, room(compact, 1))), 1


def function_renderable(
    view: FunctionView, width: int, asm_lines: int = 0, colour: bool = True
) -> RenderableType:
    """One function's header, table and notes, fitted to ``width`` columns; then the hints
    and the ``asm_lines`` hottest lines' instructions (``renderers.asm``); ``colour`` False: for
    output that prints no styles (the code is not highlighted)."""
    stats = view.stats
    header = _header(view, width)
    cols = _columns(view)
    code = _code_lines(view, colour)
    code_natural = max([len(CODE_HEADER)] + [t.cell_len for t in code])
    shown, compact, code_width, gap = layout(cols, code_natural, width)
    table = Table(
        show_edge=False, header_style="bold", pad_edge=False, box=None, padding=(0, gap, 0, 0), expand=False
    )
    for col in shown:
        w = col.width(compact)
        table.add_column(col.heading(w), justify="right", style=col.style, width=w, no_wrap=True)
    table.add_column(CODE_HEADER, width=code_width, no_wrap=True, overflow="ellipsis")
    for i, line in enumerate(view.lines):
        table.add_row(*[col.cells[i] for col in shown], code[i], style="bold" if line.heavy else None)

    parts: list[RenderableType] = [header, Text(""), table]
    hidden = {c.header for c in cols if c not in shown}
    folded = [header for header, _, _ in fold_order(cols) if header in hidden]  # in the order they fold
    if folded:
        said = ", ".join(folded)
        parts.append(Text(f"not shown at {width} columns: {said} (a wider terminal or --html shows them)"))
    for note in stats.diagnosis.notes:
        if note.level in NOTE_TITLES:
            border = "red" if note.level == "error" else "yellow"
            panel = Panel(Text(note.text), title=NOTE_TITLES[note.level], border_style=border, expand=False)
            parts.append(panel)
        else:
            parts.append(Text(note.text, style="dim"))
    for hint in hint_lines(stats):
        parts.append(Text(hint, style="cyan"))
    if asm_lines and (stats.machine.lines or stats.machine.unavailable):
        listing = listing_lines(stats, asm_lines)
        parts.append(Text("\n".join(listing), style="dim", no_wrap=True, overflow="ellipsis"))
    return Group(*parts)


def natural_width(
    profile: ProfileStats,
    output_unit: float | None = None,
    stripzeros: bool = False,
    columns: frozenset[str] = frozenset(),
) -> int:
    """The width at which every column and every source line shows whole (at least ``NATURAL_MIN``)."""
    widest = NATURAL_MIN
    for view in profile_views(profile, output_unit, stripzeros, columns):
        cols = _columns(view)
        code = max([len(CODE_HEADER)] + [len(line.text) for line in view.lines])
        widest = max(widest, sum(c.width(False) for c in cols) + 2 * len(cols) + code)
    return widest


def profile_renderables(
    profile: ProfileStats,
    output_unit: float | None = None,
    stripzeros: bool = False,
    width: int = 120,
    asm_lines: int = 0,
    columns: frozenset[str] = frozenset(),
    colour: bool = True,
) -> list[RenderableType]:
    """Everything :func:`print_profile` prints, laid out for ``width`` columns (``columns``: the
    optional ones asked for; ``colour``: see :func:`function_renderable`)."""
    views = profile_views(profile, output_unit, stripzeros, columns)
    notes: list[RenderableType] = [Text(note, style="yellow") for note in profile_notes(profile)]
    if not views:
        return [Text("numba_lprun: no profiled function ran", style="dim"), *notes]
    out: list[RenderableType] = []
    for view in views:
        out += [function_renderable(view, width, asm_lines, colour), Text("")]
    return out + notes


def print_profile(
    profile: ProfileStats,
    output_unit: float | None = None,
    stripzeros: bool = False,
    file: TextIO | None = None,
    width: int | None = None,
    asm_lines: int = 0,
    columns: frozenset[str] = frozenset(),
) -> None:
    """Print the profile to ``file`` (stdout) at ``width`` columns (``asm_lines``: see
    :func:`function_renderable`).

    By default that is the terminal's real width; a file or pipe has none, so
    the table is printed at its natural width, nothing cropped or folded.
    """
    file = sys.stdout if file is None else file
    if width is None:
        width = output_width(file) or natural_width(profile, output_unit, stripzeros, columns)
    console = Console(file=file, width=width, highlight=False, force_jupyter=False)
    colour = console.color_system is not None
    renderables = profile_renderables(profile, output_unit, stripzeros, width, asm_lines, columns, colour)
    if console.is_terminal:
        for renderable in renderables:
            console.print(renderable)
        return
    with console.capture() as captured:  # a log or a pipe: rich's padding to the width is noise
        for renderable in renderables:
            console.print(renderable)
    file.write("\n".join(line.rstrip() for line in captured.get().split("\n")))
