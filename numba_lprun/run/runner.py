"""Build the twins of each phase and run a call or statement on them.

A profiled function is a *target*, keyed like line_profiler keys functions
(filename, first line, qualified name); it owns the rewritten sources and counter
arrays of its two twins (plain and instrumented), which live as long as the
runner, so twins compile once and are reused by later runs. Each phase swaps the
twins in, runs, and restores the namespaces in a ``finally``.

A statement may define jitted functions itself (a ``%%nlprun`` cell): each phase
then *adopts* the fresh dispatcher the statement just defined, under the same key.
"""

from __future__ import annotations

import contextlib
import inspect
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numba.core import event
from numba.core.errors import NumbaDebugInfoWarning
from numba.core.registry import CPUDispatcher

from ..instrument import probes as P
from ..instrument.kinds import owning_jitclass, templates_holding
from ..instrument.rewrite import Rewritten, instrument
from ..instrument.rewrite_parallel import add_prange_flushes
from ..instrument.source import FunctionSource, read_source
from ..instrument.twins import Twin, compile_like_original, link, make_relinked, make_twin, objmode_names
from ..instrument.ufuncs import is_kernel_object
from .jitclasses import (
    box_properties,
    class_namespaces,
    entry_points,
    forget_bound_methods,
    fresh_property,
    instance_type_names,
    uses_instances,
)
from .overloads import overloaded_functions, swap_implementations
from .reach import Swap, ctrl_c_deferred, find_callers, module_namespaces, reaches

PLAIN, INSTRUMENTED = "plain", "instrumented"
Progress = Callable[[str], None]


class CompileHooks(Protocol):
    def pause(self) -> None: ...
    def resume(self) -> None: ...


Key = tuple[str, int, str]


@dataclass
class Target:
    """A profiled function: its source, rewrites, counters and twins."""

    original: CPUDispatcher
    source: FunctionSource
    rewrites: dict[str, Rewritten]
    counters: dict[str, np.ndarray]
    twins: dict[str, Twin] = field(default_factory=dict)
    links: dict[str, frozenset] = field(default_factory=dict)  # phase -> callee twins it was linked with
    owner: type | None = None  # the jitclass it is a member of (found before any swap)
    templates: list[type] = field(default_factory=list)  # @overload templates holding it
    atomic: dict[str, bool] = field(default_factory=dict)  # phase -> its twin's counters are atomic

    @property
    def rows(self) -> list[int]:
        return self.rewrites[INSTRUMENTED].rows


def runs_concurrently(dispatcher: object) -> bool:
    """Whether calls of ``dispatcher`` may run on several threads at once.

    ``parallel=True`` code runs its ``prange`` bodies on worker threads, and a
    ``nogil=True`` function can be called from several Python threads at the same
    time (a thread pool): in both its counters need atomic updates, or hits are lost.
    """
    if is_kernel_object(dispatcher):  # NumPy runs ufunc loops without the GIL; stencils go in prange
        return True
    options = getattr(dispatcher, "targetoptions", None) or {}
    return bool(options.get("parallel") or options.get("nogil"))


def _twin_for(target: Target, phase: str, clock: str, timing: bool, concurrent: bool) -> Twin:
    rewritten = target.rewrites[phase]
    counters = target.counters[phase]
    cfg = P.ProbeConfig(
        address=counters.ctypes.data,
        n_lines=len(rewritten.rows),
        clock=clock,
        timing=timing and phase == INSTRUMENTED,
        atomic=concurrent or runs_concurrently(target.original),
        suspends=bool(target.source.py_func.__code__.co_flags & inspect.CO_GENERATOR),
    )
    extra = P.make_probes(cfg)
    extra[P.PYHIT] = P.make_python_hit(counters)
    return make_twin(target.original, target.source, rewritten.tree, extra, phase, line_tables=True)


class CompileWatcher(event.Listener):
    """Numba compile events during a phase: progress messages and self time per dispatcher.

    A compile can trigger others (a caller compiles its callees), so each
    dispatcher is charged its own time only.
    """

    def __init__(self, phase: str, progress: Progress | None, paused: CompileHooks | None = None):
        self.phase = phase
        self.progress = progress
        self.paused = paused  # told when compiling starts and ends (the sampler pauses)
        self.seconds: dict[int, float] = {}
        self._stack: list[list] = []  # [dispatcher id, start, time spent in nested compiles]

    def on_start(self, ev: event.Event) -> None:
        data = ev.data or {}
        disp = data.get("dispatcher")
        if self.progress is not None and disp is not None:
            args = ", ".join(str(a) for a in data.get("args") or ())
            self.progress(f"compiling {disp.py_func.__qualname__}({args}) for the {self.phase} run")
        if not self._stack and self.paused is not None:
            self.paused.pause()
        self._stack.append([id(disp), time.perf_counter(), 0.0])

    def on_end(self, ev: event.Event) -> None:
        if not self._stack:
            return
        key, start, nested = self._stack.pop()
        spent = time.perf_counter() - start
        self.seconds[key] = self.seconds.get(key, 0.0) + spent - nested
        if self._stack:
            self._stack[-1][2] += spent
        elif self.paused is not None:
            self.paused.resume()


@dataclass
class PhaseRun:
    """The twins swapped in for one phase; ``adopt`` adds a function defined meanwhile."""

    runner: Runner
    phase: str
    namespaces: list[dict]
    swap: Swap
    progress: Progress | None
    replacements: dict[int, CPUDispatcher] = field(default_factory=dict)

    def add_namespace(self, namespace: dict) -> None:
        """Also swap (and later restore) bindings in ``namespace`` (made during the run)."""
        if all(ns is not namespace for ns in self.namespaces):
            self.namespaces.append(namespace)
            self.swap.apply([namespace], self.replacements)

    def drop_namespace(self, namespace: dict) -> None:
        """Put back the bindings swapped in ``namespace`` and stop tracking it (its run is over)."""
        self.swap.restore(namespace)
        self.namespaces[:] = [ns for ns in self.namespaces if ns is not namespace]

    def adopt(self, dispatcher: CPUDispatcher) -> Target:
        """Profile ``dispatcher`` from now on in this phase (it has not run yet).

        A dispatcher defined again by a repeated run (same code) reuses the twins
        built for the previous definition.
        """
        target = self.runner.add(dispatcher)
        if self.phase not in target.twins:
            self.start(self.runner.build(self.phase, [target], self.namespaces))
        elif id(dispatcher) not in self.replacements:
            self.start([(target.twins[self.phase], target.source)])
        return target

    def start(self, built: list[tuple[Twin, FunctionSource | None]]) -> None:
        new = {id(twin.original): twin.dispatcher for twin, _ in built}
        self.replacements.update(new)
        self.swap.apply(self.namespaces, new)
        self.swap.redirect([twin.original for twin, _ in built], new)
        for twin, src in built:
            if not twin.compiled:
                compile_like_original(twin, src)


def _new_target(dispatcher: CPUDispatcher, source: FunctionSource) -> Target:
    names = objmode_names(source.py_func)
    rewrites = {
        INSTRUMENTED: instrument(source.tree, lines=True, objmode_names=names),
        PLAIN: instrument(source.tree, lines=False, objmode_names=names),
    }
    add_prange_flushes(rewrites[INSTRUMENTED].tree)
    counters = {phase: P.new_counters(len(r.rows)) for phase, r in rewrites.items()}
    target = Target(dispatcher, source, rewrites, counters, owner=owning_jitclass(dispatcher))
    target.templates = templates_holding(dispatcher)
    return target


#: Where a dispatcher keeps its targets (rewrites, counters, compiled twins) between profiles.
_TWIN_CACHE = "_numba_lprun_targets"


def _cached(dispatcher: CPUDispatcher, key: tuple) -> Target | None:
    """The target built for ``dispatcher`` by an earlier profiler, if any.

    Twins are kept on the dispatcher itself, so they live exactly as long as the
    user's function: a second ``%nlprun`` of an unchanged function compiles
    nothing (each twin took 0.1-1 s to compile), and when the function is
    garbage-collected its twins and counters go with it. The source is read
    again each time: an edited function defines a new dispatcher anyway.
    """
    return getattr(dispatcher, "__dict__", {}).get(_TWIN_CACHE, {}).get(key)


def _cache(dispatcher: CPUDispatcher, key: tuple, target: Target) -> None:
    """Keep ``target`` on ``dispatcher``. Ufuncs and stencils keep nothing (their twins
    are rebuilt per profiler): the object the user holds is left exactly as it was."""
    attrs = getattr(dispatcher, "__dict__", None)
    if isinstance(attrs, dict) and not is_kernel_object(dispatcher):
        attrs.setdefault(_TWIN_CACHE, {})[key] = target


def _uncache(dispatcher: CPUDispatcher, key: tuple) -> None:
    attrs = getattr(dispatcher, "__dict__", None)
    if isinstance(attrs, dict):
        attrs.get(_TWIN_CACHE, {}).pop(key, None)


@dataclass
class Runner:
    """Targets and twins for one profiler; runs phases."""

    clock: str
    timing: bool = True
    targets: dict[Key, Target] = field(default_factory=dict)
    relinked: dict[str, dict[int, Twin]] = field(default_factory=lambda: {PLAIN: {}, INSTRUMENTED: {}})
    compile_seconds: dict[int, float] = field(default_factory=dict)  # id(twin) -> compiled by this runner
    properties: dict[tuple[str, int, str], property] = field(default_factory=dict)  # jitclass boxes
    users: dict[int, tuple] = field(default_factory=dict)  # see _uses

    def add(self, dispatcher: object) -> Target:
        """Make ``dispatcher`` a target (a new dispatcher for a known key replaces the old one)."""
        for target in self.targets.values():
            if target.original is dispatcher:
                return target
        source = read_source(dispatcher)
        existing = self.targets.get(source.key)
        if existing is not None:
            same_code = existing.source.py_func.__code__ is source.py_func.__code__ and getattr(
                existing.original, "targetoptions", None
            ) == getattr(dispatcher, "targetoptions", None)
            _uncache(existing.original, self.cache_key)
            existing.original, existing.source = dispatcher, source
            if same_code:  # defined again by the same code (a repeated run): keep the twins
                for twin in existing.twins.values():
                    twin.original = dispatcher
                _cache(dispatcher, self.cache_key, existing)
            else:
                existing.twins.clear()
            return existing
        target = _cached(dispatcher, self.cache_key)
        if target is None or target.source.key != source.key:
            target = _new_target(dispatcher, source)
            _cache(dispatcher, self.cache_key, target)
        self.targets[source.key] = target
        return target

    @property
    def cache_key(self) -> tuple[str, bool]:
        """What twins depend on besides the function: the clock and whether lines are timed."""
        return (self.clock, self.timing)

    def build(
        self, phase: str, targets: Iterable[Target], namespaces: list[dict]
    ) -> list[tuple[Twin, FunctionSource | None]]:
        """Twins of ``targets`` and of every jitted caller that reaches one, linked."""
        built: list[tuple[Twin, FunctionSource | None]] = []
        originals = [t.original for t in self.targets.values()]
        classes = self.classes()  # jitclasses with a profiled member: recompiled for the run
        names = instance_type_names(classes)
        overloaded = overloaded_functions(self.templates())
        callers = find_callers(originals + overloaded, namespaces, lambda d: self._uses(d, names))
        profiled = {id(d) for d in originals}
        callers += [d for d in entry_points(classes) if id(d) not in profiled]
        callers = list({id(d): d for d in callers}.values())
        # a callee runs without the GIL when a nogil (or parallel) caller reaches it
        concurrent = any(runs_concurrently(c) for c in callers)
        targets = list(targets)
        for target in targets:
            atomic = concurrent or runs_concurrently(target.original)
            if phase in target.twins and target.atomic.get(phase) != atomic:
                del target.twins[phase]  # kept from a profile whose callers ran on one thread at a time
            if phase not in target.twins:
                target.twins[phase] = _twin_for(target, phase, self.clock, self.timing, concurrent)
                target.atomic[phase] = atomic
        self._refresh_stale(phase, concurrent)
        for target in targets:
            built.append((target.twins[phase], target.source))
        relinked = self.relinked[phase]
        for caller in callers:
            if id(caller) not in relinked:
                relinked[id(caller)] = make_relinked(caller)
            built.append((relinked[id(caller)], None))
        everything = [t.twins[phase] for t in self.targets.values() if phase in t.twins]
        link(everything + [twin for twin, _ in built])
        return built

    def _links(self, target: Target, phase: str) -> frozenset[tuple[Key, int]]:
        """The twins of other targets that ``target``'s code calls: (key, id of that twin)."""
        found: set[tuple[Key, int]] = set()
        if not hasattr(target.original, "py_func"):  # a kernel object: its callees are not ours to link
            return frozenset()
        for key, other in self.targets.items():
            if other is target or not reaches(target.original, {id(other.original): other.original}):
                continue
            twin = other.twins.get(phase)
            found.add((key, id(twin.dispatcher) if twin is not None else 0))
        return frozenset(found)

    def _refresh_stale(self, phase: str, concurrent: bool) -> None:
        """Replace the twins that were linked with other callee twins than this runner's.

        A compiled twin calls the callee twins it was linked with when it
        compiled. Twins are kept between profilers (on the dispatcher), so a twin
        from an earlier profile is reused only if the profiled functions it calls
        have the same twins now; otherwise it would count into another profile's
        counters, or miss this one's. Replacing one twin can make its callers
        stale in turn, hence the loop (new twins compile later, when started).
        """
        for _ in range(len(self.targets) + 1):
            stale = [
                t
                for t in self.targets.values()
                if phase in t.twins
                and t.twins[phase].compiled
                and t.links.get(phase) != self._links(t, phase)
            ]
            if not stale:
                break
            for target in stale:
                target.twins[phase] = _twin_for(target, phase, self.clock, self.timing, concurrent)
        for target in self.targets.values():
            if phase in target.twins:
                target.links[phase] = self._links(target, phase)

    @contextlib.contextmanager
    def phase(
        self,
        phase: str,
        namespaces: Iterable[dict],
        progress: Progress | None = None,
        paused: CompileHooks | None = None,
    ) -> Iterator[PhaseRun]:
        """Swap in the (compiled) twins of ``phase``; restore every namespace afterwards."""
        spaces = [ns for ns in namespaces if ns is not None] + module_namespaces()
        spaces += class_namespaces(self.classes())
        run = PhaseRun(self, phase, spaces, Swap(), progress)
        watcher = CompileWatcher(phase, progress, paused)
        try:
            with event.install_listener("numba:compile", watcher), warnings.catch_warnings():
                # line tables of exec'd twins (and their parfor workers): "could not find source"
                warnings.simplefilter("ignore", NumbaDebugInfoWarning)
                with ctrl_c_deferred():  # a Ctrl-C inside LLVM's callbacks would be lost
                    forget_bound_methods(self.classes())
                    built = self.build(phase, list(self.targets.values()), spaces)
                    twins = {t.source.py_func.__code__: t.twins[phase].code for t in self.targets.values()}
                    swap_implementations(self.templates(), twins, run.swap)
                    run.start(built)
                    self._swap_box_properties(phase, run.swap)
                for target in self.targets.values():  # counters are shared with earlier profilers
                    target.counters[phase][:] = 0
                yield run
        finally:
            run.swap.restore()
            forget_bound_methods(self.classes())
            for twin in self.twins(phase):
                spent = watcher.seconds.get(id(twin.dispatcher), 0.0)
                twin.compile_seconds += spent
                self.compile_seconds[id(twin)] = self.compile_seconds.get(id(twin), 0.0) + spent

    def _uses(self, dispatcher: CPUDispatcher, names: list[str]) -> bool:
        """``uses_instances``, remembered per dispatcher until it compiles something new:
        a program has many jitted functions, and each phase asks again."""
        if not names:
            return False
        state = (len(dispatcher.overloads), tuple(names))
        seen = self.users.get(id(dispatcher))
        if seen is None or seen[0] is not dispatcher or seen[1] != state:
            seen = self.users[id(dispatcher)] = (dispatcher, state, uses_instances(dispatcher, names))
        return seen[2]

    def templates(self) -> list[type]:
        """The @overload/@register_jitable templates holding a profiled implementation."""
        found = {id(t): t for target in self.targets.values() for t in target.templates}
        return list(found.values())

    def classes(self) -> list[type]:
        """The jitclasses with a profiled member."""
        return list({id(t.owner): t.owner for t in self.targets.values() if t.owner is not None}.values())

    def _swap_box_properties(self, phase: str, swap: Swap) -> None:
        """Python-level property access of profiled jitclasses reaches the twins (see jitclasses)."""
        for box, name, old in box_properties(self.classes()):
            key = (phase, id(box), name)
            if key not in self.properties:
                self.properties[key] = fresh_property(box._numba_type_, name, old)
            swap.set_attribute(box, name, self.properties[key])

    def twins(self, phase: str) -> list[Twin]:
        made = [t.twins[phase] for t in self.targets.values() if phase in t.twins]
        return made + list(self.relinked[phase].values())

    def take_counts(self, phase: str) -> dict[Key, np.ndarray]:
        """Counters of ``phase`` for every target (copied), then zeroed."""
        taken = {}
        for key, target in self.targets.items():
            counters = target.counters[phase]
            taken[key] = counters.copy()
            counters[:] = 0
        return taken
