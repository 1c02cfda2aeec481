"""CUDA profiles through the common renderers: extra columns, times in cycles, launch rows.

Built from data, so nothing is compiled and numba-cuda is not needed: a real
simulator launch saved as JSON (``tests/fixtures/cuda_simulated.json``, remade by
``NUMBA_ENABLE_CUDASIM=1 python -m tests.fixtures.make_cuda``), and a timed launch
written out as the CUDA profile value (a GPU's cycles, which no machine of the CI
has) and turned into the common value by ``numba_lprun.cuda.adapt``.
"""

import re

import pytest

from numba_lprun.cuda.adapt import profile_stats
from numba_lprun.cuda.model import CudaFunctionProfile, CudaLaunch, CudaLine, CudaProfile
from numba_lprun.renderers import HTMLRenderer, RichRenderer, TextRenderer
from numba_lprun.stats import ProfileStats
from tests.render_kernels import cuda_simulated_profile

LONG = "    a[i] = a[i] * 0.5 + 0.25 * a[i] * a[i] - 0.125 * a[i] * a[i] * a[i]  # a long line\n"


def timed_profile(overhead_ms: float = 1.5) -> ProfileStats:
    """One timed launch of a three-line kernel, as a GPU would report it."""
    launch = CudaLaunch(
        kernel="k",
        grid=(2, 1, 1),
        block=(64, 1, 1),
        simulator=False,
        timing=True,
        device="test GPU (compute capability 9.0)",
        plain_ms=1.0,
        probed_ms=overhead_ms,
        launches=6,
        restored=("argument 0",),
    )
    f = CudaFunctionProfile(
        name="k",
        qualname="k",
        filename="k.py",
        first_lineno=1,
        kind="kernel",
        source=("@cuda.jit\n", "def k(a):\n", "    i = cuda.grid(1)\n", LONG),
        lines=(CudaLine(3, 128, 4, 300_000), CudaLine(4, 100, 4, 100_000)),
        calls=128,
        warp_calls=4,
    )
    return profile_stats(CudaProfile(launch, (f,)))


def row_pattern(line: int, *cells: str) -> re.Pattern:
    """A table row: the line number, then ``cells`` separated by blanks."""
    return re.compile(r"^\s*" + r"\s+".join(re.escape(c) for c in (str(line), *cells)) + r"\s", re.M)


@pytest.mark.parametrize("width", [80, 60])
def test_simulated_launch_in_the_terminal_table(width):
    profile = cuda_simulated_profile()
    text = RichRenderer(width=width).render(profile)
    assert max(len(line) for line in text.splitlines()) <= width, text
    assert "Timer unit: 1 cycle" in text and "not shown" not in text
    assert "Launch:     walk[2, 64]: 128 threads; 1 launch (the user's)" in text
    assert "Device:     CUDA simulator (NUMBA_ENABLE_CUDASIM=1)" in text
    assert re.search(r"Line #\s+Hits\s+Warps\s+Lanes\s+Line Contents", text)
    assert "warp executions are modelled" in " ".join(text.split())
    for f in profile.functions:
        warps, lanes = (column.cells for column in f.extras.columns)
        assert f.counts.hits and set(warps) == set(f.counts.hits)
        for line, hits in f.counts.hits.items():
            assert row_pattern(line, str(hits), warps[line], lanes[line]).search(text), (line, text)
    walk, step = profile.functions
    loop = walk.source.first_lineno + 6  # for k in range(i % 8): 442 thread executions in 28 warp executions
    assert walk.counts.hits[loop] == 442 and walk.extras.columns[0].cells[loop] == "28"
    assert step.diagnosis.notes == ()  # the launch's notes are the kernel's
    assert "(device function, in launches of walk)" in text or width < 80


def test_simulated_launch_in_line_profilers_layout():
    text = TextRenderer(width=80).render(cuda_simulated_profile())
    assert text.startswith("Timer unit: 1 cycle\n")
    assert "Line #      Hits         Time  Per Hit   % Time Warps Lanes  Line Contents" in text
    assert "Total time: not measured (hits only)" in text
    assert "launch: walk[2, 64]: 128 threads" in text and "calls: 342 thread calls" in text
    for f in cuda_simulated_profile().functions:
        warps, lanes = (column.cells for column in f.extras.columns)
        for line, hits in f.counts.hits.items():
            assert row_pattern(line, str(hits), warps[line], lanes[line]).search(text), line


def test_timed_launch_in_cycles_with_the_distortion_warning():
    profile = timed_profile()
    assert ProfileStats.from_json(profile.to_json()) == profile  # extra columns and rows survive JSON
    text = TextRenderer(width=0).render(profile)
    assert "Timer unit: 1 cycle" in text and "Total time: 400000 cycles" in text
    assert row_pattern(3, "128", "300000.0", "2343.8", "75.0", "4", "32.0").search(text), text
    assert row_pattern(4, "100", "100000.0", "1000.0", "25.0", "4", "25.0").search(text), text
    assert "restored: argument 0 (device copies) before each extra launch" in text
    assert "overlaps with other warps" in text
    assert "WARNING: probed launch 1.50x the plain launch" in text
    calm = TextRenderer(width=0).render(timed_profile(overhead_ms=1.1))
    assert "WARNING" not in calm and "probed launch 1.10x the plain launch" in calm


def test_extra_columns_fold_last_and_never_the_time_columns():
    profile = timed_profile()
    wide = RichRenderer(width=200).render(profile)
    assert re.search(r"Line #\s+Hits\s+Time\s+Per Hit\s+% Time\s+Warps\s+Lanes\s+Line Contents", wide)
    assert row_pattern(3, "128", "300000.0", "2343.8", "75.0", "4", "32.0").search(wide)
    folded = {}
    for width in (70, 60, 50, 45):
        text = RichRenderer(width=width).render(profile)
        assert max(len(line) for line in text.splitlines()) <= width, text
        assert "300000.0" in text and "2343.8" in text and "75.0" in text  # never folded, never cut
        said = " ".join(text.split()).split(f"not shown at {width} columns: ")
        folded[width] = said[1].split(" (")[0] if len(said) > 1 else ""
    assert folded[70] == "" and folded[45] in ("Lanes", "Lanes, Warps")  # the last extra column first
    assert [folded[w] for w in (70, 60, 50, 45)] == sorted(folded.values(), key=len)


def test_html_explains_the_extra_columns():
    html = HTMLRenderer().render(timed_profile())
    assert '<th class="n" title="warp executions of the line' in html
    assert '<th class="n" title="mean active lanes per warp execution' in html
    assert "<dt>Times in</dt><dd>cycles</dd>" in html and "<dt>Launch</dt>" in html
    assert '<td class="n">32.0</td>' in html and "probed launch 1.50x" in html
    simulated = HTMLRenderer().render(cuda_simulated_profile())
    assert "modelled in the simulator" in simulated and '<td class="n">15.8</td>' in simulated
