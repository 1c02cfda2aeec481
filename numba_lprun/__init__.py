"""numba_lprun: a line profiler for Numba jitted functions.

``LineProfiler`` is the Python API; ``%load_ext numba_lprun`` registers the
``%nlprun`` magics (imported lazily, so the API never needs IPython).

Data flows one way; each part imports only from the parts before it:

- ``instrument/``: source -> instrumented AST -> plain and instrumented twins;
- ``run/``: swap the twins in, run the call (baseline, sampled repeats,
  instrumented run) keeping one call's effects, put everything back;
- ``sampling/``: the native sampler and the DWARF line maps it is read with;
- ``machine/``: the plain twins' machine code by line (capstone), allocation counts
  and the hints read from them (``LineProfiler(asm=True)``);
- ``stats``, ``diagnose``: the profile as plain data, and what can be trusted in it;
- ``renderers/``: text, rich and HTML views of the stats (the only users of rich);
- ``profiler``: the ``LineProfiler`` API that ties the stages together;
- front ends: ``magic`` (the only user of IPython) and ``cli``.
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
