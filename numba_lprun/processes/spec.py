"""What a child process needs to profile the same functions the same way, as plain data.

Why names: a spawned child is a fresh interpreter, which holds none of the
parent's objects; it imports the profiled functions' modules (the script itself
is ``__main__`` there too: ``multiprocessing`` runs it again as ``__mp_main__``)
and finds each function by its qualified name. A forked child finds the very
same dispatchers by the same names. A worker that never runs the script (joblib's loky)
has no name to find the script's own functions by: those travel pickled as well.

Why the source text travels too: a function defined in a notebook cell or a script is
compiled from text that only the process that ran it holds (IPython keeps its cells in
``linecache``; a script's file may be on another machine than a Dask worker), and a twin
is built from the function's source. ``sources`` carries that text, and ``shipped_sources``
makes it readable where the worker cannot read the file itself, while the worker profiles.
"""

from __future__ import annotations

import contextlib
import importlib
import linecache
import pickle
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from ..instrument.profilable import resolve
from ..instrument.source import python_function_of
from ..internals import pickle_identity, unpickle_as
from ..run.measurements import COUNTING

#: How a child finds one function: its module, qualified name, the id Numba pickles it under,
#: and for a function of the script, the dispatcher pickled (``by_value``).
Named = tuple[str, str, str | None, bytes | None]
#: A source file as the parent read it: its name and its text.
Source = tuple[str, str]


@dataclass(frozen=True)
class ChildSpec:
    """The run's directory, the functions (``named``), whether the twins read the clock
    (``--hits``: they do not), and how the parent's run is made: on which kind of twin (a forked
    child runs the same twins: none compiled), sampled or not, and at what rate."""

    directory: str
    functions: tuple[Named, ...]
    timing: bool = True
    twin: str = COUNTING
    sampled: bool = False
    rate_hz: float = 2000.0
    sources: tuple[Source, ...] = ()  # the files of the script's or notebook's own functions
    existing_threads: str = "user"  # which threads existing when sampling starts are sampled (Sampler)


def name_of(function: object) -> tuple[str, str] | None:
    """(module, qualified name) of a profiled function's Python function; None: none to name."""
    try:
        py_func = python_function_of(function)
    except Exception:
        return None
    module, qualname = getattr(py_func, "__module__", None), getattr(py_func, "__qualname__", "")
    if not module or not qualname:
        return None
    return module, qualname


def named(functions: list[object], pickled: bool = False) -> tuple[Named, ...]:
    """What a spawned child finds ``functions`` by: their names, and the ids Numba pickles them
    under (made here, before any fork: a forked child's unpickled tasks are the very dispatchers);
    with ``pickled``, the script's own functions pickled as well (``by_value``: only for a child
    that is sent them, since pickling copies what they refer to)."""
    found = []
    for function in functions:
        name = name_of(function)
        if name is not None:
            found.append((*name, pickle_identity(function), by_value(function, name) if pickled else None))
    return tuple(found)


def by_value(function: object, name: tuple[str, str]) -> bytes | None:
    """``function`` pickled, where it is the script's own (``__main__``) or made inside a function
    (``<locals>``): joblib's loky workers do not run the script, and no module holds a function
    made inside another, so no name finds it there; the tasks send it by value, and Numba
    unpickles every copy of one dispatcher as the first (keyed by its pickle id), so a worker
    that unpickles this one first runs the tasks on the profiled dispatcher. None for a module's
    function (imported by name) or one that does not pickle (the tasks could not send it either)."""
    if name[0] != "__main__" and "<locals>" not in name[1]:
        return None
    try:
        return pickle.dumps(function)
    except Exception:  # pickling runs user code (reducers of what the function refers to)
        return None


def sources_of(functions: list[object]) -> tuple[Source, ...]:
    """The text of each file that defines one of ``functions`` in the script or notebook itself
    (``__main__``, or a file name such as ``<ipython-input-3-...>``), read here, where it is known."""
    found: dict[str, str] = {}
    for function in functions:
        try:
            py_func = python_function_of(function)
        except Exception:
            continue
        filename = py_func.__code__.co_filename
        if py_func.__module__ != "__main__" and not filename.startswith("<"):
            continue  # a module's: each worker reads its own installed copy
        text = "".join(linecache.getlines(filename, py_func.__globals__))
        if text and filename not in found:
            found[filename] = text
    return tuple(found.items())


@contextlib.contextmanager
def shipped_sources(sources: tuple[Source, ...]) -> Iterator[None]:
    """While the block runs, each file of ``sources`` reads here as the parent read it, where this
    process reads other text under its name (a worker on another machine, or one that never ran the
    notebook's cell); then ``linecache`` is as it was. An entry without a modification time is one
    ``linecache`` never checks against the disk (IPython keeps its cells so)."""
    before: dict[str, object] = {}
    for filename, text in sources:
        lines = text.splitlines(keepends=True)
        if linecache.getlines(filename) == lines:
            continue
        before[filename] = linecache.cache.get(filename)
        linecache.cache[filename] = (len(text), None, lines, filename)
    try:
        yield
    finally:
        for filename, entry in before.items():
            if entry is None:
                linecache.cache.pop(filename, None)
            else:
                linecache.cache[filename] = entry


def find(named: Named) -> tuple[list[object], str | None]:
    """The dispatchers ``named`` stands for in this process, and None; or [] and why there are
    none, in a few words (the parent's note says it, where the process's work would otherwise
    just be missing from the table). The tasks a pool pickled with the parent's dispatcher
    unpickle as this process's one."""
    found, why = locate(named)
    if named[2] is not None and len(found) == 1:
        unpickle_as(named[2], found[0])
    return found, why


def locate(named: Named, main: bool = True) -> tuple[list[object], str | None]:
    """``named``'s dispatchers here by module and name, else by the pickle the parent sent; with
    [] the reason. ``main``: this process's ``__main__`` may hold them (a spawned child's is the
    parent's script; a Dask worker's is not the client's)."""
    module, qualname, _, pickled = named
    found: list[object] = []
    why = f"{module}.{qualname} was not found"
    if main or module != "__main__":
        try:
            held = sys.modules.get(module) or importlib.import_module(module)
        except Exception as exc:  # importing runs the module's code: any error is its own
            why = f"importing {module} failed here: {type(exc).__name__}: {exc}"
        else:
            found = found_in(held, (module, qualname))
            if getattr(held, qualname.split(".")[0], None) is None:
                why = f"{module} has no {qualname} here"
            elif not found:
                why = f"{module}.{qualname} is not a jitted function here"
    if not found and pickled is not None:
        found = unpickled(pickled, (module, qualname))
    return found, None if found else why


def unpickled(pickled: bytes, name: tuple[str, str]) -> list[object]:
    """The dispatchers ``pickled`` unpickles to here ([] where it does not unpickle)."""
    try:
        found = resolve(pickle.loads(pickled))
    except Exception:  # what it refers to may not unpickle here: then it cannot be profiled here
        return []
    return [d for d in found if name_of(d) == name]


def found_in(module: object, name: tuple[str, str]) -> list[object]:
    """The dispatchers ``module`` holds under ``name`` ([] where it holds none)."""
    holder = getattr(module, name[1].split(".")[0], None)
    if holder is None:
        return []
    try:
        found = resolve(holder)
    except Exception:
        return []
    return [d for d in found if _as_main(name_of(d)) == _as_main(name)]


def _as_main(name: tuple[str, str] | None) -> tuple[str, str] | None:
    """``name`` with a spawned child's main module called as the parent's: ``multiprocessing``
    imports the script there as ``__mp_main__`` (also ``sys.modules["__main__"]``), so a function
    the script defines is ``__mp_main__.work`` in the child and ``__main__.work`` in the parent."""
    if name is not None and name[0] == "__mp_main__":
        return ("__main__", name[1])
    return name
