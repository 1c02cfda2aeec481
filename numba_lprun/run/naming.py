"""What a profiled function is called: its key in the profile and its table's title.

A profiled function is a *dispatcher*, not a Python function: ``njit(f)``,
``njit(fastmath=True)(f)`` and ``jit(kde.py_func)`` are separate functions that
share one source. Each is profiled side by side with its own counters and table.

**Keys** keep line_profiler's shape, (filename, first line, name), so the
``.lprof`` is line_profiler's own. The first dispatcher of a Python function a
profiler profiles keeps exactly line_profiler's key (the name is the
function's qualified name). Each further dispatcher of the same Python function
gets the qualified name followed by its label in brackets: the name it is bound
to (``sum_log_nz [fast_sum_log_nz]``), else its distinguishing options
(``sum_log_nz [fastmath]``), else its rank (``sum_log_nz [#2]``). So no two keys
collide, no counts are lost, and ``python -m line_profiler`` shows one table per
dispatcher. A key is fixed once the target's counts have been read.

**Titles** (what a table is headed with) name the dispatcher as the user holds
it: the name the user gave (``-f NAME``), else the one name it is bound to in
its Python function's module globals, with the Python function's name and the
distinguishing options where that name differs:
``fast_sum_log_nz (sum_log_nz, fastmath)``. Where it is bound under the
function's own name (or no name is known), the title is the qualified name, and
the options are added only when other dispatchers of the same function are
profiled beside it: ``kde (parallel)`` beside ``kde_nothread (kde)``.
"""

from __future__ import annotations

from types import FunctionType

Key = tuple[str, int, str]

#: Options that change what a dispatcher compiles to, named in titles where they are set.
_FLAGS = ("parallel", "fastmath", "nogil", "boundscheck")


def options_of(dispatcher: object) -> tuple[str, ...]:
    """The options that set ``dispatcher`` apart from a plain ``njit``: ``("fastmath",)``."""
    options = getattr(dispatcher, "targetoptions", None) or {}
    found = [flag for flag in _FLAGS if options.get(flag)]
    model = options.get("error_model")
    if model not in (None, "python"):
        found.append(f"error_model={model}")
    return tuple(found)


def bound_name(dispatcher: object, py_func: FunctionType) -> str | None:
    """The one name ``dispatcher`` is bound to in its Python function's module globals
    (None: bound to no name there, or to several)."""
    names = [name for name, value in list(py_func.__globals__.items()) if value is dispatcher]
    return names[0] if len(names) == 1 else None


def sibling_key(key: Key, label: str | None, options: tuple[str, ...], taken: set[Key]) -> Key:
    """A key for another dispatcher of the function keyed ``key``, distinct from ``taken``."""
    filename, first, qualname = key
    for tag in (label, ", ".join(options)):
        if tag and (filename, first, f"{qualname} [{tag}]") not in taken:
            return (filename, first, f"{qualname} [{tag}]")
    rank = 2
    while (filename, first, f"{qualname} [#{rank}]") in taken:
        rank += 1
    return (filename, first, f"{qualname} [#{rank}]")


def title(py_func: FunctionType, label: str | None, options: tuple[str, ...], siblings: bool) -> str:
    """The title of a dispatcher's table (see the module's docstring)."""
    qualname = py_func.__qualname__
    if label and label.rsplit(".", 1)[-1] != py_func.__name__:
        return f"{label} ({', '.join((qualname, *options))})"
    if siblings and options:
        return f"{qualname} ({', '.join(options)})"
    return qualname


def titles(entries: list[tuple[object, FunctionType, str | None, Key]]) -> list[str]:
    """The titles of targets (dispatcher, Python function, name given, source key), with a
    rank added where two would read the same (``make.<locals>.f #2``)."""
    by_source: dict[Key, int] = {}
    for _, _, _, source in entries:
        by_source[source] = by_source.get(source, 0) + 1
    bases: list[str] = []
    out: list[str] = []
    for dispatcher, py_func, given, source in entries:
        label = given or bound_name(dispatcher, py_func)
        text = title(py_func, label, options_of(dispatcher), by_source[source] > 1)
        seen = bases.count(text)
        bases.append(text)
        out.append(f"{text} #{seen + 1}" if seen else text)
    return out
