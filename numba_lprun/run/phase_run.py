"""What one phase swapped in: its twins, the namespaces it changed, and how to undo them.

A statement may define jitted functions itself (a ``%%nlprun`` cell): the phase
then *adopts* the fresh dispatcher the statement just defined, under the same key.
The runner that made the phase does that (``Runner.adopt``, handed in as ``adopting``);
a phase knows nothing of the runner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..instrument.source import FunctionSource
from ..instrument.twins import Twin, compile_like_original
from ..internals import CPUDispatcher
from .compiles import CompileWatcher, Progress
from .reach import Swap, defining_module, twin_entry_points


@dataclass
class PhaseRun:
    """The twins swapped in for one phase; ``adopt`` adds a function defined meanwhile."""

    adopting: Callable[[PhaseRun, tuple[CPUDispatcher, ...]], None]  # ``Runner.adopt``
    kind: str  # the kind of twin this phase runs on
    namespaces: list[dict]  # where jitted callers of the targets are looked for
    internal: list[dict]  # Numba's own member dicts (jitclass types), where twins are swapped in
    swap: Swap
    progress: Progress | None
    statement: list[dict] = field(default_factory=list)  # the statement's own namespaces
    replacements: dict[int, CPUDispatcher] = field(default_factory=dict)
    compiles: CompileWatcher | None = None  # this phase's compile events
    runs_nothing: bool = False  # only compiles twins (``Runner.phase``)
    replaying: bool = False  # replays the user's run's calls: its callers stand (``Runner.build``)
    unprofiled: dict[str, str] = field(default_factory=dict)  # made meanwhile, not profilable: name -> why
    cache_refused: list[str] = field(default_factory=list)  # the program's cache entries it did not write
    on_threads: set = field(default_factory=set)  # targets code compiled meanwhile runs on threads
    retired: list = field(default_factory=list)  # twins built again meanwhile, their old code: kept
    short: dict[str, str] = field(default_factory=dict)  # profiled, hits may be short: name -> why

    def compiling_since(self, since: float) -> float:
        """Seconds this phase spent compiling from ``since`` on (left out of a run's time)."""
        return self.compiles.compiling_since(since) if self.compiles is not None else 0.0

    def faults_compiling_since(self, since: float) -> int:
        """Page faults of this phase's compiles from ``since`` on (left out of a run's faults)."""
        return self.compiles.faults_since(since) if self.compiles is not None else 0

    def add_namespace(self, namespace: dict) -> None:
        """Also look for jitted callers in ``namespace`` (made during the run)."""
        if all(ns is not namespace for ns in self.namespaces):
            self.namespaces.append(namespace)

    def drop_namespace(self, namespace: dict) -> None:
        """Stop looking in ``namespace`` (its run is over)."""
        self.namespaces[:] = [ns for ns in self.namespaces if ns is not namespace]

    def adopt(self, *dispatchers: CPUDispatcher) -> None:
        """Profile ``dispatchers`` from now on in this phase (they have not run yet): the
        runner makes them targets and swaps their twins in (``Runner.adopt``)."""
        self.adopting(self, dispatchers)

    def start(self, built: list[tuple[Twin, FunctionSource | None]]) -> None:
        """Send calls of each original to its twin: the user's names keep the originals
        (``f.py_func``, ``f.overloads``, pickling: all the original's), only their calls
        are redirected; Numba's own member dicts get the twins themselves."""
        new = {id(twin.original): twin.dispatcher for twin, _ in built}
        # a twin built again (``Runner.widen_for``) replaces the one Numba's dicts hold now
        again = {id(self.replacements[key]): twin for key, twin in new.items() if key in self.replacements}
        self.replacements.update(new)
        self.swap.apply(self.internal, {**new, **again})
        self.swap.redirect([twin.original for twin, _ in built], new)
        for twin, src in built:
            if not twin.compiled:
                compile_like_original(twin, src)
        # entry points are looked for where programs keep them: the statement's names and the
        # profiled functions' modules (every module's globals would cost 40 ms a run)
        spaces = self.statement + [
            vars(module) for module in {id(m): m for m in map(defining_module, built)}.values() if module
        ]
        self.swap.handed_to = spaces
        entry_points = twin_entry_points(twin for twin, _ in built)
        if entry_points:
            self.swap.apply(spaces, entry_points)
