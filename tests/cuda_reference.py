"""Ground truth for hits: each CUDA thread's own Python line events, in the simulator.

Runs the *original* kernel under numba-cuda's simulator with a tracer in every
simulated thread (``threading.settrace``: the line events line_profiler's
settrace core counts), so each thread's executions of each line are what
line_profiler would report if that thread ran ``py_func`` alone. Tests and the
device script compare the twins' hits with these. Simulator only.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from collections.abc import Sequence

from numba_lprun.cuda.kernels import in_simulator
from numba_lprun.cuda.launch import dim3

ThreadKey = tuple[int, int]  # (linear block index, linear thread index in the block)


def per_thread_lines(
    kernel: object, grid, block, *args: object, functions: Sequence[object] = ()
) -> dict[str, dict[int, dict[ThreadKey, int]]]:
    """qualname -> line -> thread -> executions, for ``kernel`` and ``functions``
    (device functions), over one simulated launch of ``kernel[grid, block](*args)``."""
    if not in_simulator():
        raise RuntimeError("per_thread_lines needs the CUDA simulator (NUMBA_ENABLE_CUDASIM=1)")
    g = dim3(grid)
    codes = {f.py_func.__code__: f.py_func.__code__.co_qualname for f in (kernel, *functions)}
    counts: dict[str, dict[int, dict[ThreadKey, int]]] = {
        name: defaultdict(lambda: defaultdict(int)) for name in codes.values()
    }

    def tracer(frame, event, arg):
        name = codes.get(frame.f_code)
        if name is None:
            return None
        thread = threading.current_thread()
        bx, by, bz = thread.blockIdx
        key = (bx + g[0] * (by + g[1] * bz), thread.thread_id)
        lines = counts[name]

        def local(frame, event, arg):
            if event == "line":
                lines[frame.f_lineno][key] += 1
            return local

        return local

    threading.settrace(tracer)
    try:
        kernel[grid, block](*args)
    finally:
        threading.settrace(None)
        sys.settrace(None)
    return {name: {ln: dict(per) for ln, per in lines.items()} for name, lines in counts.items()}


def total_hits(per_thread: dict[int, dict[ThreadKey, int]]) -> dict[int, int]:
    """line -> executions summed over threads."""
    return {ln: sum(per.values()) for ln, per in per_thread.items()}
