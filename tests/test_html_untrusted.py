"""The HTML report where notebooks travel: reopened untrusted, in light and dark themes, narrow.

A notebook opened by someone who did not run it (or once its signature no longer matches) shows
its HTML through the host's sanitizer. JupyterLab's and Notebook 7's drop ``<style>`` with its
text, unwrap ``<svg>`` and its shapes keeping the text inside them (the chart's labels spilled
out as one run-on line), and keep inline ``style`` declarations whose values are plain.
``sanitized`` below does the same by a rule of our own, stricter than the hosts'.

The report of a real profile (``tests/fixtures``, one source line made 79 characters long) goes
into a notebook exported by nbconvert with JupyterLab's own CSS (light and dark theme) and the
classic Notebook's, trusted and through ``sanitized``, and onto a bare page through it (no
stylesheet at all). Headless chromium lays every view out in one run, each in a frame of its
own width, and the checks read the DOM: code left-aligned with its indentation, numbers
right-aligned and unbroken, headers on one line, no chart text, no notice of a folded column
that is shown, bars drawn, hits equal to the text/plain fallback's, text colours at 4.5:1 or
more against the backgrounds they are drawn on, and the 79-character line fully visible in an
output as narrow as JupyterLab's at 1280 px with the file browser open. Skips where there is
no chromium (``tests/browser.py``).
"""

from __future__ import annotations

import json
import re
from html import escape
from html.parser import HTMLParser

import nbformat
import pytest

from numba_lprun.renderers import profile_html, profile_text
from numba_lprun.renderers.html_style import DIM, HEAVY, TINTS
from numba_lprun.renderers.view import profile_views
from numba_lprun.stats import ProfileStats
from tests.browser import browse, chromium_or_skip, probed
from tests.render_kernels import FIXTURES

# --- a sanitizer like the host's ---------------------------------------------------------------

#: What a notebook host's sanitizer does to the report, as observed in JupyterLab 4.6 and Notebook 7.6
#: (issue 61), written here as our own, stricter rule rather than the host's lists: ``<style>``,
#: ``<script>`` and ``<noscript>`` go with their text; SVG elements are unwrapped, their text kept;
#: ``class``, ``title`` and table layout attributes stay; an inline ``style`` keeps only plain
#: declarations (a keyword, a length, a percentage, a hex colour or ``rgb()``/``rgba()``): ``var()``,
#: ``color-mix()``, ``url()`` and the like go.
DROPPED_WITH_TEXT = {"script", "style", "noscript"}
SVG = {"svg", "g", "rect", "line", "path", "polyline", "polygon", "circle", "text", "tspan", "title", "defs"}
VOID = {"area", "br", "col", "hr", "img", "input", "source", "track", "wbr"}
ATTRIBUTES = {"class", "title", "style", "colspan", "rowspan", "cellpadding", "cellspacing", "width", "align"}
_PLAIN = re.compile(
    r"(?:[a-z-]+|[+-]?\d*\.?\d+(?:px|em|rem|ex|pt|ch|%)?|#[0-9a-f]{3,8}"
    r"|rgba?\(\s*[\d.]+%?\s*(?:,\s*[\d.]+%?\s*){2,3}\))"
    r"(?:\s+(?:[a-z-]+|[+-]?\d*\.?\d+(?:px|em|rem|ex|pt|ch|%)?|#[0-9a-f]{3,8}))*",
    re.I,
)


def _kept_style(style: str) -> str:
    kept = []
    for declaration in style.split(";"):
        prop, _, value = declaration.partition(":")
        prop, value = prop.strip().lower(), value.strip()
        if re.fullmatch(r"[a-z-]+", prop) and _PLAIN.fullmatch(value):
            kept.append(f"{prop}:{value}")
    return ";".join(kept)


class _Sanitizer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.dropping = 0  # inside <style> and the like

    def handle_starttag(self, tag, attrs):
        if tag in DROPPED_WITH_TEXT:
            self.dropping += 1
        if self.dropping or tag in SVG:
            return
        kept = []
        for name, value in attrs:
            if name not in ATTRIBUTES:
                continue
            if name == "style":
                value = _kept_style(value or "")
                if not value:
                    continue
            kept.append(f' {name}="{escape(value or "")}"')
        self.out.append(f"<{tag}{''.join(kept)}>")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag in DROPPED_WITH_TEXT:
            self.dropping = max(0, self.dropping - 1)
        elif not self.dropping and tag not in SVG and tag not in VOID:
            self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if not self.dropping:
            self.out.append(escape(data, quote=False))


def sanitized(markup: str) -> str:
    """``markup`` as a notebook host's sanitizer leaves it (see ``DROPPED_WITH_TEXT``)."""
    parser = _Sanitizer()
    parser.feed(markup)
    parser.close()
    return "".join(parser.out)


def test_the_sanitizer_keeps_what_the_host_keeps_and_spills_svg_text():
    """The emulation does what the report's failure showed: the stylesheet gone, the chart's
    text spilled, plain inline styles kept, ``var()`` and ``color-mix()`` dropped."""
    said = sanitized(
        '<style>td {color: red}</style><div style="text-align:left;color:var(--x)">a</div>'
        '<svg><text x="1">0 ns</text><rect><title>line 7</title></rect></svg>'
        '<td style="color:color-mix(in srgb, red 50%, currentColor)">b</td><i style="top:-2px">c</i>'
    )
    assert said == '<div style="text-align:left">a</div>0 nsline 7<td>b</td><i style="top:-2px">c</i>'


# --- colours ------------------------------------------------------------------------------

#: (text colour, its alpha, page background) of each theme the colours are chosen for
THEMES = {
    "JupyterLab light": ((0, 0, 0), 0.87, (255, 255, 255)),
    "classic Notebook": ((0, 0, 0), 1.0, (255, 255, 255)),
    "JupyterLab dark": ((255, 255, 255), 1.0, (17, 17, 17)),
    "dim dark (#ccc on #1e1e1e)": ((204, 204, 204), 1.0, (30, 30, 30)),
}


def luminance(rgb) -> float:
    """WCAG 2's relative luminance of an sRGB colour (0-255 channels)."""

    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    """WCAG 2's contrast ratio of two opaque colours."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def over(colour, alpha: float, below):
    """``colour`` at ``alpha`` composited over the opaque ``below``."""
    return tuple(c * alpha + d * (1 - alpha) for c, d in zip(colour, below, strict=True))


def mixed(first, share: float, second, alpha: float = 1.0):
    """CSS ``color-mix(in srgb, first share%, second)`` with ``second`` at ``alpha``: the colour
    (premultiplied, as the spec interpolates) and its alpha."""
    p = share / 100
    a = p + (1 - p) * alpha
    return tuple((x * p + y * alpha * (1 - p)) / a for x, y in zip(first, second, strict=True)), a


def rgb_of(hex_colour: str) -> tuple[int, ...]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))


def rgba_of(css: str) -> tuple[tuple[float, float, float], float]:
    """A computed CSS colour as chromium writes it: ``rgb()``, ``rgba()`` or ``color(srgb ...)``."""
    numbers = [float(n) for n in re.findall(r"[\d.]+(?:e-?\d+)?", css)]
    if css.startswith("color(srgb"):
        r, g, b, *alpha = numbers
        return (r * 255, g * 255, b * 255), alpha[0] if alpha else 1.0
    r, g, b, *alpha = numbers
    return (r, g, b), alpha[0] if alpha else 1.0


def heavy_over(page):
    colour, alpha = rgba_of(HEAVY)
    return over(colour, alpha, page)


def test_every_text_colour_reads_at_aa_contrast_in_every_theme():
    """Each syntax colour and mark (a hue mixed with the page's text colour), and the dimmed
    secondary text, against the page and the heaviest rows, in each theme: 4.5:1 or more. The
    colours before: #d97706 3.19 on white, 2.88 on the heavy rows; #a855f7 3.52 on the dark
    theme's heavy rows."""
    measured = []
    for theme, (text, alpha, page) in THEMES.items():
        for background in (page, heavy_over(page)):
            for selector, hue, share in TINTS:
                colour, a = mixed(rgb_of(hue), share, text, alpha)
                measured.append((contrast(over(colour, a, background), background), theme, selector))
            colour = over(text, alpha * DIM / 100, background)
            measured.append((contrast(colour, background), theme, "dimmed text"))
    low = [m for m in measured if m[0] < 4.5]
    assert low == [], low
    assert len(measured) == 4 * 2 * (len(TINTS) + 1)


# --- the views, laid out ------------------------------------------------------------------

LINE_79 = "        total += weigh(x, k).sum() * 1.0 + weigh(x, k).max() * 0.0 + 0.0  # 79."
assert len(LINE_79) == 79


def line_79_profile_json() -> str:
    """The caller and callee of ``tests/render_kernels.py`` (sampled, probes beside), the
    caller's heaviest line made 79 characters long (PEP 8's limit), as ``ProfileStats`` JSON
    (what ``%nlprun --load`` reads too: ``tests/test_live_notebook.py``)."""
    data = json.loads((FIXTURES / "sampled_probes.json").read_text(encoding="utf-8"))
    (caller,) = [f for f in data["functions"] if f["source"]["name"] == "caller"]
    lines = caller["source"]["lines"]
    (heavy,) = [i for i, line in enumerate(lines) if "weigh(x, k).sum()" in line]
    lines[heavy] = LINE_79 + "\n"
    return json.dumps(data)


@pytest.fixture(scope="module")
def profile():
    return ProfileStats.from_json(line_79_profile_json())


#: what the checks read from a laid-out document (``doc``, its window ``win``): each report's
#: cells, code, heads, bars and coloured text (the report itself has no script). The code's
#: visible extent is what no ancestor that clips (overflow other than visible) nor the window cuts
#: off: a notebook's output area and panels scroll or clip what is wider than they are.
PROBE_FUNCTION = r"""function probe(doc, win) {
  const css = (el) => win.getComputedStyle(el);
  const rects = (el) => {  // the boxes of the text in el (not of its elements)
    const out = [], walk = doc.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      const r = doc.createRange();
      r.selectNodeContents(node);
      out.push(...r.getClientRects());
    }
    return out;
  };
  const glyphs = (el) => {  // the boxes of its characters other than blanks
    const out = [], walk = doc.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (let i = 0; i < node.data.length; i++) {
        if (/\s/.test(node.data[i])) continue;
        const r = doc.createRange();
        r.setStart(node, i);
        r.setEnd(node, i + 1);
        out.push(r.getBoundingClientRect());
      }
    }
    return out;
  };
  const lines = (el) => new Set(rects(el).map((x) => Math.round(x.top))).size;
  const shown = (el) => el.getClientRects().length > 0;
  const backgrounds = (el) => {
    const out = [];
    for (let e = el; e; e = e.parentElement) out.push(css(e).backgroundColor);
    return out;
  };
  const painted = (el) => ({cls: el.getAttribute("class") || el.tagName.toLowerCase(),
                            text: el.innerText, color: css(el).color, backgrounds: backgrounds(el)});
  const cell = (td) => {
    const box = td.getBoundingClientRect(), text = rects(td);
    return {cls: td.className, text: td.innerText, align: css(td).textAlign, lines: lines(td),
            gapLeft: text.length ? text[0].left - box.left : null,
            gapRight: text.length ? box.right - Math.max(...text.map((r) => r.right)) : null};
  };
  const visible = (el) => {  // the horizontal band of the window that el's clipping ancestors show
    let left = 0, right = doc.documentElement.clientWidth;
    for (let e = el.parentElement; e && e !== doc.documentElement; e = e.parentElement) {
      if (css(e).overflowX === "visible") continue;
      const r = e.getBoundingClientRect();
      left = Math.max(left, r.left + e.clientLeft);
      right = Math.min(right, r.left + e.clientLeft + e.clientWidth);
    }
    return {left, right};
  };
  const source = (c) => {
    const td = c.closest("td"), text = rects(c), seen = glyphs(c), band = visible(c);
    return {text: c.innerText, align: css(c).textAlign, whiteSpace: css(c).whiteSpace, lines: lines(c),
            start: text.length ? text[0].left - td.getBoundingClientRect().left : 0,
            left: Math.min(...seen.map((r) => r.left)), right: Math.max(...seen.map((r) => r.right)),
            visibleLeft: band.left, visibleRight: band.right};
  };
  const report = (root) => {
    const rows = [], code = [], heads = [], bars = [], scrolls = [];
    root.querySelectorAll("table.lines").forEach((table) => {
      const scroll = table.closest(".scroll");
      scrolls.push({overflow: scroll.scrollWidth - scroll.clientWidth});
      table.querySelectorAll("th").forEach((th) => {
        if (shown(th)) heads.push({cls: th.className, text: th.innerText, lines: lines(th)});
      });
      table.querySelectorAll("tbody > tr").forEach((tr) => {
        const cells = [...tr.children].filter(shown).map(cell);
        rows.push({heavy: tr.classList.contains("heavy"), background: css(tr).backgroundColor, cells});
        code.push(source(tr.querySelector("td.src code")));
      });
      table.querySelectorAll(".bar > span").forEach((s) => {
        const r = s.getBoundingClientRect();
        bars.push({width: r.width, height: r.height, background: css(s).backgroundColor});
      });
    });
    const texts = "td.src code, .src span[class], .ln, .ci, .bang, .key, .folded, .note, dt, dd, td.n";
    const tinted = [...root.querySelectorAll(texts)].filter((el) => shown(el) && el.innerText.trim());
    return {width: root.getBoundingClientRect().width, text: root.innerText, rows, code, heads, bars,
            scrolls, tinted: tinted.map(painted)};
  };
  return {width: doc.documentElement.clientWidth, reports: [...doc.querySelectorAll(".nlprun")].map(report)};
}"""

#: collects, from each frame, what the checks read
PROBE = (
    "<script>"
    + PROBE_FUNCTION
    + r"""
addEventListener("load", () => {
  const out = {};
  document.querySelectorAll("iframe").forEach((f) => {
    out[f.name] = probe(f.contentDocument, f.contentWindow);
  });
  const pre = document.createElement("pre");
  pre.id = "views";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""
)


def notebook_page(profile, template: str, theme: str, untrusted: bool) -> str:
    """The report as the one output of a notebook cell, exported by nbconvert (``template``:
    ``lab``, JupyterLab's CSS, or ``classic``; ``bare``: on an empty page)."""
    from nbconvert import HTMLExporter

    report = profile_html(profile)
    report = sanitized(report) if untrusted else report
    if template == "bare":
        return f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{report}</body></html>'
    bundle = {"text/html": report, "text/plain": profile_text(profile)}
    cell = nbformat.v4.new_code_cell("%nlprun -f caller caller(x, k)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    options = {"theme": theme} if template == "lab" else {}
    page, _ = HTMLExporter(template_name=template, **options).from_notebook_node(
        nbformat.v4.new_notebook(cells=[cell])
    )
    return page


#: name: (template, theme, untrusted, frame width). 1280 px is a laptop's window; at 1000 px
#: nbconvert's lab page leaves the output 850 px or so, what JupyterLab leaves it at 1280 px with
#: the file browser open (46 characters of code room before this issue); 700: narrower still
VIEWS = {
    "lab light": ("lab", "light", False, 1280),
    "lab dark": ("lab", "dark", False, 1280),
    "lab light untrusted": ("lab", "light", True, 1280),
    "lab dark untrusted": ("lab", "dark", True, 1280),
    "classic untrusted": ("classic", "light", True, 1280),
    "bare untrusted": ("bare", "", True, 1280),
    "lab light, narrow": ("lab", "light", False, 1000),
    "lab dark, narrower": ("lab", "dark", False, 700),
    "lab light untrusted, narrow": ("lab", "light", True, 1000),
}


@pytest.fixture(scope="module")
def views(profile, tmp_path_factory):
    """Every view laid out by headless chromium in one run, each in a frame of its width."""
    chromium = chromium_or_skip()
    tmp = tmp_path_factory.mktemp("views")
    frames = "".join(
        f'<iframe name="{name}" width="{width}" height="900" srcdoc="{escape(page)}"></iframe>'
        for name, (*view, width) in VIEWS.items()
        for page in [notebook_page(profile, *view)]
    )
    page = tmp / "views.html"
    # The charset said, not guessed: a file:// page without one is decoded by chromium's
    # sniffer, which sometimes read this UTF-8 as Latin-1 ("Total\u00c2\u00a0time") under load.
    page.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{frames}{PROBE}</body></html>',
        encoding="utf-8",
    )
    return probed(browse(chromium, page.as_uri(), tmp, 1400), "views")


def source_lines(profile) -> list[str]:
    return [line.text for view in profile_views(profile, None, False) for line in view.lines]


def chart_texts(markup: str) -> list[str]:
    """The labels and tooltips of the report's charts (``markup``: its HTML), in order: what a
    sanitizer spills from their SVG."""
    charts = re.findall(r"<svg.*?</svg>", markup, re.S)
    return [t for chart in charts for t in re.findall(r"<(?:text|title)[^>]*>([^<]+)<", chart)]


# --- the checks, on what ``PROBE_FUNCTION`` read from one report (tests/test_live_notebook.py
# makes them on the live hosts too) ----------------------------------------------------------


def check_code(report: dict, lines: list[str], must_wrap: bool) -> None:
    """Every source line (``lines``) reads as written, left-aligned with its indentation, and
    lies wholly where no scroller or panel hides it; the 79-character line wraps where
    ``must_wrap``."""
    texts = [c["text"] for c in report["code"]]
    assert texts == lines
    assert LINE_79 in texts
    for cell in report["code"]:
        assert cell["align"] == "left" and cell["whiteSpace"] == "pre-wrap", cell
        assert cell["start"] <= 12, cell  # left-aligned: the line begins at the cell's padding
        assert cell["visibleLeft"] - 1 <= cell["left"] and cell["right"] <= cell["visibleRight"] + 1, cell
    assert [s["overflow"] for s in report["scrolls"]] == [0, 0]
    (long,) = [c for c in report["code"] if c["text"] == LINE_79]
    assert long["lines"] >= 2 or not must_wrap, long


def check_numbers(report: dict, text_plain: str) -> None:
    """Every figure right-aligned on one line, the headers on one line, and the hits those of
    ``text_plain``, the report's line_profiler-style text fallback."""
    figures = [c for row in report["rows"] for c in row["cells"] if "n" in c["cls"].split() and c["text"]]
    assert len(figures) > 40
    for cell in figures:
        assert cell["align"] == "right" and cell["lines"] == 1, cell
        assert cell["gapRight"] <= 10 and cell["gapRight"] <= cell["gapLeft"] + 1, cell
    worded = [h for h in report["heads"] if h["text"].strip()]  # sanitized, the bars' head is swatches
    assert len(worded) >= 8 and [h for h in worded if h["lines"] != 1] == []
    shown = {(row["cells"][0]["text"], row["cells"][1]["text"]) for row in report["rows"]}
    fallback = re.findall(r"^ +(\d+) +(\d+) ", text_plain, re.M)
    assert len(fallback) == 10 and {(n, h) for n, h in fallback} == {(n, h) for n, h in shown if h}


def check_chart_and_notices(report: dict, said: list[str], untrusted: bool) -> None:
    """None of the chart's labels and tooltips (``said``) runs on as text; the chart shows with
    the stylesheet only; a "narrow window" notice shows exactly where the columns it names are
    hidden (the widest fold hides a column at a report width of 1100 px or less)."""
    text = report["text"]
    assert len(said) > 20
    spilled = [t for t in said if t.startswith("line ") and t in text]
    spilled += [a + b for a, b in zip(said, said[1:], strict=False) if a + b in text]
    assert spilled == []
    assert ("sampled (Time)" in text) is not untrusted  # the chart's legend: shown with the stylesheet
    heads = {h["text"].replace("\xa0", " ") for h in report["heads"]}
    notices = re.findall(r"narrow window: (.*?) (?:is|are) folded", text)
    folded = {name for notice in notices for name in notice.split(" and ")}
    assert {"Probe Time", "95% CI", "Probe %", "Hits", "Line Contents"} - folded <= heads
    assert not folded & heads
    assert bool(notices) is (not untrusted and report["width"] <= 1100), (report["width"], notices)


def check_inline_bars(report: dict) -> None:
    """The bars, the whiskers and the heaviest rows' background, drawn by inline styles alone."""
    fills = report["bars"]
    assert len(fills) == 20 and all(b["height"] >= 4 for b in fills)
    assert {b["background"] for b in fills} == {"rgb(242, 142, 43)", "rgb(78, 121, 167)"}
    assert max(b["width"] for b in fills) > 50
    heavy = [row["background"] for row in report["rows"] if row["heavy"]]
    assert heavy == ["rgba(255, 176, 0, 0.16)"] * 2


def backdrop(backgrounds: list[str]):
    """The opaque colour behind an element: its own and its ancestors' backgrounds (innermost
    first) composited over the canvas (white)."""
    colour = (255.0, 255.0, 255.0)
    for css in reversed(backgrounds):
        layer, alpha = rgba_of(css)
        colour = over(layer, alpha, colour)
    return colour


def check_contrast(report: dict, untrusted: bool) -> None:
    """Every piece of code, figure, note, label and mark against what is behind it: 4.5:1 or
    more; with the stylesheet, each syntax role and mark is among them."""
    measured = []
    for element in report["tinted"]:
        behind = backdrop(element["backgrounds"])
        colour, alpha = rgba_of(element["color"])
        measured.append(
            (round(contrast(over(colour, alpha, behind), behind), 2), element["cls"], element["text"])
        )
    roles = {role for m in measured for role in m[1].split()}
    assert {"code", "n", "note", "dd"} <= roles, roles
    assert {"k", "b", "f", "m", "c", "ln", "bang", "key", "dt"} <= roles or untrusted, roles
    low = [m for m in measured if m[0] < 4.5]
    assert low == [], low


@pytest.mark.parametrize("name", VIEWS)
def test_code_keeps_its_indentation_left_aligned_and_is_never_hidden(views, profile, name):
    """Every source line reads as written (its leading blanks kept: ``innerText`` drops the
    blanks a layout collapses), starts at the cell's left, and all of it lies inside the
    report, however narrow: a line longer than the room wraps instead of running on behind a
    scrollbar (the 79-character line was cut at 46 characters in JupyterLab)."""
    (report,) = views[name]["reports"]
    check_code(report, source_lines(profile), must_wrap=VIEWS[name][3] <= 1200)


@pytest.mark.parametrize("name", VIEWS)
def test_numbers_are_right_aligned_whole_and_equal_to_the_text_fallback(views, profile, name):
    """Every figure sits at its cell's right, on one line ("6.93 / ms" broke over two when the
    host's stylesheet set the cells' wrapping), the headers too ("Line / #"), and the hits are
    those of line_profiler's text layout, the text/plain fallback."""
    (report,) = views[name]["reports"]
    check_numbers(report, profile_text(profile))


@pytest.mark.parametrize("name", VIEWS)
def test_no_chart_text_spills_and_no_notice_claims_a_fold_that_did_not_happen(views, profile, name):
    """Untrusted, the SVG is unwrapped and its labels and tooltips would read "0 ns5 ms10
    msline 28: sampled 0 ns...": its box is hidden inline, and only the stylesheet shows it.
    A "narrow window" notice shows exactly where the columns it names are hidden."""
    (report,) = views[name]["reports"]
    check_chart_and_notices(report, chart_texts(profile_html(profile)), untrusted=VIEWS[name][2])


@pytest.mark.parametrize("name", [n for n, v in VIEWS.items() if v[2]])
def test_bars_and_the_heaviest_rows_survive_the_sanitizer(views, name):
    """The bars, the whiskers and the heaviest rows' background are inline styles (they vanished
    with the stylesheet)."""
    (report,) = views[name]["reports"]
    check_inline_bars(report)


@pytest.mark.parametrize("name", VIEWS)
def test_text_colours_read_at_aa_contrast_where_they_are_drawn(views, name):
    """Every coloured or dimmed piece of text (syntax roles, marks, line numbers, intervals, the
    key, notes, labels, figures) against what is behind it in the laid-out page, trusted or not,
    in the light and the dark theme: 4.5:1 or more."""
    (report,) = views[name]["reports"]
    check_contrast(report, untrusted=VIEWS[name][2])
