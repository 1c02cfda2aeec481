"""The optimized code, line by line: machine code, hot instructions, and facts read from it.

Why: a per-line time alone does not say why a line is slow; its code often does
(an array allocated on every iteration, a loop that stayed scalar, a call that was
not inlined). This part reads the plain twin's machine code from memory, groups
it by source line with the same line map the sampler uses (so an instruction's
samples add up to its line's), names what each call reaches, and turns that into
short hints. It is off the default path (``LineProfiler(asm=True)``): reading and
disassembling the code costs about 0.01-0.12 s per function (measured on the
benchmark kernels), and allocations are counted in one more run of the call.

API::

    code, unavailable = function_code(dispatcher, filename, first, last, sample_addresses)
    code[line].instructions   # [stats.Instruction]: address, text, samples, target, packed
"""

from __future__ import annotations

import time

from ..sampling.dwarf import _libraries, line_map
from ..stats import FunctionStats, LineCode
from .disasm import is_packed, read_code
from .hints import function_hints, hot_lines, line_hints
from .names import call_names, pretty

__all__ = ["describe", "function_code", "function_hints", "hot_lines", "is_packed", "line_hints", "pretty"]


def describe(
    stats: FunctionStats,
    dispatcher: object,
    hosts: list[object],
    allocations: dict[int, int] | None = None,
    allocations_unavailable: str | None = None,
) -> None:
    """Fill ``stats.code`` (the plain twin ``dispatcher``'s code by line), ``code_seconds``,
    ``code_unavailable`` and ``hints``; ``allocations`` (line -> count, from a counted run)
    and the stats' hits give the allocation figures."""
    started = time.perf_counter()
    last = stats.first_lineno + len(stats.source_lines) - 1
    code, why = function_code(
        dispatcher, stats.filename, stats.first_lineno, last, stats.sample_addresses, hosts
    )
    stats.code, stats.code_unavailable = code, why
    stats.allocations_unavailable = allocations_unavailable
    if allocations is not None:
        for line, lc in code.items():
            lc.allocations = allocations.get(line, 0)
            lc.executions = stats.hits.get(line, 0)
    stats.hints = function_hints(stats) if why is None else []
    stats.code_seconds = time.perf_counter() - started


def function_code(
    dispatcher: object,
    filename: str,
    first: int,
    last: int,
    sample_addresses: dict[int, int] | None = None,
    inlined_into: list[object] | None = None,
) -> tuple[dict[int, LineCode], str | None]:
    """Line -> machine code of ``dispatcher``'s compiled overloads (a twin with line tables).

    Returns the code and ``None``, or ``{}`` and why there is none.
    """
    try:
        import capstone  # noqa: F401  (checked here, used by read_code)
    except ImportError:
        return {}, "capstone is not installed (pip install capstone)"
    lmap = line_map(dispatcher, filename, first, last, inlined_into or [])
    if lmap.unavailable is not None:
        return {}, lmap.unavailable
    libraries = []
    for owner in [dispatcher, *(inlined_into or [])]:
        for cres in list(getattr(owner, "overloads", {}).values()):
            libraries += [lib for lib, _ in _libraries(cres.library)]
            libraries += list(getattr(cres.library, "_linking_libraries", ()))
    return read_code(lmap, call_names(libraries), sample_addresses or {}), None
