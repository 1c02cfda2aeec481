"""Make calls reach the twins, and put everything back afterwards.

A profiled function can be called from the statement, from plain Python code in
any module, or from other jitted functions, which linked the callee they saw when
they were compiled. So for a run, every binding of an original in the namespaces
(the statement's globals and locals and every module's globals) is swapped for
its twin, and every jitted caller that can reach an original is itself replaced by
a relinked twin. ``Swap.restore`` undoes exactly what was done, and leaves alone a
name the statement rebound in the meantime.
"""

from __future__ import annotations

import gc
import sys
import types as pytypes
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ..instrument.function_kinds import treated_as
from ..internals import (
    CPUDispatcher,
    compiled_entry_points,
    fell_back,
    is_dispatcher,
    is_twin,
    record_calls,
    redirect_calls,
    registered_callers,
    stop_redirect,
    ufunc_classes,
)
from ..interrupts import ctrl_c_deferred


def module_namespaces() -> list[dict]:
    """The globals of every imported module."""
    spaces = []
    for module in list(sys.modules.values()):
        ns = getattr(module, "__dict__", None)
        if isinstance(ns, dict):
            spaces.append(ns)
    return spaces


def _names_used(code: pytypes.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _names_used(const)
    return names


def code_names(py_func: pytypes.FunctionType) -> set[str]:
    """Every name ``py_func``'s code uses (globals, attributes, methods), nested code's too."""
    return _names_used(py_func.__code__)


def named_values(py_func: pytypes.FunctionType) -> list[object]:
    """The values ``py_func``'s code names (globals, closure cells, attributes of the modules it
    names), and the items of the tuples among them: what its calls can reach (Numba freezes a
    global tuple as a constant, and a function in it is called as if named)."""
    g = py_func.__globals__
    names = _names_used(py_func.__code__)
    found: list[object] = []
    for name in names:
        value = g.get(name)
        found.append(value)
        if isinstance(value, pytypes.ModuleType):
            attrs = vars(value)
            found.extend(attrs.get(other) for other in names if other in attrs)
    for cell in py_func.__closure__ or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:
            continue
    tuples = [value for value in found if isinstance(value, tuple)]
    while tuples:
        items = tuples.pop()
        found.extend(items)
        tuples.extend(item for item in items if isinstance(item, tuple))
    return found


def _python_function(caller: object) -> pytypes.FunctionType | None:
    """The Python function ``caller`` (a dispatcher, a ufunc) compiles; None for other code."""
    py_func = getattr(caller, "py_func", None)
    if py_func is None and treated_as(caller).kernel:  # a ufunc: its kernel's code
        py_func = treated_as(caller).python_function(caller)
    return py_func if isinstance(py_func, pytypes.FunctionType) else None


def named_ids(caller: object) -> set[int]:
    """Identities of the values ``caller``'s code names (see ``named_values``). Nothing for code
    without a ``py_func``."""
    py_func = _python_function(caller)
    return set() if py_func is None else set(map(id, named_values(py_func)))


def calls_itself(func: object) -> bool:
    """Whether ``func``'s code can call ``func`` again, directly or through the jitted code and
    ufuncs it names (mutual recursion)."""
    py_func = _python_function(func)
    return py_func is not None and any(value is func for value in reached_values(py_func))


def reached_values(py_func: pytypes.FunctionType) -> Iterator[object]:
    """Every value ``py_func``'s code names, and the values named by the jitted functions and
    ufuncs it names, recursively (each once): what its code can reach."""
    ufuncs = ufunc_classes()
    seen: set[int] = set()
    frontier = [py_func]
    while frontier:
        for value in named_values(frontier.pop()):
            if id(value) in seen:
                continue
            seen.add(id(value))
            yield value
            if is_dispatcher(value) or isinstance(value, ufuncs):
                inner = _python_function(value)
                if inner is not None:
                    frontier.append(inner)


def code_reaches(code: object, targets: Mapping[int, object]) -> bool:
    """``reaches_through_names`` for jitted ``code`` (a dispatcher, a ufunc: its kernel's
    Python function); False for code without one."""
    py_func = _python_function(code)
    return py_func is not None and reaches_through_names(py_func, targets)


def reaches_through_names(py_func: pytypes.FunctionType, targets: Mapping[int, object]) -> bool:
    """Whether the code of ``py_func`` can call one of ``targets`` (by identity), directly or
    through the jitted functions it names, and theirs: a function Numba would load from its
    cache then links the target's own code."""
    return any(id(value) in targets for value in reached_values(py_func))


def holding_callers(holders: Iterable[object], code_of: Callable, originals: Iterable[object]) -> list:
    """The ``holders`` (jitclasses, overload templates) some of whose jitted code
    (``code_of(holder)``: the Python functions it is compiled from) calls one of ``originals``
    by name, directly or through the jitted functions it names: code that jitted callers reach
    through the holder, not a name, so the holder is swapped for the run as one holding a
    profiled function is."""
    wanted = {id(o): o for o in originals}
    if not wanted:
        return []
    return [h for h in holders if any(reaches_through_names(f, wanted) for f in code_of(h))]


def live_objects(kinds: tuple[type, ...]) -> list[object]:
    """Every live object of one of ``kinds`` (or a subclass), wherever the program holds it.

    An instance of a class defined in Python refers to its class (the collector follows that
    reference), so the collector's referrers of the classes are their instances: found at C
    speed, 15 ms among 700,000 objects where listing every object took 80 ms."""
    classes: set[type] = set()
    pending = list(kinds)
    while pending:
        kind = pending.pop()
        if kind not in classes:
            classes.add(kind)
            pending.extend(kind.__subclasses__())
    return [obj for obj in gc.get_referrers(*classes) if isinstance(obj, kinds) and not isinstance(obj, type)]


def reaches(caller: CPUDispatcher, targets: Mapping[int, object]) -> bool:
    """Whether ``caller``'s code names one of ``targets`` (global, closure or module attribute)."""
    return not named_ids(caller).isdisjoint(targets)


def reached_from(sources: Iterable[object], functions: Iterable[object]) -> set[int]:
    """Identities of the ``functions`` that code of ``sources`` can call, directly or through
    one another (each source included): who runs wherever a source runs."""
    pending = {id(f): f for f in functions}
    reached: set[int] = set()
    frontier = list(sources)
    while frontier:
        func = frontier.pop()
        reached.add(id(func))
        pending.pop(id(func), None)
        for key in named_ids(func) & pending.keys():
            frontier.append(pending.pop(key))
    return reached


def find_callers(
    targets: Iterable[CPUDispatcher],
    namespaces: Iterable[dict],
    uses: Callable[[CPUDispatcher], bool] | None = None,
    elsewhere: Iterable[object] | None = None,
) -> list[CPUDispatcher]:
    """Jitted functions that call a target, directly or through each other, and the ufuncs
    (``@vectorize``, ``@guvectorize``) whose kernels do, wherever the program holds them: code
    compiled before the run links the callee it saw then, so each is run on a relinked twin.

    ``uses`` says whether a dispatcher reaches a target in a way its names do not
    show (its compiled code handles instances of a jitclass whose member is a target).
    Every live one is read from the registries that list them (``registered_callers``); where
    they do not list them all (Numba 0.59), the namespaces are read and every live object
    searched (0.1 s per million objects), but for ``elsewhere``: the dispatchers and ufuncs
    held outside the namespaces, where that search was made already.
    """
    reached: dict[int, object] = {id(t): t for t in targets}
    registered = registered_callers()
    if registered is not None:
        candidates = {id(v): v for v in registered if id(v) not in reached and not is_twin(v)}
    else:
        candidates = _searched_callers(reached, namespaces, elsewhere)
    callers: list[CPUDispatcher] = []
    changed = True
    while changed:
        changed = False
        for key, disp in list(candidates.items()):
            uses_unnamed = uses is not None and isinstance(disp, CPUDispatcher) and uses(disp)
            if reaches(disp, reached) or uses_unnamed:
                reached[key] = disp
                callers.append(disp)
                del candidates[key]
                changed = True
    return callers


def _searched_callers(
    reached: Mapping[int, object], namespaces: Iterable[dict], elsewhere: Iterable[object] | None
) -> dict[int, object]:
    """The dispatchers and ufuncs of ``namespaces``, and those held anywhere else (``elsewhere``,
    or every live one, ``live_objects``), but ``reached``: ``find_callers``'s candidates where
    no registry lists them."""
    candidates: dict[int, object] = {}
    seen: set[type] = set()  # tens of thousands of globals, a few hundred types
    callers_types = (CPUDispatcher, *ufunc_classes())
    dispatcher_types: set[type] = set()
    for ns in namespaces:
        values = list(ns.values())
        kinds = set(map(type, values))  # set operations at C speed: most modules hold no jitted code
        new = kinds - seen
        if new:
            seen |= new
            dispatcher_types.update(kind for kind in new if issubclass(kind, callers_types))
        if kinds.isdisjoint(dispatcher_types):
            continue
        for value in values:
            if type(value) in dispatcher_types and id(value) not in reached:
                candidates[id(value)] = value
    # and those held anywhere else: a list, a dict, a library's cache of built gufuncs, a closure
    for value in live_objects(callers_types) if elsewhere is None else elsewhere:
        if id(value) not in reached and id(value) not in candidates and not is_twin(value):
            candidates[id(value)] = value
    return candidates


def defining_module(built: tuple[object, object]) -> pytypes.ModuleType | None:
    """The module whose globals a built twin's original was defined in (None for a relinked
    caller, whose source is not read, or code defined outside any module)."""
    _, source = built
    py_func = getattr(source, "py_func", None)
    name = getattr(py_func, "__module__", None)
    return sys.modules.get(name) if name else None


def twin_entry_points(twins: Iterable[object]) -> dict[int, object]:
    """id(an original's entry point) -> the twin's for the same signature: what a program
    calls through ``entry = f.compile(sig)`` reaches no dispatcher, so it is swapped itself."""
    found = {}
    for twin in twins:
        theirs = compiled_entry_points(twin.dispatcher)
        for sig, own in compiled_entry_points(twin.original).items():
            if sig in theirs and theirs[sig] is not own:
                found[id(own)] = theirs[sig]
    return found


@dataclass
class Swap:
    """Bindings replaced for one run; ``restore`` puts the originals back.

    ``redirected`` holds the originals whose Python-level calls go to a twin
    (see ``internals.redirect``), with the class to give back. Calls through an entry
    point (``entry = f.compile(sig)``) bypass the dispatcher, so the entry points a program
    holds are swapped for the twin's (``apply``), and those a redirected original's
    ``compile`` hands out during the run are looked for in ``handed_to`` when it ends.
    """

    undo: list[tuple[dict, str, object, object]] = field(default_factory=list)
    redirected: list[tuple[object, type]] = field(default_factory=list)
    fell_back: dict[str, str] = field(default_factory=dict)  # originals that ran as themselves: name -> why
    attributes: list[tuple[object, str, object]] = field(default_factory=list)
    handed_to: list[dict] = field(default_factory=list)
    # makes each Python-level call of a redirected original (the user's run: ``replay.CallRecorder``)
    recorder: Callable[[object, object, tuple, dict], object] | None = None

    def set_attribute(self, obj: object, name: str, new: object) -> None:
        """Set ``obj.name`` (a class attribute Numba made) until ``restore``."""
        with ctrl_c_deferred():
            self.attributes.append((obj, name, obj.__dict__[name]))
            setattr(obj, name, new)

    def redirect(self, originals: Iterable[object], replacements: Mapping[int, object]) -> None:
        """Send every Python-level call of each original to its replacement, until ``restore``."""
        with ctrl_c_deferred():
            for original in originals:
                new = replacements.get(id(original))
                if new is None or new is original:
                    continue
                cls = redirect_calls(original, new)
                if self.recorder is not None:
                    record_calls(original, self.recorder)
                if cls is not None:  # None: already redirected in this run, now to ``new``
                    self.redirected.append((original, cls))

    def apply(self, namespaces: Iterable[dict], replacements: Mapping[int, object]) -> None:
        with ctrl_c_deferred():
            self._apply(namespaces, replacements)

    def _apply(self, namespaces: Iterable[dict], replacements: Mapping[int, object]) -> None:
        seen: set[int] = set()
        for ns in namespaces:
            if id(ns) in seen:
                continue
            seen.add(id(ns))
            found = [(name, value) for name, value in list(ns.items()) if id(value) in replacements]
            for name, value in found:
                new = replacements[id(value)]
                if new is not value:
                    self.undo.append((ns, name, value, new))
                    ns[name] = new

    def restore(self, only: dict | None = None) -> None:
        """Undo the swaps (those in the namespace ``only``, if given)."""
        with ctrl_c_deferred():
            kept = []
            for entry in reversed(self.undo):
                ns, name, original, new = entry
                if only is not None and ns is not only:
                    kept.append(entry)
                elif ns.get(name) is new:
                    ns[name] = original
            self.undo[:] = reversed(kept)
            if only is None:
                for obj, name, old in reversed(self.attributes):
                    setattr(obj, name, old)
                self.attributes.clear()
                handed: dict[int, tuple[object, object]] = {}
                for original, cls in reversed(self.redirected):
                    why = fell_back(original)
                    if why is not None:
                        name = getattr(original, "__qualname__", None) or type(original).__name__
                        self.fell_back[name] = (
                            f"{name}: its twin failed to compile ({why}), so it ran as itself"
                        )
                    handed.update(stop_redirect(original, cls))
                self.redirected.clear()
                if handed:
                    self._take_back(handed)

    def _take_back(self, handed: dict[int, tuple[object, object]]) -> None:
        """Put the original's entry point wherever the program bound one of the twin's."""
        for ns in self.handed_to:
            for name, value in list(ns.items()):
                if id(value) in handed and handed[id(value)][0] is value:
                    ns[name] = handed[id(value)][1]
