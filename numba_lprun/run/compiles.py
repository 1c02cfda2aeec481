"""Numba's compile events during a run: progress messages, pauses of the sampler, self times.

A compile can start inside a sampled run (a new argument type, a twin compiled on
first use): Numba must not compile while the native sampler is armed (its
unwinder lock), so the sampler is paused for the compile and resumed after.
A compile can trigger others (a caller compiles its callees), so each dispatcher
is charged its own time only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from ..internals import compile_events

Progress = Callable[[str], None]


class CompileHooks(Protocol):
    def pause(self) -> None: ...
    def resume(self) -> None: ...


class CompileWatcher:
    """Compile events of one phase: progress messages and self time per dispatcher."""

    def __init__(self, phase: str, progress: Progress | None, paused: CompileHooks | None = None):
        self.phase = phase
        self.progress = progress
        self.paused = paused  # told when compiling starts and ends (the sampler pauses)
        self.seconds: dict[int, float] = {}
        self._stack: list[list] = []  # [dispatcher id, start, time spent in nested compiles]

    def on_start(self, data: dict) -> None:
        disp = data.get("dispatcher")
        if self.progress is not None and disp is not None:
            args = ", ".join(str(a) for a in data.get("args") or ())
            self.progress(f"compiling {disp.py_func.__qualname__}({args}) for the {self.phase} run")
        if not self._stack and self.paused is not None:
            self.paused.pause()
        self._stack.append([id(disp), time.perf_counter(), 0.0])

    def on_end(self, data: dict) -> None:
        if not self._stack:
            return
        key, start, nested = self._stack.pop()
        spent = time.perf_counter() - start
        self.seconds[key] = self.seconds.get(key, 0.0) + spent - nested
        if self._stack:
            self._stack[-1][2] += spent
        elif self.paused is not None:
            self.paused.resume()

    def installed(self):
        """A context manager that listens to Numba's compile events while it is open."""
        return compile_events(self)
