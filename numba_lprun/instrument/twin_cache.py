"""Compiled twins kept on disk: what may be cached, and under which key.

A twin is an ``exec``'d function with no module, which Numba's ``cache=True``
refuses; ``internals.disk_cache_for`` gives it Numba's own caching machinery all
the same (files named as Numba's under ``<cache dir>/twins/``, stale when the
source file's text changes, a checksum on every data file). What is decided here:

* the key: Numba's (signature, CPU name and features) plus the twin's identity (its
  code, options, probe configuration, versions: ``twin_identity.twin_key``) and the
  digest of everything its code reaches (``fingerprint.dependencies``: the callees it
  inlines, globals it freezes). A signature naming a jitclass instance type (whose
  name carries its class's address) is not cached.
* what is kept: nopython code whose counters symbols are all key-derived
  (``probes.may_keep``), and with it the names of its ``prange`` workers' gufuncs
  (``parfor_code.own_gufuncs``): the sampler tells a worker's line rows by those
  names, which differ in every process, and a cached library has no gufunc
  libraries linked to read them from.
* what is loaded: code whose counters symbols are held by the live twins they were
  meant for (``probes.resolves_as_meant``): else it would reach other counters.
  The gufunc names kept with it are given back to ``parfor_code``.

Unique symbol names: every twin's functions carry its key as an ABI tag
(``internals.tagged_context``), so code cached by different processes never defines
the same symbol or Environment twice in one process. A directory that cannot be
written means no cache (``disk_cache.cache_root``), never an error; a cache hit
fires no ``numba:compile`` event: Numba loads the code instead.
"""

from __future__ import annotations

import linecache
import re
import types as pytypes

from ..internals import disk_cache_for
from . import disk_cache
from . import probes as P
from .fingerprint import dependencies
from .parfor_code import own_gufuncs, remember_gufuncs

_ADDRESS = re.compile(r"#[0-9a-f]{8,}")  # a jitclass instance type: instance.jitclass.P#7f92...<x:float64>


class TwinRules:
    """The cache rules of one twin (``internals.CacheRules``)."""

    def __init__(self, py_func: pytypes.FunctionType, identity: str):
        self.py_func = py_func
        self.identity = identity

    def key(self, args: tuple) -> tuple | None:
        """The twin's identity and the digest of what its code reaches; None when uncacheable."""
        deps = dependencies(self.py_func)
        if deps is None or _ADDRESS.search(str(args)):  # a jitclass instance type names its class's id
            return None
        return (self.identity, deps[0])

    def keeps(self, object_code: bytes) -> bool:
        """Only key-derived counters symbols."""
        return all(P.may_keep(s) for s in P.symbols_in(object_code))

    def stamp(self, object_code: bytes, library: object) -> tuple[frozenset[str], frozenset[str]]:
        """The counters symbols the code names (checked before it is loaded again), and the
        names of its function's parfor gufuncs (given back when it is loaded)."""
        return P.symbols_in(object_code), own_gufuncs(library)

    def loadable(self, stamp: tuple[frozenset[str], frozenset[str]]) -> bool:
        """Whether every counters symbol of cached code is held by the live twin it was meant for."""
        symbols, _gufuncs = stamp
        deps = dependencies(self.py_func)
        by_name = deps[1] if deps is not None else frozenset()
        return all(P.resolves_as_meant(s, reached_by_name=s in by_name) for s in symbols)

    def loaded(self, library: object, stamp: tuple[frozenset[str], frozenset[str]]) -> None:
        """The gufunc names kept with the code, for the sampler's line map."""
        remember_gufuncs(library, stamp[1])


def cache_for(py_func: pytypes.FunctionType, identity: str) -> object | None:
    """A disk cache for the twin compiled from ``py_func``, or None (caching off or impossible)."""
    folder = disk_cache.subdir("twins")
    if folder is None or not linecache.getlines(py_func.__code__.co_filename):
        return None
    return disk_cache_for(py_func, str(folder), TwinRules(py_func, identity))
