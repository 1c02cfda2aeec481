"""Profiled stand-ins bound in place of kernels while a statement or a script runs.

A launch is written ``kern[grid, block](*args)``: the front ends profile it by
binding ``CudaLineProfiler.wrap(kern)`` wherever the code looks ``kern`` up (the
user's namespace for the magic, the kernel's module for the command line's
``-f module:kern``), so the statement runs as written, once. The originals are
put back on success, error and Ctrl-C with the CPU path's ``Swap``: swapping is
never cut half way, and a name the statement rebound meanwhile is left alone.
Whether a front end's ``-f`` asks for CUDA at all is decided here once (``split_cuda``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import TypeVar

from ..errors import NotProfilableError
from ..instrument.source import describe
from ..run.reach import Swap
from .kernels import called_device_functions, is_cuda_function, is_device_function
from .profiler import CudaLineProfiler

T = TypeVar("T")


def split_cuda(named: Iterable[tuple[str, T]]) -> tuple[list[T], list[tuple[str, T]]]:
    """The CUDA kernels and device functions among the ``(name, object)`` pairs a front end's
    ``-f`` gave, and the other pairs (CPU functions; an object not found yet is None).

    The one place the magic and the command line decide whether to profile launches
    (``CudaLineProfiler``) or calls (``LineProfiler``): any CUDA function named sends the run
    to the GPU path (``session.split_cpu_cuda`` refuses CPU functions beside it)."""
    named = list(named)
    cuda = [obj for _, obj in named if is_cuda_function(obj)]
    return cuda, [(name, obj) for name, obj in named if not is_cuda_function(obj)]


def namespaces_of(functions: Iterable[object], first: Iterable[dict] = ()) -> list[dict]:
    """``first``, then the module globals each function was defined in, each once: where
    code imported from a module looks a kernel up (``mod.kern``, ``from mod import kern``)."""
    out: list[dict] = []
    for ns in [*first, *(f.py_func.__globals__ for f in functions)]:
        if all(ns is not seen for seen in out):
            out.append(ns)
    return out


def kernels_to_bind(functions: Iterable[object], namespaces: Iterable[dict]) -> list[object]:
    """The kernels among ``functions``, then the kernels in ``namespaces`` that call one
    of its device functions (a device function runs only inside a kernel's launch)."""
    functions = list(functions)
    kernels = [f for f in functions if not is_device_function(f)]
    devices = [f for f in functions if is_device_function(f)]
    for ns in namespaces:
        for value in list(ns.values()):
            if not is_cuda_function(value) or is_device_function(value) or any(value is k for k in kernels):
                continue
            reached = called_device_functions(value)
            if any(d is r for d in devices for r in reached):
                kernels.append(value)
    for device in devices:
        if not any(any(device is r for r in called_device_functions(k)) for k in kernels):
            raise NotProfilableError(
                f"{describe(device.py_func)} is a device function, profiled inside the launches of a "
                "kernel that calls it, and no kernel named with -f or found beside it calls it: "
                "name the kernel with -f too"
            )
    return kernels


@contextlib.contextmanager
def bound_kernels(profiler: CudaLineProfiler, namespaces: list[dict]) -> Iterator[list[object]]:
    """While the block runs, every binding of a profiled kernel in ``namespaces`` is a
    stand-in whose launches ``profiler`` profiles; the originals are put back after."""
    kernels = kernels_to_bind(profiler.functions, namespaces)
    swap = Swap()
    try:
        swap.apply(namespaces, {id(k): profiler.wrap(k) for k in kernels})
        yield kernels
    finally:
        swap.restore()
