"""Exceptions shared by every stage.

They live in their own module so that the earliest stage can raise them and the
magic can catch them without importing anything in between.
"""

from __future__ import annotations


class NotProfilableError(TypeError):
    """The object cannot be line-profiled by numba_lprun.

    A ``TypeError`` because it is always about the kind of object passed in; the
    message is a single line that names the function and the reason.
    """


class CudaFunctionError(NotProfilableError):
    """The object is a ``@cuda.jit`` kernel or device function.

    The CPU resolver refuses it with this error; a front end (magic, CLI) catches
    it and profiles the kernel's launches with ``numba_lprun.cuda`` instead.
    ``function`` is the CUDA function.
    """

    def __init__(self, message: str, function: object):
        super().__init__(message)
        self.function = function


class TwinCompileError(RuntimeError):
    """Numba could not compile a twin of a function that compiles as written.

    Carries the source line Numba complained about, so the user sees where the
    rewrite and their code disagree rather than a wall of Numba traceback.
    """

    def __init__(
        self,
        func_name: str,
        reason: str,
        lineno: int | None = None,
        line: str = "",
        kind: str = "instrumented",
    ):
        where = f" (line {lineno}: {line.strip()})" if lineno else ""
        super().__init__(f"cannot compile the {kind} twin of {func_name}{where}: {reason}")
        self.func_name = func_name
        self.reason = reason
        self.lineno = lineno
        self.line = line
