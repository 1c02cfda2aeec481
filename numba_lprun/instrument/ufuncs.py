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

from ..internals import is_cpu_ufunc, is_stencil, kernel_function, rebuild_stencil, rebuild_ufunc

__all__ = ["NoDispatcher", "is_cpu_ufunc", "is_kernel_object", "is_stencil", "kernel_function", "kernel_twin"]


def is_kernel_object(obj: object) -> bool:
    """A ufunc (cpu) or a stencil: compiled from a kernel function, without a dispatcher of its own."""
    return is_cpu_ufunc(obj) or is_stencil(obj)


class NoDispatcher:
    """Stands for a stencil twin's code: Numba compiles it afresh at each call (no line tables)."""

    def __init__(self, py_func: FunctionType):
        self.py_func = py_func
        self.overloads: dict = {}


def kernel_twin(original: object, py_func: FunctionType) -> tuple[object, object]:
    """The twin of a kernel object for the rewritten ``py_func``, and where its code is."""
    if is_stencil(original):
        return rebuild_stencil(original, py_func), NoDispatcher(py_func)
    return rebuild_ufunc(original, py_func)
