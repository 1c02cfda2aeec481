"""The probes of a simulator twin: Python functions with the GPU probes' contract.

Under ``NUMBA_ENABLE_CUDASIM=1`` a kernel is run as Python, one thread per CUDA
thread, so the twin's ``_nlp_enter()``, ``_nlp_line(k)`` and ``_nlp_leave()`` are
plain functions. As on the GPU, each thread counts in its own state (the
simulator's stand-in for registers, found through the current thread) and nothing
is shared while the kernel runs: no lock, no atomic per line. The simulator has
no ``activemask`` and no lockstep, so warp executions come from the model in
``warp_model`` when the launch is over; there is no clock either (times in
Python threads say nothing about a GPU), so simulator twins count hits only.
"""

from __future__ import annotations

import threading

from .warp_model import LoopShape, ThreadTrace, warp_executions

ENTER, LINE, LEAVE, FLUSH = "_nlp_enter", "_nlp_line", "_nlp_leave", "_nlp_flush"


def _linear(index: tuple[int, int, int], dims: tuple[int, int, int]) -> int:
    return index[0] + dims[0] * (index[1] + dims[1] * index[2])


class SimRecorder:
    """Collects the traces of every simulated thread of one launch, for all the
    profiled functions (a device function's probes run in the calling thread)."""

    def __init__(self, shapes: list[LoopShape], rows: list[list[int]]):
        self.shapes = shapes
        self.rows = rows
        self.traces: dict[tuple, ThreadTrace] = {}
        self.grid: tuple[int, int, int] = (1, 1, 1)

    def start(self, grid: tuple[int, int, int]) -> None:
        """Forget the previous launch's traces; ``grid`` numbers the blocks."""
        self.traces = {}
        self.grid = grid

    def _trace(self) -> ThreadTrace:
        thread = threading.current_thread()
        block = tuple(thread.blockIdx)
        key = (block, tuple(thread.threadIdx))
        trace = self.traces.get(key)
        if trace is None:  # one writer per key: this thread
            warp = (_linear(block, self.grid), thread.thread_id // 32)
            trace = self.traces[key] = ThreadTrace(warp, self.shapes, self.rows)
        return trace

    def probes(self, function: int) -> dict[str, object]:
        """The probe functions for profiled function number ``function``."""

        def enter() -> None:
            self._trace().enter(function)

        def line(row: int) -> None:
            self._trace().line(function, row)

        def leave() -> None:
            self._trace().leave()

        def flush() -> None:
            pass

        return {ENTER: enter, LINE: line, LEAVE: leave, FLUSH: flush}

    def counts(self) -> dict[tuple[int, int], tuple[int, int]]:
        """(function, row) -> (thread executions, warp executions) of the launch."""
        warps = warp_executions(self.traces.values())
        hits: dict[tuple[int, int], int] = {}
        for trace in self.traces.values():
            for where, n in trace.hits.items():
                hits[where] = hits.get(where, 0) + n
        return {where: (n, warps.get(where, 0)) for where, n in hits.items()}

    def calls(self, function: int) -> tuple[int, int]:
        """(thread calls, warps with a call) of profiled function ``function``."""
        threads = sum(trace.calls.get(function, 0) for trace in self.traces.values())
        warps = {trace.warp for trace in self.traces.values() if trace.calls.get(function)}
        return threads, len(warps)
