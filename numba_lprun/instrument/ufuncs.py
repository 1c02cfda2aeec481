"""Ufuncs made by ``@vectorize`` and ``@guvectorize`` on the CPU: their kernels and twins.

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
"""

from __future__ import annotations

from types import FunctionType


def is_cpu_ufunc(obj: object) -> bool:
    """Whether ``obj`` is a ufunc Numba built for the ``cpu`` target (a DUFunc or GUFunc)."""
    from numba.np.ufunc.dufunc import DUFunc
    from numba.np.ufunc.gufunc import GUFunc

    return isinstance(obj, (DUFunc, GUFunc))


def kernel_function(ufunc: object) -> FunctionType:
    """The Python function a DUFunc or GUFunc compiles for each element (or core)."""
    return ufunc._dispatcher.py_func


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
