"""Kernel objects: CPU ufuncs (``@vectorize``, ``@guvectorize``) and stencils, and their twins.

A ``DUFunc`` or ``GUFunc`` compiles its kernel with a dispatcher of its own, which
Numba keeps in a private attribute; its twin is rebuilt through Numba's own
pickling protocol (``_reduce_states``/``_rebuild``), so it has the original's
signatures, identity and frozen state. A ``StencilFunc`` is built from Numba IR.
None of these classes is exported by ``numba``'s public modules.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType

from .redirect import own_class
from .registry import installed_numba, touches


@touches("numba.np.ufunc.dufunc", "DUFunc", "instrument/ufuncs.py: what @vectorize makes for the CPU")
@touches("numba.np.ufunc.gufunc", "GUFunc", "instrument/ufuncs.py: what @guvectorize makes for the CPU")
def is_cpu_ufunc(obj: object) -> bool:
    """Whether ``obj`` is a ufunc Numba built for the ``cpu`` target (a DUFunc or GUFunc)."""
    from numba.np.ufunc.dufunc import DUFunc
    from numba.np.ufunc.gufunc import GUFunc

    return isinstance(obj, (DUFunc, GUFunc))


@touches("numba.np.ufunc.dufunc", "DUFunc", "run/reach.py: a @vectorize calling a profiled function")
@touches("numba.np.ufunc.gufunc", "GUFunc", "run/reach.py: a @guvectorize calling a profiled function")
def ufunc_classes() -> tuple[type, ...]:
    """The classes of the ufuncs Numba builds for the ``cpu`` target (``is_cpu_ufunc``)."""
    from numba.np.ufunc.dufunc import DUFunc
    from numba.np.ufunc.gufunc import GUFunc

    return (DUFunc, GUFunc)


@touches("numba.np.ufunc.dufunc", "DUFunc", "run/statements.py: a @vectorize made while a script runs")
@touches("numba.stencils.stencil", "StencilFunc", "run/statements.py: a @stencil made while a script runs")
def kernel_classes() -> list[tuple[type, str]]:
    """The classes of kernel objects whose ``__init__`` makes them whole, each with the package
    of the Numba code that makes them (the decorator frames to look past for the code that
    applied it). A DUFunc gets its listed signatures after ``__init__``, but its twin compiles
    on demand; a GUFunc's twin could not, so GUFuncs are found when a statement binds them."""
    from numba.np.ufunc.dufunc import DUFunc
    from numba.stencils.stencil import StencilFunc

    return [(DUFunc, "numba.np.ufunc"), (StencilFunc, "numba.stencils")]


@touches("numba.stencils.stencil", "StencilFunc", "instrument/ufuncs.py: what @stencil makes")
def is_stencil(obj: object) -> bool:
    """Whether ``obj`` was made by ``@stencil``."""
    from numba.stencils.stencil import StencilFunc

    return isinstance(obj, StencilFunc)


@touches(
    "numba.np.ufunc.dufunc",
    "DUFunc",
    "instrument/ufuncs.py: a DUFunc's kernel dispatcher",
    instance_attribute="_dispatcher",
)
@touches(
    "numba.np.ufunc.gufunc",
    "GUFunc",
    "instrument/ufuncs.py: a GUFunc's kernel dispatcher (Numba 0.60 added GUFunc._dispatcher)",
    instance_attribute="_dispatcher",
    checked=("0.60", "0.68"),
)
@touches(
    "numba.np.ufunc.gufunc",
    "GUFunc",
    "instrument/ufuncs.py: a GUFunc's kernel dispatcher, before Numba 0.60 (gufunc_builder.nb_func)",
    instance_attribute="gufunc_builder",
    checked=("0.59", "0.59"),
)
def ufunc_dispatcher(ufunc: object):
    """The dispatcher a DUFunc or GUFunc compiles its kernel with.

    VERSION: ``GUFunc._dispatcher`` exists from Numba 0.60; 0.59 keeps the same
    dispatcher only as ``gufunc_builder.nb_func``. ``DUFunc._dispatcher`` exists in
    every supported release.
    """
    if installed_numba() < (0, 60):
        from numba.np.ufunc.gufunc import GUFunc

        if isinstance(ufunc, GUFunc):
            return ufunc.gufunc_builder.nb_func
    return ufunc._dispatcher


@touches(
    "numba.core.typing.context",
    "BaseContext",
    "run/reach.py: each DUFunc and GUFunc is a global of the CPU typing context (weakly held)",
    instance_attribute="_globals",
)
def registered_callers() -> list[object] | None:
    """Every live ``CPUDispatcher`` and CPU ufunc (DUFunc, GUFunc), read from the registries
    that list them, or None where they do not list them all (a search of the heap finds them).

    Why: a search of every live object costs about 0.1 s per million objects (the collector
    visits each), once per profile; a notebook session holds millions. Each dispatcher
    registers a ``weakref.finalize`` (which releases its compiled code), and each DUFunc and
    GUFunc installs its typing in the CPU typing context, keyed by a weak reference to it.

    Neither is read as an attribute (``_DispatcherBase.__init__`` and each ufunc's
    ``_install_type`` do the registering), so ``tests/test_private_api.py`` checks on every
    release that all a search of the heap finds is listed.

    VERSION: a GUFunc installs its typing from Numba 0.60; on 0.59 this returns None.
    """
    if installed_numba() < (0, 60):
        return None
    import weakref

    from numba.core.registry import CPUDispatcher, cpu_target

    ufuncs = ufunc_classes()
    for _ in range(3):  # a finalizer run by a collection meanwhile changes the registries: again
        try:
            finalizers = list(weakref.finalize._registry.values())
            held = list(cpu_target.typing_context._globals)
        except RuntimeError:
            continue
        dispatchers = [d for info in finalizers if isinstance(d := info.weakref(), CPUDispatcher)]
        values = [key() if isinstance(key, weakref.ref) else key for key in held]
        kinds = {kind for kind in set(map(type, values)) if issubclass(kind, ufuncs)}  # an ABC: once a type
        kernels = [u for u in values if type(u) in kinds]
        return list({id(obj): obj for obj in dispatchers + kernels}.values())  # a second finalizer
    return None


def kernel_function(obj: object) -> FunctionType:
    """The Python function a DUFunc or GUFunc compiles for each element (or core), or a stencil's kernel."""
    if is_stencil(obj):
        return obj.kernel_ir.func_id.func
    return ufunc_dispatcher(obj).py_func


@touches(
    "numba.np.ufunc.dufunc",
    "DUFunc._reduce_states",
    "instrument/ufuncs.py: the original ufunc's signatures and options",
)
@touches(
    "numba.np.ufunc.dufunc",
    "DUFunc._rebuild",
    "instrument/ufuncs.py: a ufunc twin rebuilt from the original's reduce state",
)
@touches(
    "numba.np.ufunc.gufunc",
    "GUFunc._reduce_states",
    "instrument/ufuncs.py: the original gufunc's signatures, layout and options",
)
@touches("numba.np.ufunc.gufunc", "GUFunc._rebuild", "instrument/ufuncs.py: a gufunc twin")
def rebuild_ufunc(original: object, py_func: FunctionType) -> tuple[object, object]:
    """A ufunc like ``original`` whose kernel is ``py_func``, and the twin's kernel dispatcher.

    A DUFunc's state holds its dispatcher (replaced by one for ``py_func`` with the
    same locals and options); a GUFunc's holds the Python function. Twins are
    never written to the disk cache.
    """
    from numba.np.ufunc.dufunc import DUFunc

    states = original._reduce_states()
    if isinstance(original, DUFunc):
        kernel = original._dispatcher
        states["dispatcher"] = own_class(kernel)(
            py_func, locals=dict(kernel.locals), targetoptions=dict(kernel.targetoptions)
        )
        twin = DUFunc._rebuild(**states)
    else:
        states["py_func"] = py_func
        states["cache"] = False
        twin = own_class(original)._rebuild(**states)
    return twin, ufunc_dispatcher(twin)


@touches(
    "numba.core.compiler",
    "run_frontend",
    "instrument/ufuncs.py: a stencil twin is made from the rewritten kernel's Numba IR",
)
@touches(
    "numba.stencils.stencil",
    "StencilFunc.__init__",
    "instrument/ufuncs.py: a stencil twin with the original's mode and options",
    params=("self", "kernel_ir", "mode", "options"),
)
@touches(
    "numba.stencils.stencil",
    "StencilFunc._stencil_wrapper",
    "instrument/ufuncs.py: a stencil twin's loop nest compiles with the twin's pipeline (a copy of "
    "Numba's method whose `from numba.core import compiler` gets one that passes the twin's flags)",
)
@touches(
    "numba.core.compiler",
    "compile_ir",
    "instrument/ufuncs.py: what StencilFunc._stencil_wrapper compiles its loop nest with",
    params=(
        *("typingctx", "targetctx", "func_ir", "args", "return_type", "flags", "locals", "lifted"),
        *("lifted_from", "is_lifted_loop", "library", "pipeline_class"),
    ),
)
def rebuild_stencil(original: object, py_func: FunctionType, build: StencilBuild | None = None) -> object:
    """A ``StencilFunc`` like ``original`` whose kernel is ``py_func`` (same mode and options).

    With ``build``, the loop nest Numba generates around the kernel (at each call from
    Python, or once per signature inside a jitted caller's compile) compiles with
    ``build.pipeline(Compiler)`` and, with ``build.line_tables``, with debug info, and each
    compile is announced as a compile of ``build.code`` and handed to ``build.compiled``.
    Numba compiles that loop nest with its default flags and pipeline, through the
    ``compiler`` module ``StencilFunc._stencil_wrapper`` imports: the twin runs a copy of
    that method whose ``__import__`` gives it another ``compiler``; nothing of Numba's is
    changed."""
    from numba.core import compiler

    kernel_ir = compiler.run_frontend(py_func)
    if build is None:
        from numba.stencils.stencil import StencilFunc

        return StencilFunc(kernel_ir, original.mode, dict(original.options))
    twin = _twin_stencil_class()(kernel_ir, original.mode, dict(original.options))
    twin._nlp_build = build
    return twin


@dataclass(frozen=True)
class StencilBuild:
    """How a stencil twin compiles its loop nest (see ``rebuild_stencil``)."""

    pipeline: Callable[[type], type]  # Numba's default pipeline class -> the twin's
    line_tables: bool
    code: object  # announced as the dispatcher of each compile (it has ``py_func``)
    compiled: Callable[[object, tuple], None]  # (compile result, argument types)


_building: contextvars.ContextVar = contextvars.ContextVar("nlp_stencil_build", default=None)


class _TwinCompiler:
    """``numba.core.compiler`` as a twin stencil's loop nest sees it: ``compile_ir`` with the
    twin's pipeline and flags while a twin builds (``_building``), Numba's own otherwise."""

    def __getattr__(self, name: str) -> object:
        from numba.core import compiler

        return getattr(compiler, name)

    @staticmethod
    def compile_ir(*positional, **options):
        from numba.core import compiler, event

        build = _building.get()
        if build is None or len(positional) != 7 or options:  # not the call the loop nest makes
            return compiler.compile_ir(*positional, **options)
        *head, flags, locals_ = positional  # typingctx, targetctx, func_ir, args, return_type
        flags = flags.copy()  # Numba passes its module-wide DEFAULT_FLAGS
        if build.line_tables:
            flags.debuginfo = True
            _placed_in_kernel(head[2], build.code.py_func.__code__.co_filename)
        args = tuple(head[3])
        with event.trigger_event("numba:compile", data={"dispatcher": build.code, "args": args}):
            pipeline = build.pipeline(compiler.Compiler)
            cres = compiler.compile_ir(*head, flags, locals_, pipeline_class=pipeline)
        build.compiled(cres, args)  # after the event: the sampler is paused while Numba compiles
        return cres


def _placed_in_kernel(func_ir: object, filename: str) -> None:
    """Give a stencil's loop nest the line table of its kernel: the function is placed in
    the kernel's file, and what is not a line of the kernel's body gets line 0, which the
    sampler charges to the kernel line running nearby: the generated loops (Numba's own
    source text, whose small line numbers would read as the kernel file's first lines) and
    the relative index arithmetic and array loads Numba adds at the ``def`` line (the
    kernel's first line, when its body has lines of its own). The IR is made afresh per
    compile."""
    statements = [stmt for block in func_ir.blocks.values() for stmt in block.body]
    lines = {stmt.loc.line for stmt in statements if stmt.loc.filename == filename}
    if not lines:
        return
    def_line = min(lines) if len(lines) > 1 else None
    func_ir.loc = func_ir.loc.__class__(filename, min(lines))
    for stmt in statements:
        if stmt.loc.filename != filename or stmt.loc.line == def_line:
            stmt.loc = stmt.loc.__class__(filename, 0)


class _CoreWithTwinCompiler:
    """``numba.core`` whose ``compiler`` is ``_TwinCompiler``: what the copied method's
    ``from numba.core import compiler`` (a local import) gets."""

    def __init__(self, core: object, compiler: object):
        self._core, self.compiler = core, compiler

    def __getattr__(self, name: str) -> object:
        return getattr(self._core, name)


def _importing_twin_compiler(compiler: object) -> Callable:
    """An ``__import__`` that gives ``from numba.core import compiler`` the twin's compiler."""
    import builtins

    real = builtins.__import__

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        module = real(name, globals, locals, fromlist, level)
        if name == "numba.core" and level == 0 and fromlist and "compiler" in fromlist:
            return _CoreWithTwinCompiler(module, compiler)
        return module

    return __import__


@functools.cache
def _twin_stencil_class() -> type:
    import builtins

    from numba.stencils import stencil as module

    method = module.StencilFunc._stencil_wrapper
    names = dict(module.__dict__)  # the method imports ``compiler`` itself: its __import__ decides
    names["__builtins__"] = {**builtins.__dict__, "__import__": _importing_twin_compiler(_TwinCompiler())}
    copied = FunctionType(method.__code__, names, method.__name__, method.__defaults__, method.__closure__)
    copied.__kwdefaults__ = method.__kwdefaults__

    def _stencil_wrapper(self, *args, **kwargs):
        token = _building.set(self._nlp_build)
        try:
            return copied(self, *args, **kwargs)
        finally:
            _building.reset(token)

    return type("TwinStencilFunc", (module.StencilFunc,), {"_stencil_wrapper": _stencil_wrapper})
