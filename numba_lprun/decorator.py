"""``@numba_lprun.profile``: mark a jitted function for the ``nlprun`` command line.

It changes nothing about the function, so decorated code runs the same without
the tool; ``nlprun script.py`` profiles the marked functions (and only them, when
the script uses the decorator at all).
"""

from __future__ import annotations

from typing import TypeVar

MARK = "_numba_lprun_profile"
F = TypeVar("F")


def profile(func: F) -> F:
    """Mark ``func`` (a Numba dispatcher, or the Python function under ``@njit``)."""
    try:
        setattr(func, MARK, True)
    except (AttributeError, TypeError):
        pass  # an object that takes no attributes cannot be a jitted function either
    return func


def is_marked(obj: object) -> bool:
    """Whether ``obj`` is a jitted function carrying the mark (on itself or its py_func).

    Only dispatchers are asked: other objects may do anything on attribute access.
    """
    from .internals import CPUDispatcher

    if not isinstance(obj, CPUDispatcher):
        return False
    return getattr(obj, MARK, False) is True or getattr(obj.py_func, MARK, False) is True
