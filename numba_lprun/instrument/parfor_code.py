"""Where a compiled function's ``prange`` loop bodies (parfor gufuncs) are, also when cached.

Numba compiles each ``prange`` body into a gufunc of its own library, named
``__numba_parfor_gufunc_<hex>`` (the hex is ``hash()`` of the parfor object: an
address, different in every process), and links that library into the function's
(``code_libraries``). The twin runs its own ``internal`` copies of them, in its own
library (``unwind``); the sampler reads a copy as the function's loop body when its
symbol names one of the function's gufuncs (``own_gufuncs``).

A library loaded from the disk cache has no libraries linked into it, and its
gufuncs' names are those of the process that compiled it: the names are kept with
the cached code (``twin_cache.TwinRules.stamp``) and given back here when it is
loaded (``remember_gufuncs``). A library may also hold copies of another parallel
function's gufuncs (a jitted callee's, linked in): those are not named here, so
they are never charged to this function.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

from ..internals import linked_libraries

#: Part of the name of every parfor gufunc Numba compiles.
PARFOR_GUFUNC = "__numba_parfor_gufunc"
_GUFUNC_PARTS = ("parallelgufuncwrapper", "_GufuncWrapper", PARFOR_GUFUNC)

# A library loaded from the disk cache -> the names of its function's gufuncs.
_loaded: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def code_libraries(root: object) -> Iterator[tuple[object, bool]]:
    """The overload's library, then the parfor gufunc libraries linked into it (each with
    whether it is a gufunc's own library, not a wrapper's).

    Other linked libraries are other functions (callees, NumPy implementations):
    their code is charged to the calling line by walking the stack instead.
    """
    yield root, False
    seen = {id(root)}
    stack = linked_libraries(root)
    while stack:
        lib = stack.pop()
        if id(lib) in seen or not any(part in lib.name for part in _GUFUNC_PARTS):
            continue
        seen.add(id(lib))
        yield lib, lib.name.startswith(PARFOR_GUFUNC)
        stack.extend(linked_libraries(lib))


def own_gufuncs(library: object) -> frozenset[str]:
    """The names of the gufuncs of the function compiled into ``library``: those linked into
    it, or, for a library loaded from the disk cache, those kept with its code."""
    names = {lib.name for lib, is_gufunc in code_libraries(library) if is_gufunc}
    try:
        names.update(_loaded.get(library, ()))
    except TypeError:  # not weak-referenceable: never loaded through the twins' cache
        pass
    return frozenset(names)


def remember_gufuncs(library: object, names: frozenset[str]) -> None:
    """Record the gufunc names kept with the cached code ``library`` was loaded from."""
    if names:
        _loaded[library] = frozenset(names)
