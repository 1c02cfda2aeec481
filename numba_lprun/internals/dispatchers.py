"""Dispatchers: the class ``@njit`` makes, and what a twin copies from the original's.

``CPUDispatcher`` lives in ``numba.core.registry``; everything else in numba_lprun
names it from here. A twin compiles with the original's pipeline class and,
like the original, compiles nothing new when the original was given explicit
signatures: neither is public.
"""

from __future__ import annotations

import contextlib
import warnings

from numba.core import registry as _registry
from numba.core.dispatcher import Dispatcher as _Dispatcher
from numba.core.dispatcher import _MemoMixin

from .registry import touches

#: The class ``@njit``/``@jit`` make for the CPU target (for ``isinstance`` and type hints).
CPUDispatcher = touches(
    "numba.core.registry",
    "CPUDispatcher",
    "the class @njit/@jit make for the CPU target: what can be profiled, and what twins are",
    exported_as="dispatchers.CPUDispatcher",
)(_registry.CPUDispatcher)


@touches(
    "numba.core.dispatcher",
    "Dispatcher",
    "run/state_types.py: any dispatcher (also a lifted loop's) is code, not state to save",
)
def is_dispatcher(obj: object) -> bool:
    """Whether ``obj`` is a Numba dispatcher of any kind (CPU, lifted code, object mode)."""
    return isinstance(obj, _Dispatcher)


@touches(
    "numba.core.dispatcher",
    "_DispatcherBase",
    "twins.py: a twin copies the original's compiler pipeline (dispatcher._compiler.pipeline_class)",
    instance_attribute="_compiler",
)
@touches(
    "numba.core.dispatcher",
    "_FunctionCompiler",
    "twins.py: the dispatcher's compiler, which holds the pipeline class",
    instance_attribute="pipeline_class",
)
def pipeline_class(dispatcher: CPUDispatcher) -> type:
    """The compiler pipeline class ``dispatcher`` compiles with (``pipeline_class=`` of ``@njit``)."""
    return dispatcher._compiler.pipeline_class


@touches(
    "numba.core.dispatcher",
    "_DispatcherBase._reset_overloads",
    "run/runner.py: a twin passed to parallel code drops its serial code, its object kept",
)
@touches(
    "numba.core.dispatcher",
    "_DispatcherBase",
    "run/runner.py: a twin passed to parallel code compiles as its atomic successor",
    instance_attribute="_compiler",
)
@touches(
    "numba.core.dispatcher",
    "Dispatcher",
    "run/runner.py: a twin passed to parallel code loads and saves as its atomic successor",
    instance_attribute="_cache",
)
def compile_as(dispatcher: CPUDispatcher, model: CPUDispatcher) -> list[object]:
    """Drop ``dispatcher``'s compiled code and compile it from now on as ``model`` compiles (its
    Python function, compiler and cache), for the signatures it compiled: a jitted function
    passed to jitted code is typed as the dispatcher object it was passed as
    (``types.Dispatcher`` holds it), so where its code must change, that object's must. Numba's
    compiler lock is held: a caller's typing may be under way in this thread. Returns the
    compiled code dropped, for the caller to keep alive while it may still run."""
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        dropped = list(dispatcher.overloads.values())
        signatures = list(dispatcher.overloads)
        compiles = dispatcher._can_compile
        dispatcher._reset_overloads()
        dispatcher._compiler = model._compiler
        dispatcher._cache = model._cache
        dispatcher.py_func = model.py_func
        dispatcher.func_code = model.func_code
        # the hook a twin calls before each compile (``redirect.make_twin_dispatcher``)
        dispatcher.__dict__.update({k: v for k, v in model.__dict__.items() if k.startswith("_numba_lprun_")})
        if not compiles:  # explicit signatures: compiled again now, as they were
            dispatcher._can_compile = True
            try:
                for signature in signatures:
                    dispatcher.compile(signature)
            finally:
                dispatcher._can_compile = False
    return dropped


@touches(
    "numba.core.dispatcher",
    "Dispatcher._can_compile",
    "twins.py, run/reach.py: a function with explicit signatures compiles nothing new; nor may its twin",
)
def can_compile(dispatcher: CPUDispatcher) -> bool:
    """Whether ``dispatcher`` still compiles new signatures (False after ``disable_compile()``)."""
    return dispatcher._can_compile


@touches(
    "numba.core.errors",
    "NumbaDebugInfoWarning",
    "run/runner.py: twins are exec'd, so Numba warns it cannot find their source for debug info",
)
def ignore_debug_info_warnings() -> None:
    """Drop Numba's "could not find source" warnings (call inside ``warnings.catch_warnings()``).

    Twins are built by ``exec`` of a rewritten function and carry line tables, so
    Numba looks for their source file to describe variables and warns when it
    cannot; their line tables are right all the same.
    """
    from numba.core.errors import NumbaDebugInfoWarning

    warnings.simplefilter("ignore", NumbaDebugInfoWarning)


#: The event fired while a twin's code is loaded from numba_lprun's cache (Numba fires none for
#: a load, though the JIT loads code and registers its unwind tables as for a compile).
LOAD_EVENT = "numba_lprun:load"


@touches(
    "numba.core.event",
    "install_listener",
    "run/compiles.py: compile events pause the sampler and time each twin's compile",
)
@touches("numba.core.event", "Listener", "the base class Numba sends events to")
@touches(
    "numba.core.event",
    "Event",
    "run/compiles.py: the exception a compile ended with (Event.is_failed says the opposite of its name)",
    instance_attribute="_exc_details",
)
def compile_events(listener) -> contextlib.AbstractContextManager:
    """A context manager sending Numba's compile events to ``listener`` while it is open, and
    the loads of twins from numba_lprun's cache (``caching.LOAD_EVENT``: code the JIT loads).

    ``listener.on_start(data)`` and ``listener.on_end(data, error)`` get each event's data
    (a dict with ``dispatcher`` and ``args``, or empty: a hold of Numba's compiler lock, which
    every code generation takes, announced before the thread waits for it) and, at the end,
    the exception the compile raised (None: it compiled): Numba's ``Event`` objects stay
    behind the door.
    """
    from numba.core import event

    class Relay(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            listener.on_start(ev.data or {})

        def on_end(self, ev: event.Event) -> None:
            details = ev._exc_details
            listener.on_end(ev.data or {}, details[1] if details else None)

    both = contextlib.ExitStack()
    # every code generation holds the compiler lock (``CodeLibrary.finalize`` requires it), and
    # some fire no compile event: a ufunc's wrapper, a gufunc rebuilt, a cfunc
    for kind in ("numba:compile", "numba:compiler_lock", LOAD_EVENT):
        both.enter_context(event.install_listener(kind, Relay()))
    both.enter_context(_ufunc_kernel_compiles(listener))
    return both


@touches(
    "numba.np.ufunc.ufuncbuilder",
    "UFuncDispatcher._compile_core",
    "run/runner.py: a @vectorize/@guvectorize kernel compiles without a compile event, and runs on "
    "threads where its target is parallel",
    params=("self", "sig", "flags", "locals"),
)
@contextlib.contextmanager
def _ufunc_kernel_compiles(listener):
    """Send the compiles of ``@vectorize`` and ``@guvectorize`` kernels to ``listener`` as compile
    events (``dispatcher``: the kernel's ``UFuncDispatcher``, ``args``: its argument types):
    Numba fires none for them, and a kernel of a parallel ufunc runs on every thread."""
    from numba.core import sigutils
    from numba.np.ufunc.ufuncbuilder import UFuncDispatcher

    compile_core = UFuncDispatcher._compile_core

    def reported(self, sig, flags, locals):
        data = {"dispatcher": self, "args": tuple(sigutils.normalize_signature(sig)[0])}
        listener.on_start(data)
        try:
            cres = compile_core(self, sig, flags, locals)
        except BaseException as exc:
            listener.on_end(data, exc)
            raise
        listener.on_end(data, None)
        return cres

    UFuncDispatcher._compile_core = reported
    try:
        yield
    finally:
        UFuncDispatcher._compile_core = compile_core


@touches("numba.core.types", "Dispatcher", "a jitted function passed as an argument: its type holds it")
def functions_typed(types_seen: tuple) -> list[object]:
    """The jitted functions that argument types stand for (``types.Dispatcher``, also inside
    tuples): a function passed to a compiling caller, ``dens(x, g, kernel)``, which its code
    calls though no name of it shows that."""
    from numba.core import types

    found, pending = [], list(types_seen)
    while pending:
        ty = pending.pop()
        if isinstance(ty, types.Dispatcher):
            found.append(ty.dispatcher)
        elif isinstance(ty, types.BaseTuple):
            pending.extend(ty.types)
    return found


@touches("numba.np.ufunc.ufuncbuilder", "UFuncDispatcher", "a ufunc kernel's compiling dispatcher")
def is_ufunc_kernel(dispatcher: object) -> bool:
    """Whether ``dispatcher`` compiles a ``@vectorize``/``@guvectorize`` kernel (NumPy may run its
    loops on several threads: ``target="parallel"``, or a ``nogil`` caller's threads)."""
    from numba.np.ufunc.ufuncbuilder import UFuncDispatcher

    return isinstance(dispatcher, UFuncDispatcher)


@touches(
    "numba.core.dispatcher",
    "_MemoMixin._uuid",
    "processes: the id a dispatcher is pickled under (made now, so a forked child inherits it)",
)
def pickle_identity(dispatcher: object) -> str | None:
    """The id Numba pickles ``dispatcher`` under (None: not a dispatcher Numba pickles so).

    Why: a pool pickles the function it sends a worker, and unpickling makes a new
    dispatcher unless the id is known there; a forked worker knows the ids made
    before the fork, a spawned one only those ``unpickle_as`` registers."""
    return dispatcher._uuid if isinstance(dispatcher, _MemoMixin) else None


@touches(
    "numba.core.dispatcher",
    "_MemoMixin._memo",
    "processes: a spawned worker unpickles the parent's dispatcher as its own profiled one",
)
def unpickle_as(identity: str, dispatcher: object) -> None:
    """Unpickling a dispatcher pickled under ``identity`` gives ``dispatcher`` (held weakly)."""
    _MemoMixin._memo[identity] = dispatcher


@touches(
    "numba.core.dispatcher",
    "_MemoMixin._memo",
    "processes: a Dask worker finds the copy of a profiled dispatcher its tasks unpickled before",
)
def unpickled_under(identity: str) -> object | None:
    """The dispatcher that unpickling ``identity`` gives now (None: none is alive): a worker that
    ran the tasks before the profile holds that copy, and the tasks it runs later unpickle as it."""
    return _MemoMixin._memo.get(identity)


@touches(
    "numba.core.dispatcher",
    "_DispatcherBase._reset_overloads",
    "processes: a Dask worker's function compiled during the run against a kernel's twin compiles again",
)
def forget_compiled(dispatcher: object) -> None:
    """Drop what ``dispatcher`` has compiled, so that its next call compiles again: a jitted
    function first compiled while a profile ran linked the twin of a kernel it calls (a redirected
    dispatcher is typed as its twin), and would go on calling it when the profile is over."""
    dispatcher._reset_overloads()


@touches(
    "numba.core.dispatcher",
    "_MemoMixin._memo",
    "processes: a Dask worker's jitted task functions (unpickled, in no module) that call a kernel",
)
def unpickled_dispatchers() -> list[object]:
    """Every dispatcher alive that was pickled or unpickled in this process: on a Dask worker, the
    jitted functions its tasks carried (a notebook's), which no module holds."""
    return list(_MemoMixin._memo.values())
