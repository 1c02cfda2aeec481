"""Profile one launch of a CUDA kernel: twins, launches, counts -> a CudaProfile.

Order of launches (as on the CPU, the user's run comes last, and its effects are
the user's): with ``overhead`` and arguments that can be saved, the plain twin is
launched ``repeat`` times and the probed twin ``repeat - 1`` times, each
after the arguments are put back and timed with CUDA events (compiles happen
before, not inside, a timed launch); then the user's launch on the probed
twin, whose counts make the profile. Without ``overhead``, or when an argument
cannot be saved, only the user's launch is made.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from .kernels import called_device_functions, in_simulator, is_cuda_function, is_device_function
from .model import CudaFunctionProfile, CudaLaunch, CudaLine, CudaProfile
from .state import LaunchState
from .twins import Planned, plain_twin, plan, probed_twin

AUTO = "auto"


def dim3(value: int | Sequence[int]) -> tuple[int, int, int]:
    """A launch dimension as (x, y, z)."""
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"a launch dimension has 1 to 3 components, got {value!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def profiled_functions(kernel: object, device_functions: object = AUTO) -> list[object]:
    """The kernel, then its device functions to profile, callees after their callers.

    ``"auto"``: every device function the kernel reaches; otherwise the ones given
    (each must be a ``@cuda.jit(device=True)`` function).
    """
    if not is_cuda_function(kernel) or is_device_function(kernel):
        raise TypeError(f"{kernel!r} is not a @cuda.jit kernel")
    reached = called_device_functions(kernel)
    if device_functions == AUTO:
        return [kernel, *reached]
    chosen = list(device_functions or ())
    for f in chosen:
        if not (is_cuda_function(f) and is_device_function(f)):
            raise TypeError(f"{f!r} is not a @cuda.jit(device=True) function")
    ordered = [f for f in reached if any(f is c for c in chosen)]
    return [kernel, *ordered, *[c for c in chosen if all(c is not f for f in ordered)]]


class _Counters:
    """The counts of one launch, on the GPU (device arrays) or in the simulator."""

    def __init__(self, plans: list[Planned], timing: bool, simulator: bool):
        self.plans, self.timing, self.simulator = plans, timing and not simulator, simulator
        if simulator:
            from .sim_probes import SimRecorder

            self.recorder = SimRecorder([p.shape for p in plans], [p.rows for p in plans])
        else:
            from numba import cuda

            from .gpu_probes import counters_shape

            self.arrays = [cuda.to_device(np.zeros(counters_shape(len(p.rows)), np.int64)) for p in plans]

    def probes(self, index: int) -> dict:
        if self.simulator:
            return self.recorder.probes(index)
        from .gpu_probes import GpuProbeConfig, make_gpu_probes

        array = self.arrays[index]
        address = array.__cuda_array_interface__["data"][0]
        return make_gpu_probes(GpuProbeConfig(address, len(self.plans[index].rows), self.timing))

    def reset(self, grid: tuple[int, int, int]) -> None:
        if self.simulator:
            self.recorder.start(grid)
        else:
            for array in self.arrays:
                array.copy_to_device(np.zeros(array.shape, np.int64))

    def read(self, index: int) -> tuple[list[CudaLine], int, int]:
        """Lines, thread calls and warp calls of profiled function ``index``."""
        rows = self.plans[index].rows
        if self.simulator:
            counts = self.recorder.counts()
            lines = [CudaLine(ln, *counts.get((index, k), (0, 0))) for k, ln in enumerate(rows)]
            return lines, *self.recorder.calls(index)
        from .gpu_probes import CYCLES, HITS, WARPS, sum_counters

        c = sum_counters(self.arrays[index].copy_to_host())
        lines = [
            CudaLine(ln, int(c[k, HITS]), int(c[k, WARPS]), int(c[k, CYCLES]) if self.timing else None)
            for k, ln in enumerate(rows)
        ]
        return lines, int(c[len(rows), HITS]), int(c[len(rows), WARPS])


def _timed_ms(launch, simulator: bool, stream: object) -> float:
    """Milliseconds of one launch: CUDA events on a GPU, wall time in the simulator."""
    from numba import cuda

    if simulator:
        t0 = time.perf_counter()
        launch()
        return (time.perf_counter() - t0) * 1e3
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    launch()
    end.record(stream)
    end.synchronize()
    return cuda.event_elapsed_time(start, end)


def _precompile(dispatcher: object, args: list, simulator: bool) -> None:
    """Compile before a timed launch, so no compile is timed."""
    if not simulator:
        dispatcher.compile(tuple(dispatcher.typeof_pyval(a) for a in args))


def _device_name(simulator: bool) -> str:
    if simulator:
        return "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    from numba import cuda

    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    return f"{name} (compute capability {'.'.join(map(str, dev.compute_capability))})"


def profile_launch(
    kernel: object,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    *args: object,
    device_functions: object = AUTO,
    timing: bool | None = None,
    overhead: bool | None = None,
    repeat: int = 3,
    stream: object = 0,
    shared_mem: int = 0,
) -> CudaProfile:
    """Launch ``kernel[grid, block, stream, shared_mem](*args)`` once for the user,
    on its probed twin, and return the per-line profile of the kernel and of
    ``device_functions`` (default: all the device functions it calls).

    ``timing`` (default: on a GPU yes, in the simulator no, where there is no
    clock) reads ``%clock64`` at every line; without it the twin counts hits,
    warp executions and lanes only. ``overhead`` (default: on a GPU yes) makes the
    extra launches that time the plain twin against the probed one; they
    start from the saved arguments, so the arrays end as after one launch.
    """
    simulator = in_simulator()
    timing = (not simulator) if timing is None else timing
    overhead = (not simulator) if overhead is None else overhead
    g, b = dim3(grid), dim3(block)
    plans = [plan(f) for f in profiled_functions(kernel, device_functions)]
    counters = _Counters(plans, timing, simulator)
    twins_of: dict[int, object] = {}
    for index in reversed(range(len(plans))):  # callees first: their twins are linked in
        twins_of[id(plans[index].original)] = probed_twin(plans[index], counters.probes(index), twins_of)
    twin = twins_of[id(kernel)]
    state = LaunchState(args)
    notes = _notes(simulator, timing, overhead, state)
    plain_ms, probed_ms, launches = None, [], 0
    config = (g, b, stream, shared_mem)
    if overhead and state.can_restore:
        plain = plain_twin(kernel)
        _precompile(plain, state.args, simulator)
        _precompile(twin, state.args, simulator)
        state.save()
        plain_ms = min(_run(plain, config, state, simulator, restore=True) for _ in range(max(repeat, 1)))
        for _ in range(max(repeat, 1) - 1):
            counters.reset(g)
            probed_ms.append(_run(twin, config, state, simulator, restore=True))
        launches = 2 * max(repeat, 1) - 1
    counters.reset(g)
    probed_ms.append(_run(twin, config, state, simulator, restore=launches > 0))
    state.finish()
    functions = tuple(_function_profile(p, *counters.read(i)) for i, p in enumerate(plans))
    launch = CudaLaunch(
        kernel=plans[0].source.name,
        grid=g,
        block=b,
        simulator=simulator,
        timing=counters.timing,
        device=_device_name(simulator),
        plain_ms=plain_ms,
        probed_ms=min(probed_ms) if plain_ms is not None else None,
        launches=launches + 1,
        restored=state.names() if launches else (),
        notes=notes,
    )
    return CudaProfile(launch, functions)


def _run(dispatcher: object, config: tuple, state: LaunchState, simulator: bool, restore: bool) -> float:
    if restore:
        state.restore()
    return _timed_ms(lambda: dispatcher[config](*state.args), simulator, config[2])


def _notes(simulator: bool, timing: bool, overhead: bool, state: LaunchState) -> tuple[str, ...]:
    notes = []
    if simulator:
        notes.append(
            "simulator: each CUDA thread ran as a Python thread; warp executions are modelled "
            "(lanes of a warp that reach a line in the same loop iteration and call), not measured"
        )
        notes.append("simulator: no GPU clock, so no times (hits, warps and lanes only)")
        if overhead:
            notes.append("simulator: launch times are Python wall times, not a GPU figure")
    if overhead and not state.can_restore:
        notes.append(f"ran once, no overhead figure: {state.blocker}, which cannot be saved between launches")
    return tuple(notes)


def _function_profile(p: Planned, lines: list[CudaLine], calls: int, warp_calls: int) -> CudaFunctionProfile:
    src = p.source
    code = src.py_func.__code__
    return CudaFunctionProfile(
        name=src.name,
        qualname=getattr(code, "co_qualname", code.co_name),
        filename=src.filename,
        first_lineno=src.first_lineno,
        kind="device function" if p.device else "kernel",
        source=tuple(src.lines),
        lines=tuple(lines),
        calls=calls,
        warp_calls=warp_calls,
    )
