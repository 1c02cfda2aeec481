"""What a CUDA function is, and the parsed source a twin is rewritten from.

Both kinds of object a ``@cuda.jit`` decorator makes are handled: numba-cuda's
``CUDADispatcher`` on a machine with (or without) a GPU, and the simulator's
``FakeCUDAKernel`` under ``NUMBA_ENABLE_CUDASIM=1``. ``is_cuda_function`` is the CUDA
kind's test (``instrument.function_kinds``; the CPU resolver refuses these first), imported
here: it goes by the type's module, so asking never imports numba.cuda.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from types import FunctionType

from ..errors import NotProfilableError
from ..instrument.function_kinds import is_cuda_function
from ..instrument.source import FunctionSource, describe
from ..instrument.twins import cell_value
from ..internals import simulated_device_flag, simulated_fastmath

_CO_UNSUPPORTED = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def in_simulator() -> bool:
    """Whether numba-cuda runs kernels in its simulator (read once, when numba starts)."""
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", False))


def is_device_function(obj: object) -> bool:
    """Whether a CUDA function is a device function (``device=True``), not a kernel."""
    options = getattr(obj, "targetoptions", None)
    if isinstance(options, dict):
        return bool(options.get("device"))
    return simulated_device_flag(obj)


def cuda_options(obj: object) -> dict:
    """The ``cuda.jit`` options a twin is compiled with, as the original's.

    ``lineinfo`` is forced on (the twins carry line tables for Nsight Compute and
    the PTX checks) and ``cache`` off (a twin bakes counter addresses into its code).
    The simulator's ``jit`` takes fewer options; there only ``device``, ``fastmath``
    and ``debug`` matter.
    """
    if in_simulator():
        return {"device": is_device_function(obj), "fastmath": simulated_fastmath(obj)}
    keep = ("device", "inline", "forceinline", "link", "debug", "opt", "fastmath", "launch_bounds", "lto")
    options = {k: v for k, v in obj.targetoptions.items() if k in keep and v is not None}
    options["lineinfo"] = True
    return options


def _find_def(tree: ast.AST, name: str) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def read_cuda_source(obj: object) -> FunctionSource:
    """The parsed source of a CUDA function's Python function, with real line numbers."""
    if not is_cuda_function(obj):
        raise NotProfilableError(f"{describe(obj)} is not a @cuda.jit kernel or device function")
    py_func = obj.py_func
    if not isinstance(py_func, FunctionType):
        raise NotProfilableError(f"{describe(obj)} has no Python function to rewrite")
    name = describe(py_func)
    code = py_func.__code__
    if code.co_flags & _CO_UNSUPPORTED:
        raise NotProfilableError(f"{name} is a generator or coroutine, which CUDA cannot compile")
    try:
        lines, start = inspect.getsourcelines(py_func)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError) as exc:
        raise NotProfilableError(f"no readable source for {name} ({code.co_filename}): {exc}") from None
    ast.increment_lineno(tree, max(start, 1) - 1)
    fdef = _find_def(tree, code.co_name)
    if fdef is None:
        raise NotProfilableError(f"the source found for {name} in {code.co_filename} does not define it")
    return FunctionSource(py_func, fdef, code.co_filename, code.co_firstlineno, lines)


def called_device_functions(kernel: object) -> list[object]:
    """CUDA device functions that ``kernel``'s code names as globals or closure cells,
    followed through the device functions they call (each once, in first-seen order)."""
    found: list[object] = []
    todo = [kernel]
    while todo:
        func = todo.pop(0).py_func
        names = dict(func.__globals__)
        for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
            names[name] = cell_value(cell)
        for name in func.__code__.co_names + func.__code__.co_freevars:
            value = names.get(name)
            if is_cuda_function(value) and is_device_function(value) and all(value is not f for f in found):
                found.append(value)
                todo.append(value)
    return found
