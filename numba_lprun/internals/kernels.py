"""Kernel objects: CPU ufuncs (``@vectorize``, ``@guvectorize``) and stencils, and their twins.

A ``DUFunc`` or ``GUFunc`` compiles its kernel with a dispatcher of its own, which
Numba keeps in a private attribute; its twin is rebuilt through Numba's own
pickling protocol (``_reduce_states``/``_rebuild``), so it has the original's
signatures, identity and frozen state. A ``StencilFunc`` is built from Numba IR.
None of these classes is exported by ``numba``'s public modules.
"""

from __future__ import annotations

from types import FunctionType

from .registry import installed_numba, touches


@touches("numba.np.ufunc.dufunc", "DUFunc", "instrument/ufuncs.py: what @vectorize makes for the CPU")
@touches("numba.np.ufunc.gufunc", "GUFunc", "instrument/ufuncs.py: what @guvectorize makes for the CPU")
def is_cpu_ufunc(obj: object) -> bool:
    """Whether ``obj`` is a ufunc Numba built for the ``cpu`` target (a DUFunc or GUFunc)."""
    from numba.np.ufunc.dufunc import DUFunc
    from numba.np.ufunc.gufunc import GUFunc

    return isinstance(obj, (DUFunc, GUFunc))


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
        states["dispatcher"] = type(kernel)(
            py_func, locals=dict(kernel.locals), targetoptions=dict(kernel.targetoptions)
        )
        twin = DUFunc._rebuild(**states)
    else:
        states["py_func"] = py_func
        states["cache"] = False
        twin = type(original)._rebuild(**states)
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
def rebuild_stencil(original: object, py_func: FunctionType) -> object:
    """A ``StencilFunc`` like ``original`` whose kernel is ``py_func`` (same mode and options)."""
    from numba.core import compiler
    from numba.stencils.stencil import StencilFunc

    return StencilFunc(compiler.run_frontend(py_func), original.mode, dict(original.options))
