"""Turn a ``ProfileStats`` into something to read: one renderer per output format.

Each renderer is configured when constructed and turns a profile into output
with ``render(profile)`` (a string) or ``write(profile, file)``; none of them
knows how the numbers were measured (pyinstrument's renderers, py-spy's one
recorder per format). ``text`` writes line_profiler's exact layout; ``rich_table``
builds rich renderables for terminals; ``html`` writes self-contained HTML for
notebooks and report files; ``lprof`` writes line_profiler's stats files.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TextIO

from ..stats import ProfileStats
from .html import profile_html
from .lprof import read_profile, write_lprof
from .rich_table import print_profile, profile_renderables
from .text import profile_text


@dataclass(frozen=True)
class TextRenderer:
    """line_profiler's text layout, with the notes as sentences (``width``: wrap them; 0: never)."""

    output_unit: float | None = None
    stripzeros: bool = False
    width: int | None = None
    asm_lines: int = 0
    columns: frozenset[str] = frozenset()  # optional columns asked for (``columns.SAMPLE_COUNTS``)

    def render(self, profile: ProfileStats) -> str:
        return profile_text(
            profile, self.output_unit, self.stripzeros, self.width, self.asm_lines, self.columns
        )

    def write(self, profile: ProfileStats, path: str) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.render(profile))


@dataclass(frozen=True)
class RichRenderer:
    """The coloured terminal table, fitted to ``width`` (None: the terminal's, or natural)."""

    output_unit: float | None = None
    stripzeros: bool = False
    width: int | None = None
    asm_lines: int = 0
    columns: frozenset[str] = frozenset()  # optional columns asked for (``columns.SAMPLE_COUNTS``)

    def print(self, profile: ProfileStats, file: TextIO | None = None) -> None:
        print_profile(
            profile, self.output_unit, self.stripzeros, file, self.width, self.asm_lines, self.columns
        )

    def render(self, profile: ProfileStats) -> str:
        out = io.StringIO()
        self.print(profile, out)
        return out.getvalue()


@dataclass(frozen=True)
class HTMLRenderer:
    """A self-contained HTML fragment (notebooks) or, with ``page``, a whole document."""

    output_unit: float | None = None
    stripzeros: bool = False
    page: bool = False
    columns: frozenset[str] = frozenset()  # optional columns asked for (``columns.SAMPLE_COUNTS``)

    def render(self, profile: ProfileStats) -> str:
        return profile_html(profile, self.output_unit, self.stripzeros, page=self.page, columns=self.columns)

    def write(self, profile: ProfileStats, path: str) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.render(profile))


@dataclass(frozen=True)
class LprofWriter:
    """line_profiler's ``.lprof`` stats file at ``path`` (sources of in-memory code beside it)."""

    path: str

    def write(self, profile: ProfileStats) -> None:
        write_lprof(profile, self.path)


__all__ = [
    "HTMLRenderer",
    "LprofWriter",
    "RichRenderer",
    "TextRenderer",
    "print_profile",
    "profile_html",
    "profile_renderables",
    "profile_text",
    "read_profile",
]
