"""Map machine addresses of Numba-generated code to source lines (DWARF line tables).

Why the detours:

* Numba keeps each library's object code, a relocatable ELF whose debug sections
  are not relocated (``elf`` relocates them and finds the code's runtime bases).
* A library also holds *copies* of functions linked in from other libraries
  (``linkonce_odr``, weak). The JIT resolves each weak symbol to its first
  definition, so only a function whose symbol resolves into this very library is
  code that runs; the others are skipped. A twin makes those copies its own
  (``internal``, ``instrument.unwind``): local symbols always count.
* ``parallel=True`` bodies run in parfor gufuncs, compiled in their own libraries
  (reached through ``_linking_libraries``) from generated source: their line table
  names the file ``<string>`` but keeps the user's line numbers for the loop body,
  while the generated scaffolding (thread id, loop header, reductions, return) has
  small line numbers of its own. Rows of a gufunc count when their line is inside
  the profiled range; the rest are charged like line-0 rows (below). A twin runs
  its own copies of its gufuncs, in its own library: a function there whose symbol
  names one of the function's gufuncs is read the same way (``gufunc_kernels``).
* Rows with line 0 (code the compiler could not place), rows of code inlined from
  other files (Numba's implementations of NumPy functions) and scaffolding rows are
  charged to the enclosing inlined call's line when DWARF records one
  (``DW_TAG_inlined_subroutine``), else to the nearest earlier row of the same
  function that has a line in range (the next one, for a function's first rows).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

import numpy as np

from ..instrument.parfor_code import code_libraries
from ..internals import compiled_object
from .elf import _SECTION_SHIFT, _function_symbols, _relocate_debug, _runtime_bases, read_once
from .inlined import inlined_ranges
from .rows import (
    FunctionCode,
    function_lines,
    gufunc_kernels,
    is_kernel_of,
    rows_and_inlines,
)


@dataclass
class LineMap:
    """Address ranges of a profiled function's code, each with a source line.

    ``starts``/``ends``/``lines`` are sorted, non-overlapping ranges covering every
    function in ``functions``; ``unavailable`` says why the map is empty, if it is.
    """

    filename: str
    first_line: int
    last_line: int
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    functions: list[FunctionCode] = field(default_factory=list)
    unavailable: str | None = None

    def lookup(self, addresses: np.ndarray) -> np.ndarray:
        """The line of each address (same shape), -1 where it is not profiled code."""
        flat = np.asarray(addresses, np.uint64).ravel()
        out = np.full(flat.shape, -1, np.int32)
        if len(self.starts) and len(flat):
            index = np.searchsorted(self.starts, flat, side="right") - 1
            safe = np.maximum(index, 0)
            inside = (index >= 0) & (flat < self.ends[safe]) & (flat != 0)
            out[inside] = self.lines[safe[inside]]
        return out.reshape(np.shape(addresses))


def line_map(
    dispatcher: object, filename: str, first_line: int, last_line: int, hosts: list[object] | None = None
) -> LineMap:
    """The line map of every compiled overload of ``dispatcher``.

    ``filename`` and the inclusive line range select which line-table rows belong to
    the profiled function. The overloads must have been compiled with debug info
    (``debug=True``); otherwise the map is empty and says so in ``unavailable``.
    ``hosts`` are other dispatchers (with line tables) whose code may hold this
    function inlined: that code is mapped too (``inlined``).
    """
    result = LineMap(filename, first_line, last_line)
    pieces: list[tuple[int, int, int]] = []
    problems: list[str] = []
    try:
        from elftools.elf.elffile import ELFFile  # noqa: F401  (checked here, used below)
    except ImportError:
        result.unavailable = "pyelftools is not installed"
        return result
    overloads = list(getattr(dispatcher, "overloads", {}).values())
    if not overloads:
        result.unavailable = "nothing compiled yet: call or compile the function first"
        return result
    kernels = gufunc_kernels(dispatcher)
    for cres in overloads:
        for library, is_gufunc in code_libraries(cres.library):
            obj = compiled_object(library)
            if obj is None:
                continue  # no object code kept (wrapper libraries): nothing of ours inside
            if not is_gufunc and os.path.basename(filename).encode() not in obj:
                continue
            try:
                lines = (filename, first_line, last_line)
                found = read_once(_map_library, library, obj, *lines, is_gufunc, kernels)
            except Exception as exc:  # malformed or unexpected DWARF: skip this library
                problems.append(f"{library.name}: {type(exc).__name__}: {exc}")
                continue
            for func, ranges in found:
                result.functions.append(func)
                pieces.extend(ranges)
    if hosts:
        functions, ranges = inlined_ranges(
            [h for h in hosts if h is not dispatcher], filename, first_line, last_line, kernels
        )
        result.functions += functions
        pieces += ranges
    if pieces:
        pieces.sort()
        arr = np.array(pieces, dtype=np.int64)
        result.starts = arr[:, 0].astype(np.uint64)
        result.ends = arr[:, 1].astype(np.uint64)
        result.lines = arr[:, 2].astype(np.int32)
    elif problems:
        result.unavailable = "could not read debug info: " + "; ".join(problems)
    else:
        result.unavailable = (
            "no line table rows for this function: compile it with debug=True "
            "(and boundscheck=False, _dbg_extend_lifetimes=False to keep the plain build's speed)"
        )
    return result


# --- one library -----------------------------------------------------------------------
def _map_library(
    library, obj: bytes, filename: str, first: int, last: int, is_gufunc: bool, kernels: frozenset[str]
):
    """[(FunctionCode, [(start, end, line), ...])] for the live functions of ``library``
    that have rows in ``filename`` between ``first`` and ``last`` (or, in a gufunc
    library or a copy of one of ``kernels``, in ``<string>``)."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(_relocate_debug(obj)))
    symbols = _function_symbols(elf)
    bases = _runtime_bases(library, symbols)
    dwarf = elf.get_dwarf_info(relocate_dwarf_sections=False)
    rows, inlines = rows_and_inlines(dwarf)
    out = []
    for name, fake_start, size, bind in symbols:
        section = fake_start >> _SECTION_SHIFT
        if section not in bases:
            continue
        shift = bases[section] - (section << _SECTION_SHIFT)
        if bind != "STB_LOCAL" and library.get_pointer_to_function(name) != fake_start + shift:
            continue  # a weak copy: the JIT runs the first definition, elsewhere
        fake_end = fake_start + size
        gufunc = is_gufunc or is_kernel_of(name, kernels)
        ranges = function_lines(rows, inlines, fake_start, fake_end, filename, first, last, gufunc)
        if ranges:
            func = FunctionCode(name, fake_start + shift, fake_end + shift, library.name)
            out.append((func, [(s + shift, e + shift, line) for s, e, line in ranges]))
    return out
