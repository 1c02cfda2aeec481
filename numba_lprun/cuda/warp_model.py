"""Which thread executions of a line a warp makes together: the simulator's model.

On a GPU the probed twin reads ``activemask()`` at each probe, so a warp
execution is whatever the hardware ran together. The simulator runs each CUDA
thread as a Python thread, with no lockstep, so there it is modelled: lanes of
one warp execute a line together when they reach it in the same *dynamic
context*, that is

* the same iteration of every loop enclosing the line (loops reconverge at
  their exit, as the SIMT stack and the compiler's reconvergence points do for
  structured code: divergent branches inside a loop run once per iteration);
* the same occurrence within that iteration (a statement over two lines fires
  its first line twice);
* inside a device function, the same context of the call in the caller (same
  call site, same iteration, same call on that line).

Each thread's line events get such a key; a warp's executions of a line are its
distinct keys, and the lanes of one execution are the lanes sharing the key.
For structured code without early exits this is what a warp does; the GPU's
real grouping can differ (independent thread scheduling on Volta and later may
not reconverge where this model says).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoopShape:
    """Static loop structure of one function: per line, its enclosing loops."""

    header_of: dict[int, int]  # header line -> loop id (its events start iterations)
    chain: dict[int, tuple[int, ...]]  # line -> enclosing loop ids, outermost first


def loop_shape(fdef: ast.FunctionDef) -> LoopShape:
    """The loops of ``fdef`` (nested functions excluded), by line."""
    header_of: dict[int, int] = {}
    chain: dict[int, tuple[int, ...]] = {}

    def visit(stmts: list[ast.stmt], loops: tuple[int, ...]) -> None:
        for s in stmts:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for line in range(s.lineno, (s.end_lineno or s.lineno) + 1):
                chain[line] = loops
            if isinstance(s, (ast.For, ast.While)):
                header_of[s.lineno] = s.lineno
                inner = loops + (s.lineno,)
                visit(s.body, inner)
                visit(s.orelse, loops)
                for line in range(s.lineno, max(s.body[0].lineno, s.lineno + 1)):
                    chain[line] = loops  # header lines: the loop's own counter is added
                continue
            for name in ("body", "orelse", "finalbody"):
                visit(getattr(s, name, []) or [], loops)
            for handler in getattr(s, "handlers", []) or []:
                visit(handler.body, loops)

    visit(fdef.body, ())
    return LoopShape(header_of, chain)


@dataclass
class Frame:
    """One call of a profiled function in one thread."""

    function: int
    context: tuple  # the caller's key at the call, and which call on that line
    active: list[int] = field(default_factory=list)  # loops entered and not yet left
    iters: dict[int, int] = field(default_factory=dict)
    seen: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))
    last_key: tuple = ()
    calls: int = 0


class ThreadTrace:
    """Per-thread counters (the simulator's registers): hits and context keys per line."""

    def __init__(self, warp: tuple, shapes: list[LoopShape], rows: list[list[int]]):
        self.warp = warp  # (block, warp in block): whose executions merge with this thread's
        self.shapes = shapes
        self.rows = rows  # per function: row -> line
        self.frames: list[Frame] = []
        self.hits: dict[tuple[int, int], int] = defaultdict(int)  # (function, row) -> executions
        self.keys: dict[tuple[int, int], set] = defaultdict(set)
        self.calls: dict[int, int] = defaultdict(int)  # function -> calls in this thread

    def enter(self, function: int) -> None:
        context: tuple = ()
        if self.frames:
            caller = self.frames[-1]
            caller.calls += 1
            context = caller.last_key + (("call", caller.calls),)
        self.frames.append(Frame(function, context))
        self.calls[function] += 1

    def leave(self) -> None:
        if self.frames:
            self.frames.pop()

    def line(self, function: int, row: int) -> None:
        if not self.frames or self.frames[-1].function != function:
            self.enter(function)  # a probe outside enter/leave: count it in a fresh frame
        frame = self.frames[-1]
        vector = self._iteration_vector(frame, self.shapes[function], self.rows[function][row])
        where = (row, vector)
        occurrence = frame.seen[where]
        frame.seen[where] = occurrence + 1
        key = frame.context + ((row, vector, occurrence),)
        frame.last_key, frame.calls = key, 0
        self.hits[function, row] += 1
        self.keys[function, row].add(key)

    @staticmethod
    def _iteration_vector(frame: Frame, shape: LoopShape, line: int) -> tuple[int, ...]:
        """The iteration of each loop enclosing ``line``, updating the frame's loop state."""
        chain = shape.chain.get(line, ())
        keep = 0
        while keep < len(frame.active) and keep < len(chain) and frame.active[keep] == chain[keep]:
            keep += 1
        loop = shape.header_of.get(line)
        if loop is not None and loop in frame.active[keep : keep + 1]:
            del frame.active[keep + 1 :]
            frame.iters[loop] += 1  # a back edge: the next iteration
        else:
            del frame.active[keep:]
            if loop is not None:
                frame.active.append(loop)
                frame.iters[loop] = 0  # entering the loop
        vector = tuple(frame.iters.get(loop_id, 0) for loop_id in chain)
        return vector + ((frame.iters[loop],) if loop is not None else ())


def warp_executions(traces: Iterable[ThreadTrace]) -> dict[tuple[int, int], int]:
    """(function, row) -> warp executions: the distinct keys of each warp's lanes."""
    by_warp: dict[tuple, set] = defaultdict(set)
    for trace in traces:
        for where, keys in trace.keys.items():
            by_warp[trace.warp + where] |= keys
    totals: dict[tuple[int, int], int] = defaultdict(int)
    for key, keys in by_warp.items():
        totals[key[2:]] += len(keys)
    return dict(totals)
