"""What a clean install must give: the sampled view, a quiet compile, a demo that shows it all.

On Linux x86-64 (glibc) the sampled view is part of the product: these tests fail,
rather than skip, when a dependency it needs is missing from the install.
"""

import platform
import subprocess
import sys

import numpy as np
import pytest

import numba_lprun
from numba_lprun.sampling import _native as N
from tests import kernels as k

SUPPORTED = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


@pytest.mark.skipif(not SUPPORTED, reason="the sampler supports Linux x86-64 only")
def test_sampled_view_is_available_on_linux_x86_64():
    assert N.check_platform() is None
    import elftools  # noqa: F401  (a declared dependency: its absence is a failure here)

    prof = numba_lprun.LineProfiler(k.busy)
    prof.runcall(k.busy, 200)
    assert prof.profile.sampling.unavailable is None


def test_objmode_twins_compile_without_llvm_warnings(capfd):
    """LLVM writes to fd 2 directly, so only fd-level capture sees its warnings."""
    capfd.readouterr()
    prof = numba_lprun.LineProfiler(k.with_objmode)
    assert prof.runcall(k.with_objmode, 3) == k.with_objmode(3)
    err = capfd.readouterr().err
    assert "warning" not in err.lower(), err
    assert prof.get_stats().timings  # the objmode function was profiled


@pytest.mark.skipif(not SUPPORTED, reason="the sampler supports Linux x86-64 only")
def test_demo_prints_the_full_view():
    out = subprocess.run(
        [sys.executable, "-m", "numba_lprun.demo"], capture_output=True, text=True, check=True, timeout=300
    )
    text = out.stdout
    assert "What to look at" in text
    assert "95% CI" in text and "counting run" in text and "Time from:" in text
    rows = [ln for ln in text.splitlines() if "out[i] = np.sum(np.multiply(window, k))" in ln]
    assert len(rows) == 1
    cells = rows[0].split()
    share, (low, high) = float(cells[4]), map(float, cells[5].split("-"))
    assert 0 < low <= share <= high, rows[0]  # % Time: a measured share, inside its interval
    assert "allocates on each of its 199,969 executions" in text  # the hint that explains line 26
    assert "warning:" not in out.stderr


def test_print_stats_marks_sub_resolution_lines_like_the_rich_table():
    from numba_lprun.renderers.text import profile_text

    prof = numba_lprun.LineProfiler(k.loops, sample=False)  # times from clock probes
    prof.runcall(k.loops, np.arange(2000.0), 3)
    profile = prof.profile
    text = profile_text(profile)
    marked = {ln.split()[0] for ln in text.splitlines() if "~" in ln and ln.split()[0].isdigit()}
    assert marked == {str(line) for stats in profile.functions for line in stats.diagnosis.below_resolution}
    assert marked
