"""CUDA profiles in numba-cuda's simulator. Run by tests/test_cuda.py in a subprocess
with NUMBA_ENABLE_CUDASIM=1 (numba reads it once, at import: the CPU tests never
see the simulator). Not collected on its own (its name is not test_*.py).

Hits are checked against each thread's own Python line events (``reference``);
warp executions against the warp grouping worked out by hand from the launch
geometry (lanes of a warp run a line together in the same loop iteration and
call); arrays against one launch's result.
"""

import inspect

import numpy as np
import pytest

from numba_lprun.cuda import CudaLineProfiler, in_simulator, profile_launch, profile_stats, split_cuda
from numba_lprun.renderers import TextRenderer
from numba_lprun.stats import ProfileStats
from tests import cuda_kernels as K
from tests.cuda_reference import per_thread_lines, total_hits

pytestmark = pytest.mark.skipif(not in_simulator(), reason="needs NUMBA_ENABLE_CUDASIM=1")


def line_of(func, text: str) -> int:
    """The line number of the first source line of ``func`` that contains ``text``."""
    lines, start = inspect.getsourcelines(func.py_func)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise KeyError(text)


def check_hits(profile, kernel, grid, block, args, devices=()):
    """Every profiled function's hits equal the per-thread reference, line by line."""
    ref = per_thread_lines(kernel, grid, block, *[a.copy() for a in args], functions=devices)
    for func in (kernel, *devices):
        got = profile.function(func.py_func.__name__).hits
        assert got == total_hits(ref[func.py_func.__qualname__]), func.py_func.__name__
    return ref


def index(bt: tuple[int, int]) -> int:
    """The global index of (block, thread) in a launch of 32-thread blocks."""
    return 32 * bt[0] + bt[1]


def warps_from_events(events: dict[tuple[int, int], list]) -> int:
    """Warp executions: distinct (iteration, call) contexts per warp, summed.
    ``events`` maps (block, thread) -> contexts in which the thread ran the line."""
    per_warp: dict[tuple[int, int], set] = {}
    for (block, thread), contexts in events.items():
        per_warp.setdefault((block, thread // 32), set()).update(contexts)
    return sum(len(c) for c in per_warp.values())


def test_divergent_branch_and_device_function():
    a = np.linspace(-3.0, 8.0, 80)
    out = np.zeros(80)
    args = (a, out)
    p = profile_launch(K.divergent, 3, 32, *args, device_functions=[K.clamp_scale])
    assert np.array_equal(out, np.where(a > 0, np.minimum(a * 2.0, 10.0), -a))
    check_hits(p, K.divergent, 3, 32, args, devices=(K.clamp_scale,))
    kern = p.function("divergent")
    threads = [(b, t) for b in range(3) for t in range(32)]
    live = {bt: 32 * bt[0] + bt[1] < 80 for bt in threads}
    pos = {bt: live[bt] and a[32 * bt[0] + bt[1]] > 0 for bt in threads}
    expect = {
        "if i >= a.size": {bt: [()] for bt in threads},
        "return": {bt: [()] for bt in threads if not live[bt]},
        "if a[i] > 0": {bt: [()] for bt in threads if live[bt]},
        "clamp_scale(a[i], 2.0)": {bt: [()] for bt in threads if pos[bt]},
        "out[i] = -a[i]": {bt: [()] for bt in threads if live[bt] and not pos[bt]},
    }
    for text, events in expect.items():
        line = kern.line(line_of(K.divergent, text))
        assert line.warps == warps_from_events(events), text
        assert line.hits == len(events)
        assert line.lanes == pytest.approx(len(events) / line.warps)
    # the third warp has 16 live lanes: the branch lines show fewer than 32 lanes
    assert kern.line(line_of(K.divergent, "if a[i] > 0")).lanes == pytest.approx(80 / 3)
    dev = p.function("clamp_scale")
    assert dev.calls == int((a > 0).sum())
    calls = {bt: [()] for bt in threads if pos[bt]}
    assert dev.line(line_of(K.clamp_scale, "y = x * k")).warps == warps_from_events(calls) == 3


def test_loop_trip_count_varies_by_thread():
    out = np.ones(64)
    p = profile_launch(K.varying_loop, 2, 32, out, overhead=True)
    expected = np.ones(64)
    for i in range(64):
        s = 0
        for j in range(i % 7):
            s += j if (i + j) % 2 == 0 else -1
        expected[i] += s
    assert np.array_equal(out, expected)  # one launch's effect, though the kernel ran 6 times
    assert p.launch.launches == 6 and p.launch.restored == ("argument 0",)
    check_hits(p, K.varying_loop, 2, 32, (np.ones(64),))
    kern = p.function("varying_loop")
    threads = [(b, t) for b in range(2) for t in range(32)]
    trips = {bt: index(bt) % 7 for bt in threads}
    expect = {
        "for j in range": {bt: [(j,) for j in range(trips[bt] + 1)] for bt in threads},
        "if (i + j) % 2": {bt: [(j,) for j in range(trips[bt])] for bt in threads},
        "s += j": {bt: [(j,) for j in range(trips[bt]) if (index(bt) + j) % 2 == 0] for bt in threads},
        "s -= 1": {bt: [(j,) for j in range(trips[bt]) if (index(bt) + j) % 2] for bt in threads},
        "out[i] += s": {bt: [()] for bt in threads},
    }
    for text, events in expect.items():
        line = kern.line(line_of(K.varying_loop, text))
        assert line.warps == warps_from_events(events), text
    # per-iteration divergence: both sides of the branch run in 6 iterations of each warp
    assert kern.line(line_of(K.varying_loop, "s += j")).warps == 12
    assert kern.line(line_of(K.varying_loop, "s -= 1")).warps == 12


def test_device_function_called_from_two_sites_in_a_loop():
    a = np.linspace(0.5, 4.0, 64)
    out = np.zeros(64)
    p = profile_launch(K.calls_in_loop, 2, 32, a, out)
    check_hits(p, K.calls_in_loop, 2, 32, (a, np.zeros(64)), devices=(K.clamp_scale,))
    dev = p.function("clamp_scale")
    trips = [i % 4 + 1 for i in range(64)]
    assert dev.calls == sum(trips) + 64
    # per warp: one call per loop iteration (4) and one after the loop
    assert dev.line(line_of(K.clamp_scale, "y = x * k")).warps == 2 * (4 + 1)
    clamped = dev.line(line_of(K.clamp_scale, "y = 10.0"))
    events = {}
    for i in range(64):
        acc, ctx = 0.0, []
        for j in range(trips[i]):
            if a[i] * j > 10.0:
                ctx.append(("loop", j))
            acc += min(a[i] * j, 10.0)
        if acc * 0.5 > 10.0:
            ctx.append(("after",))
        events[(i // 32, i % 32)] = ctx
    assert clamped.hits == sum(len(c) for c in events.values())
    assert clamped.warps == warps_from_events(events)


def test_shared_memory_and_syncthreads():
    from numba import cuda

    a = np.arange(128, dtype=np.float64)
    out = cuda.to_device(np.full(2, 100.0))  # a device array: saved and restored on the device
    p = profile_launch(K.block_sum, 2, 64, a, out, overhead=True)
    assert np.array_equal(out.copy_to_host(), [100.0 + a[:64].sum(), 100.0 + a[64:].sum()])
    assert p.launch.restored == ("argument 0", "argument 1")
    check_hits(p, K.block_sum, 2, 64, (a, np.full(2, 100.0)))
    kern = p.function("block_sum")
    strides = [32, 16, 8, 4, 2, 1]
    adds = {(b, t): [(k,) for k, s in enumerate(strides) if t < s] for b in range(2) for t in range(64)}
    line = kern.line(line_of(K.block_sum, "buf[t] += buf[t + stride]"))
    assert line.hits == 2 * 63
    assert line.warps == warps_from_events(adds) == 2 * 6  # only the first warp of each block adds
    assert line.lanes == pytest.approx(63 / 6)
    assert kern.line(line_of(K.block_sum, "while stride > 0")).warps == 4 * 7
    assert kern.line(line_of(K.block_sum, "cuda.syncthreads()")).warps == 4


def test_line_profiler_shape_and_text():
    a = np.linspace(-3.0, 8.0, 80)
    out = np.zeros(80)
    prof = CudaLineProfiler(K.divergent, K.clamp_scale)
    prof.runcall(K.divergent[3, 32], a, out)
    prof.wrap(K.divergent)[3, 32](a, out)
    merged = prof.cuda_profile  # the launches in the GPU's terms; .profile is the common value
    assert len(prof.launches) == 2 and merged.function("divergent").calls == 2 * 96
    text = prof.get_text()  # the common text renderer
    assert "Line #      Hits         Time  Per Hit   % Time Warps Lanes  Line Contents" in text
    assert "simulator" in text and "modelled" in text
    assert "def clamp_scale(x, k):" in text and "2 launches of the user's, added up" in text
    assert isinstance(prof.profile, ProfileStats)  # as LineProfiler.profile
    assert prof.profile.functions[0].counts.hits == merged.function("divergent").hits
    alone = profile_launch(K.divergent, 3, 32, a, out, device_functions=())
    single = TextRenderer().render(profile_stats(alone))
    assert "clamp_scale(x, k)" not in single


def test_simulated_kernels_are_routed_to_the_cuda_profiler():
    from numba_lprun.errors import CudaFunctionError
    from numba_lprun.instrument.profilable import resolve

    with pytest.raises(CudaFunctionError):
        resolve(K.block_sum)
    # the front ends' one test (magic and command line): CUDA functions go to CudaLineProfiler
    cuda, others = split_cuda([("block_sum", K.block_sum), ("clamp_scale", K.clamp_scale), ("f", len)])
    assert cuda == [K.block_sum, K.clamp_scale] and others == [("f", len)]
    assert split_cuda([("later", None)]) == ([], [("later", None)])
