"""Silence the extra runs of a profile, so the user sees one run's output.

The plain run and the sampled repeats are the profiler's business: what they
print would show the user's output two or more times. Python-level writes go
through ``sys.stdout``/``sys.stderr`` (Numba's ``print`` in jitted code too:
it calls ``PySys_WriteStdout``); C-level writes (``printf`` from a library)
go to file descriptors 1 and 2. Both are redirected for the duration, and
warnings are ignored there without touching the registries that make Python
show a warning once, so the user's run still shows them.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import sys
import warnings
from collections.abc import Iterator


def _flush_c_streams() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def _flush_python_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Discard everything written to stdout and stderr (Python and C level) inside the block."""
    _flush_python_streams()
    _flush_c_streams()
    saved: list[tuple[int, int]] = []
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            try:
                saved.append((fd, os.dup(fd)))
                os.dup2(devnull, fd)
            except OSError:
                continue
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        _flush_c_streams()
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)
        os.close(devnull)
