"""From a Numba dispatcher to the parsed source of its Python function.

Everything later works on the function's own source (with its real line numbers),
so this is where unprofilable inputs are refused, each with a one-line reason.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from types import CodeType, FunctionType

from ..errors import NotProfilableError
from .function_kinds import kind_of
from .in_place import compiles_to

_CO_GENERATOR_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR  # Numba compiles neither


@dataclass(frozen=True)
class FunctionSource:
    """The parsed source of one jitted function and where it came from."""

    py_func: FunctionType
    tree: ast.FunctionDef  # line numbers are the real ones in ``filename``
    filename: str
    first_lineno: int  # ``co_firstlineno``: the first decorator line, as line_profiler keys it
    lines: list[str] = field(repr=False)  # source lines from first_lineno to the end of the def

    @property
    def name(self) -> str:
        return self.py_func.__name__

    @property
    def key(self) -> tuple[str, int, str]:
        """line_profiler's key for this function: (filename, first line, qualified name).

        line_profiler 5 keys by ``co_qualname`` (Python 3.11+), so a function made
        by a factory shows as ``make.<locals>.f`` in both tools.
        """
        code = self.py_func.__code__
        return (code.co_filename, code.co_firstlineno, getattr(code, "co_qualname", code.co_name))

    @property
    def body_lineno(self) -> int:
        """The body's first line. Why: the lines before it (decorators, the ``def`` and its
        arguments) never hold a hit in line_profiler's model, yet LLVM puts a function's
        prologue on the ``def`` line; the sampler charges it to the body instead."""
        return self.tree.body[0].lineno if self.tree.body else self.first_lineno

    def line_text(self, lineno: int) -> str:
        index = lineno - self.first_lineno
        return self.lines[index].rstrip("\n") if 0 <= index < len(self.lines) else ""


def describe(obj: object) -> str:
    """A short name for ``obj`` in error messages."""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return name if isinstance(name, str) else type(obj).__name__


def python_function_of(dispatcher: object) -> FunctionType:
    """The Python function behind a CPU dispatcher, a ufunc or a stencil, or NotProfilableError
    saying why not."""
    kind = kind_of(dispatcher)
    if kind is not None and kind.profiled_itself:
        py_func = kind.python_function(dispatcher)
        options = getattr(dispatcher, "targetoptions", None) or {}
        if options.get("forceobj") or options.get("nopython") is False:
            raise NotProfilableError(
                f"{describe(py_func)} is compiled in object mode; numba_lprun profiles nopython "
                "functions only (use line_profiler's %lprun on it)"
            )
        code = py_func.__code__
        if code.co_flags & _CO_GENERATOR_FLAGS:
            raise NotProfilableError(
                f"{describe(py_func)} is a generator; numba_lprun cannot profile generators "
                "(per-call probe state does not survive a yield)"
            )
        return py_func
    if isinstance(dispatcher, FunctionType):
        raise NotProfilableError(
            f"{describe(dispatcher)} is a plain Python function, not a Numba jitted one; "
            "use line_profiler (%lprun) for it"
        )
    import numpy as np

    if isinstance(dispatcher, np.ufunc):
        raise NotProfilableError(
            f"{describe(dispatcher)} is a numpy.ufunc, not a Numba jitted function (what "
            "@vectorize/@guvectorize build for target='parallel', or NumPy's own): it keeps no "
            "reference to a Python kernel; profile a target='cpu' build of the kernel"
        )
    if type(dispatcher).__module__.startswith("numba"):
        raise NotProfilableError(
            f"{describe(dispatcher)} is a {type(dispatcher).__name__}, which numba_lprun cannot "
            "profile yet (see 'What can be profiled' in its README)"
        )
    raise NotProfilableError(
        f"{describe(dispatcher)} is not a Numba jitted function (got {type(dispatcher).__name__})"
    )


def _defs(tree: ast.AST, code: CodeType) -> list[ast.FunctionDef]:
    """The defs (and lambdas, turned into defs) in ``tree`` that could have compiled into ``code``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            found.append(node)
        if isinstance(node, ast.Lambda) and code.co_name == "<lambda>":
            body = ast.Return(value=node.body)
            ast.copy_location(body, node.body)
            fdef = ast.FunctionDef(
                name="_nlp_lambda",
                args=node.args,
                body=[body],
                decorator_list=[],
                returns=None,
                type_comment=None,
            )
            found.append(ast.copy_location(fdef, node))
    return found


def read_source(dispatcher: object) -> FunctionSource:
    """Parse the source of ``dispatcher``'s Python function, keeping real line numbers."""
    py_func = python_function_of(dispatcher)
    name = describe(py_func)
    code = py_func.__code__
    try:
        lines, start = inspect.getsourcelines(py_func)
    except (OSError, TypeError) as exc:
        raise NotProfilableError(
            f"no readable source for {name} (defined in {code.co_filename}): {exc}"
        ) from None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError as exc:
        raise NotProfilableError(f"the source of {name} does not parse: {exc.msg}") from None
    ast.increment_lineno(tree, max(start, 1) - 1)
    candidates = _defs(tree, code)
    fdef = next((d for d in candidates if compiles_to(d, py_func, code.co_filename)), None)
    if fdef is None and candidates and not code.co_filename.startswith("<"):
        raise NotProfilableError(
            f"the source of {name} in {code.co_filename} is not what it was compiled from (was the "
            "file edited after the function was defined? reload its module or run its cell again)"
        )
    if fdef is None and code.co_filename.startswith("<"):
        # exec'd code: "<string>" names no file, and lines cached under it (another exec's, one
        # a pytest-xdist worker ran) are not this function's
        raise NotProfilableError(
            f"no readable source for {name} (defined in {code.co_filename}): "
            "the lines found under that name do not define it"
        )
    if fdef is None:
        raise NotProfilableError(
            f"the source found for {name} in {code.co_filename} does not define it "
            "(was the file edited after the function was defined?)"
        )
    if any(isinstance(n, (ast.YieldFrom, ast.Await)) for n in _own_nodes(fdef)):
        raise NotProfilableError(f"{name} uses yield from or await, which Numba does not compile")
    return FunctionSource(py_func, fdef, code.co_filename, code.co_firstlineno, lines)


def _own_nodes(fdef: ast.FunctionDef):
    """Nodes of ``fdef``'s body, not descending into nested functions or lambdas."""
    stack = list(fdef.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)
