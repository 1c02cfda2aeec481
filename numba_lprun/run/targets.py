"""A profiled function (a *target*): its rewritten source, counters and twins.

Three twins can stand in for a function, one per kind of run:

* ``plain``: the original's code with line tables and two probes (entry and
  return) that time each call: the optimized code, for the overhead figure and
  for sampled repeats;
* ``counting``: a hit counter per line event, kept in registers and added up at
  return (no clock reads, so the optimizer is barely disturbed): the user's run;
* ``probed``: a clock probe per line event (``--probes``, or where no sampler
  can run).

Targets are kept on the profiled dispatcher itself, so they live exactly as long
as the user's function: a second profile of an unchanged function compiles
nothing, and when the function is garbage-collected its twins go with it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from ..instrument import probes as P
from ..instrument.function_kinds import treated_as
from ..instrument.profilable import owning_jitclass, templates_holding
from ..instrument.rewrite import Rewritten, instrument
from ..instrument.rewrite_parallel import add_prange_flushes
from ..instrument.source import FunctionSource
from ..instrument.twins import Twin, make_twin, objmode_names
from ..internals import CPUDispatcher
from .measurements import COUNTING, PLAIN, PROBED, FunctionCounts, Key
from .reach import calls_itself, reached_from

TWIN_KINDS = (PLAIN, COUNTING, PROBED)
LINES = "lines"  # the rewrite with a probe per line event (counting and probed twins share it)


@dataclass(frozen=True)
class TwinSpec:
    """How a twin is built beyond its kind (``build_twin``; ``Target.built_as`` checks a kept one).

    ``concurrent``: the code may run on several threads at once (atomic counters, see
    ``atomic_targets``); ``shows_times``: the profile shows times (False with ``--hits``: no
    clock is read at all); ``times_calls``: a call's entry and exit read the clock (False for a
    helper called from jitted code, see ``called_from_jitted``, and a stencil's kernel)."""

    concurrent: bool = False
    shows_times: bool = True
    times_calls: bool = True


@dataclass(frozen=True)
class _Variant:
    """A compiled twin set aside for a later profile that builds it the same way
    (``Target.take_built``): (kind, concurrent, clocks), the twin, the counter table its code
    adds to, and the callee twins it was linked with."""

    key: tuple[str, bool, tuple[bool, bool]]
    twin: Twin
    counters: P.CounterTable
    links: frozenset | None


@dataclass(eq=False)
class Target:
    """A profiled function: its source, rewrites, counters and twins (equal only to itself, and
    hashed so: kept in sets and dicts by identity)."""

    original: CPUDispatcher
    source: FunctionSource
    rewrites: dict[str, Rewritten]  # PLAIN or LINES -> rewritten def
    counters: dict[str, P.CounterTable]  # twin kind -> its counters
    twins: dict[str, Twin] = field(default_factory=dict)
    links: dict[str, frozenset] = field(default_factory=dict)  # kind -> callee twins it was linked with
    owner: type | None = None  # the jitclass it is a member of (found before any swap)
    templates: list[type] = field(default_factory=list)  # @overload templates holding it
    atomic: dict[str, bool] = field(default_factory=dict)  # kind -> its twin's counters are atomic
    clocks: dict[str, tuple[bool, bool]] = field(default_factory=dict)  # kind -> clock per (line, call)
    set_aside: dict[tuple, _Variant] = field(default_factory=dict)  # see ``take_built``
    builds_read: dict = field(default_factory=dict)  # ``callees_faster_in_copies``' memo for the original

    def built_as(self, kind: str, spec: TwinSpec) -> bool:
        """Whether the kept twin of ``kind`` is the one ``build_twin`` would build now."""
        return (
            kind in self.twins
            and self.atomic.get(kind) == spec.concurrent
            and self.clocks.get(kind) == _clocks(self, kind, spec)
        )

    def take_built(self, kind: str, spec: TwinSpec) -> bool:
        """Make the twin of ``kind`` built earlier as ``spec`` the current one again, if one was
        set aside (``build_twin`` sets the current one aside when it builds another): a session
        that switches between ``--hits`` and timed profiles, or profiles a helper with and
        without its parallel caller, compiles each twin once (a parallel twin takes about a
        second to compile; a serial one reloads from the twin cache). It comes back with its own
        counter table (its code adds there) and the links it compiled with, which
        ``Runner._refresh_stale`` checks as for any kept twin."""
        variant = self.set_aside.get((kind, spec.concurrent, _clocks(self, kind, spec)))
        if variant is None or not variant.twin.has_code:
            return False
        current, table = self.counters[kind], variant.counters
        if table is not current and table not in current.earlier:  # not read with the rest: build afresh
            return False
        self.set_current_aside(kind)
        self.counters[kind], self.twins[kind] = current.succeeded(table.stripes), variant.twin
        self.atomic[kind], self.clocks[kind] = variant.key[1], variant.key[2]
        if variant.links is None:
            self.links.pop(kind, None)
        else:
            self.links[kind] = variant.links
        return True

    def set_current_aside(self, kind: str) -> None:
        """Keep the current compiled twin of ``kind`` for ``take_built`` (``build_twin`` replaces it)."""
        twin = self.twins.get(kind)
        if twin is not None and twin.has_code:  # one never compiled costs nothing to build again
            key = (kind, self.atomic[kind], self.clocks[kind])
            self.set_aside[key] = _Variant(key, twin, self.counters[kind], self.links.get(kind))

    def forget_aside(self, twin: Twin) -> None:
        """Drop ``twin`` from the twins set aside: it was made to compile as another
        (``compile_in_place``), so it is no longer what it was built as."""
        for key in [k for k, v in self.set_aside.items() if v.twin is twin]:
            del self.set_aside[key]

    @property
    def key(self) -> Key:
        return self.source.key

    @property
    def rows(self) -> list[int]:
        return self.rewrites[LINES].rows

    def rewrite(self, kind: str) -> Rewritten:
        return self.rewrites[PLAIN if kind == PLAIN else LINES]


def runs_concurrently(dispatcher: object) -> bool:
    """Whether calls of ``dispatcher`` may run on several threads at once.

    ``parallel=True`` code runs its ``prange`` bodies on worker threads, and a
    ``nogil=True`` function can be called from several Python threads at the same
    time (a thread pool): in both its counters need atomic updates, or hits are lost. NumPy
    runs a ufunc's loops without the GIL; a stencil called from Python holds it, and in a
    parallel caller it is reached from that caller (``atomic_targets``). See ``function_kinds``.
    """
    return treated_as(dispatcher).concurrent(dispatcher)


def may_run_on_threads(dispatcher: object) -> bool:
    """Whether ``dispatcher``'s code may run on Numba's worker threads in some run (so the
    sampler watches every thread and the snapshot takes their random states): a concurrent
    function, or a stencil, which a ``parallel=True`` caller inlines into its loops."""
    return treated_as(dispatcher).may_run_on_threads(dispatcher)


def _closure(py_func) -> tuple[int, ...]:
    """Identities of what a function closes over: a twin is built with those very values
    (a closure made again with other values, ``make_scaler(3.0)``, needs new twins)."""
    out = []
    for cell in py_func.__closure__ or ():
        try:
            out.append(id(cell.cell_contents))
        except ValueError:
            out.append(0)
    return tuple(out)


def defined_alike(target: Target, dispatcher: object, source: FunctionSource) -> bool:
    """Whether ``dispatcher`` was defined by the same code, closure and options as the
    target's original (defined again by a repeated run): its twins can be kept."""
    return (
        target.source.py_func.__code__ is source.py_func.__code__
        and _closure(target.source.py_func) == _closure(source.py_func)
        and getattr(target.original, "targetoptions", None) == getattr(dispatcher, "targetoptions", None)
    )


def defined_again(earlier: list[Target], dispatcher: object, source: FunctionSource) -> Target | None:
    """The target ``dispatcher`` replaces, of those made before this phase (``earlier``): one
    of the same source and options whose Python function is another object (a statement run
    again defines its functions again). A second dispatcher of a Python function, or one
    made beside it in the same phase, is a function of its own."""
    options = getattr(dispatcher, "targetoptions", None)
    for target in earlier:
        if (
            target.source.key == source.key
            and target.source.py_func is not source.py_func
            and getattr(target.original, "targetoptions", None) == options
        ):
            return target
    return None


def redefine(target: Target, dispatcher: object, source: FunctionSource, clock: str) -> None:
    """Make ``dispatcher`` (defined again) ``target``'s original, keeping its twins where it
    was defined by the same code."""
    same_code = defined_alike(target, dispatcher, source)
    drop_target(target.original, clock)
    target.original, target.source = dispatcher, source
    target.owner = owning_jitclass(dispatcher)  # a class defined again is a new class
    target.templates = templates_holding(dispatcher)
    if same_code:  # defined again by the same code (a repeated run): keep the twins
        for twin in target.twins.values():
            twin.original = dispatcher
        keep_target(dispatcher, clock, target)
    else:
        target.twins.clear()


def atomic_targets(
    targets: list[Target], callers: list, instance_users: list, class_code: list = ()
) -> set[int]:
    """Identities of the targets' originals whose code may run on several threads at once, so
    whose counters must be atomic: a ``parallel``/``nogil`` function (profiled or not) and every
    target its code reaches, directly or through other jitted functions (a helper called from a
    ``prange`` body runs on every worker), and only those. ``instance_users``: concurrent
    callers handling instances of a jitclass held for the run (``holders``), which reach its
    members unnamed (``class_code``: those members), and what they call."""
    originals = [t.original for t in targets]
    sources = [d for d in originals + callers if runs_concurrently(d)]
    reached = reached_from(sources, originals + callers)
    if instance_users:
        reached |= {id(t.original) for t in targets if t.owner is not None}
        reached |= reached_from(class_code, originals + callers)
    return reached & {id(d) for d in originals}


def called_from_jitted(targets: list[Target], callers: list) -> set[int]:
    """Identities of the targets' originals that other jitted code calls (a profiled caller or
    not): helpers, often inlined into a hot loop, where two clock reads and an update per call
    would cost more than the helper. Their calls are counted, not timed; their time is their
    samples'. So is a function that calls itself (directly or through other jitted code): its
    calls nest, and a clock read at each entry and exit counted each inner call's time again in
    every call around it (``fib(18)``'s total read 2.2 ms for a 20 us call)."""
    originals = [t.original for t in targets]
    called: set[int] = set()
    for func in originals + callers:
        called |= reached_from([func], [d for d in originals if d is not func]) - {id(func)}
    return called | {id(d) for d in originals if inlined_by_numba(d) or calls_itself(d)}


def inlined_by_numba(dispatcher: object) -> bool:
    """Whether Numba may inline ``dispatcher``'s code into its callers before lowering
    (``inline='always'``, or a cost model): an inlined call has no entry or exit of its own
    (a probe at its entry would run once per inlined call, its exit once per caller's call),
    so it is counted, not timed, as a helper is."""
    options = getattr(dispatcher, "targetoptions", None) or {}
    return options.get("inline", "never") != "never"


def twin_specs(
    targets: list[Target], callers: list, instance_users: list, shows_times: bool, class_code: list = ()
) -> dict[Target, TwinSpec]:
    """How each target's twins are built, for ``build_twin`` and ``Target.built_as``. A
    stencil's calls are never timed: its kernel is called once per point of the array."""
    atomic = atomic_targets(targets, callers, instance_users, class_code)
    per_point = {id(t.original) for t in targets if treated_as(t.original).per_point}
    helpers = called_from_jitted(targets, callers) | per_point
    return {
        t: TwinSpec(id(t.original) in atomic, shows_times, times_calls=id(t.original) not in helpers)
        for t in targets
    }


def sampleable(dispatcher: object, inlined_in_parallel: bool = False) -> bool:
    """Whether samples can be mapped to ``dispatcher``'s lines (its twins carry line tables:
    every dispatcher's and stencil's, not a ufunc's). A stencil that a ``parallel=True``
    caller reaches (``inlined_in_parallel``: its counters are atomic) is inlined by Numba's
    parfor pass into that caller's loops, whose line table names none of its lines."""
    return treated_as(dispatcher).sampleable(inlined_in_parallel)


def sampled_lines(target: Target, kind: str) -> bool:
    """Whether ``target``'s twin of ``kind`` is timed by samples where the profile is sampled
    (``sampleable``, as that twin was built)."""
    return sampleable(target.original, target.atomic.get(kind, False))


def unsampled_lines(target: Target, kind: str) -> str:
    """Why no sample maps to the lines of ``target``'s twin of ``kind`` ("": they do; see
    ``sampled_lines``), in the words of the function's kind."""
    return treated_as(target.original).unsampled(target.atomic.get(kind, False))


def new_target(dispatcher: CPUDispatcher, source: FunctionSource) -> Target:
    names = objmode_names(source.py_func)
    rewrites = {
        LINES: instrument(source.tree, lines=True, objmode_names=names),
        PLAIN: instrument(source.tree, lines=False, objmode_names=names),
    }
    add_prange_flushes(rewrites[LINES].tree)
    counters = {
        kind: P.new_counters(len(rewrites[PLAIN if kind == PLAIN else LINES].rows)) for kind in TWIN_KINDS
    }
    target = Target(dispatcher, source, rewrites, counters, owner=owning_jitclass(dispatcher))
    target.templates = templates_holding(dispatcher)
    return target


def _times_lines(target: Target, kind: str, shows_times: bool, concurrent: bool) -> bool:
    """Whether ``kind``'s twin reads the clock on every line: the probed twin does, and so does
    the counting twin of a ufunc, or of a stencil a parallel caller inlines (``concurrent``),
    whose lines no sample maps to (``sampleable``), unless the profile shows no times
    (``shows_times`` False: ``--hits``, where no twin reads the clock at all, not even at each
    call's entry and exit)."""
    timed_by_samples = sampleable(target.original, concurrent)
    return kind == PROBED or (kind == COUNTING and shows_times and not timed_by_samples)


def _clocks(target: Target, kind: str, spec: TwinSpec) -> tuple[bool, bool]:
    """Whether ``kind``'s twin reads the clock (on every line, at each call's entry and exit):
    a call is timed where its lines are, or where times are shown and its calls are timed."""
    lines = _times_lines(target, kind, spec.shows_times, spec.concurrent)
    return lines, lines or (spec.shows_times and spec.times_calls)


def build_twin(target: Target, kind: str, clock: str, spec: TwinSpec) -> Twin:
    """A new (not yet compiled) twin of ``kind`` for ``target``, recorded as built (``built_as``).
    A call whose ``spec`` does not time calls (a helper) reads no clock at entry and exit,
    unless its lines are timed (then the call's time is theirs)."""
    rewritten = target.rewrite(kind)
    atomic = spec.concurrent or runs_concurrently(target.original)
    target.set_current_aside(kind)
    counters = target.counters[kind]
    if counters.stripes != P.stripes_for(atomic):  # per-thread stripes where concurrent
        counters = target.counters[kind] = counters.succeeded(P.stripes_for(atomic))
    timing, call_clock = _clocks(target, kind, spec)
    target.atomic[kind], target.clocks[kind] = spec.concurrent, (timing, call_clock)
    cfg = P.ProbeConfig(
        address=counters.address,
        n_lines=len(rewritten.rows),
        clock=clock,
        timing=timing,
        atomic=atomic,
        suspends=bool(target.source.py_func.__code__.co_flags & inspect.CO_GENERATOR),
        call_clock=call_clock,
        per_point=treated_as(target.original).per_point,
        stripes=counters.stripes,
        counts_calls=kind != PLAIN,  # a plain twin's untimed calls: not counted (``silent``)
    )
    extra = P.make_probes(cfg)
    extra[P.PYHIT] = P.make_python_hit(counters)
    return make_twin(target.original, target.source, rewritten.tree, extra, kind, line_tables=True)


#: Where a dispatcher keeps its targets (rewrites, counters, compiled twins) between profiles.
_TWIN_CACHE = "_numba_lprun_targets"


def _holder(dispatcher: object) -> object:
    """Where a function's targets are kept: on its dispatcher, or for a ufunc on the kernel
    dispatcher Numba keeps inside it (the object the user holds is left exactly as it was).
    A stencil keeps them on itself, as a dispatcher does: rebuilt per profiler, its new twin
    made every jitted caller's twins compile again (2.4 s a profile for a 4-line caller)."""
    return treated_as(dispatcher).holder(dispatcher)


def cached_target(dispatcher: CPUDispatcher, clock: str) -> Target | None:
    """The target built for ``dispatcher`` by an earlier profiler, if any.

    The source is read again each time: an edited function defines a new
    dispatcher anyway.
    """
    found = getattr(_holder(dispatcher), "__dict__", {}).get(_TWIN_CACHE, {}).get(clock)
    return found if found is not None and found.original is dispatcher else None


def keep_target(dispatcher: CPUDispatcher, clock: str, target: Target) -> None:
    """Keep ``target`` where ``dispatcher``'s targets are kept (``_holder``)."""
    attrs = getattr(_holder(dispatcher), "__dict__", None)
    if isinstance(attrs, dict):
        attrs.setdefault(_TWIN_CACHE, {})[clock] = target


def drop_target(dispatcher: CPUDispatcher, clock: str) -> None:
    attrs = getattr(_holder(dispatcher), "__dict__", None)
    if isinstance(attrs, dict):
        attrs.get(_TWIN_CACHE, {}).pop(clock, None)


def counts_of(target: Target, kind: str, keep: bool = False) -> FunctionCounts:
    """The target's counters of ``kind`` as a ``FunctionCounts`` (copied), then zeroed (``keep``:
    left as they are, for a read while the twin may still run)."""
    table = target.counters[kind].read()
    calls, ticks = (int(v) for v in table[-1])
    hits: dict[int, int] = {}
    line_ticks: dict[int, int] = {}
    if kind != PLAIN:
        for row, line in enumerate(target.rows):
            h, t = (int(v) for v in table[row])
            if h:
                hits[line] = hits.get(line, 0) + h
            if t:
                line_ticks[line] = line_ticks.get(line, 0) + t
    if not keep:
        target.counters[kind].zero()
    return FunctionCounts(calls, ticks, hits, line_ticks)
