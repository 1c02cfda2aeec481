"""The program's own Numba cache (``cache=True``) while a profile is in place: kept as a plain run keeps it.

While a run lasts, a profiled function's Python-level calls go to its twin, and jitted code
that is typed during the run sees the twin too (``redirect``): a caller compiled meanwhile
links the twin's code, whose probes name the counters' symbol. Numba would save that code
into the program's cache, and the next plain process that loads it finds no such symbol and
crashes. And a caller that Numba loads from the program's cache links the profiled
function's original code: its calls are never counted.

So, while :func:`guarded_program_caches` is open, for every Numba cache but the profiler's
own twin cache (``caching.TwinCache``):

* an index or data file is written only if what it holds names no profiler symbol
  (the entry is pickled first and its bytes searched): a refused entry is reported, and
  the function compiles again after the run (:func:`forget_profiler_code`), cleanly, and
  saves then as it would have;
* an entry is not loaded for a function the caller says must compile now (its code reaches
  a profiled function): compiled during the run, it links the twin and is counted.

Nothing here knows what a twin is: the caller gives the symbol's marker and the test.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from numba.core.caching import Cache as _Cache
from numba.core.caching import IndexDataCacheFile as _IndexDataCacheFile

from .caching import TwinCache, _TwinCacheFile
from .libraries import compiled_object
from .registry import touches


@touches(
    "numba.core.caching",
    "Cache.load_overload",
    "a cached caller of a profiled function compiles during the run, linking the twin",
    params=("self", "sig", "target_context"),
)
@touches(
    "numba.core.caching",
    "Cache",
    "the Python function a program's cache belongs to",
    instance_attribute="_py_func",
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile.save",
    "no entry naming a profiler symbol is written to the program's cache",
    params=("self", "key", "data"),
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile._dump",
    "an entry is pickled as Numba pickles it, and its bytes searched before it is written",
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile",
    "what a refused entry's index would have been named (module.function-line.pyXY.nbi), for the note",
    instance_attribute="_index_name",
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile._load_index",
    "a refused entry whose key the cache already holds (the program's own build) is not said lost",
)
@contextlib.contextmanager
def guarded_program_caches(
    marker: str,
    must_compile: Callable[[object], bool],
    refused: list[str],
) -> Iterator[None]:
    """While open, Numba's caches (not the twin cache) write no entry whose pickled code holds
    ``marker`` (a symbol's start; each refused entry's name, ``module.function``, is appended
    to ``refused``),
    and load no entry of a function whose Python function ``must_compile(py_func)`` answers
    True for.

    Class-level, so caches made while it is open (modules imported during the run) are
    guarded too; what was there before is put back when it closes, nested or not.
    """
    needle = marker.encode()
    load_before = _Cache.load_overload
    save_before = _IndexDataCacheFile.save

    def load_overload(self, sig, target_context):
        if not isinstance(self, TwinCache):
            py_func = getattr(self, "_py_func", None)
            try:
                compile_now = py_func is not None and must_compile(py_func)
            except Exception:  # an odd global cannot make the program's load fail: load it
                compile_now = False
            if compile_now:
                return None
        return load_before(self, sig, target_context)

    def save(self, key, data):
        if not isinstance(self, _TwinCacheFile):
            try:
                payload = self._dump(data)
            except Exception:  # what Numba cannot pickle it does not save either: let it say so
                payload = b""
            if needle in payload:
                if not _holds(self, key):  # the program's own build of it stays, and loads next time
                    refused.append(str(getattr(self, "_index_name", "")).rsplit("-", 1)[0])
                return None
        return save_before(self, key, data)

    _Cache.load_overload = load_overload
    _IndexDataCacheFile.save = save
    try:
        yield
    finally:
        _Cache.load_overload = load_before
        _IndexDataCacheFile.save = save_before


def _holds(cache_file: object, key: object) -> bool:
    """Whether ``cache_file``'s index (still fresh for its source) already has an entry for ``key``."""
    try:
        return key in cache_file._load_index()
    except Exception:  # unreadable: say the entry was not written
        return False


@touches(
    "numba.core.dispatcher",
    "Dispatcher",
    "a dispatcher's compile results, by signature, whose code is searched for profiler symbols",
    instance_attribute="overloads",
)
@touches(
    "numba.core.dispatcher",
    "_DispatcherBase._reset_overloads",
    "a function compiled during the run against a twin compiles again at its next call",
)
@touches(
    "numba.core.dispatcher",
    "_DispatcherBase.add_overload",
    "the signatures it compiled cleanly are kept",
    params=("self", "cres"),
)
@touches(
    "numba.core.dispatcher",
    "Dispatcher._can_compile",
    "a function with explicit signatures compiles each dropped one again at once",
)
@touches(
    "numba.core.codegen",
    "CodeLibrary",
    "the linked, optimised module of a library whose object code Numba did not keep",
    instance_attribute="_final_module",
)
def forget_profiler_code(dispatcher: object, marker: str) -> bool:
    """Drop the signatures of ``dispatcher`` whose code names a symbol starting with ``marker``
    (linked against a twin while a run lasted), keeping the others: each dropped one compiles
    again at its next call, from the program's own code (at once, where the dispatcher compiles
    nothing at a call: explicit signatures). Returns whether any was dropped."""
    overloads = dict(getattr(dispatcher, "__dict__", {}).get("overloads", {}))
    tainted = [
        sig for sig, cres in overloads.items() if _names_symbol(getattr(cres, "library", None), marker)
    ]
    if not tainted:
        return False
    frozen = not dispatcher._can_compile  # explicit signatures: it compiles nothing at a call
    dispatcher._reset_overloads()
    for sig, cres in overloads.items():
        if sig not in tainted:
            dispatcher.add_overload(cres)
    if frozen:  # so each is compiled again now, by its full signature (a result is cast to it)
        dispatcher._can_compile = True
        try:
            for sig in tainted:
                try:
                    dispatcher.compile(overloads[sig].signature)
                except Exception:  # it compiled before: keep that code rather than none
                    dispatcher.add_overload(overloads[sig])
        finally:
            dispatcher._can_compile = False
    return True


def _names_symbol(library: object, marker: str) -> bool:
    """Whether ``library``'s code (its object code, else its final module) names a symbol
    starting with ``marker``."""
    if library is None:
        return False
    code = compiled_object(library)
    if code:
        return marker.encode() in code
    module = getattr(library, "_final_module", None)
    if module is None:
        return False
    return any(g.name.startswith(marker) for g in module.global_variables)
