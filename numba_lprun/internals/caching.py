"""Numba's disk cache, for functions it refuses to cache: twins, ``exec``'d with no module.

Numba's ``cache=True`` wants a function defined in a file it can stamp, keys an
entry by the signature, the CPU and the bytecode, and pickles a dynamic function's
globals with its descriptor. A twin has no module, is keyed by more than its
bytecode, and its globals hold its probes. Numba has no public way to give a
function another cache, so the pieces are Numba's own classes (``_CacheLocator``,
``IndexDataCacheFile``, ``CompileResultCacheImpl``, ``Cache``) with the parts a
twin needs overridden, each small:

* where: a twin's files live under the directory given (numba_lprun's cache
  directory), named as Numba names its own, stale when the file's text changes
  (read through ``linecache``, so IPython cells work too);
* the key: Numba's (argument types, CPU) plus what :class:`CacheRules` adds;
* the pickle: the descriptor's globals dict is dropped and put back on load (the
  live twin's), and what ``CacheRules.stamp`` says is kept next to the code (and
  given back to ``CacheRules.loaded`` with the rebuilt library);
* robustness: a data file carries a SHA-256 of its contents, and an unreadable
  index or data file is a miss (rewritten by the next save);
* no imports: Numba's pickle rebuilds a function's environment by importing the module
  it was compiled in, by name. An entry written where ``par.py`` was imported as ``par``
  and found again where it runs as ``__main__`` imported ``par``: the script's body ran
  a second time. Loading never imports: an entry naming a module that is not imported
  (for its environment, or a class such as an exception the code raises) is a miss
  (``_NoImportUnpickler``);
* a load fires ``LOAD_EVENT``: the JIT loads code as a compile would (the sampler pauses).

What may be cached and under which key is numba_lprun's decision
(``instrument.twin_cache``); this module only speaks Numba's cache protocol.
"""

from __future__ import annotations

import copy
import hashlib
import io
import linecache
import os
import pickle
import sys
import warnings
from typing import Protocol

from numba.core import event, funcdesc, sigutils, typing
from numba.core.caching import (
    Cache,
    CompileResultCacheImpl,
    FunctionCache,
    IndexDataCacheFile,
    _CacheLocator,
    _SourceFileBackedLocatorMixin,
)
from numba.core.codegen import RuntimeLinker as _RuntimeLinker
from numba.core.compiler import CompileResult
from numba.core.environment import _rebuild_env, lookup_environment

from .dispatchers import LOAD_EVENT
from .libraries import compiled_object
from .registry import touches

_DIGEST = hashlib.sha256().digest_size
_FORMAT = "numba_lprun twin 2"


class CacheRules(Protocol):
    """What one function's cache may keep and load, and the key it adds to Numba's."""

    def signature(self, args: tuple) -> tuple | str | None:
        """What stands for the argument types in the key: ``args`` themselves, or a text equal in
        every process where their names are not (the types are then not kept with the code: this
        process's stand in when it is loaded); None: this signature is not cached."""

    def key(self, args: tuple) -> tuple | None:
        """The key parts after the signature and the CPU; None: this signature is not cached."""

    def keeps(self, object_code: bytes) -> bool:
        """Whether freshly compiled nopython code (its ELF object code) may be cached."""

    def stamp(self, object_code: bytes, library: object) -> object:
        """What is kept with cached code (picklable), for :meth:`loadable` and :meth:`loaded`;
        ``library`` is the freshly compiled code library (with the libraries linked into it)."""

    def loadable(self, stamp: object) -> bool:
        """Whether cached code kept with ``stamp`` may be loaded in this process now."""

    def loaded(self, library: object, stamp: object) -> None:
        """Told of each library rebuilt from code kept with ``stamp`` (it has no libraries linked in)."""

    def refusal(self, args: tuple, object_code: bytes | None = None) -> str:
        """Why :meth:`key` refused ``args`` or, given ``object_code``, why :meth:`keeps` refused it
        (words for the profile's header)."""


class _NotLoadable(Exception):
    """A cache entry this process cannot use (its rules refuse its stamp)."""


class _UnderRoot(_CacheLocator):
    """A function's cache files in a folder of numba_lprun's (``root``), named as Numba names them."""

    def __init__(self, py_func, root: str, py_file: str | None = None):
        self._py_file = py_file or py_func.__code__.co_filename
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(root, self.get_suitable_cache_subpath(self._py_file))

    def get_cache_path(self) -> str:
        return self._cache_path


class TwinLocator(_UnderRoot):
    """Where one function's index and data files live, and the stamp that makes them stale."""

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
        return _NoImportUnpickler(io.BytesIO(payload)).load()


class _NoImportUnpickler(pickle.Unpickler):
    """Numba's pickle, read without importing anything: a class or function it names (an
    exception class the code raises, say) comes from a module already imported, and the
    environment is rebuilt only from one."""

    def find_class(self, module, name):
        if module not in sys.modules:
            raise LookupError(f"the cached code names {module}.{name}, not imported: loading it would run it")
        found = super().find_class(module, name)
        return _rebuild_env_of_imported if found is _rebuild_env else found


@touches(
    "numba.core.environment",
    "_rebuild_env",
    "internals/caching.py: a cached entry's environment is rebuilt only from an imported module",
    params=("modname", "consts", "env_name"),
)
def _rebuild_env_of_imported(modname, consts, env_name):
    """Numba's ``_rebuild_env``, refusing (a miss) where it would import ``modname``."""
    if lookup_environment(env_name) is None and modname not in sys.modules:
        raise LookupError(f"the cached code's module {modname!r} is not imported: loading it would run it")
    return _rebuild_env(modname, consts, env_name)


class _TwinCacheImpl(CompileResultCacheImpl):
    """Serialises a compile result; built for one function, never through Numba's locators."""

    def __init__(self, py_func, root: str, rules: CacheRules):
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = TwinLocator(py_func, root)
        self._py_func = py_func
        self.nlp_rules = rules
        base = os.path.splitext(os.path.basename(py_func.__code__.co_filename))[0]
        self._filename_base = self.get_filename_base(f"{base}.{py_func.__qualname__}", sys.abiflags)

    def reduce(self, cres):
        """Numba's reduction, minus the globals dict a dynamic function's descriptor holds,
        plus the rules' stamp of the object code (checked before it is loaded again).

        The descriptor is copied first: Numba's ``_reduce`` clears the type maps of
        the descriptor it is given, and the live function keeps its own.
        """
        fndesc = copy.copy(cres.fndesc)
        fndesc.global_dict = None
        args = tuple(cres.signature.args)
        described = self.nlp_rules.signature(args) != args  # by a text: this process's types are not kept
        if described:
            fndesc.argtypes = None
        payload = cres._replace(fndesc=fndesc, signature=None if described else cres.signature)._reduce()
        _name, _kind, (object_code, _bitcode) = payload[0]
        return (_FORMAT, self.nlp_rules.stamp(object_code, cres.library), payload)

    def rebuild(self, target_context, data, args: tuple = ()):
        """The compile result kept in ``data``; ``args``, the types asked for, stand in for those of
        code kept without its types (``CacheRules.signature``)."""
        form, stamp, payload = data
        if form != _FORMAT or not self.nlp_rules.loadable(stamp):
            raise _NotLoadable
        fndesc = payload[1]
        if payload[3] is None:
            fndesc.argtypes = tuple(args)
            payload = (*payload[:3], typing.signature(fndesc.restype, *args), *payload[4:])
        if fndesc.modname == funcdesc._dynamic_modname:  # as at compile time: look globals up in the twin's
            fndesc.global_dict = self._py_func.__globals__
        cres = CompileResult._rebuild(target_context, *payload)
        _keep_object_code(cres.library, payload[0])
        self.nlp_rules.loaded(cres.library, stamp)
        return cres

    def refusal(self, cres) -> str | None:
        """Why ``cres`` may not be cached (None: it may): nopython code with no lifted blocks or baked
        addresses, which the rules keep (Numba's own check, ``check_cachable``, warns)."""
        if cres.objectmode or cres.lifted:
            return "object-mode code"
        if cres.library.has_dynamic_globals:
            return "its code holds addresses of this process's objects (Numba's cache refuses them too)"
        returned = (cres.signature.return_type,)
        if self.nlp_rules.signature(returned) != returned:
            return "its return type's name carries an address"
        code = compiled_object(cres.library) or b""
        if not code:
            return "Numba kept no object code for it"
        if _RuntimeLinker.PREFIX.encode() in code:
            # a mutually recursive call, named for this process's functions (loaded in another,
            # Numba's own cache=True code crashes on it)
            return "it calls a mutually recursive function by a name that holds in this process only"
        return None if self.nlp_rules.keeps(code) else self.nlp_rules.refusal(cres.signature.args, code)


def _keep_object_code(library, libdata) -> None:
    """Keep the object code of a library loaded from the cache, as a fresh compile keeps it
    (Numba drops its copy; the sampler and the machine-code view read it)."""
    _name, kind, data = libdata
    if kind == "object":
        try:
            library._set_compiled_object(data[0])
        except ValueError:  # already compiled from IR: it kept its own object code
            pass


class TwinCache(Cache):
    """Numba's per-function cache, for one twin (or any function) with :class:`CacheRules` of its own."""

    _impl_class = _TwinCacheImpl

    def __init__(self, py_func, root: str, rules: CacheRules):
        self._name = repr(py_func)
        self._py_func = py_func
        self._impl = _TwinCacheImpl(py_func, root, rules)
        self._cache_path = self._impl.locator.get_cache_path()
        self.refused: dict[str, str] = {}  # signature -> why its code is not cached
        self._cache_file = _TwinCacheFile(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp(),
        )
        self.enable()

    def _index_key(self, sig, codegen):
        """Numba's key with the rules' parts; None when the rules say this signature is not cached."""
        args, _ = sigutils.normalize_signature(sig)  # a callee compiles by args, a twin by full signature
        rules = self._impl.nlp_rules
        stands_for, extra = rules.signature(tuple(args)), rules.key(tuple(args))
        if stands_for is None or extra is None:
            self.refused[str(args)] = rules.refusal(tuple(args))
            return None
        return (stands_for, codegen.magic_tuple(), *extra)

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        if key is None:
            return None
        try:
            data = self._cache_file.load(key)
            if data is None:
                return None
            args, _ = sigutils.normalize_signature(sig)
            with event.trigger_event(LOAD_EVENT, data={"dispatcher": None, "args": ()}):  # as a compile
                return self._impl.rebuild(target_context, data, tuple(args))
        except Exception:  # a stale or corrupt entry: compile (and overwrite it)
            return None

    def _save_overload(self, sig, data):
        why = self._impl.refusal(data) if self._enabled else None
        if why is not None:
            self.refused[str(tuple(data.signature.args))] = why
        if not self._enabled or why is not None:
            return
        key = self._index_key(sig, data.codegen)
        if key is None:
            return
        try:
            self._impl.locator.ensure_cache_path()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._cache_file.save(key, self._impl.reduce(data))
        except Exception as exc:  # unwritable or unpicklable: this function stays uncached
            self.refused[str(tuple(data.signature.args))] = f"its cache entry could not be written ({exc})"
            self.disable()


#: Methods of Numba's classes overridden above: a Numba that no longer calls one of them
#: would skip the override (a corrupt file read as good, a key without the rules' parts).
_OVERRIDDEN = {
    IndexDataCacheFile: ("_load_index", "_load_data", "_save_data"),
    Cache: ("_index_key", "_load_overload", "_save_overload"),
}


@touches("numba.core.caching", "_CacheLocator", "instrument/twin_cache.py: where a twin's cache files live")
@touches(
    "numba.core.caching", "_CacheLocator.get_suitable_cache_subpath", "the subdirectory, named as Numba's"
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile.__init__",
    "instrument/twin_cache.py: Numba's index and data files, made as Cache makes them",
    params=("self", "cache_path", "filename_base", "source_stamp"),
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile._load_index",
    "instrument/twin_cache.py: a corrupt index is a miss and is rewritten",
    params=("self",),
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile._load_data",
    "instrument/twin_cache.py: cache data files carry a checksum; a corrupt one is a miss",
    params=("self", "name"),
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile._save_data",
    "instrument/twin_cache.py: the checksum is written before the pickle",
    params=("self", "name", "data"),
)
@touches(
    "numba.core.caching", "IndexDataCacheFile._dump", "instrument/twin_cache.py: pickled as Numba pickles"
)
@touches(
    "numba.core.caching", "IndexDataCacheFile._data_path", "instrument/twin_cache.py: a data file's path"
)
@touches(
    "numba.core.caching",
    "IndexDataCacheFile._open_for_write",
    "instrument/twin_cache.py: a data file is written as Numba writes one (atomically)",
)
@touches(
    "numba.core.caching",
    "CompileResultCacheImpl.reduce",
    "instrument/twin_cache.py: a twin's compile result is pickled without its globals",
    params=("self", "cres"),
)
@touches(
    "numba.core.caching",
    "CompileResultCacheImpl.rebuild",
    "instrument/twin_cache.py: a cached twin is loaded only when its stamp allows",
    params=("self", "target_context", "payload"),
)
@touches("numba.core.caching", "CompileResultCacheImpl.get_filename_base", "the files' names, as Numba's")
@touches(
    "numba.core.caching",
    "Cache._index_key",
    "instrument/twin_cache.py: a twin's cache key adds its identity and dependencies",
    params=("self", "sig", "codegen"),
)
@touches(
    "numba.core.caching",
    "Cache._load_overload",
    "instrument/twin_cache.py: a stale or corrupt entry is a miss, never an error",
    params=("self", "sig", "target_context"),
)
@touches(
    "numba.core.caching",
    "Cache._save_overload",
    "instrument/twin_cache.py: an entry that cannot be written turns the twin's cache off",
    params=("self", "sig", "data"),
)
@touches(
    "numba.core.caching",
    "Cache",
    "instrument/twin_cache.py: whether the cache is on (enable/disable)",
    instance_attribute="_enabled",
)
@touches(
    "numba.core.compiler",
    "CompileResult._reduce",
    "instrument/twin_cache.py: a twin's compile result is pickled as Numba pickles its own",
)
@touches(
    "numba.core.compiler",
    "CompileResult._rebuild",
    "instrument/twin_cache.py: a cached twin is rebuilt as Numba rebuilds its own",
)
@touches(
    "numba.core.funcdesc",
    "FunctionDescriptor.global_dict",
    "instrument/twin_cache.py: a dynamic function's globals, dropped from the pickle, put back on load",
)
@touches(
    "numba.core.funcdesc",
    "_dynamic_modname",
    "instrument/twin_cache.py: which descriptors look their globals up in the twin",
)
@touches(
    "numba.core.codegen",
    "CodeLibrary._set_compiled_object",
    "instrument/twin_cache.py: a library loaded from the cache keeps its object code (line tables)",
)
@touches("numba.core.sigutils", "normalize_signature", "a callee compiles by args, a twin by full signature")
@touches(
    "numba.core.codegen",
    "RuntimeLinker.PREFIX",
    "instrument/twin_cache.py: code calling a mutually recursive function by a per-process name is not kept",
)
def disk_cache_for(py_func, root: str, rules: CacheRules) -> object | None:
    """A Numba disk cache for the function compiled from ``py_func``, its files under ``root``,
    keeping and loading what ``rules`` allow; None where Numba cannot place its files (or
    this Numba would not call the overrides). Give it to a dispatcher with :func:`use_disk_cache`.
    """
    if not all(hasattr(base, name) for base, names in _OVERRIDDEN.items() for name in names):
        return None
    try:
        return TwinCache(py_func, root, rules)
    except Exception:  # a file name Numba cannot place: no cache for this function
        return None


def cache_refusal(dispatcher: object) -> str | None:
    """Why some code of ``dispatcher`` was not cached by its :class:`TwinCache` (None: all of it
    was, or it has no such cache)."""
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, TwinCache) or not cache.refused:
        return None
    return "; ".join(dict.fromkeys(cache.refused.values()))


@touches(
    "numba.core.dispatcher",
    "Dispatcher.enable_caching",
    "instrument/twin_cache.py: a twin's disk cache is set as enable_caching sets one (_cache)",
    instance_attribute="_cache",
)
def use_disk_cache(dispatcher: object, cache: object) -> None:
    """Make ``dispatcher`` load from and save to ``cache`` (what ``enable_caching`` does)."""
    dispatcher._cache = cache


@touches(
    "numba.core.caching",
    "_SourceFileBackedLocatorMixin",
    "sampling/_handler.py: the handler's cache files stamped as Numba stamps a source file's",
)
@touches(
    "numba.core.caching",
    "CompileResultCacheImpl._locator_classes",
    "sampling/_handler.py: the handler's cache files placed under numba_lprun's own directory",
)
@touches(
    "numba.core.caching", "FunctionCache._impl_class", "sampling/_handler.py: Numba's cache, placed apart"
)
@touches(
    "numba.core.ccallback",
    "CFunc.__init__",
    "sampling/_handler.py: a cfunc made as numba.cfunc makes one",
    params=("self", "pyfunc", "sig", "locals", "options", "pipeline_class"),
)
@touches(
    "numba.core.ccallback",
    "CFunc.enable_caching",
    "sampling/_handler.py: a cfunc's cache set as enable_caching sets it",
    instance_attribute="_cache",
)
def cfunc_cached_under(root: str, signature: object, py_func: object, **options: object) -> object:
    """``numba.cfunc(signature, cache=True, **options)(py_func)``, its cache files under ``root``.

    Why not ``cache=True``: Numba puts a cfunc's files where its locators say, the program's
    ``NUMBA_CACHE_DIR`` first. numba_lprun's own compiled code (the sampler's handler) belongs in
    numba_lprun's cache directory, not in the program's Numba cache, which a profile leaves as a
    plain run would. Loading and saving are Numba's own, as with ``cache=True``; raises where
    ``root`` cannot hold them (``cache=True`` raises alike)."""
    from numba.core.ccallback import CFunc

    class Locator(_SourceFileBackedLocatorMixin, _UnderRoot):  # stamped as Numba stamps its own
        def __init__(self, py_func, py_file):
            super().__init__(py_func, root, py_file)

    class Impl(CompileResultCacheImpl):
        _locator_classes = [Locator]

    class OwnCache(FunctionCache):
        _impl_class = Impl

    args, return_type = sigutils.normalize_signature(signature)
    made = CFunc(py_func, (args, return_type), locals={}, options=options)
    made._cache = OwnCache(py_func)
    made.compile()
    return made
