"""``@numba_lprun.profile``: mark a jitted function for the ``nlprun`` command line.

It changes nothing about the function, so decorated code runs the same without
the tool; ``nlprun script.py`` profiles the marked functions (and only them, when
the script uses the decorator at all). While ``nlprun`` runs a script, it is also the
builtin ``profile``, as kernprof's is: a script written for kernprof runs as it is.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Iterator
from typing import TypeVar

#: The attribute the mark is (``instrument.profilable.is_marked`` reads it: this module imports
#: nothing, so a script that only marks never imports Numba or the profiler).
MARK = "_numba_lprun_profile"
F = TypeVar("F")


def profile(func: F) -> F:
    """Mark ``func`` (a Numba dispatcher, or the Python function under ``@njit``)."""
    try:
        setattr(func, MARK, True)
    except (AttributeError, TypeError):
        pass  # an object that takes no attributes cannot be a jitted function either
    return func


@contextlib.contextmanager
def kernprof_builtin() -> Iterator[None]:
    """``profile`` as a builtin while a script runs, as kernprof puts it there: a script
    written for kernprof (a bare ``@profile``, ``profile(f)``) runs, and what it marks is
    marked as ``@numba_lprun.profile`` marks it. One already there (under kernprof itself)
    is left alone."""
    if hasattr(builtins, "profile"):
        yield
        return
    builtins.profile = profile
    try:
        yield
    finally:
        if builtins.__dict__.get("profile") is profile:
            del builtins.profile
