"""The terminal table at any width: numbers whole, no line wider than the terminal.

Rendered from a real profile (``tests/render_kernels.py``) with a long source
line, the case that used to cut every numeric column to two characters.
"""

import dataclasses
import io

import pytest
from rich.console import Console

from numba_lprun.renderers import print_profile, profile_text
from numba_lprun.renderers.rich_table import FOLD_ORDER, function_renderable
from numba_lprun.renderers.view import interval_text, number, per_hit_text, probe_percent_text, profile_views
from tests.render_kernels import LONG_LINE, long_line_profile

WIDTHS = (60, 80, 120, 200)


@pytest.fixture(scope="module", params=["sampled_probes", "probes_only"])
def profile(request):
    return long_line_profile(request.param)


def render(view, width: int) -> str:
    console = Console(record=True, file=io.StringIO(), width=width)
    console.print(function_renderable(view, width))
    return console.export_text()


def table_rows(text: str) -> dict[int, list[str]]:
    """Tokens of each table row, by line number (rows follow the line holding the Hits header)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Hits" in line.split())
    rows = {}
    for line in lines[start + 1 :]:
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            break
        rows[int(tokens[0])] = tokens
    return rows


@pytest.mark.parametrize("width", WIDTHS)
def test_every_number_whole_and_no_line_wider_than_the_terminal(profile, width):
    views = profile_views(profile, None, False)
    assert len(views) == 2
    for view in views:
        text = render(view, width)
        assert max(len(line) for line in text.splitlines()) <= width, text
        rows = table_rows(text)
        assert set(rows) == {line.lineno for line in view.lines}, text
        ran = [line for line in view.lines if line.hits]
        assert ran
        for line in ran:
            tokens = rows[line.lineno]
            assert tokens[1] == str(line.hits), (tokens, text)
            for figure in (number(line.time), per_hit_text(line), number(line.percent)):
                assert figure in tokens, (figure, tokens, text)
            header = text.split("Line Contents")[0]
            if "CI" in header:  # the interval column is shown
                assert interval_text(line.interval) in tokens, (tokens, text)
            if "Probe" in header and "%" in header.split("Probe")[-1]:
                assert probe_percent_text(line).split()[-1] in tokens, (tokens, text)


def test_source_gives_way_first_then_columns_fold_in_order():
    view = next(v for v in profile_views(long_line_profile(), None, False) if v.stats.source.name == "weigh")
    widest = render(view, 200)
    assert "not shown" not in widest and "Probe Time" in widest and "95% CI" in widest
    at_120 = render(view, 120)
    assert "not shown" not in at_120  # every column, the long line cropped with a marker
    (row,) = [line for line in at_120.splitlines() if "out[i] =" in line]
    assert row.rstrip().endswith("…") and LONG_LINE not in at_120
    folded_first = [name for name, _, _ in FOLD_ORDER]
    for width in (60, 80):
        text = " ".join(render(view, width).split())  # the note may wrap
        said = text.split(f"not shown at {width} columns: ")[1].split(" (")[0].split(", ")
        assert said == sorted(said, key=folded_first.index)
        assert said[0] == "Probe Time"  # the first to fold
        assert "Probe %" not in said  # kept while the source has room for a few characters
    assert "95% CI" in render(view, 80)  # the interval stays at 80 columns


def test_print_profile_to_a_file_shows_everything_whole(profile):
    out = io.StringIO()
    print_profile(profile, file=out)
    text = out.getvalue()
    assert LONG_LINE in text and "…" not in text and "not shown" not in text
    if profile.functions[0].counts.time_source == "samples":
        assert "Probe Time" in text and "95% CI" in text
    assert all(line == line.rstrip() for line in text.splitlines()), "a file gets no padding"


def test_text_notes_wrap_to_the_width_and_the_table_keeps_its_layout(profile):
    wide = profile_text(profile, width=0)
    narrow = profile_text(profile, width=60)

    def table(text):
        """The table rows: from each ``Line #`` header to the blank line that ends its table."""
        rows, inside = [], False
        for line in text.splitlines():
            inside = line.startswith("Line #") or (inside and bool(line.strip()))
            if inside and not line.startswith("="):
                rows.append(line)
        return rows

    assert table(wide) == table(narrow)  # line_profiler's rows are never wrapped
    assert any(LONG_LINE in line for line in table(narrow))
    rows = set(table(wide))
    long_notes = [line for line in wide.splitlines() if line not in rows and len(line) > 60]
    assert long_notes  # something to wrap
    for line in narrow.splitlines():
        if line not in rows and line.strip():
            assert len(line) <= 60 or " " not in line.strip(), line


def test_a_lowered_sampling_rate_is_said_within_the_width():
    base = long_line_profile("sampled_probes")
    said = (
        "rate lowered from 10000 Hz: a stack walk costs about 54 us here (the unwinder "
        "searches every module compiled in this process)"
    )
    profile = dataclasses.replace(base, sampling=dataclasses.replace(base.sampling, lowered=said))
    for view in profile_views(profile, None, False):
        text = render(view, 80)
        assert max(len(line) for line in text.splitlines()) <= 80, text
        assert said in " ".join(text.split()), text
