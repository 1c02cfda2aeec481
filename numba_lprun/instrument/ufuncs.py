"""Kernel objects: ufuncs made by ``@vectorize``/``@guvectorize`` on the CPU, and stencils.

A ``DUFunc`` (``@vectorize``, target ``cpu``) or ``GUFunc`` (``@guvectorize``,
target ``cpu``) keeps its kernel's Python function and compiles the kernel with a
dispatcher of its own, then builds NumPy loops around it. Its twin is the same
kind of ufunc rebuilt around the rewritten kernel, through Numba's own pickling
protocol (``_reduce_states``/``_rebuild``), so it has the original's signatures,
identity, layout signature and frozen state; the user's ufunc is never touched.
Calls reach the twin as they reach any twin: names are swapped, jitted callers
are relinked, and Python-level calls of the object are redirected.

With ``target='parallel'`` Numba returns a plain ``numpy.ufunc``, which keeps no
reference to its kernel's Python function: that one is refused (see ``source``).

A ``@stencil`` is a ``StencilFunc`` holding the kernel's Numba IR (made from its
Python function), from which Numba generates the loop nest at each call, or
inlines it into a ``parallel=True`` caller. Its twin is a ``StencilFunc`` made
from the rewritten kernel, with the original's mode and options.
"""

from __future__ import annotations

from types import FunctionType


def is_cpu_ufunc(obj: object) -> bool:
    """Whether ``obj`` is a ufunc Numba built for the ``cpu`` target (a DUFunc or GUFunc)."""
    from numba.np.ufunc.dufunc import DUFunc
    from numba.np.ufunc.gufunc import GUFunc

    return isinstance(obj, (DUFunc, GUFunc))


def is_stencil(obj: object) -> bool:
    """Whether ``obj`` was made by ``@stencil``."""
    from numba.stencils.stencil import StencilFunc

    return isinstance(obj, StencilFunc)


def is_kernel_object(obj: object) -> bool:
    """A ufunc (cpu) or a stencil: compiled from a kernel function, without a dispatcher of its own."""
    return is_cpu_ufunc(obj) or is_stencil(obj)


def kernel_function(obj: object) -> FunctionType:
    """The Python function a DUFunc or GUFunc compiles for each element (or core), or a stencil's kernel."""
    if is_stencil(obj):
        return obj.kernel_ir.func_id.func
    return obj._dispatcher.py_func


class NoDispatcher:
    """Stands for a stencil twin's code: Numba compiles it afresh at each call (no line tables)."""

    def __init__(self, py_func: FunctionType):
        self.py_func = py_func
        self.overloads: dict = {}


def kernel_twin(original: object, py_func: FunctionType) -> tuple[object, object]:
    """The twin of a kernel object for the rewritten ``py_func``, and where its code is."""
    if is_stencil(original):
        from numba.core import compiler
        from numba.stencils.stencil import StencilFunc

        twin = StencilFunc(compiler.run_frontend(py_func), original.mode, dict(original.options))
        return twin, NoDispatcher(py_func)
    twin = ufunc_twin(original, py_func)
    return twin, twin._dispatcher


def ufunc_twin(original: object, py_func: FunctionType) -> object:
    """A ufunc like ``original`` whose kernel is ``py_func``, compiled for the same signatures."""
    from numba.np.ufunc.dufunc import DUFunc

    states = original._reduce_states()
    if isinstance(original, DUFunc):
        kernel = original._dispatcher
        states["dispatcher"] = type(kernel)(
            py_func, locals=dict(kernel.locals), targetoptions=dict(kernel.targetoptions)
        )
        return DUFunc._rebuild(**states)
    states["py_func"] = py_func
    states["cache"] = False  # twins are never written to the disk cache
    return type(original)._rebuild(**states)
