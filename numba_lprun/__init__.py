"""numba_lprun: a line profiler for Numba jitted functions.

``LineProfiler`` is the Python API; ``%load_ext numba_lprun`` registers the
``%nlprun`` magics (imported lazily, so the API never needs IPython).
"""

from __future__ import annotations

from .decorator import profile
from .errors import NotProfilableError, TwinCompileError
from .profiler import LineProfiler

__all__ = ["LineProfiler", "NotProfilableError", "TwinCompileError", "load_ipython_extension", "profile"]
__version__ = "0.1.0"


def load_ipython_extension(ipython) -> None:
    """Register ``%nlprun`` and ``%%nlprun`` with an IPython shell."""
    from .magic import register

    register(ipython)
