"""Python-level calls of an original dispatcher sent to its twin, wherever the original is kept.

A program may hold a jitted function anywhere (a name, a dict of kernels, a
dataclass field, a closure, a ``functools.partial``), so for a run the original's
*class* is swapped for a subclass whose instances call the twin stored on them.
The subclass overrides two of Numba's private hooks (``_numba_type_``, how jitted
code types a dispatcher passed as an argument, and ``_reduce_class``, how it is
pickled) and reads ``_can_compile``: that is why it lives behind the door.
"""

from __future__ import annotations

import functools
import sys

from .registry import touches

_SYNCING = "_numba_lprun_syncing"
_REDIRECT = "_numba_lprun_twin"
_OWN_CLASS = "_numba_lprun_own_class"  # on a redirecting subclass: the class it redirects
_HANDED = "_numba_lprun_handed"  # id(twin's entry point) -> (it, the original's), see compile


@functools.cache
def _redirecting(cls: type) -> type:
    """A subclass of ``cls`` whose instances call the twin stored on them.

    While a run lasts the original's class is this one, so every Python-level call
    of it goes to its twin, while everything else a program may touch is the
    original's own: ``py_func``, ``__name__``, ``isinstance``, pickling (as the
    original's class). What the original would have compiled by now, it compiles
    when a program reads it (``overloads``, so ``signatures``, ``inspect_types()``...):
    the types its twin was called with, compiled on demand, so a profile costs no
    second compile unless the program asks.
    """

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True  # noqa: F841  (a forwarding frame: an error here is the call's, see errors)
        return self.__dict__[_REDIRECT](*args, **kwargs)

    @property
    def _numba_type_(self):
        # passed as an argument to jitted code (a first-class function such as
        # ``integrate(f, 0, 1)``), it is typed as its twin, so the callee calls the twin
        return self.__dict__[_REDIRECT]._numba_type_

    def _reduce_class(self):
        # pickled (Numba's ReduceMixin) as the original's class, so unpickling makes a plain dispatcher
        return cls

    def _get_overloads(self):
        own = self.__dict__["overloads"]
        twin = self.__dict__.get(_REDIRECT)
        if twin is None or _SYNCING in self.__dict__ or not self._can_compile:
            return own
        if sys._getframe(1).f_globals.get("__name__", "").startswith("numba_lprun"):
            return own  # the profiler's own bookkeeping: what the original really has
        missing = [types for types in list(twin.overloads) if types not in own]
        if missing:
            self.__dict__[_SYNCING] = True  # compile() reads overloads itself
            try:
                for types in missing:
                    cls.compile(self, types)
            finally:
                del self.__dict__[_SYNCING]
        return own

    def _set_overloads(self, value):
        self.__dict__["overloads"] = value

    def compile(self, sig):
        # ``entry = f.compile(sig)`` during a run: the program gets the twin's entry point, so
        # its calls through it are counted (the original compiles the signature too); the run
        # puts the original's entry point back wherever the program keeps it (stop_redirect, Swap._take_back)
        own = cls.compile(self, sig)
        twin = self.__dict__.get(_REDIRECT)
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if twin is None or _SYNCING in self.__dict__ or caller.split(".")[0] in ("numba", "numba_lprun"):
            return own
        theirs = twin.compile(sig)
        self.__dict__.setdefault(_HANDED, {})[id(theirs)] = (theirs, own)
        return theirs

    namespace = {
        "__call__": __call__,
        "_numba_type_": _numba_type_,
        "_reduce_class": _reduce_class,
        "overloads": property(_get_overloads, _set_overloads),
        "compile": compile,
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        _OWN_CLASS: cls,
    }
    return type(cls.__name__, (cls,), namespace)


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


def stop_redirect(original: object, cls: type) -> dict[int, tuple[object, object]]:
    """Give ``original`` its own class back (``cls``, from :func:`redirect_calls`); returns the
    twin's entry points its ``compile`` handed out meanwhile: id -> (the twin's, the original's)."""
    original.__class__ = cls
    original.__dict__.pop(_REDIRECT, None)
    return original.__dict__.pop(_HANDED, {})


def compiled_entry_points(dispatcher: object) -> dict[tuple, object]:
    """The entry point (``compile(sig)``'s result) of each signature ``dispatcher`` has compiled."""
    return {sig: cres.entry_point for sig, cres in dict(dispatcher.__dict__.get("overloads", {})).items()}
