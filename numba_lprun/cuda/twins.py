"""Twins of CUDA kernels and device functions.

The probed twin is the original's source rewritten by the CPU rewriter
(``instrument(tree, lines=True)``: one ``_nlp_line(k)`` per Python line event,
so hits follow line_profiler's model), executed in a copy of the original's
globals where the probe names are bound to the GPU intrinsics or, under the
simulator, to their Python versions, and where each profiled device function is
bound to its twin. The plain twin is the original's own Python function compiled
again with ``lineinfo=True``, for the overhead figure. Originals are untouched.
"""

from __future__ import annotations

import ast
import types as pytypes
from dataclasses import dataclass

from ..instrument.rewrite import instrument
from ..instrument.source import FunctionSource
from ..instrument.twins import exec_def
from .kernels import cuda_options, in_simulator, is_device_function, read_cuda_source
from .warp_model import LoopShape, loop_shape


@dataclass
class Planned:
    """One profiled CUDA function, rewritten but not yet compiled."""

    original: object
    source: FunctionSource
    tree: ast.FunctionDef  # the rewritten def
    rows: list[int]  # row -> line
    shape: LoopShape

    @property
    def device(self) -> bool:
        return is_device_function(self.original)


def plan(original: object) -> Planned:
    """Read and rewrite one CUDA function (no compile yet)."""
    src = read_cuda_source(original)
    rewritten = instrument(src.tree, lines=True, objmode_names=frozenset())
    return Planned(original, src, rewritten.tree, rewritten.rows, loop_shape(src.tree))


def _jit(original: object, py_func: pytypes.FunctionType) -> object:
    from numba import cuda

    return cuda.jit(**cuda_options(original))(py_func)


def probed_twin(p: Planned, probes: dict, twins_of: dict[int, object]) -> object:
    """Compile-ready dispatcher of ``p``'s probed twin; ``twins_of`` maps
    id(original device function) -> its twin, for every profiled device function."""
    namespace = dict(p.source.py_func.__globals__)
    for name, value in list(namespace.items()):
        if id(value) in twins_of:
            namespace[name] = twins_of[id(value)]
    namespace.update(probes)
    return _jit(p.original, exec_def(p.tree, p.source, namespace, twins_of))


def plain_twin(original: object) -> object:
    """The original's code compiled again with ``lineinfo=True`` (a new dispatcher,
    so the original's compiled kernels and options are left as they are)."""
    if in_simulator():
        return original
    return _jit(original, original.py_func)
