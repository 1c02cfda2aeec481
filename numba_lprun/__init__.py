"""numba_lprun: a line profiler for Numba jitted functions.

``LineProfiler`` is the Python API (imported on first use); ``%load_ext
numba_lprun`` registers the ``%nlprun`` magics (imported lazily, so the API never
needs IPython).

Data flows one way; each part imports only from the parts before it:

- ``errors``, ``interrupts``, ``twin_kind``, ``settings``: what every stage may name (the twin
  kinds once, every environment variable once); ``decorator``: ``@profile``, the mark the
  command line looks for (it imports nothing: marking costs nothing);
- ``internals/``: the one door to Numba's private API (functions named by intent, each
  declaring what it touches and the Numba releases it was checked on);
- ``instrument/``: source -> instrumented AST -> plain, counting and probed twins;
  ``vectorized``: which loops of a twin LLVM vectorized, read from its code;
- ``sampling/``: the native sampler and the DWARF line maps it is read with;
- ``machine/``: the plain twins' machine code by line (capstone), allocation counts
  and the hints read from them (``LineProfiler(asm=True)``);
- ``run/``: swap the twins in, run the call (the user's run on counting twins, then
  plain replays of its calls and sampled replays), put everything back;
- ``stats``, ``stats_parts``, ``codec``, ``diagnose``, ``assemble``: the profile as plain
  data (a function's in parts, to and from JSON), what can be trusted in it, and the one
  step from measurements to it; ``merge``: the profiles of several processes as one;
- ``renderers/``: text, rich and HTML views of the stats (the only users of rich);
- ``processes/``: the worker processes a run starts, profiled and their parts collected;
- ``profiler``: the ``LineProfiler`` API that ties the stages together; ``cuda/``:
  ``@cuda.jit`` kernels' profiles;
- ``options``: every option, declared once for both front ends;
- ``session``: between the front ends and the profiler, written once for both: the request
  (what is profiled, the CPU/CUDA split), the outcome (why a run was cut short, what could
  have been profiled) and its presentation (the report and its files, a saved profile shown
  again);
- front ends, which parse and print: ``magic`` (the only user of IPython), ``cli`` (and
  ``__main__``, ``python -m numba_lprun show FILE``) and ``demo``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .decorator import profile
from .errors import NotProfilableError, TwinCompileError

if TYPE_CHECKING:
    from .profiler import LineProfiler

__all__ = ["LineProfiler", "NotProfilableError", "TwinCompileError", "load_ipython_extension", "profile"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``LineProfiler`` is imported on first use: a script that only marks functions with
    ``@numba_lprun.profile`` and runs without ``nlprun`` does not pay for the profiler,
    Numba or the renderers (``import numba_lprun`` then costs a few milliseconds)."""
    if name == "LineProfiler":
        from .profiler import LineProfiler

        return LineProfiler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """Register ``%nlprun`` and ``%%nlprun`` with an IPython shell."""
    from .magic import register

    register(ipython)
