"""CUDA kernels: the simulator suite (in a subprocess: launches, the magic and the
command line), PTX of the twins (no GPU needed where NVVM is installed), and the
CPU resolver's hand-over. Rendering: tests/test_cuda_render.py.

numba reads NUMBA_ENABLE_CUDASIM once, when it is imported, so the simulator
tests run in their own interpreter (tests/cuda_simulated.py) and nothing here
turns the simulator on for the CPU tests.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HAS_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None
needs_numba_cuda = pytest.mark.skipif(
    not HAS_NUMBA_CUDA, reason="numba-cuda is not installed (pip install 'numba_lprun[cuda]')"
)
ROOT = Path(__file__).resolve().parent.parent


@needs_numba_cuda
def test_simulator_suite():
    """The simulator suites (launches; the magic and the command line) pass under
    NUMBA_ENABLE_CUDASIM=1 in one fresh interpreter, every test of them run (in that one
    process: ``-n0``, as xdist workers would each import Numba and the simulator again)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    suites = {"cuda_simulated.py": 6, "cuda_front_ends.py": 7}
    cmd = [sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider", "-rA"]
    run = subprocess.run(
        cmd + [f"tests/{s}" for s in suites], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    for suite, tests in suites.items():
        assert len(re.findall(rf"^PASSED tests/{suite}::", run.stdout, re.M)) == tests, run.stdout[-3000:]


@pytest.fixture(scope="module")
def ptx_tools():
    """numba.cuda (real, not simulated) and a check that NVVM compiles here."""
    if not HAS_NUMBA_CUDA:
        pytest.skip("numba-cuda is not installed (pip install 'numba_lprun[cuda]')")
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("PTX needs numba-cuda's compiler, not the simulator")
    from numba import cuda
    from numba.cuda import types

    def probe(x):
        x[0] = 1.0

    try:
        cuda.compile_ptx(probe, (types.float64[:],), cc=(9, 0))
    except Exception as exc:  # NVVM missing: NvvmSupportError and friends, by message
        pytest.skip(f"NVVM is not available to compile PTX ({type(exc).__name__}: {exc})"[:300])
    from tests import cuda_kernels

    return cuda_kernels, types


@pytest.mark.parametrize("timing", [False, True], ids=["hits", "timed"])
def test_twins_compile_to_ptx_with_line_info(ptx_tools, timing):
    from tests.cuda_ptx import assemble, atomic_lines, find_ptxas, loc_lines, twin_ptx

    K, types = ptx_tools
    kern = twin_ptx(K.varying_loop, (types.float64[:],), timing=timing)
    dev = twin_ptx(K.clamp_scale, (types.float64, types.float64), timing=timing)
    for result in (kern, dev):
        rows = set(result.planned.rows)
        assert loc_lines(result.plain) & rows, "plain twin without .loc lines"
        assert rows <= loc_lines(result.probed) | {0}, "a probed line has no .loc in the twin"
        assert "activemask.b32" in result.probed and "redux.sync.add.u32" in result.probed
        assert ("%clock64" in result.probed) == timing
        assert "activemask" not in result.plain and "%clock64" not in result.plain
        if find_ptxas():  # the probes' inline assembly is valid PTX for sm_90
            assemble(result.probed)
    # atomics only where the counts are flushed: at the return (the def's last line)
    src = kern.planned.source
    last = src.tree.body[-1].lineno
    atomics = atomic_lines(kern.probed)
    n_rows = len(kern.planned.rows)
    assert atomics and set(atomics) == {last}
    assert len(atomics) == 2 * n_rows + 2 + (n_rows + 1 if timing else 0)  # one per counter, not per line


@needs_numba_cuda
def test_cpu_profiler_hands_cuda_kernels_on():
    """The CPU resolver refuses a CUDA kernel with the error front ends route on."""
    import numba_lprun
    from numba_lprun.errors import CudaFunctionError, NotProfilableError
    from numba_lprun.instrument.profilable import resolve
    from tests import cuda_kernels as K

    for func in (K.divergent, K.clamp_scale):
        with pytest.raises(CudaFunctionError, match="numba_lprun.cuda") as info:
            resolve(func)
        assert info.value.function is func
    with pytest.raises(NotProfilableError, match="CUDA kernel"):
        numba_lprun.LineProfiler(K.divergent)
