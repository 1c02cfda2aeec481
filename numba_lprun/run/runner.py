"""Swap a phase's twins in, run a call or statement on them, and put everything back.

A phase runs on one kind of twin (``targets``: plain, counting or probed): it
builds and links the twins of every target and of every jitted caller that
reaches one, swaps them in, runs, and restores the namespaces in a ``finally``.

A statement may define jitted functions itself (a ``%%nlprun`` cell): each phase
then *adopts* the fresh dispatcher the statement just defined (``Runner.adopt``: the
phase's ``PhaseRun`` is handed that one function, and holds no runner).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace

from ..errors import NotProfilableError, TwinCompileError
from ..instrument.counter_slots import SYMBOL_PREFIX
from ..instrument.function_kinds import treated_as
from ..instrument.source import FunctionSource, describe, read_source
from ..instrument.twins import Twin, compile_in_place, compile_like, link, make_relinked
from ..internals import (
    CPUDispatcher,
    forget_profiler_code,
    functions_typed,
    guarded_program_caches,
    ignore_debug_info_warnings,
    implementations_cached,
    is_dispatcher,
    is_twin,
    is_ufunc_kernel,
    jitclasses,
)
from ..interrupts import ctrl_c_deferred
from .compiles import CompileHooks, CompileWatcher, Progress
from .facts import target_facts
from .holders import HOLDERS
from .jitclasses import uses_instances
from .measurements import PLAIN, FunctionCounts, FunctionFacts, Key
from .naming import bound_name, options_of, sibling_key
from .phase_run import PhaseRun
from .reach import (
    Swap,
    code_reaches,
    find_callers,
    module_namespaces,
    named_ids,
    reached_values,
    reaches_through_names,
)
from .targets import (
    TWIN_KINDS,
    Target,
    TwinSpec,
    build_twin,
    cached_target,
    counts_of,
    defined_again,
    keep_target,
    may_run_on_threads,
    new_target,
    redefine,
    runs_concurrently,
    twin_specs,
)

Where = tuple[object, str, int, int]  # code (dispatcher), filename, first line of the body, last line


def _must_compile(py_func: object, run: PhaseRun) -> bool:
    """Whether code Numba would load from a cache for ``py_func`` bypasses a twin: its code names
    a profiled function, or a twin (a relinked caller's copy, whose own ``cache=True`` would load
    the original's code, linked to the profiled function's own), directly or through others."""
    reached = {**run.replacements, **{id(twin): twin for twin in run.replacements.values()}}
    return reaches_through_names(py_func, reached)


@dataclass
class Runner:
    """The targets and twins of one profiler; runs phases on them."""

    clock: str
    shows_times: bool = True  # False: hits only (--hits), so no twin reads the clock (targets._times_lines)
    # Keyed by the objects themselves (targets, twins, dispatchers and classes hash by identity),
    # never by id(): an id outlives its object, and a later one may take it.
    targets: dict[Key, Target] = field(default_factory=dict)
    relinked: dict[str, dict[object, Twin]] = field(default_factory=lambda: {k: {} for k in TWIN_KINDS})
    compile_seconds: dict[Twin, float] = field(default_factory=dict)  # twin -> compiled by this runner
    memos: dict[str, dict] = field(default_factory=lambda: {h.name: {} for h in HOLDERS})  # see holders
    users: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary)  # see _uses
    callers: list = field(default_factory=list)  # the jitted callers the last build found (see phase)
    used: set[str] = field(default_factory=set)  # kinds of twin this runner's phases ran on
    adopted: set[Target] = field(default_factory=set)  # targets a statement defines (made each run)
    generation: int = 0  # phases started so far: a dispatcher made in a later one may define one again
    born: dict[Target, int] = field(default_factory=dict)  # target -> generation its original came in
    given: dict[object, str] = field(default_factory=dict)  # dispatcher -> the name the user gave it
    settled: set[Target] = field(default_factory=set)  # targets whose key was read: fixed
    labels: dict[Target, str] = field(default_factory=dict)  # target -> the last name it was known by
    held_last: tuple = ()  # (what _held's answer depends on, that answer): asked a dozen times a profile

    def add(self, dispatcher: object, name: str | None = None) -> Target:
        """Make ``dispatcher`` a target (``name``: what the user called it), or the target it
        defines again (``defined_again``); a further dispatcher of a profiled Python function
        is a target of its own, keyed apart (``naming``)."""
        if name:
            self.given[dispatcher] = name
        for target in self.targets.values():
            if target.original is dispatcher:
                self._rekey(target)
                return target
        source = read_source(dispatcher)
        earlier = [t for t in self.targets.values() if self.born.get(t, 0) < self.generation]
        existing = defined_again(earlier, dispatcher, source)
        if existing is not None:
            self.born[existing] = self.generation
            redefine(existing, dispatcher, source, self.clock)
            return existing
        target = cached_target(dispatcher, self.clock)
        if target is None or target.source.key != source.key:
            target = new_target(dispatcher, source)
            keep_target(dispatcher, self.clock, target)
        self.targets[self._key_for(target)] = target
        self.born[target] = self.generation
        return target

    def _key_for(self, target: Target, taken: set[Key] | None = None) -> Key:
        """The key of a new target: line_profiler's, unless another dispatcher of its Python
        function has it (see ``naming``)."""
        taken = set(self.targets) if taken is None else taken
        key = target.source.key
        if key not in taken:
            return key
        return sibling_key(key, self.label_of(target), options_of(target.original), taken)

    def label_of(self, target: Target) -> str | None:
        """The name the user gave ``target``'s dispatcher, else the one it is bound to, else the
        last one it was known by (a later run of a statement may have defined it again)."""
        name = self.given.get(target.original) or bound_name(target.original, target.source.py_func)
        if name is not None:
            self.labels[target] = name
        return name or self.labels.get(target)

    def _rekey(self, target: Target) -> None:
        """Key a further dispatcher by the name it got since it was added (a statement binds
        a name after the decorator made the function), while its counts are still unread."""
        old = next(k for k, t in self.targets.items() if t is target)
        self.label_of(target)
        if old == target.source.key or target in self.settled:
            return
        new = self._key_for(target, {k for k in self.targets if k != old})
        if new != old:
            items = [(new if k == old else k, t) for k, t in self.targets.items()]
            self.targets.clear()
            self.targets.update(items)

    def build(
        self,
        kind: str,
        targets: Iterable[Target],
        namespaces: list[dict],
        callers: list | None = None,
        searched: bool = False,
        on_threads: Collection[Target] = (),
    ) -> list[tuple[Twin, FunctionSource | None]]:
        """Twins of ``targets`` and of every jitted caller that reaches one (``callers``, or
        those found in ``namespaces`` and among the live objects: ``searched``, the last search's
        callers stand for these, as in a replay of the same calls), linked. ``on_threads``: targets
        that code compiled during the phase runs on several threads (``widen_for``).

        A target built earlier whose code now runs on several threads (its parallel caller
        was defined after it) is built again with atomic counters: its hits from two threads
        would otherwise be added over each other (half a ``prange`` helper's calls lost)."""
        built: list[tuple[Twin, FunctionSource | None]] = []
        originals = [t.original for t in self.targets.values()]
        holders = self._held()
        names = [name for holder, held in holders for name in holder.instance_types(held)]
        attributes = [a for holder, held in holders for a in holder.attributes(held)]
        if callers is None:
            named = [obj for holder, held in holders for obj in holder.named(held)]
            elsewhere = self.callers if searched else None
            callers = find_callers(
                originals + named, namespaces, lambda d: self._uses(d, names, attributes), elsewhere
            )
            profiled = set(originals)
            entries = [d for holder, held in holders for d in holder.entry_points(held)]
            callers += [d for d in entries if d not in profiled]  # a held class's code: relinked
            callers = self.callers = list(dict.fromkeys(callers))
        specs = self._specs(callers, names, attributes)
        for target in on_threads:  # reached from threads, so called from jitted code
            specs[target] = replace(specs[target], concurrent=True, times_calls=False)
        targets = list(targets)
        targets += [
            t
            for t in self.targets.values()
            if kind in t.twins and t not in targets and specs[t].concurrent and not t.atomic.get(kind)
        ]
        for target in targets:
            spec = specs[target]
            if not target.built_as(kind, spec) and not target.take_built(kind, spec):  # another kind's
                target.twins[kind] = build_twin(target, kind, self.clock, spec)
        self._refresh_stale(kind, specs)
        for target in targets:
            built.append((target.twins[kind], target.source))
        relinked = self.relinked[kind]
        kernels = [c for c in callers if treated_as(c).kernel]  # ufuncs: rebuilt once the rest are linked
        for caller in callers:
            if caller not in relinked and not treated_as(caller).kernel:
                relinked[caller] = make_relinked(caller)
        everything = [t.twins[kind] for t in self.targets.values() if kind in t.twins]
        plain_callers = [relinked[c] for c in callers if c in relinked]
        link(everything + [twin for twin, _ in built] + plain_callers)
        for caller in kernels:
            if caller not in relinked:
                relinked[caller] = make_relinked(caller, everything + plain_callers)
        built += [(relinked[caller], None) for caller in callers]
        link(everything + [twin for twin, _ in built])
        return built

    def _specs(
        self, callers: list[CPUDispatcher], names: list[str], attributes: list[str] = ()
    ) -> dict[Target, TwinSpec]:
        """How each target's twins are built (``targets.twin_specs``)."""
        users = [d for d in callers if runs_concurrently(d) and self._uses(d, names, attributes)]
        class_code = [d for holder, held in self._held() for d in holder.entry_points(held)] if users else []
        return twin_specs(list(self.targets.values()), callers, users, self.shows_times, class_code)

    def _links(self, target: Target, kind: str) -> frozenset[tuple[Key, object]]:
        """The twins of other targets that ``target``'s code calls: (source key, that twin's
        dispatcher, or None where it has none yet). A target held by something the code names
        (an ``@overload``'s implementation, by its templates: the overloaded function is named)
        is called too: a twin linked while it was not profiled calls its original."""
        found: set[tuple[Key, object]] = set()
        if treated_as(target.original).kernel:  # a ufunc, a stencil: its callees are not ours to link
            return frozenset()
        named = named_ids(target.original)  # once, not once per other target: N^2 reads per adopt
        for other in self.targets.values():
            if other is target or not (id(other.original) in named or self._names_holder(other, named)):
                continue
            twin = other.twins.get(kind)
            found.add((other.source.key, twin.dispatcher if twin is not None else None))
        return frozenset(found)

    @staticmethod
    def _names_holder(target: Target, named: set[int]) -> bool:
        """Whether code naming ``named`` reaches ``target`` through a holder (``holders``)."""
        for holder in HOLDERS:
            held = list(dict.fromkeys(holder.of(target)))  # what holds it, not what calls it
            if held and any(id(value) in named for value in holder.named(held)):
                return True
        return False

    def _refresh_stale(self, kind: str, specs: dict[Target, TwinSpec]) -> None:
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
                if kind in t.twins and t.twins[kind].has_code and t.links.get(kind) != self._links(t, kind)
            ]
            if not stale:
                break
            for target in stale:
                target.twins[kind] = build_twin(target, kind, self.clock, specs[target])
        for target in self.targets.values():
            if kind in target.twins:
                target.links[kind] = self._links(target, kind)

    @contextlib.contextmanager
    def phase(
        self,
        kind: str,
        namespaces: Iterable[dict],
        progress: Progress | None = None,
        paused: CompileHooks | None = None,
        runs_nothing: bool = False,
        recorder: Callable[[object, object, tuple, dict], object] | None = None,
        replaying: bool = False,
    ) -> Iterator[PhaseRun]:
        """Swap in the (compiled) twins of ``kind``; restore every namespace afterwards.
        ``runs_nothing``: a phase that only compiles twins like the last phase's (no user code
        ran meanwhile), whose callers it takes instead of searching every module again.
        ``recorder`` makes every Python-level call of a redirected function (the user's run);
        ``replaying``: the phase replays recorded calls, so the functions a statement defined
        (adopted in the user's run, not defined again now) are swapped too."""
        statement = [ns for ns in namespaces if ns is not None]
        spaces = statement + ([] if runs_nothing else module_namespaces())
        run = PhaseRun(
            adopting=self.adopt,
            kind=kind,
            namespaces=spaces,
            internal=[],
            swap=Swap(recorder=recorder),
            progress=progress,
            statement=statement,
            runs_nothing=runs_nothing,
            replaying=replaying,
        )
        self.used.add(kind)
        self.generation += 1
        widen = functools.partial(self.widen_for, run)
        watcher = run.compiles = CompileWatcher(kind, progress, paused, widen)
        # the program's own Numba cache takes nothing linked against a twin, and loads nothing
        # that would bypass one (``internals.program_cache``)
        guard = guarded_program_caches(SYMBOL_PREFIX, lambda f: _must_compile(f, run), run.cache_refused)
        try:
            with watcher.installed(), guard, warnings.catch_warnings():
                # line tables of exec'd twins (and their parfor workers): "could not find source"
                ignore_debug_info_warnings()
                # what a statement defines is defined again by this run, and adopted then: its
                # globals (the statement's imports, say) exist only while the statement runs
                self.switch(run, [t for t in self.targets.values() if replaying or t not in self.adopted])
                for target in self.targets.values():  # counters are shared with earlier profilers
                    target.counters[kind].zero()
                yield run
        finally:
            run.swap.restore()
            run.unprofiled.update(run.swap.fell_back)
            self._forget()
            self._compile_again(watcher)
            for twin in self.twins(kind):
                spent = watcher.seconds.get(twin.dispatcher, 0.0)
                twin.compile_seconds += spent
                self.compile_seconds[twin] = self.compile_seconds.get(twin, 0.0) + spent

    @staticmethod
    def _compile_again(watcher: CompileWatcher) -> None:
        """Make the program's jitted functions that compiled during the phase against a twin (a
        caller first called meanwhile: a redirected function is typed as its twin) compile
        again at their next call, from the program's own code: nothing of the profile stays."""
        for dispatcher in list(watcher.seconds):
            if dispatcher is not None and not is_twin(dispatcher) and is_dispatcher(dispatcher):
                with contextlib.suppress(Exception):
                    forget_profiler_code(dispatcher, SYMBOL_PREFIX)

    def switch(self, run: PhaseRun, targets: list[Target], search: bool = True) -> None:
        """Make calls of ``targets`` (and of everything that reaches them) reach their twins.

        At a phase's start for every target, and again for functions a statement
        defines while it runs; Ctrl-C is held meanwhile (a half-made switch could
        not be undone). What holds a target's code (a jitclass, an overload's
        templates: ``holders``) is swapped by its own strategy.
        """
        with ctrl_c_deferred():  # a Ctrl-C inside LLVM's callbacks would be lost too
            held = self._held()
            for holder, objects in held:
                for ns in holder.namespaces(objects):
                    if all(ns is not known for known in run.internal):
                        run.internal.append(ns)
                        run.namespaces.append(ns)
            self._forget()
            callers = self.callers if run.runs_nothing or not search else None
            built = self.build(run.kind, targets, run.namespaces, callers, run.replaying, run.on_threads)
            kind = run.kind
            # by Python function, not by code: the closures an ``@overload`` builds per argument
            # type share one code object, each with its own cells (its own twin)
            twins = {t.source.py_func: t.twins[kind].code for t in self.targets.values() if kind in t.twins}
            for caller, copy in self.relinked[kind].items():  # an overload's body that calls a target
                if copy.kernel is None and getattr(caller, "py_func", None) is not None:
                    twins.setdefault(caller.py_func, copy.code)
            for holder, objects in held:
                if not holder.after_names:
                    holder.swap_in(objects, twins, run.swap, kind, self.memos[holder.name])
            run.start(built)
            for holder, objects in held:
                if holder.after_names:
                    holder.swap_in(objects, twins, run.swap, kind, self.memos[holder.name])

    def widen_for(self, run: PhaseRun, dispatcher: object, args: tuple = ()) -> None:
        """Before ``dispatcher`` compiles during ``run`` for argument types ``args``: where it
        runs on several threads and its code reaches a target whose twin counts without atomic
        counters (a ``prange`` caller defined or loaded after its helper's twin was built),
        build that twin again with them, so the caller's typing links the new one (``build``'s
        ``on_threads``). Its code reaches a target by name (directly or through the jitted
        functions it names), or, for a jitclass's members, through an instance it is passed or
        makes (its class named): typing alone shows those, so a profiled caller's twin is
        checked too; so is a twin passed to it as an argument (typed as that very dispatcher
        object). The old twin object is made to compile as the new twin (``compile_in_place``),
        so whatever holds it (an argument's type, a closure, a tuple) reaches the new code; an
        original passed (typed before the profile swapped it in the
        program's names) is not counted there, and the profile says its hits may be short
        (``PhaseRun.short``). A ``@vectorize``/``@guvectorize`` kernel counts as running on
        threads (NumPy runs a parallel ufunc's loops on several)."""
        if not runs_concurrently(dispatcher) and not is_ufunc_kernel(dispatcher):
            return
        kind = run.kind
        serial = [t for t in self.targets.values() if kind in t.twins and not t.atomic.get(kind)]
        py_func = getattr(dispatcher, "py_func", None)
        if not serial or py_func is None:
            return
        reached = {id(value) for value in reached_values(py_func)}
        # a function passed to it (``dens(x, g, kernel)``) is typed as the dispatcher it was passed
        # as: a twin passed is built again and then made to compile as the new one, in place
        passed_functions = {id(f) for f in functions_typed(args)}
        passed = {t: t.twins[kind] for t in serial if id(t.twins[kind].dispatcher) in passed_functions}
        for t in serial:
            if id(t.original) in passed_functions:  # the original itself: typed before the profile swapped it
                name = t.source.py_func.__qualname__
                caller = py_func.__qualname__
                run.short[name] = (
                    f"{name} was passed as an argument to {caller}, which runs on several threads, "
                    f"and its counters were made for one: calls made there may be lost (call {name} "
                    f"by its name in {caller}, or run with NUMBA_NUM_THREADS=1 for exact hits)"
                )
        instances = [name for holder, held in self._held() for name in holder.instance_types(held)]
        passed_instance = any(name in str(ty) for ty in args for name in instances)
        stale = [
            t
            for t in serial
            if t in passed
            or id(t.original) in reached
            or id(t.twins[kind].dispatcher) in reached
            or (t.owner is not None and (passed_instance or id(t.owner) in reached))
        ]
        if not stale:
            return
        run.on_threads.update(stale)
        replaced = {t: t.twins[kind] for t in stale}
        # the twins replaced stay alive for the phase: code being typed meanwhile (a caller whose
        # compile started this one) may hold one as a type, which keeps it only weakly
        run.retired += [twin for t in self.targets.values() for twin in t.twins.values()]
        stale_ids = {id(t.original): t for t in stale}
        relinked = self.relinked[kind]
        for caller in [c for c in relinked if code_reaches(c, stale_ids)]:
            del relinked[caller]  # linked the serial twins: relinked again by ``build``
        try:
            self.switch(run, [], search=False)  # the callers known stand: a search would relink this one
        except TwinCompileError as exc:  # its calls fall back to the original, as in ``adopt``
            run.unprofiled[exc.func_name] = str(exc)
        for t, old in replaced.items():
            # whatever holds the old twin (an argument's type, a closure, a tuple, code typed before
            # its callers were relinked) now compiles the new one; its serial code stays alive for
            # the phase (a call may be running it)
            new = t.twins[kind]
            if new is not old and old.kernel is None and new.kernel is None:
                t.forget_aside(old)
                run.retired += compile_in_place(old.dispatcher, new)
        for compiled in list(run.compiles.seconds) if run.compiles is not None else ():
            # compiled during the run against a serial twin (a helper's caller called before the
            # parallel one was defined): compiled again when the parallel caller types its call
            if compiled is not dispatcher and not is_twin(compiled) and is_dispatcher(compiled):
                if code_reaches(compiled, stale_ids):
                    forget_profiler_code(compiled, SYMBOL_PREFIX)

    def adopt(self, run: PhaseRun, dispatchers: Iterable[CPUDispatcher]) -> None:
        """Profile ``dispatchers``, which a statement defined while ``run`` ran (they have not
        run yet), from now on in that phase (``PhaseRun.adopt``). A dispatcher defined again
        by a repeated run (same code, same closure) reuses the twins built for the previous
        definition. One that cannot be profiled (object-mode code) runs as itself, and the
        run says why (``PhaseRun.unprofiled``): the program made it, and must not fail for it."""
        targets = []
        for dispatcher in dispatchers:
            try:
                targets.append(self.add(dispatcher))
            except NotProfilableError as exc:  # it runs as itself: the program never sees the refusal
                run.unprofiled[describe(dispatcher)] = str(exc)
        self.adopted.update(targets)
        fresh = [t for t in targets if run.kind not in t.twins]
        try:
            if fresh:
                self.switch(run, fresh)
            kept = [t for t in targets if t not in fresh and id(t.original) not in run.replacements]
            if kept:
                run.start([(t.twins[run.kind], t.source) for t in kept])
        except TwinCompileError as exc:  # its calls fall back to the original (see internals.redirect)
            run.unprofiled[exc.func_name] = str(exc)

    def _uses(self, dispatcher: CPUDispatcher, names: list[str], attributes: list[str] = ()) -> bool:
        """``uses_instances``, remembered per dispatcher until it compiles something new:
        a program has many jitted functions, and each phase asks again."""
        if not names:
            return False
        state = (len(dispatcher.overloads), tuple(names), tuple(attributes))
        seen = self.users.get(dispatcher)
        if seen is None or seen[0] != state:
            seen = self.users[dispatcher] = (state, uses_instances(dispatcher, names, attributes))
        return seen[1]

    def _held(self) -> list[tuple[object, list]]:
        """(holder, the objects of its kind holding a profiled function, or code that calls one)
        for every holder that has any. Remembered until a target, a jitclass or an overload's
        implementation is added: finding the code that calls a target walks every compiled
        overload's names (6-13 ms with 74 of them, a dozen times a profile)."""
        originals = tuple(t.original for t in self.targets.values())
        state = (originals, implementations_cached(), len(jitclasses()))
        if self.held_last and self.held_last[0] == state:
            return self.held_last[1]
        found = [(holder, holder.held(self.targets.values())) for holder in HOLDERS]
        held = [(holder, objects) for holder, objects in found if objects]
        self.held_last = (state, held)
        return held

    def _forget(self) -> None:
        """What Numba must type afresh after a swap or a restore (``Holder.forget``)."""
        for holder, held in self._held():
            holder.forget(held)

    def runs_on_threads(self) -> bool:
        """Whether a target's code may run on Numba's worker threads (``may_run_on_threads``):
        asked as the run goes, since a script defines its functions as it runs (from the thread
        of a compile's end too: the targets are copied first)."""
        return any(may_run_on_threads(t.original) for t in list(self.targets.values()))

    def twins(self, kind: str) -> list[Twin]:
        made = [t.twins[kind] for t in self.targets.values() if kind in t.twins]
        return made + list(self.relinked[kind].values())

    def compile_like_user(self, user_kind: str) -> None:
        """Compile each plain twin for the signatures the user's twin compiled on its first call
        (an original that had compiled nothing before the profile gives no others), so both
        twins' loops can be compared; a failure only leaves the comparison out."""
        for target in self.targets.values():
            user = target.twins.get(user_kind)
            if user is None or user.kernel is not None:
                continue
            with contextlib.suppress(Exception):
                if PLAIN not in target.twins:  # defined by the statement: no phase switched it
                    atomic = target.atomic.get(user_kind, runs_concurrently(target.original))
                    times_calls = target.clocks.get(user_kind, (False, True))[1]
                    spec = TwinSpec(atomic, self.shows_times, times_calls)  # as the user's
                    target.twins[PLAIN] = build_twin(target, PLAIN, self.clock, spec)
                compile_like(target.twins[PLAIN], user.dispatcher, target.source)

    def take_counts(self, kind: str, keep: bool = False) -> dict[Key, FunctionCounts]:
        """Counters of ``kind`` for every target (copied), then zeroed (``keep``: not zeroed)."""
        self.settled.update(self.targets.values())
        return {key: counts_of(target, kind, keep) for key, target in self.targets.items()}

    def take_totals(self, kind: str) -> list[tuple[Key, int, int]]:
        """Each target's completed calls and their ticks in ``kind``'s twins, then zeroed: the
        cheap read made after every sampled repeat (hits stay in the counters)."""
        out = []
        self.settled.update(self.targets.values())
        for key, target in self.targets.items():
            out.append((key, *target.counters[kind].take_totals()))
        return out

    def relinked_code(self, kind: str) -> list[object]:
        """The dispatchers holding the code of the unprofiled jitted callers relinked to call the
        ``kind`` twins: a profiled function LLVM inlined there runs in that code."""
        return [twin.code for twin in self.relinked[kind].values() if twin.kernel is None]

    def twin_code(self, kind: str) -> dict[Key, Where]:
        """Where each target's twin of ``kind`` keeps its code, for the sampler's line maps."""
        where = {}
        for key, target in self.targets.items():
            twin = target.twins.get(kind)
            if twin is not None:
                last = target.source.first_lineno + len(target.source.lines) - 1
                where[key] = (twin.code, target.source.filename, target.source.body_lineno, last)
        return where

    def facts(self, user_kind: str) -> tuple[FunctionFacts, ...]:
        """What is known of each target without running it, titled (see ``facts``, ``naming``)."""
        self.settled.update(self.targets.values())
        labels = [self.label_of(t) for t in self.targets.values()]
        return target_facts(self.targets, self.compile_seconds, self.used, labels, user_kind)
