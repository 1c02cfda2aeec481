"""Exceptions shared by every stage, and the user's exceptions as the user should read them.

They live in their own module so that the earliest stage can raise them and the
magic can catch them without importing anything in between.
"""

from __future__ import annotations

import os
import types

from .twin_kind import COUNTING


class NotProfilableError(TypeError):
    """The object cannot be line-profiled by numba_lprun.

    A ``TypeError`` because it is always about the kind of object passed in; the
    message is a single line that names the function and the reason.
    """


class CudaFunctionError(NotProfilableError):
    """The object is a ``@cuda.jit`` kernel or device function.

    The CPU resolver (``LineProfiler(kern)``) refuses it with this error, which says
    that ``numba_lprun.cuda`` profiles the kernel's launches; the front ends (magic, CLI)
    send kernels there before (``cuda.split_cuda``). ``function`` is the CUDA function.
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
        kind: str = COUNTING,
    ):
        where = f" (line {lineno}: {line.strip()})" if lineno else ""
        super().__init__(f"cannot compile the {kind} twin of {func_name}{where}: {reason}")
        self.func_name = func_name
        self.reason = reason
        self.lineno = lineno
        self.line = line


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _ours(filename: str) -> bool:
    return filename.startswith(_PACKAGE)


def profiler_failed(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by numba_lprun's own code: its innermost frame is ours and
    not one that only forwards the user's call (those set ``__tracebackhide__``, as IPython
    and pytest read it: a call with the wrong arguments raises in the forwarding frame).
    Then the whole traceback is what a bug report needs, and the front ends say so."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None or not _ours(last.tb_frame.f_code.co_filename):
        return False
    return not last.tb_frame.f_locals.get("__tracebackhide__", False)


def without_profiler_frames(exc: BaseException) -> BaseException:
    """``exc`` with numba_lprun's frames taken out of its traceback, so the user reads their
    own frames only, as Python shows an unprofiled error (the frames between the
    statement and the user's code are the profiler's runs, swaps and redirections, and
    say nothing about the user's error). Left whole when numba_lprun itself failed."""
    if profiler_failed(exc):
        return exc
    kept = []
    tb = exc.__traceback__
    while tb is not None:
        if not _ours(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    chain = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return exc.with_traceback(chain)
