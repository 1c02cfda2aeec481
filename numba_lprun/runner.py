"""Stage 4b: build the twins of each phase and run a call or statement on them.

A profiled function is a *target*; it owns the rewritten sources and counter
arrays of its two twins (plain and instrumented), which live as long as the
runner, so twins compile once and are reused by later runs. Each phase swaps the
twins in, runs, and restores the namespaces in a ``finally``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
from numba.core.registry import CPUDispatcher

from . import probes as P
from .reach import Swap, find_callers, module_namespaces
from .rewrite import Rewritten, instrument
from .source import FunctionSource, read_source
from .twins import Twin, compile_like_original, link, make_relinked, make_twin, objmode_names

PLAIN, INSTRUMENTED = "plain", "instrumented"
Progress = Callable[[str], None]


@dataclass
class Target:
    """A profiled function: its source, rewrites, counters and twins."""

    original: CPUDispatcher
    source: FunctionSource
    rewrites: dict[str, Rewritten]
    counters: dict[str, np.ndarray]
    twins: dict[str, Twin] = field(default_factory=dict)

    @property
    def rows(self) -> list[int]:
        return self.rewrites[INSTRUMENTED].rows


def _twin_for(target: Target, phase: str, clock: str, timing: bool) -> Twin:
    rewritten = target.rewrites[phase]
    counters = target.counters[phase]
    cfg = P.ProbeConfig(
        address=counters.ctypes.data,
        n_lines=len(rewritten.rows),
        clock=clock,
        timing=timing and phase == INSTRUMENTED,
        atomic=bool(target.original.targetoptions.get("parallel")),
    )
    extra = P.make_probes(cfg)
    extra[P.PYHIT] = P.make_python_hit(counters)
    return make_twin(target.original, target.source, rewritten.tree, extra, phase)


@dataclass
class Runner:
    """Targets and twins for one profiler; runs phases."""

    clock: str
    timing: bool = True
    targets: dict[int, Target] = field(default_factory=dict)
    relinked: dict[str, dict[int, Twin]] = field(default_factory=lambda: {PLAIN: {}, INSTRUMENTED: {}})

    def add(self, dispatcher: object) -> Target:
        existing = self.targets.get(id(dispatcher))
        if existing is not None:
            return existing
        source = read_source(dispatcher)
        names = objmode_names(source.py_func)
        rewrites = {
            INSTRUMENTED: instrument(source.tree, lines=True, objmode_names=names),
            PLAIN: instrument(source.tree, lines=False, objmode_names=names),
        }
        counters = {phase: P.new_counters(len(r.rows)) for phase, r in rewrites.items()}
        target = Target(dispatcher, source, rewrites, counters)
        self.targets[id(dispatcher)] = target
        return target

    def _prepare(self, phase: str, namespaces: list[dict]) -> list[tuple[Twin, FunctionSource | None]]:
        """Twins of every target and of every jitted caller that reaches one."""
        built: list[tuple[Twin, FunctionSource | None]] = []
        for target in self.targets.values():
            if phase not in target.twins:
                target.twins[phase] = _twin_for(target, phase, self.clock, self.timing)
            built.append((target.twins[phase], target.source))
        originals = [t.original for t in self.targets.values()]
        relinked = self.relinked[phase]
        for caller in find_callers(originals, namespaces):
            if id(caller) not in relinked:
                relinked[id(caller)] = make_relinked(caller)
            built.append((relinked[id(caller)], None))
        link(twin for twin, _ in built)
        return built

    @contextlib.contextmanager
    def phase(
        self, phase: str, namespaces: Iterable[dict], progress: Progress | None = None
    ) -> Iterator[dict[int, CPUDispatcher]]:
        """Swap in the twins of ``phase`` (compiled) and yield original id -> twin."""
        spaces = [ns for ns in namespaces if ns is not None] + module_namespaces()
        built = self._prepare(phase, spaces)
        replacements = {id(twin.original): twin.dispatcher for twin, _ in built}
        swap = Swap()
        try:
            swap.apply(spaces, replacements)
            for twin, src in built:
                if not twin.compiled:
                    compile_like_original(twin, src, progress)
            yield replacements
        finally:
            swap.restore()

    def take_counts(self, phase: str) -> dict[int, np.ndarray]:
        """Counters of ``phase`` for every target (copied), then zeroed."""
        taken = {}
        for key, target in self.targets.items():
            counters = target.counters[phase]
            taken[key] = counters.copy()
            counters[:] = 0
        return taken
