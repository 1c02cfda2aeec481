"""The HTML report: a real table built from the data, read in a real headless browser.

The browser checks need Debian's ``chromium`` (``apt-get install -y chromium``);
where no chromium is on PATH they skip and say so. The static checks run anyway.
"""

import html
import json
import re

import pytest

from numba_lprun.renderers import profile_html
from numba_lprun.renderers.columns import html_folds
from numba_lprun.renderers.html_cells import per_hit_amount
from numba_lprun.renderers.view import number, per_hit_text, profile_views, seconds_text
from tests.browser import browse, chromium_or_skip
from tests.render_kernels import LONG_LINE, long_line_profile

#: reads the laid-out page: each numeric cell's text, whether it is shown, fits its box, and
#: stays inside the window (appended to a copy of the report only; the report has no script)
LAYOUT_PROBE = """<script>
addEventListener("load", () => {
  const cells = [...document.querySelectorAll("td.n")].map((td) => {
    const box = td.getBoundingClientRect(), range = document.createRange();
    range.selectNodeContents(td);
    const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    return {text: td.textContent.replaceAll("\u00a0", " "), shown: getComputedStyle(td).display !== "none",
            fits: td.scrollWidth <= td.clientWidth + 1, right: box.right, lines: tops.size};
  });
  const out = document.createElement("pre");
  out.id = "layout";
  const shown = (el) => getComputedStyle(el).display !== "none";
  const hidden = [...document.querySelectorAll("th.n")].filter((th) => !shown(th))
    .map((th) => th.textContent.replaceAll("\u00a0", " "));
  const notices = [...document.querySelectorAll(".folded")].filter(shown).map((d) => d.textContent);
  out.textContent = JSON.stringify({width: document.documentElement.clientWidth, cells, hidden, notices});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def profile():
    return long_line_profile()


@pytest.fixture(scope="module")
def profile_probes():
    return long_line_profile("probes_only")


@pytest.fixture(scope="module")
def page(profile):
    return profile_html(profile, page=True)


@pytest.fixture(scope="session")
def chromium():
    """Debian's chromium on PATH, or a skip that says how to get it."""
    return chromium_or_skip()


def external_references(markup: str) -> list[str]:
    """Anything a browser could fetch: URLs, src=, href= other than #anchors, CSS imports."""
    found = re.findall(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|\bsrc\s*=|url\(|@import", markup, re.I)
    found += [h for h in re.findall(r'\bhref\s*=\s*"([^"]*)"', markup, re.I) if not h.startswith("#")]
    return found


def cell_texts(page: str) -> set[str]:
    """The text of every figure's cell (``&nbsp;`` keeps a figure with its unit: read as a space)."""
    cells = re.findall(r'<td class="n[^"]*">(.*?)</td>', page)
    return {re.sub(r"<[^>]+>", "", html.unescape(c)).replace("\xa0", " ") for c in cells}


def expected_numbers(profile, output_unit=None) -> list[str]:
    """Every hit count and time the report must show whole: times each with its own unit
    (``2.57 ms``), or, where a unit was asked for, in it, as line_profiler writes them."""
    out = []
    for view in profile_views(profile, output_unit, False):
        for line in view.lines:
            if not line.hits:
                continue
            if output_unit is not None:
                out += [str(line.hits), number(line.time), per_hit_text(line), number(line.percent)]
                continue
            per_hit = per_hit_amount(view, line)
            if per_hit and line.below_resolution and line.probe_time is None:
                per_hit = "~" + per_hit
            time = view.amount_text(line.time) if line.time is not None else ""
            out += [str(line.hits), time, per_hit, number(line.percent)]
    return out


def test_times_read_with_their_units_unless_a_unit_is_asked_for(profile):
    """A browser reader expects ``2.57 ms``, not ``2568782.3``; ``-u`` keeps its unit."""
    for output_unit in (None, 1e-6):
        cells = cell_texts(profile_html(profile, output_unit, page=True))
        for figure in expected_numbers(profile, output_unit):
            assert figure in cells, (output_unit, figure)
    timed = [c for c in expected_numbers(profile)[1::4] if c]
    assert timed and all(c.endswith((" s", " ms", " µs", " ns")) for c in timed)


def test_report_is_a_self_contained_table_built_from_the_data(profile, page):
    assert page.startswith("<!DOCTYPE html>")
    assert "<table" in page and "<pre" not in page and "<script" not in page.lower()
    assert external_references(page) == []
    texts = cell_texts(page)
    for figure in expected_numbers(profile):
        assert figure in texts, figure
    assert html.escape(LONG_LINE).replace("&#x27;", "'") in re.sub(r"<span[^>]*>|</span>", "", page)
    # a summary links to each function's table
    anchors = re.findall(r'href="#([^"]+)"', page)
    assert len(anchors) == 2 and all(f'id="{a}"' in page for a in anchors)
    summary = page[page.index('<table class="summary"') : page.index("</table>")]
    for stats in profile.functions:  # each total in its own readable unit (seconds, not ns)
        total = seconds_text(stats.total_ticks() * profile.unit).replace(" ", "&nbsp;")
        assert f'<td class="n">{total}</td>' in summary
    # marks explained on hover, bars and the chart drawn from the data (the chart shown by the
    # stylesheet only: tests/test_html_untrusted.py)
    assert 'title="below the timer' in page and '<div class="chart" style="display:none"><svg' in page
    assert page.count('class="bar bt"') == page.count('class="bar bs"') > 0  # probes beside samples
    assert 'title="the two views disagree' in page  # ! marks


def test_probe_only_report_marks_probe_times(profile_probes):
    page = profile_html(profile_probes, page=True)
    cells = cell_texts(page)
    for figure in expected_numbers(profile_probes):
        assert figure in cells, figure
    assert "95% CI" not in page and 'class="bar bs"' not in page and "clock probes" in page


@pytest.mark.parametrize("width", [700, 900, 1600])
def test_browser_shows_every_number_whole_at_narrow_and_wide_windows(
    chromium, profile, page, tmp_path, width
):
    report = tmp_path / "report.html"
    report.write_text(page.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    dom = browse(chromium, report.as_uri(), tmp_path, width)
    (probe,) = re.findall(r'<pre id="layout">(.*?)</pre>', dom, re.S)
    layout = json.loads(html.unescape(probe))
    shown = [c for c in layout["cells"] if c["shown"]]
    assert shown
    for cell in shown:
        assert cell["fits"] and cell["right"] <= layout["width"], (width, cell)
    texts = {c["text"] for c in shown}
    for figure in expected_numbers(profile):  # line_profiler's columns never fold
        assert figure in texts, (width, figure)
    if width < 1600:  # optional columns fold rather than push the table out of the window
        assert any(not c["shown"] for c in layout["cells"])
    else:
        assert all(c["shown"] for c in layout["cells"])
    # the registry's fold widths (columns.html_folds) hide the columns; one notice a table names them
    # (the widths are the report's: here the window's, less the page's margins, none near a fold)
    folded = [c.name for w, cols in html_folds() for c in cols if width <= w]
    assert sorted(set(layout["hidden"])) == sorted(folded), (width, layout["hidden"])
    if folded:
        assert len(layout["notices"]) == len(profile.functions), layout["notices"]
        assert all(name in notice for name in folded for notice in layout["notices"]), layout["notices"]
    else:
        assert layout["notices"] == []
    assert all(c["lines"] <= 1 for c in shown)  # one line per number, never wrapped


def test_page_renders_with_the_network_blocked(chromium, page, tmp_path):
    report = tmp_path / "report.html"
    report.write_text(page, encoding="utf-8")
    dom = browse(chromium, report.as_uri(), tmp_path, 1000)
    assert "<table" in dom and "Line Contents" in dom and "<svg" in dom
    assert external_references(dom) == []
