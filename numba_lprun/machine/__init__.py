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

    reading = read_code_by_line(dispatcher, filename, first, last, sample_addresses, hosts)
    reading.code[line].instructions   # (values.Instruction, ...): address, text, samples, target
    facts = CodeFacts(code, hits, calls); function_hints(facts, hot_lines(shares, 3))
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ..instrument.parfor_code import code_libraries
from ..internals import linked_libraries
from ..sampling.dwarf import line_map
from ..twin_kind import TwinKind
from .disasm import is_packed, read_code
from .hints import CodeFacts, function_hints, hot_lines, line_hints
from .names import call_names, pretty
from .values import Hint, Instruction, LineCode

__all__ = [
    "CodeFacts",
    "CodeReading",
    "Hint",
    "Instruction",
    "LineCode",
    "function_code",
    "function_hints",
    "hot_lines",
    "is_packed",
    "line_hints",
    "pretty",
    "read_code_by_line",
    "with_allocations",
]


@dataclass(frozen=True)
class CodeReading:
    """One function's machine code by line, or why there is none, and what reading it cost."""

    code: dict[int, LineCode]
    unavailable: str | None
    seconds: float
    twin: TwinKind  # which twin's code was read (plain or counting)


def read_code_by_line(
    dispatcher: object,
    twin: str,
    filename: str,
    first: int,
    last: int,
    sample_addresses: dict[int, int],
    hosts: list[object],
    symbol_mark: str = "",
) -> CodeReading:
    """Read ``dispatcher``'s code (a twin with line tables) by source line, samples counted
    (``hosts``, ``symbol_mark``: where it is inlined too, as ``sampling.line_map`` reads them)."""
    started = time.perf_counter()
    code, why = function_code(dispatcher, filename, first, last, sample_addresses, hosts, symbol_mark)
    return CodeReading(code, why, time.perf_counter() - started, twin)


def with_allocations(
    code: dict[int, LineCode], allocations: dict[int, int] | None, hits: dict[int, int]
) -> dict[int, LineCode]:
    """``code`` with each line's allocation count (from a counted run) and executions."""
    if allocations is None:
        return code
    return {
        line: replace(lc, allocations=allocations.get(line, 0), executions=hits.get(line, 0))
        for line, lc in code.items()
    }


def function_code(
    dispatcher: object,
    filename: str,
    first: int,
    last: int,
    sample_addresses: dict[int, int] | None = None,
    inlined_into: list[object] | None = None,
    symbol_mark: str = "",
) -> tuple[dict[int, LineCode], str | None]:
    """Line -> machine code of ``dispatcher``'s compiled overloads (a twin with line tables).

    Returns the code and ``None``, or ``{}`` and why there is none.
    """
    try:
        import capstone  # noqa: F401  (checked here, used by read_code)
    except ImportError:
        return {}, "capstone is not installed (pip install capstone)"
    lmap = line_map(dispatcher, filename, first, last, inlined_into or [], symbol_mark)
    if lmap.unavailable is not None:
        return {}, lmap.unavailable
    libraries = []
    for owner in [dispatcher, *(inlined_into or [])]:
        for cres in list(getattr(owner, "overloads", {}).values()):
            libraries += [lib for lib, _ in code_libraries(cres.library)]
            libraries += linked_libraries(cres.library)
    return read_code(lmap, call_names(libraries), sample_addresses or {}), None
