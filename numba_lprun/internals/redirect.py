"""Python-level calls of an original dispatcher sent to its twin, wherever the original is kept.

A program may hold a jitted function anywhere (a name, a dict of kernels, a
dataclass field, a closure, a ``functools.partial``), so for a run the original's
*class* is swapped for a subclass whose instances call the twin stored on them.
The subclass overrides two of Numba's private hooks (``_numba_type_``, how jitted
code types a dispatcher passed as an argument, and ``_reduce_class``, how it is
pickled) and reads ``_can_compile``: that is why it lives behind the door.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import traceback
import warnings
import weakref
from collections.abc import Callable

from numba.core.caching import NullCache as _NullCache
from numba.core.errors import NumbaDebugInfoWarning as _NumbaDebugInfoWarning
from numba.core.errors import NumbaError as _NumbaError
from numba.core.sigutils import normalize_signature as _normalize_signature

from .registry import touches

_SYNCING = "_numba_lprun_syncing"
_REDIRECT = "_numba_lprun_twin"
_OWN_CLASS = "_numba_lprun_own_class"  # on a redirecting subclass: the class it redirects
_HANDED = "_numba_lprun_handed"  # id(twin's entry point) -> (it, the original's), see compile
_FELL_BACK = "_numba_lprun_fell_back"  # on a redirected original: why it runs as itself now
_RECORDER = "_numba_lprun_recorder"  # on a redirected original: called with each call (record_calls)
_DISPATCHER_FILE = os.path.join("numba", "core", "dispatcher.py")
_DECORATORS = "numba.core.decorators"  # where ``njit(sigs)(f)`` compiles the explicit signatures


class _Redirecting:
    """What a redirected dispatcher's class adds to its own: its instances call the twin stored on them.

    While a run lasts the original's class is a subclass of its own with these members
    (``_redirecting``), so every Python-level call of it goes to its twin, while
    everything else a program may touch is the original's own: ``py_func``,
    ``__name__``, ``isinstance``, pickling (as the original's class). What the original
    would have compiled by now, it compiles when a program reads it (``overloads``, so
    ``signatures``, ``inspect_types()``, ``stats``...): the types its twin was called
    with, compiled on demand, so a profile costs no second compile unless the program
    asks. Explicit signatures and ``disable_compile()`` reach the twin too, so a call
    is converted to, or refused by, the same signatures as without the profiler.

    The members are copied into a direct subclass of the original's class (``_redirecting``),
    whose instance layout is its base's (``__class__`` is assigned); ``_own(self)`` is that base.
    """

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        if _FELL_BACK in self.__dict__:
            return _own(self).__call__(self, *args, **kwargs)
        recorder = self.__dict__.get(_RECORDER)
        try:
            if recorder is not None:
                return recorder(self, self.__dict__[_REDIRECT], args, kwargs)
            return self.__dict__[_REDIRECT](*args, **kwargs)
        except _NumbaError as exc:
            if not _raised_compiling(exc):
                raise
            why = _first_line(exc)
            # Numba keeps the failure (its compiler's failed cache), and through its traceback the
            # frames that raised it, which hold the call's arguments: a jitclass instance passed
            # in was never freed (Numba's own memory checks saw it); they are let go here
            traceback.clear_frames(exc.__traceback__)
            exc.__traceback__ = None
        # the twin could not be compiled for these arguments: the original runs instead, for the
        # rest of the run (if it fails to compile too, the program gets its own error as without
        # the profiler, raised here outside the handler so it carries no trace of the twin's),
        # and the run says so (``fell_back``)
        result = _own(self).__call__(self, *args, **kwargs)
        self.__dict__[_FELL_BACK] = why
        return result

    @property
    def _numba_type_(self):
        # passed as an argument to jitted code (a first-class function such as
        # ``integrate(f, 0, 1)``), it is typed as its twin, so the callee calls the twin
        return self.__dict__[_REDIRECT]._numba_type_

    def get_call_template(self, args, kws):
        # typed by Numba as a callee without ``typeof`` (``@overload``'s and ``register_jitable``'s
        # implementations, a ``types.Dispatcher`` made directly): the caller compiles against the twin
        twin = self.__dict__.get(_REDIRECT)
        if twin is None or _FELL_BACK in self.__dict__ or not _asked_by_numba():
            return _own(self).get_call_template(self, args, kws)
        try:
            return twin.get_call_template(args, kws)
        except _NumbaError as exc:  # typing compiles: any error of Numba's here is the twin's compile's
            why = _first_line(exc)
            traceback.clear_frames(exc.__traceback__)
        # as in ``__call__``: the original compiles instead (its own error, if any, is the program's)
        result = _own(self).get_call_template(self, args, kws)
        self.__dict__[_FELL_BACK] = why
        return result

    def get_overload(self, sig):
        # ... and links the twin's code where it asks for the callee's entry point
        twin = self.__dict__.get(_REDIRECT)
        if twin is None or _FELL_BACK in self.__dict__ or not _asked_by_numba():
            return _own(self).get_overload(self, sig)
        return twin.get_overload(sig)

    def _reduce_class(self):
        # pickled (Numba's ReduceMixin) as the original's class, so unpickling makes a plain dispatcher
        return _own(self)

    def _take_twins_types(self) -> dict:
        """Compile what the twin compiled and the original did not (what it would have by now)."""
        own = self.__dict__["overloads"]
        twin = self.__dict__.get(_REDIRECT)
        if twin is None or _SYNCING in self.__dict__ or not self._can_compile:
            return own
        missing = [types for types in list(twin.overloads) if types not in own]
        if missing:
            self.__dict__[_SYNCING] = True  # compile() reads overloads itself
            try:
                with warnings.catch_warnings():  # the program saw this compile's warnings from the twin's
                    warnings.simplefilter("ignore")
                    for types in missing:
                        _own(self).compile(self, types)
            finally:
                del self.__dict__[_SYNCING]
        return own

    @property
    def overloads(self):
        if sys._getframe(1).f_globals.get("__name__", "").startswith("numba_lprun"):
            return self.__dict__["overloads"]  # the profiler's own bookkeeping: what the original has
        return self._take_twins_types()

    @overloads.setter
    def overloads(self, value):
        self.__dict__["overloads"] = value

    @property
    def stats(self):
        # a program reading its cache hits (``f.stats.cache_hits``) sees those the original's
        # compiles of the twin's types made, as the compiles the program caused would have
        self._take_twins_types()
        return _own(self).stats.__get__(self)

    def compile(self, sig):
        # ``entry = f.compile(sig)`` during a run: the program gets the twin's entry point, so
        # its calls through it are counted (the original compiles the signature too); the run
        # puts the original's entry point back wherever the program keeps it (stop_redirect, Swap._take_back)
        own = _own(self).compile(self, sig)
        twin = self.__dict__.get(_REDIRECT)
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if twin is None or _SYNCING in self.__dict__:
            return own
        if caller == _DECORATORS:
            # ``njit("float64(float64)")(f)`` made during the run compiles its signatures after the
            # dispatcher exists (and was redirected): the twin takes them too, so a call casts its
            # arguments to them as the original's would (``g(3)`` returns 3.0, not 3)
            twin.compile(sig)
            return own
        if caller.split(".")[0] in ("numba", "numba_lprun"):
            return own
        theirs = twin.compile(sig)
        self.__dict__.setdefault(_HANDED, {})[id(theirs)] = (theirs, own)
        return theirs

    def disable_compile(self, val=True):
        # the program freezes the original's signatures (as the decorator does after compiling
        # explicit ones): the original first takes the types its twin compiled meanwhile (what
        # it would have compiled itself), then both stop compiling
        twin = self.__dict__.get(_REDIRECT)
        if twin is not None and val and "overloads" in self.__dict__:
            self._take_twins_types()
        if val is True:  # DUFunc.disable_compile takes no argument
            _own(self).disable_compile(self)
        else:
            _own(self).disable_compile(self, val)
        if twin is not None:
            _give_signatures(self, twin)
            twin.disable_compile() if val is True else twin.disable_compile(val)


def _asked_by_numba() -> bool:
    """Whether the caller of the method that asks is Numba's own code (its typing or lowering
    of a jitted caller), not the program's or the profiler's."""
    module = sys._getframe(2).f_globals.get("__name__", "")
    return module.startswith("numba.") and not module.startswith("numba.tests")


def _give_signatures(original: object, twin: object) -> None:
    """Compile ``twin`` for every signature ``original`` has (a dispatcher's, or a DUFunc's
    loops: ``vectorize([sigs])(f)`` adds them after the DUFunc is made, then freezes it)."""
    if "overloads" in original.__dict__:
        for types in list(original.__dict__["overloads"]):
            if types not in twin.overloads:
                twin.compile(types)
        return
    kernel, twin_kernel = _kernel_of(original), _kernel_of(twin)
    if kernel is None or twin_kernel is None or not hasattr(twin, "add"):
        return
    for types, cres in list(kernel.overloads.items()):
        if types not in twin_kernel.overloads:
            twin.add(cres.signature)


@touches(
    "numba.np.ufunc.dufunc",
    "DUFunc",
    "a DUFunc's kernel dispatcher: the loops its listed signatures compiled, which its twin takes",
    instance_attribute="_dispatcher",
)
def _kernel_of(ufunc: object) -> object | None:
    from numba.np.ufunc.dufunc import DUFunc

    return ufunc._dispatcher if isinstance(ufunc, DUFunc) else None


def _own(dispatcher: object) -> type:
    """The class a redirected dispatcher had (whose methods the redirecting ones call)."""
    return type(dispatcher).__dict__[_OWN_CLASS]


_MEMBERS = {k: v for k, v in vars(_Redirecting).items() if k not in ("__dict__", "__weakref__", "__doc__")}


@functools.cache
def _redirecting(cls: type) -> type:
    """A direct subclass of ``cls``, named as ``cls``, with :class:`_Redirecting`'s members."""
    namespace = {**_MEMBERS, "__module__": cls.__module__, "__qualname__": cls.__qualname__, _OWN_CLASS: cls}
    return type(cls.__name__, (cls,), namespace)


_BEFORE_COMPILE = "_numba_lprun_before_compile"  # on a twin: called before each compile
_TWIN_OF = "_numba_lprun_twin_of"  # on a twin: (its original, whether its compiles are always silent)


_IS_TWIN_CLASS = "_numba_lprun_twin_class"


def is_twin(value: object) -> bool:
    """Whether ``value`` is a twin (made by ``make_twin_dispatcher``); asks its type only, so
    no object's own ``__getattr__`` runs."""
    return getattr(type(value), _IS_TWIN_CLASS, False) is True


@functools.cache
def _twin_class(cls: type) -> type:
    """A subclass of ``cls`` for twins, whose ``compile`` first calls the hook stored on the
    instance (``make_twin_dispatcher``): a twin made before the program bound something its
    code names (a closure's own name, a function defined later in the same scope) takes it
    when it compiles, as the original does. Pickled as ``cls``.

    A twin's compile warns as the original's would (the program sees one compile of each
    signature, the twin's), but never that its exec'd helpers have no source for their
    line tables; where the original compiled those types itself, or the twin's compile is
    an extra one (a plain twin), the program already saw its warnings and sees none again.
    """

    def compile(self, sig):
        args = _normalize_signature(sig)[0]
        hook = self.__dict__.get(_BEFORE_COMPILE)
        if hook is not None:
            hook(args)
        held, silent = self.__dict__.get(_TWIN_OF, (None, True))
        original = held() if held is not None else None
        seen = getattr(original, "__dict__", {}).get("overloads", {})  # what the original compiled itself
        if not silent and args not in seen and _keeps_a_disk_cache(original) and original._can_compile:
            # ``cache=True``: the original loads these types from its cache (or compiles and saves
            # them) as without the profiler, so its cache and its hits are the program's own
            own_class(original).compile(original, sig)
        # the program's function would compile these types now (no cache=True): so does its twin, not
        # loading them from the twin cache, so that the compile does what the original's would (its
        # warnings, its callees' compiles: ``f.signatures`` of a function it calls). Saved all the same
        fresh = not silent and args not in seen and not _keeps_a_disk_cache(original)
        with warnings.catch_warnings(), _loading_nothing(self) if fresh else contextlib.nullcontext():
            if silent or args in seen:
                warnings.simplefilter("ignore")
            else:
                warnings.simplefilter("ignore", _NumbaDebugInfoWarning)
            return cls.compile(self, sig)

    def _reduce_class(self):
        return cls

    namespace = {
        "compile": compile,
        "_reduce_class": _reduce_class,
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        _OWN_CLASS: cls,
        _IS_TWIN_CLASS: True,
    }
    return type(cls.__name__, (cls,), namespace)


@touches(
    "numba.core.dispatcher",
    "Dispatcher.enable_caching",
    "a cache=True original compiles (loads) each type its twin compiles: its cache is the program's",
    instance_attribute="_cache",
)
@touches("numba.core.caching", "NullCache", "what a dispatcher without cache=True holds as its cache")
class _SavingOnly:
    """A disk cache that loads nothing and saves as ``cache`` does."""

    def __init__(self, cache: object) -> None:
        self._cache = cache

    def load_overload(self, *args, **kwargs):
        return None

    def __getattr__(self, name: str):
        return getattr(self._cache, name)


@touches(
    "numba.core.dispatcher",
    "Dispatcher",
    "a twin that compiles what its function would compiles without loading from the twin cache",
    instance_attribute="_cache",
)
@contextlib.contextmanager
def _loading_nothing(dispatcher: object):
    """While the block runs, ``dispatcher``'s disk cache loads nothing (and saves as before)."""
    cache = dispatcher.__dict__.get("_cache")
    if cache is None or isinstance(cache, _NullCache):
        yield
        return
    dispatcher._cache = _SavingOnly(cache)
    try:
        yield
    finally:
        dispatcher._cache = cache


def _keeps_a_disk_cache(dispatcher: object) -> bool:
    """Whether ``dispatcher`` was made with ``cache=True`` (it loads and saves compiled code)."""
    cache = getattr(dispatcher, "_cache", None)
    return cache is not None and not isinstance(cache, _NullCache)


@touches("numba.core.sigutils", "normalize_signature", "a twin's compile is silent for the original's types")
def make_twin_dispatcher(
    original: object, before_compile: Callable[[tuple], None], *args, silent: bool = False, **kwargs
) -> object:
    """A dispatcher of ``original``'s own class (see ``own_class``) made with ``args`` and
    ``kwargs``, which calls ``before_compile(types)`` before each compile for the argument
    ``types``; ``silent``: its compiles
    never warn (an extra twin, compiled beside the one the program's calls run on)."""
    dispatcher = _twin_class(own_class(original))(*args, **kwargs)
    code = getattr(getattr(original, "py_func", None), "__code__", None)
    if code is not None and "__code__" in dispatcher.__dict__:
        # what the program reads of it (``dis.dis(f)`` in an objmode block, ``inspect``) is the
        # original's code, not the rewritten one Numba compiles (``py_func``)
        dispatcher.__code__ = code
    dispatcher.__dict__[_BEFORE_COMPILE] = before_compile
    dispatcher.__dict__[_TWIN_OF] = (weakref.ref(original), silent)  # the original keeps its twins
    return dispatcher


@touches(
    "numba.core.compiler",
    "CompileResult.type_annotation",
    "instrument/twins.py: the globals an overload of the original was compiled with",
)
@touches(
    "numba.core.annotations.type_annotations",
    "TypeAnnotation",
    "instrument/twins.py: the typed IR of an overload, whose global loads hold the values it froze",
    instance_attribute="blocks",
)
@touches("numba.core.ir", "Global", "instrument/twins.py: a global load, with the value read at compile")
def globals_frozen_by(dispatcher: object, types: tuple) -> dict[str, object]:
    """The globals ``dispatcher``'s code for argument ``types`` read when it compiled, by name
    (``{}``: it has no such code, or it was loaded from a cache, which keeps no IR).

    Numba reads a global once, when it compiles, and the code keeps that value (a number, the
    jitted function a name held): a name the program rebinds later changes nothing in it."""
    from numba.core import ir

    cres = getattr(dispatcher, "__dict__", {}).get("overloads", {}).get(types)
    annotation = cres.type_annotation if cres is not None else None
    # loaded from a cache: the annotation's text only (Numba pickles its str), no IR
    blocks = (annotation.blocks or {}) if hasattr(annotation, "blocks") else {}
    frozen: dict[str, object] = {}
    for block in blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Global):
                frozen.setdefault(stmt.value.name, stmt.value.value)
    return frozen


def own_class(dispatcher: object) -> type:
    """``dispatcher``'s own class, whether or not its calls are redirected now: a forked child
    inherits the parent's redirected dispatchers, and a twin made from one with ``type(d)`` would be
    a redirecting dispatcher with no twin of its own (its every call a KeyError)."""
    cls = type(dispatcher)
    return cls.__dict__.get(_OWN_CLASS, cls)


@touches(
    "numba.core.dispatcher",
    "Dispatcher._numba_type_",
    "run/reach.py: a redirected dispatcher is typed as its twin when passed to jitted code",
)
@touches(
    "numba.core.serialize",
    "ReduceMixin._reduce_class",
    "run/reach.py: a redirected dispatcher pickles as the original's class",
)
@touches(
    "numba.core.dispatcher",
    "Dispatcher._can_compile",
    "run/reach.py: a redirected dispatcher with explicit signatures compiles nothing on demand",
)
def redirect_calls(original: object, twin: object) -> type | None:
    """Send every Python-level call of ``original`` to ``twin`` until :func:`stop_redirect`.

    Returns the original's own class, to hand back to :func:`stop_redirect`, or None
    when it was already redirected in this run (then it is retargeted to ``twin``).
    """
    if _REDIRECT in original.__dict__:
        original.__dict__[_REDIRECT] = twin
        return None
    cls = type(original)
    original.__dict__[_REDIRECT] = twin
    original.__class__ = _redirecting(cls)
    return cls


def record_calls(original: object, recorder: Callable[[object, object, tuple, dict], object]) -> None:
    """Until :func:`stop_redirect`, each Python-level call of the redirected ``original`` is made
    by ``recorder(original, twin, args, kwargs)``, which calls ``twin`` and returns its result."""
    original.__dict__[_RECORDER] = recorder


def stop_redirect(original: object, cls: type) -> dict[int, tuple[object, object]]:
    """Give ``original`` its own class back (``cls``, from :func:`redirect_calls`); returns the
    twin's entry points its ``compile`` handed out meanwhile: id -> (the twin's, the original's)."""
    original.__class__ = cls
    original.__dict__.pop(_REDIRECT, None)
    original.__dict__.pop(_RECORDER, None)
    original.__dict__.pop(_FELL_BACK, None)
    return original.__dict__.pop(_HANDED, {})


def fell_back(original: object) -> str | None:
    """Why ``original`` ran as itself for part of the run (its twin failed to compile for the
    arguments a call gave it: Numba's first line), or None."""
    return original.__dict__.get(_FELL_BACK)


@touches(
    "numba.core.dispatcher",
    "_DispatcherBase._compile_for_args",
    "run/reach.py: a twin's compile failure (not an error its code raised) lets the original run",
)
def _raised_compiling(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while Numba compiled for a call's arguments (its traceback
    passes through the dispatcher's ``_compile_for_args``), not by the compiled code running."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "_compile_for_args" and code.co_filename.endswith(_DISPATCHER_FILE):
            return True
        tb = tb.tb_next
    return False


_NOISE = ("Failed in ", "During:", "File ", "Rewrite ", "- Resolution", "- argument")


def _first_line(exc: BaseException) -> str:
    """The line of Numba's message that says what went wrong (not which pass, file or step)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(_NOISE) and set(line) != {"^"}]
    return (useful or lines or [type(exc).__name__])[0]


def compiled_entry_points(dispatcher: object) -> dict[tuple, object]:
    """The entry point (``compile(sig)``'s result) of each signature ``dispatcher`` has compiled."""
    return {sig: cres.entry_point for sig, cres in dict(dispatcher.__dict__.get("overloads", {})).items()}
