"""Tables that read well for package code: a long docstring is one row, many signatures one line.

Rendered from a real profile (``tests/package_style_kernels.py``: ``documented`` has a
16-line docstring, ``spread`` was called with six dtypes), read from its JSON fixture so
nothing compiles. The folding is the view's alone: the profile, its ``LineStats`` and the
``.lprof`` keep every line and every signature.
"""

import dataclasses
import io
import json
import re

import line_profiler
import pytest
from rich.console import Console

from numba_lprun.renderers import profile_html, profile_text
from numba_lprun.renderers.lprof import write_lprof
from numba_lprun.renderers.rich_table import function_renderable
from numba_lprun.renderers.view import docstring_span, profile_views, signature_lines
from numba_lprun.stats import read_line_stats
from tests.package_style_kernels import DTYPES, package_style_profile

WIDTHS = (60, 80, 150)


@pytest.fixture(scope="module")
def profile():
    return package_style_profile()


def function(profile, name):
    return next(f for f in profile.functions if f.source.name == name)


def docstring_lines(stats) -> tuple[int, int]:
    """The docstring's first and last line numbers, found without ``ast``: its quotes."""
    quoted = [stats.source.first_lineno + i for i, text in enumerate(stats.source.lines) if '"""' in text]
    return quoted[0], quoted[1]


def rich_text(profile, name: str, width: int) -> str:
    (view,) = [v for v in profile_views(profile, None, False) if v.stats.source.name == name]
    console = Console(record=True, file=io.StringIO(), width=width)
    console.print(function_renderable(view, width))
    return console.export_text()


def text_table(profile, name: str, width: int) -> str:
    """The text table of function ``name``: from its ``Function:`` line to the blank line after it."""
    text = profile_text(profile, width=width)
    return text.split(f"Function: {name} at line")[1].split("\n\n")[1]


def rows_by_label(table: str) -> dict[str, list[str]]:
    """Tokens of each row of a rendered table, by its Line # cell (``36`` or ``20-35``)."""
    return {tokens[0]: tokens for tokens in map(str.split, table.splitlines()) if tokens}


def check_folded(table: str, stats) -> None:
    """One row for the docstring, then the body's rows with their hits and source, as before."""
    first, last = docstring_lines(stats)
    rows = rows_by_label(table)
    assert rows[f"{first}-{last}"][1:] == ["(docstring,", f"{last - first + 1}", "lines)"], table
    assert not any(str(n) in rows for n in range(first, last + 1)), table
    assert "Parameters" not in table and "Returns" not in table
    for lineno, hits in stats.counts.hits.items():
        tokens = rows[str(lineno)]
        assert tokens[1] == str(hits), (tokens, table)
        assert stats.line_text(lineno).strip() in " ".join(tokens), (tokens, table)
    assert f"{stats.source.first_lineno + 1}" in rows and "def" in rows[f"{stats.source.first_lineno + 1}"]


@pytest.mark.parametrize("width", (80, 150))
def test_a_long_docstring_is_one_row_in_the_text_and_the_rich_table(profile, width):
    stats = function(profile, "documented")
    check_folded(text_table(profile, "documented", width), stats)
    rich = rich_text(profile, "documented", width).split("Line Contents")[1]
    check_folded(rich, stats)


def test_a_long_docstring_is_one_row_in_the_html_table(profile):
    stats = function(profile, "documented")
    first, last = docstring_lines(stats)
    page = profile_html(profile)
    labels = re.findall(r'<td class="n ln">([^<]*)</td>', page)
    assert f"{first}-{last}" in labels
    assert not any(str(n) in labels for n in range(first, last + 1))
    assert f"(docstring, {last - first + 1} lines)" in page and "Parameters" not in page
    assert all(str(n) in labels for n in stats.counts.hits)


def test_the_profile_and_the_lprof_keep_every_line(profile, tmp_path):
    stats = function(profile, "documented")
    first, last = docstring_lines(stats)
    assert f"{first}-{last}" in text_table(profile, "documented", 80)  # the table folds it...
    assert profile.to_line_stats().timings[stats.source.key] == stats.timings()  # ...the data does not
    # a path that is not on disk: the .lprof gets the source from the profile, beside it
    gone = str(tmp_path / "gone" / "package_code.py")
    moved = dataclasses.replace(stats, source=dataclasses.replace(stats.source, filename=gone))
    lprof = tmp_path / "p.lprof"
    write_lprof(dataclasses.replace(profile, functions=(moved,)), str(lprof))
    out = io.StringIO()
    saved = read_line_stats(str(lprof))
    line_profiler.show_text(saved.timings, saved.unit, stream=out)
    shown = out.getvalue()
    for lineno in range(first, last + 1):
        assert re.search(rf"^\s*{lineno}\s", shown, re.M), shown  # every docstring line, as line_profiler
    assert "Parameters" in shown and "Returns" in shown


def test_a_one_line_docstring_stays_as_it_is(profile):
    stats = function(profile, "spread")
    rows = rows_by_label(text_table(profile, "spread", 150))
    assert rows[str(stats.source.first_lineno + 2)][1].startswith('"""Scaled')
    assert docstring_span(stats.source.lines) is None


def test_a_docstring_line_with_a_figure_is_never_hidden(profile):
    stats = function(profile, "documented")
    first, last = docstring_lines(stats)
    assert f"{first}-{last}" in text_table(profile, "documented", 80)
    for changed in (
        {"counts": dataclasses.replace(stats.counts, hits={**stats.counts.hits, first + 3: 1})},
        {"samples": dataclasses.replace(stats.samples, counts={**stats.samples.counts, first + 3: 2})},
    ):
        odd = dataclasses.replace(profile, functions=(dataclasses.replace(stats, **changed),))
        rows = rows_by_label(text_table(odd, "documented", 80))
        assert f"{first}-{last}" not in rows
        assert all(str(n) in rows for n in range(first, last + 1))


def test_source_that_does_not_parse_shows_every_line(profile):
    stats = function(profile, "documented")
    first, last = docstring_lines(stats)
    assert f"{first}-{last}" in text_table(profile, "documented", 80)
    broken = ("@njit\n", "def documented(a:\n") + stats.source.lines[2:]
    source = dataclasses.replace(stats.source, lines=broken)
    odd = dataclasses.replace(profile, functions=(dataclasses.replace(stats, source=source),))
    rows = rows_by_label(text_table(odd, "documented", 80))
    assert all(str(n) in rows for n in range(first, last + 1)) and f"{first}-{last}" not in rows


@pytest.mark.parametrize(
    "source, span",
    [
        # a method's docstring that runs back to column 0 (the source does not dedent)
        ('    def m(self):\n        """One.\n\nTwo.\n        """\n        return 1\n', (1, 4)),
        ('def f():\n    """One.\n    Two."""; x = 1\n    return x\n', None),  # shares a line with code
        ('def f(): """One.\n    Two."""\n', None),
        ('def f():\n    x = """One.\n    Two."""\n    return x\n', None),  # not the first statement
        ("def f():\n    '''One.\n    Two.'''  # a comment\n    return 1\n", (1, 2)),
    ],
)
def test_docstring_span(source, span):
    assert docstring_span(tuple(source.splitlines(keepends=True))) == span


def signatures_rows(text: str) -> list[str]:
    """The lines of the header's Signatures row (it goes on until the next label)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Signatures:"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
    return lines[start:end]


@pytest.mark.parametrize("width", WIDTHS)
def test_many_signatures_take_at_most_two_lines_and_name_the_count(profile, width):
    rows = signatures_rows(rich_text(profile, "spread", width))
    said = " ".join(" ".join(rows).split())
    assert len(rows) <= 2 and max(len(row) for row in rows) <= width, rows
    assert f"{len(DTYPES)} signatures: (array(int8, 1d, C), int64) and {len(DTYPES) - 1} more" in said
    stats = function(profile, "spread")
    assert len(stats.source.signatures) == len(DTYPES)  # the profile keeps them all: JSON and HTML show them
    sources = [f["source"] for f in json.loads(profile.to_json())["functions"]]
    saved = {source["name"]: source["signatures"] for source in sources}
    assert saved["spread"] == list(stats.source.signatures)
    page = profile_html(profile)
    assert all(f"({sig})" in page for sig in stats.source.signatures)


@pytest.mark.parametrize("width", WIDTHS)
def test_long_signatures_are_cut_to_two_lines(profile, width):
    stats = function(profile, "spread")
    record = "Record(" + ",".join(f"f{i}[type=float64;offset={8 * i}]" for i in range(40)) + ";320;False)"
    for signatures in (
        tuple(f"array({dtype}, 2d, A), {record}, int64" for dtype in DTYPES * 2),  # 12, one very long
        (", ".join(f"array(float64, {n}d, C)" for n in range(1, 30)),),  # one, with many arguments
    ):
        source = dataclasses.replace(stats.source, signatures=signatures)
        odd = dataclasses.replace(profile, functions=(dataclasses.replace(stats, source=source),))
        rows = signatures_rows(rich_text(odd, "spread", width))
        assert len(rows) <= 2 and max(len(row) for row in rows) <= width, rows
        said = " ".join(" ".join(rows).split())
        if len(signatures) > 1:
            assert "12 signatures: (array(int8, 2d, A), " in said and "and 11 more" in said, rows
        else:
            assert said.split(None, 1)[1].startswith("(array(float64, 1d, C), ") and "...)" in said, rows


def test_signature_lines_in_a_narrow_room():
    for width in (1, 5, 12, 30):
        lines = signature_lines(("array(float64, 1d, C), int64",) * 3, width)
        assert len(lines) <= 2 and all(len(line) <= width for line in lines), (width, lines)
    assert signature_lines(("int64",), 80) == ["(int64)"]  # one signature: as before
