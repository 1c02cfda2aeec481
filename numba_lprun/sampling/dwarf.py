"""Map machine addresses of Numba-generated code to source lines (DWARF line tables).

Why the detours:

* Numba keeps each library's object code, a relocatable ELF whose debug sections
  are not relocated (``_relocate_debug`` relocates them and finds the code's runtime bases).
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
  function that has a line in range (the next one, for a function's first rows). In
  such a row that runs into a row in range, the calls from the first and the code after them
  (their results read back) take that row's line, where the calls return with their results
  (``object_code.function_lines``): a twin's code is
  made with LLVM's line 0 on what it could not place (``internals.mark_unplaced_code``),
  where by default it would take the line before it, and the calls LLVM copies into an
  unrolled loop lose their line.
* The range callers pass starts at the body's first line (``Source.body_lineno``): the
  prologue LLVM puts on the ``def`` line (a gufunc's, run once per chunk) is charged like a
  line-0 row, to the body, since no hit is ever on the ``def`` line.

Inlined code: code of a profiled function that LLVM inlined into other profiled functions.

Why: a small jitted callee is often inlined into its caller, and its code then
lives in the caller's library, where the callee's own line map never looks: a
profiled callee got no samples at all. Its twin carries line tables with inlining
records (``LineTablesOnly``, see ``instrument.twins``), so in the caller's code:

* a line-table row naming the callee's file and a line in the callee's range is the
  callee's own line (the innermost frame of an inlined call);
* code that the callee itself inlined (NumPy implementations, from other files) sits
  inside a ``DW_TAG_inlined_subroutine`` whose call site is a line of the callee:
  the innermost such record gives the callee's line.

Rows matching neither are not the callee's: nothing is guessed. The caller keeps
these samples too (its map charges inlined code to its calling line), so one
sample counts for the callee's line and the caller's calling line.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

import numpy as np

from ..instrument.parfor_code import code_libraries
from ..internals import compiled_object
from .object_code import (
    FunctionCode,
    extend_ranges,
    first_call_in,
    function_lines,
    gufunc_kernels,
    inlined_calls,
    is_kernel_of,
    line_rows,
    live_functions,
    parsed,
    placed_ranges,
    read_once,
    same_file,
)

# -- inlined code ------------------------------------------------------------------------


def inlined_ranges(
    hosts: list[object],
    filename: str,
    first: int,
    last: int,
    kernels: frozenset[str] = frozenset(),
    symbol_mark: str = "",
) -> tuple[list[FunctionCode], list[tuple[int, int, int]]]:
    """(host functions holding inlined code, [(start, end, line)]) of the function at
    ``filename`` lines ``first``-``last``, in the compiled code of ``hosts``.

    ``kernels`` names the function's parfor gufuncs (``gufunc_kernels``): a
    host runs its own copies of them, whose rows name the file ``<string>``.
    ``symbol_mark``: what every symbol of the function's code carries (see ``line_map``)."""
    functions: list[FunctionCode] = []
    pieces: list[tuple[int, int, int]] = []
    seen: set[int] = set()
    for host in hosts:
        for cres in list(getattr(host, "overloads", {}).values()):
            for library, _ in code_libraries(cres.library):
                if id(library) in seen:
                    continue
                seen.add(id(library))
                obj = compiled_object(library)
                if obj is None:
                    continue
                copies = any(k.encode() in obj for k in kernels)
                if os.path.basename(filename).encode() not in obj and not copies:
                    continue  # no row of this file inside, and no copy of its loop bodies
                try:
                    question = (filename, first, last, kernels, symbol_mark)
                    found = read_once(_host_library, library, obj, *question)
                except Exception:  # malformed or unexpected DWARF: this host adds nothing
                    continue
                for func, ranges in found:
                    functions.append(func)
                    pieces.extend(ranges)
    return functions, pieces


@dataclass(frozen=True)
class _HostRow:
    """A line-table row of a host function, at runtime addresses, with the call sites of the
    inlined calls around it (in ``inlined_calls`` order, with their depths)."""

    start: int
    end: int
    path: str
    line: int
    around: tuple[tuple[str, int, int, str], ...]  # (call path, call line, depth, function inlined)


@dataclass(frozen=True)
class _HostFunction:
    name: str
    start: int  # runtime addresses
    end: int
    rows: tuple[_HostRow, ...]


def _host_code(library, obj: bytes) -> tuple[_HostFunction, ...]:
    """Every function of ``library`` with its rows and the inlined calls around each row.

    Why apart from ``_host_library``: this is the ELF and DWARF parse, the same whatever
    function is asked about; parsed once per library, not once per (library, profiled
    function): 344 functions of one file, each looked for in the ~90 libraries that hold
    its file's rows, parsed 30,000 objects (most of two minutes after the run)."""
    elf, dwarf = parsed(obj)
    rows = line_rows(dwarf)
    starts = [row.start for row in rows]
    calls = inlined_calls(dwarf, nested=True)
    out = []
    for name, fake_start, fake_end, shift in live_functions(library, elf):
        inside = [c for c in calls if c.start < fake_end and fake_start < c.end]
        host_rows = []
        for row in rows[bisect.bisect_left(starts, fake_start) : bisect.bisect_left(starts, fake_end)]:
            around = tuple(
                (c.path, c.line, c.depth, c.origin) for c in inside if c.start <= row.start < c.end
            )
            host_rows.append(
                _HostRow(row.start + shift, min(row.end, fake_end) + shift, row.path, row.line, around)
            )
        out.append(_HostFunction(name, fake_start + shift, fake_end + shift, tuple(host_rows)))
    return tuple(out)


def _host_library(
    library, obj: bytes, filename: str, first: int, last: int, kernels: frozenset[str], symbol_mark: str
):
    """The host functions of ``library`` holding code of ``filename`` lines ``first``-``last``,
    each with its [(start, end, line)]: a row of those lines is that line; a row of other code
    inside an inlined call made from those lines is the innermost such call's line.

    Lines are not enough where two functions share them (two dispatchers of one ``def``: a
    time charged to the one that never ran): the function running a row, the innermost inlined
    call's or the host's own, must be the profiled one's (``_runs_ours``)."""
    ours: dict[str, bool] = {}
    gufunc = False  # the function being read is a copy of one of ``kernels``

    def in_range(path: str, line: int) -> bool:
        if not first <= line <= last:
            return False
        if gufunc and os.path.basename(path) == "<string>":
            return True
        if path not in ours:
            ours[path] = same_file(path, filename)
        return ours[path]

    out = []
    for function in read_once(_host_code, library, obj):
        gufunc = is_kernel_of(function.name, kernels)
        lines: list[int | None] = []
        copies = set()  # the inlined copies of the function: the calls around its own rows
        for row in function.rows:
            inlined = {depth: origin for _, _, depth, origin in row.around}  # each call's function
            running = inlined[max(inlined)] if inlined else function.name
            line = None
            if in_range(row.path, row.line) and (gufunc or _runs_ours(running, symbol_mark)):
                line = row.line
                copies.add(row.around)
            else:
                inner = [
                    (depth, at)
                    for path, at, depth, _ in row.around
                    if in_range(path, at)
                    and _runs_ours(inlined.get(depth - 1, "") if depth else function.name, symbol_mark)
                ]
                if inner:
                    line = max(inner, key=lambda c: c[0])[1]  # the innermost; the first of equals
            lines.append(line)
        # those copies also hold rows of no line at all (line 0: the libm calls LLVM took the
        # line of): theirs as in its own code
        ranges: list[tuple[int, int, int]] = []
        run: list[int] = []  # a run of rows of the function's copies, by index
        for index, row in enumerate(function.rows + (None,)):
            if row is not None and (lines[index] is not None or (row.line == 0 and row.around in copies)):
                run.append(index)
                continue
            if run:
                rows = [function.rows[i] for i in run]
                placed = placed_ranges(rows, [lines[i] for i in run], function.end, first_call_in)
                for start, stop, line in placed:
                    extend_ranges(ranges, start, stop, line)
                run = []
        if ranges:
            out.append((FunctionCode(function.name, function.start, function.end, library.name), ranges))
    return out


def _runs_ours(function: str, symbol_mark: str) -> bool:
    """Whether code that ``function`` (a symbol, or an inlined function's name) runs may be the
    profiled function's: with a ``symbol_mark``, only where the name carries it; an unnamed
    function (DWARF without names) is not told apart, as lines alone did."""
    return not symbol_mark or not function or symbol_mark in function


# -- line maps ---------------------------------------------------------------------------


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
    dispatcher: object,
    filename: str,
    first_line: int,
    last_line: int,
    hosts: list[object] | None = None,
    symbol_mark: str = "",
) -> LineMap:
    """The line map of every compiled overload of ``dispatcher``.

    ``filename`` and the inclusive line range select which line-table rows belong to
    the profiled function. The overloads must have been compiled with debug info
    (``debug=True``); otherwise the map is empty and says so in ``unavailable``.
    ``hosts`` are other dispatchers (with line tables) whose code may hold this
    function inlined: that code is mapped too (``inlined_ranges``), where the function running it
    has ``symbol_mark`` in its name (what each symbol of the dispatcher's code carries; ``""``: any).
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
            [h for h in hosts if h is not dispatcher], filename, first_line, last_line, kernels, symbol_mark
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
    elif not overloads:  # nor inlined into a host: a caller loaded from a cache runs it inlined
        result.unavailable = "nothing compiled yet: call or compile the function first"
    else:
        result.unavailable = (
            "no line table rows for this function: compile it with debug=True "
            "(and boundscheck=False, _dbg_extend_lifetimes=False to keep the plain build's speed)"
        )
    return result


def _less(address: int | None, shift: int) -> int | None:
    return None if address is None else address - shift


# --- one library -----------------------------------------------------------------------
def _map_library(
    library, obj: bytes, filename: str, first: int, last: int, is_gufunc: bool, kernels: frozenset[str]
):
    """[(FunctionCode, [(start, end, line), ...])] for the live functions of ``library``
    that have rows in ``filename`` between ``first`` and ``last`` (or, in a gufunc
    library or a copy of one of ``kernels``, in ``<string>``)."""
    elf, dwarf = parsed(obj)
    rows, inlines = line_rows(dwarf), inlined_calls(dwarf, nested=False)
    out = []
    for name, fake_start, fake_end, shift in live_functions(library, elf):
        gufunc = is_gufunc or is_kernel_of(name, kernels)
        ranges = function_lines(
            rows,
            inlines,
            fake_start,
            fake_end,
            filename,
            first,
            last,
            gufunc,
            lambda start, end, shift=shift: _less(first_call_in(start + shift, end + shift), shift),
        )
        if ranges:
            func = FunctionCode(name, fake_start + shift, fake_end + shift, library.name)
            out.append((func, [(s + shift, e + shift, line) for s, e, line in ranges]))
    return out
