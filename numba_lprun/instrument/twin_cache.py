"""Compiled twins kept on disk: what may be cached, and under which key.

A twin is an ``exec``'d function with no module, which Numba's ``cache=True``
refuses; ``internals.disk_cache_for`` gives it Numba's own caching machinery all
the same (files named as Numba's under ``<cache dir>/twins/``, stale when the
source file's text changes, a checksum on every data file). What is decided here:

* the key: Numba's (signature, CPU name and features) plus the twin's identity (its
  code, options, probe configuration, versions: ``twin_identity.twin_key``) and the
  digest of everything its code reaches (``fingerprint.dependencies``: the callees it
  inlines, globals it freezes). A jitclass instance type's name carries its class's
  address: such a signature is keyed by a description of the class instead
  (``fingerprint.stable_signature``: its name, fields and members' code), and the
  code loaded is given this process's types (``internals.CacheRules.signature``).
* what is kept: nopython code whose counters symbols are all key-derived
  (``probes.may_keep``), and with it the names of its ``prange`` workers' gufuncs
  (``parfor_code.own_gufuncs``): the sampler tells a worker's line rows by those
  names, which differ in every process, and a cached library has no gufunc
  libraries linked to read them from.
* what is loaded: code whose counters symbols are held by the live twins they were
  meant for (``probes.resolves_as_meant``): else it would reach other counters.
  The gufunc names kept with it are given back to ``parfor_code``.

What is not cached is said in the profile's header, and why (``not_cached_because``).

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
import weakref

from ..internals import cache_refusal, disk_cache_for
from . import disk_cache
from . import probes as P
from .fingerprint import dependencies, stable_signature
from .parfor_code import own_gufuncs, remember_gufuncs

_ADDRESS = re.compile(r"#[0-9a-f]{8,}")  # a jitclass instance type: instance.jitclass.P#7f92...<x:float64>


class TwinRules:
    """The cache rules of one twin (``internals.CacheRules``)."""

    def __init__(self, py_func: pytypes.FunctionType, identity: str):
        self.py_func = py_func
        self.identity = identity

    def signature(self, args: tuple) -> tuple | str | None:
        """The argument types, or where a jitclass instance type names its class's address, the
        text ``fingerprint.stable_signature`` gives (None: a class has no stable description)."""
        if not _ADDRESS.search(str(args)):
            return tuple(args)
        return stable_signature(args)

    def key(self, args: tuple) -> tuple | None:
        """The twin's identity and the digest of what its code reaches; None when uncacheable."""
        deps = dependencies(self.py_func)
        return None if deps is None else (self.identity, deps[0])

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

    def refusal(self, args: tuple, object_code: bytes | None = None) -> str:
        """Why :meth:`key` or :meth:`keeps` refused, for the profile's header."""
        if object_code is not None:
            return "its code reaches counters named for this process only"
        if self.signature(args) is None:
            return "its signature names a jitclass whose members have no stable description"
        return "something its code reaches has no stable description (an address in its repr, a large array)"


# Twin dispatcher -> why it has no disk cache (its tag is not its key's, its source is gone).
_no_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cache_for(py_func: pytypes.FunctionType, identity: str) -> object | None:
    """A disk cache for the twin compiled from ``py_func``, or None (caching off or impossible)."""
    folder = disk_cache.subdir("twins")
    if folder is None or not linecache.getlines(py_func.__code__.co_filename):
        return None
    return disk_cache_for(py_func, str(folder), TwinRules(py_func, identity))


def no_cache(dispatcher: object, why: str) -> None:
    """Record why the twin ``dispatcher`` has no disk cache (where the cache is on)."""
    if disk_cache.cache_root() is not None:
        _no_cache[dispatcher] = why


def no_cache_like(dispatcher: object, model: object) -> None:
    """Record for ``dispatcher`` why ``model`` has no disk cache, or nothing where it has one."""
    why = _no_cache.get(model)
    if why is None:
        _no_cache.pop(dispatcher, None)
    else:
        _no_cache[dispatcher] = why


def not_cached_because(dispatcher: object) -> str | None:
    """Why some compiled code of the twin ``dispatcher`` is not on disk (None: it all is, or the
    cache is off)."""
    try:
        why = _no_cache.get(dispatcher)
    except TypeError:  # not weak-referenceable: no twin of ours
        return None
    return why or cache_refusal(dispatcher)
