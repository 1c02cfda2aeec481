"""Compiled code the run could not send to a twin, found where it links a profiled function.

Why: a table that says "not called" promises that the function did not run. The run
reaches every jitted function and ufunc the program holds (``reach.find_callers``), but
some compiled code has no Python object the profiler can compile again: a ufunc built by
``guvectorize``/``vectorize`` with ``target="parallel"`` before the profile (NumPy's own
ufunc, holding only Numba's code), a ``@cfunc``, code a library keeps as a pointer.
Numba links a callee's code library into each caller's, so a library alive in the process
that links the function's own library, directly or through other such libraries, and that
belongs to no jitted function or ufunc the run could reach, is code whose calls of the
function were not counted, unless only Numba's own bookkeeping keeps it (Numba never frees
compiled code: the library of a ufunc the program let go of stays registered). A function
that counted nothing while such code exists is not "not called": its table names that code
instead (Numba names a library after the Python function it compiled).

The search runs only where a profiled function counted nothing in the user's run, and
follows links through unreachable libraries only: a ufunc's wrapper links its kernel,
which the run did reach, so the wrapper is not named.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping

from ..internals import (
    CPUDispatcher,
    code_library_class,
    kept_only_by_numba,
    linked_libraries,
    ufunc_classes,
    ufunc_dispatcher,
)
from .measurements import Key, Unreached
from .reach import live_objects


def _own_libraries(dispatcher: object) -> list[object]:
    overloads = getattr(dispatcher, "__dict__", {}).get("overloads") or {}
    return [getattr(cres, "library", None) for cres in list(overloads.values())]


def reachable_libraries(holders: Iterable[object]) -> set[int]:
    """Identities of the code libraries of the jitted functions and ufunc kernels ``holders``
    (everything the run could send to a twin), kept alive by them while the caller looks."""
    owned: set[int] = set()
    for holder in holders:
        if not isinstance(holder, CPUDispatcher):
            try:
                holder = ufunc_dispatcher(holder)
            except (AttributeError, TypeError):
                continue
        owned.update(id(lib) for lib in _own_libraries(holder) if lib is not None)
    return owned


def _links(library: object, wanted: set[int], reachable: set[int]) -> bool:
    """Whether ``library`` links one of ``wanted`` through libraries outside ``reachable``."""
    seen: set[int] = set()
    frontier = linked_libraries(library)
    while frontier:
        lib = frontier.pop()
        if id(lib) in seen:
            continue
        seen.add(id(lib))
        if id(lib) in wanted:
            return True
        if id(lib) not in reachable:
            frontier.extend(linked_libraries(lib))
    return False


def unreached_linkers(originals: Mapping[Key, object]) -> Unreached | None:
    """For each of ``originals`` (functions that counted nothing, by key), the names of live
    code that links its own code and that the run could not reach; None where there is none."""
    if not originals:
        return None
    found = _search(originals)
    if found:  # once more where code of functions the program let go of (not yet collected) was named
        gc.collect()
        found = _search(originals)
    return Unreached(found) if found else None


def _search(originals: Mapping[Key, object]) -> dict[Key, tuple[str, ...]]:
    holders = live_objects((CPUDispatcher, *ufunc_classes()))
    reachable = reachable_libraries(holders)
    every = live_objects((code_library_class(),))
    libraries = [lib for lib in every if id(lib) not in reachable]
    found: dict[Key, tuple[str, ...]] = {}
    for key, original in originals.items():
        wanted = {id(lib) for lib in _own_libraries(original) if lib is not None}
        if not wanted:
            continue
        linking = [lib for lib in libraries if id(lib) not in wanted and _links(lib, wanted, reachable)]
        ours = {id(every), id(libraries), id(linking)}
        names = [
            str(getattr(lib, "name", "") or "compiled code")
            for lib in linking
            if not kept_only_by_numba(lib, every, ours)
        ]
        if names:
            found[key] = tuple(dict.fromkeys(names))
    return found
