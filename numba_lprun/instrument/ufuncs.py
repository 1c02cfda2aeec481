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
Python function), from which Numba generates the loop nest at each call from
Python (compiled again every time), once per signature inside a jitted caller's
compile, or inlines it into a ``parallel=True`` caller. Its twin is a
``StencilFunc`` made from the rewritten kernel, with the original's mode and
options, whose loop nests compile with a twin's pipeline: line tables (so the
sampler maps its samples to the kernel's lines) and the exit flushes (so a
counting twin's hits stay in registers through the loop, see ``probes``).
``StencilCode`` keeps what those compiles made, as a dispatcher keeps its overloads.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from types import FunctionType
from typing import NamedTuple

from ..internals import StencilBuild, rebuild_stencil, rebuild_ufunc

__all__ = ["StencilCode", "stencil_twin", "ufunc_twin"]


class StencilCode:
    """Where a stencil twin's code is: the loop nests compiled for it, newest last, as a
    dispatcher's ``overloads`` (the sampler's line maps read them). Called from Python a
    stencil compiles at every call; the last ``KEPT`` compiles are kept, which covers
    every call of a run but the longest loops of Python calls."""

    KEPT = 64

    def __init__(self, py_func: FunctionType):
        self.py_func = py_func
        self._made: collections.deque = collections.deque(maxlen=self.KEPT)

    def compiled(self, cres: object, args: tuple) -> None:
        self._made.append((Compiled(args, len(self._made)), cres))

    @property
    def overloads(self) -> dict:
        """Each compile's result, keyed by its argument types (``.args``), several times over."""
        return dict(self._made)


class Compiled(NamedTuple):
    """One compile of a stencil's loop nest: its argument types, and which compile it was."""

    args: tuple
    index: int


def ufunc_twin(
    original: object, py_func: FunctionType, pipeline: Callable[[type], type], line_tables: bool
) -> tuple[object, object]:
    """The twin of a ufunc for the rewritten ``py_func``, and where its code is: its kernel
    compiles as the original's (no line tables; ``pipeline`` is not used)."""
    return rebuild_ufunc(original, py_func)


def stencil_twin(
    original: object, py_func: FunctionType, pipeline: Callable[[type], type], line_tables: bool
) -> tuple[object, object]:
    """The twin of a stencil for the rewritten ``py_func``, and where its code is: its loop
    nests compile with ``pipeline`` (applied to Numba's default pipeline class), with line
    tables when ``line_tables``."""
    code = StencilCode(py_func)
    build = StencilBuild(pipeline, line_tables, code, code.compiled)
    return rebuild_stencil(original, py_func, build), code
