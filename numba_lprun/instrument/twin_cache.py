"""Compiled twins kept on disk with Numba's own caching machinery.

A twin is an ``exec``'d function with no module, which Numba's ``cache=True``
refuses. The pieces that make it cacheable, each small:

* ``TwinLocator``: the twins of ``file.py`` live in ``<cache dir>/twins/<dir>_<hash>/``
  (``disk_cache``), under Numba's index/data file names, and go stale when the
  file's text changes (as Numba's source stamp; IPython cells are read from
  ``linecache``).
* ``TwinCache._index_key``: Numba's key (signature, CPU name and features) plus the
  twin's identity (its code, options, probe configuration, versions:
  ``twin_identity.twin_key``) and the digest of everything its code reaches
  (``fingerprint.dependencies``: the callees it inlines, globals it freezes).
* Unique symbol names: every twin's functions carry its key as an ABI tag
  (``tagged_context``), so code cached by different processes never defines the
  same symbol or Environment twice in one process.
* ``_TwinCacheImpl``: a twin's function descriptor keeps its globals dict (that is
  how Numba runs dynamic functions): it is dropped from the pickle and put back on
  load. Object-mode code and code with baked addresses (``has_dynamic_globals``)
  are not cached, quietly.
* Robustness: a data file carries a SHA-256 of its contents, and any unreadable
  index or data file counts as a miss and is rewritten; a directory that cannot
  be written means no cache (``disk_cache.cache_root``), never an error.

A cache hit fires no ``numba:compile`` event: Numba loads the code instead.
Every Numba-private name this relies on is used in this module only.
"""

from __future__ import annotations

import copy
import hashlib
import linecache
import os
import pickle
import re
import sys
import warnings

from numba.core import funcdesc, sigutils
from numba.core.caching import Cache, CompileResultCacheImpl, IndexDataCacheFile, _CacheLocator
from numba.core.compiler import CompileResult

from . import disk_cache
from . import probes as P
from .fingerprint import dependencies

_DIGEST = hashlib.sha256().digest_size
_FORMAT = "numba_lprun twin 1"
_ADDRESS = re.compile(r"#[0-9a-f]{8,}")  # a jitclass instance type: instance.jitclass.P#7f92...<x:float64>
_PARFOR_WORKER = b"__numba_parfor_gufunc"


class _NotLoadable(Exception):
    """A cache entry this process cannot use (its counters symbols mean other twins now)."""


class TwinLocator(_CacheLocator):
    """Where one twin's index and data files live, and the stamp that makes them stale."""

    def __init__(self, py_func, root: str):
        self._py_file = py_func.__code__.co_filename
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(root, self.get_suitable_cache_subpath(self._py_file))

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        """A digest of the whole source file (or IPython cell): any edit makes its index stale."""
        return hashlib.sha256("".join(linecache.getlines(self._py_file)).encode()).hexdigest()

    def get_disambiguator(self) -> str:
        return str(self._lineno)


class _TwinCacheFile(IndexDataCacheFile):
    """Numba's index and data files, with a checksum on data and no exception on a bad file."""

    def _load_index(self):
        try:
            return super()._load_index()
        except Exception:  # truncated or corrupt: the index is rewritten by the next save
            return {}

    def _save_data(self, name, data):
        payload = self._dump(data)
        path = self._data_path(name)
        with self._open_for_write(path) as handle:
            handle.write(hashlib.sha256(payload).digest() + payload)

    def _load_data(self, name):
        with open(self._data_path(name), "rb") as handle:
            blob = handle.read()
        digest, payload = blob[:_DIGEST], blob[_DIGEST:]
        if hashlib.sha256(payload).digest() != digest:
            raise OSError(f"corrupt cache entry {name}")
        return pickle.loads(payload)


class _TwinCacheImpl(CompileResultCacheImpl):
    """Serialises a twin's compile result; built for one twin, never through Numba's locators."""

    def __init__(self, py_func, root: str):
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = TwinLocator(py_func, root)
        self._py_func = py_func
        base = os.path.splitext(os.path.basename(py_func.__code__.co_filename))[0]
        self._filename_base = self.get_filename_base(f"{base}.{py_func.__qualname__}", sys.abiflags)

    def reduce(self, cres):
        """Numba's reduction, minus the globals dict a dynamic function's descriptor holds,
        plus the counters symbols the code names (checked before it is loaded again).

        The descriptor is copied first: Numba's ``_reduce`` clears the type maps of
        the descriptor it is given, and the live twin keeps its own.
        """
        fndesc = copy.copy(cres.fndesc)
        fndesc.global_dict = None
        payload = cres._replace(fndesc=fndesc)._reduce()
        _name, _kind, (object_code, _bitcode) = payload[0]
        return (_FORMAT, P.symbols_in(object_code), payload)

    def rebuild(self, target_context, data):
        form, symbols, payload = data
        if form != _FORMAT or not self.symbols_resolve(symbols):
            raise _NotLoadable
        fndesc = payload[1]
        if fndesc.modname == funcdesc._dynamic_modname:  # as at compile time: look globals up in the twin's
            fndesc.global_dict = self._py_func.__globals__
        cres = CompileResult._rebuild(target_context, *payload)
        keep_object_code(cres.library, payload[0])
        return cres

    def symbols_resolve(self, symbols: frozenset[str]) -> bool:
        """Whether every counters symbol of cached code is held by the live twin it was meant for."""
        deps = dependencies(self._py_func)
        by_name = deps[1] if deps is not None else frozenset()
        return all(P.resolves_as_meant(s, reached_by_name=s in by_name) for s in symbols)

    def check_cachable(self, cres) -> bool:
        """Nopython code with no lifted blocks, no baked addresses, only key-derived counters
        symbols and no ``prange`` workers; Numba's warning is not shown.

        A cached library has no linked libraries (their code is in its own object),
        and the sampler tells a ``prange`` worker's line rows by the library that
        holds it (``sampling.dwarf._libraries``): until it also tells them by symbol
        name, code with workers is compiled afresh, so its sampled view is unchanged.
        """
        if cres.objectmode or cres.lifted or cres.library.has_dynamic_globals:
            return False
        code = compiled_object_of(cres.library)
        if not code or _PARFOR_WORKER in code:
            return False
        return all(P.may_keep(s) for s in P.symbols_in(code))


class TwinCache(Cache):
    """Numba's per-function cache, for one twin (set as the twin dispatcher's cache)."""

    _impl_class = _TwinCacheImpl

    def __init__(self, py_func, identity: str, root: str):
        self._name = repr(py_func)
        self._py_func = py_func
        self._identity = identity
        self._impl = _TwinCacheImpl(py_func, root)
        self._cache_path = self._impl.locator.get_cache_path()
        self._cache_file = _TwinCacheFile(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp(),
        )
        self.enable()

    def _index_key(self, sig, codegen):
        """Numba's key with the twin's identity and its dependencies; None when uncacheable."""
        deps = dependencies(self._py_func)
        args, _ = sigutils.normalize_signature(sig)  # a callee compiles by args, a twin by full signature
        args = tuple(args)
        if deps is None or _ADDRESS.search(str(args)):  # a jitclass instance type names its class's id
            return None
        return (args, codegen.magic_tuple(), self._identity, deps[0])

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        if key is None:
            return None
        try:
            data = self._cache_file.load(key)
            return None if data is None else self._impl.rebuild(target_context, data)
        except Exception:  # a stale or corrupt entry: compile (and overwrite it)
            return None

    def _save_overload(self, sig, data):
        if not self._enabled or not self._impl.check_cachable(data):
            return
        key = self._index_key(sig, data.codegen)
        if key is None:
            return
        try:
            self._impl.locator.ensure_cache_path()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._cache_file.save(key, self._impl.reduce(data))
        except Exception:  # unwritable or unpicklable: this twin stays uncached
            self.disable()


def cache_for(py_func, identity: str) -> TwinCache | None:
    """A disk cache for the twin compiled from ``py_func``, or None (caching off or impossible)."""
    folder = disk_cache.subdir("twins")
    if folder is None or not linecache.getlines(py_func.__code__.co_filename):
        return None
    try:
        return TwinCache(py_func, identity, str(folder))
    except Exception:  # a file name Numba cannot place: no cache for this twin
        return None


def compiled_object_of(library) -> bytes:
    """The object code of a freshly compiled library (empty if Numba kept none)."""
    try:
        return library._get_compiled_object()
    except (ValueError, RuntimeError):
        return b""


def keep_object_code(library, libdata) -> None:
    """Keep the object code of a library loaded from the cache, as a fresh compile keeps it.

    Numba hands cached object code to the JIT and drops its own copy; the sampler
    and the machine-code view read a twin's line tables and symbols from it
    (``private_api.compiled_object``).
    """
    _name, kind, data = libdata
    if kind == "object":
        try:
            library._set_compiled_object(data[0])
        except ValueError:  # already compiled from IR: it kept its own object code
            pass


def use_disk_cache(dispatcher, cache: TwinCache) -> None:
    """Make ``dispatcher`` load from and save to ``cache`` (what ``enable_caching`` does)."""
    dispatcher._cache = cache


def tagged_context(targetctx, tag: str):
    """``targetctx`` whose symbol names (functions, Environments) carry ``tag`` as an ABI tag.

    Numba names a dynamic function ``<dynamic>.f`` plus a per-process counter, so
    twins cached by different processes could define the same symbol in one
    process (and share one Environment). The ABI tag makes each twin's names its own;
    it is not shown by ``machine.names.pretty``.
    """

    def mangler(name, argtypes, *, abi_tags=(), uid=None):
        return funcdesc.default_mangler(name, argtypes, abi_tags=(*abi_tags, tag), uid=uid)

    return targetctx.subtarget(mangler=mangler)
