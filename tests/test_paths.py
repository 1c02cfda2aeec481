"""Reaching the function from anywhere, restoring everything, and the API's outputs."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest

import numba_lprun
from numba_lprun import NotProfilableError
from numba_lprun.stats import LineStats
from tests import driver
from tests import kernels as k
from tests.conftest import hits_of

A = np.arange(1.0, 6.0)


def snapshot():
    """Every binding of a kernel in the modules involved, and the kernels' compiled state."""
    spaces = {"kernels": vars(k), "driver": vars(driver)}
    binds = {(m, n): id(v) for m, ns in spaces.items() for n, v in ns.items()}
    compiled = {n: tuple(v.signatures) for n, v in vars(k).items() if hasattr(v, "signatures")}
    return binds, compiled


def test_runctx_direct_call_fills_table():
    ns = {"poly": k.poly, "x": 3.0}
    prof = numba_lprun.LineProfiler(k.poly)
    prof.runctx("y = poly(x)", ns, ns)
    assert ns["y"] == 10.0
    assert ns["poly"] is k.poly
    assert sum(hits_of(prof.get_stats(), "poly").values()) == 2


def test_through_python_function_in_another_module_and_jitted_caller():
    k.caller(A)  # the caller is compiled and linked to the original poly first
    before = snapshot()
    prof = numba_lprun.LineProfiler(k.poly, k.caller)
    ns = {"drive": driver.drive, "a": A}
    prof.runctx("r = drive(a)", ns, None)
    assert ns["r"] == pytest.approx(driver.drive(A))
    stats = prof.get_stats()
    first = k.poly.py_func.__code__.co_firstlineno
    # poly runs once directly from drive() and once per element from caller()
    assert hits_of(stats, "poly")[first + 2] == 1 + A.size
    assert hits_of(stats, "caller")
    assert snapshot() == before


def test_unprofiled_jitted_caller_is_relinked():
    k.caller(A)
    prof = numba_lprun.LineProfiler(k.poly)
    prof.runcall(k.caller, A)
    first = k.poly.py_func.__code__.co_firstlineno
    assert hits_of(prof.get_stats(), "poly")[first + 2] == A.size
    assert k.caller(A) == pytest.approx(sum(v * v + 1 for v in A))


def test_exception_is_reraised_after_stats_are_kept():
    before = snapshot()
    prof = numba_lprun.LineProfiler(k.may_fail)
    with pytest.raises(ValueError, match="x must be >= 0"):
        prof.runcall(k.may_fail, -1)
    first = k.may_fail.py_func.__code__.co_firstlineno
    assert hits_of(prof.get_stats(), "may_fail")[first + 2] == 1
    assert snapshot() == before
    assert k.may_fail(1) == 2


def test_keyboard_interrupt_restores_namespace():
    before = snapshot()
    ns = {"kernels": k, "a": A}
    prof = numba_lprun.LineProfiler(k.poly, k.caller, repeat=False)
    with pytest.raises(KeyboardInterrupt):
        prof.runctx("kernels.caller(a)\nraise KeyboardInterrupt", ns, None)
    assert snapshot() == before
    assert ns["kernels"] is k
    assert hits_of(prof.get_stats(), "poly")  # the profile gathered so far is kept


def test_stats_accumulate_and_convert():
    prof = numba_lprun.LineProfiler(k.busy)
    prof.runcall(k.busy, 5000)  # calls long enough to time (tens of microseconds)
    prof.runcall(k.busy, 5000)
    stats = prof.get_stats()
    assert isinstance(stats, LineStats)
    assert 0 < stats.unit < 1e-6
    first = k.busy.py_func.__code__.co_firstlineno
    assert hits_of(stats, "busy")[first + 4] == 10_000
    ratio = prof.overhead["busy"]
    assert ratio is not None and ratio > 0  # a ratio of two measured times, not a speed target


def test_print_and_dump_stats(tmp_path):
    prof = numba_lprun.LineProfiler(k.busy)
    prof.runcall(k.busy, 5000)
    out = io.StringIO()
    prof.print_stats(out)
    text = out.getvalue()
    assert "Line #      Hits         Time  Per Hit   % Time  Line Contents" in text
    assert "s += np.sin(i) ** 2" in text
    assert "counting run" in text
    path = tmp_path / "busy.lprof"
    prof.dump_stats(str(path))
    shown = subprocess.run(
        [sys.executable, "-m", "line_profiler", str(path)], capture_output=True, text=True, check=True
    )
    assert "s += np.sin(i) ** 2" in shown.stdout


@pytest.mark.parametrize(
    "obj, message",
    [
        (k.objmode_only, "object mode"),
        (k.poly.py_func, "plain Python function.*line_profiler"),
        (42, "not a Numba jitted function"),
        (np.add, "not a Numba jitted function"),
    ],
)
def test_bad_input_one_line_reason(obj, message):
    with pytest.raises(NotProfilableError, match=message) as info:
        numba_lprun.LineProfiler(obj)
    assert "\n" not in str(info.value)


def test_no_source():
    from numba import njit

    ns = {}
    exec("def nosrc(x):\n    return x + 1\n", ns)
    jitted = njit(ns["nosrc"])
    with pytest.raises(NotProfilableError, match="no readable source for nosrc"):
        numba_lprun.LineProfiler(jitted)


def test_cache_true_twin_stays_out_of_numbas_cache():
    """Twins of a ``cache=True`` function are cached in numba_lprun's own directory only."""
    k.cached_kernel(A)
    prof = numba_lprun.LineProfiler(k.cached_kernel)
    prof.runcall(k.cached_kernel, A)
    for twin in prof.twins():
        cache = twin.dispatcher._cache
        assert type(cache).__name__ in ("NullCache", "TwinCache")
        if type(cache).__name__ == "TwinCache":
            assert cache.cache_path.startswith(os.environ["NUMBA_LPRUN_CACHE_DIR"])
        assert twin.dispatcher.py_func.__module__ is None
    cache_dir = os.path.join(os.path.dirname(k.__file__), "__pycache__")
    names = [n for n in os.listdir(cache_dir) if n.endswith((".nbi", ".nbc"))]
    assert all("cached_kernel" in n for n in names)
