"""The tour notebook runs top to bottom in a real Jupyter kernel and shows what it promises."""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

TOUR = Path(__file__).resolve().parent.parent / "notebooks" / "tour.ipynb"


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.read(TOUR, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(TOUR.parent)}}
    ).execute()
    return [c for c in nb.cells if c.cell_type == "code"]


def outputs_of(cells, start):
    (cell,) = [c for c in cells if c.source.startswith(start)]
    return cell.outputs


def bundles(outputs):
    return [o["data"] for o in outputs if o.output_type == "display_data" and "text/html" in o["data"]]


def test_runs_clean_and_leaves_no_progress_clutter(executed):
    """No error, no progress line left, and no empty output where one was (the report takes
    the progress line's place)."""
    for cell in executed:
        for out in cell.outputs:
            assert out.output_type != "error", out
            text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
            assert "compiling" not in text
            assert (
                text.strip() or out.get("data", {}).get("text/html") or out.output_type == "execute_result"
            ), out


def test_conv_table_in_html_and_text(executed):
    (report,) = bundles(outputs_of(executed, "%nlprun -f conv"))
    assert "Line #      Hits         Time  Per Hit   % Time  Line Contents" in report["text/plain"]
    assert "np.sum(np.multiply(window, k))" in report["text/plain"]
    assert "<table" in report["text/html"] and "Line Contents" in report["text/html"]
    assert "counting run" in report["text/plain"] and "95% intervals of % Time" in report["text/plain"]


def test_html_outputs_are_self_contained_tables_with_every_hit_count(executed):
    reports = [b for cell in executed for b in bundles(cell.outputs)]
    assert len(reports) == 6  # conv, conv --asm, sum_sq, smooth+conv, the cell magic, bubble_sort
    for report in reports:
        page, text = report["text/html"], report["text/plain"]
        assert "<table" in page and "<svg" in page and "<pre" not in page and "<script" not in page
        fetched = re.findall(r"https?://|\bsrc\s*=|url\(|@import", page, re.I)
        fetched += [h for h in re.findall(r'href="([^"]*)"', page) if not h.startswith("#")]
        assert fetched == []
        cells = {re.sub(r"<[^>]+>", "", c) for c in re.findall(r'<td class="n[^"]*">(.*?)</td>', page)}
        rows = [ln.split() for ln in text.splitlines() if re.match(r"\s+\d+\s+\d+\s", ln)]
        assert rows
        for tokens in rows:  # line_profiler's Hits column, whole in the HTML table
            assert tokens[1] in cells, tokens
        assert all("…" not in c for c in cells)


def test_reduction_warns_and_marks_the_lines_where_the_probes_distort(executed):
    (report,) = bundles(outputs_of(executed, "%nlprun --probes --raw -f sum_sq"))
    text, page = report["text/plain"], report["text/html"]
    # the probed run is compared with the plain runs and warned about; on a loaded machine the
    # sampled repeats may leave fewer plain runs than a figure needs, and then the note says why
    assert "WARNING: probed run" in text or "probed run not compared with the plain run: " in text, text
    assert "distortion warning" in page and "Probe %" in page
    # the ! marks the text promises: the raw probe shares put the loop header near half (37-65%
    # in 12 runs), the samples of the optimized code near 12% (its interval's top under 17%), with
    # 380 samples or more (100 are needed to judge): every one of the 12 marked both lines
    assert "WARNING: ! marks 2 line(s)" in text or "WARNING: ! marks 1 line(s)" in text, text
    assert page.count('class="mark bang"') in (1, 2)


def test_caller_and_callee_tables(executed):
    (report,) = bundles(outputs_of(executed, "%nlprun -f smooth -f conv"))
    text = report["text/plain"]
    assert "Function: smooth at line" in text and "Function: conv at line" in text
    assert "total += conv(x, k).sum()" in text


def test_cell_magic(executed):
    (report,) = bundles(outputs_of(executed, "%%nlprun"))
    assert "Function: clip_count at line 1" in report["text/plain"]
    (result,) = outputs_of(executed, "counted")
    assert int(result["data"]["text/plain"]) > 0


def test_conv_has_a_sampled_view_worth_reading(executed):
    (report,) = bundles(outputs_of(executed, "%nlprun -f conv"))
    text = report["text/plain"]
    header = next(ln for ln in text.splitlines() if ln.startswith("95% intervals of % Time"))
    samples = int(header.split("(")[1].split()[0])
    sampled = float(re.search(r"\d+ runs?, ([\d.]+) s\)", text).group(1))
    # the sampled repeats stop at 2,000 samples or 1 s: about 2,000 on a quiet machine, 972
    # beside four busy processes; at 400 the hot line's 80% share is known within 4 points.
    # Fewer only where the machine left the kernel under a fifth of a core: then the repeats
    # used their time (the sampled runs' own time, without what runs between them)
    assert samples >= 400 or sampled >= 0.5, (header, sampled)
    low, high = (float(v) for v in header.split("11: ")[1].split(",")[0].split("-"))
    assert high - low <= 1.5 * 2 * 1.96 * (0.2 * 0.8 / samples) ** 0.5 * 100 + 1.0, header  # binomial


def test_in_place_kernel_is_profiled_as_one_call(executed):
    (report,) = bundles(outputs_of(executed, "%nlprun -f bubble_sort"))
    assert "restored between runs: argument 1 (array" in report["text/plain"]
    (result,) = outputs_of(executed, "swaps, bool(")
    swaps, ordered = result["data"]["text/plain"].strip("()").split(", ")
    assert int(swaps) > 0 and ordered == "True"  # sorted once, from the unsorted data


def test_asm_cell_explains_the_hot_line_and_reuses_the_twins(executed):
    (report,) = bundles(outputs_of(executed, "%nlprun --asm"))
    assert "allocates on each of its 99,969 executions" in report["text/plain"]
    assert "reused" in report["text/html"]  # the second profile of conv compiled nothing
    assert "<details" in report["text/html"]  # lines expand to their instructions
