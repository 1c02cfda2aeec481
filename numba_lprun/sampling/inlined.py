"""Code of a profiled function that LLVM inlined into other profiled functions.

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
import io
import os
from dataclasses import dataclass

from ..instrument.parfor_code import code_libraries
from ..internals import compiled_object
from . import elf as E
from . import rows as R


@dataclass
class _Call:
    start: int
    end: int
    path: str
    line: int
    depth: int


def inlined_ranges(
    hosts: list[object], filename: str, first: int, last: int, kernels: frozenset[str] = frozenset()
) -> tuple[list[R.FunctionCode], list[tuple[int, int, int]]]:
    """(host functions holding inlined code, [(start, end, line)]) of the function at
    ``filename`` lines ``first``-``last``, in the compiled code of ``hosts``.

    ``kernels`` names the function's parfor gufuncs (``rows.gufunc_kernels``): a
    host runs its own copies of them, whose rows name the file ``<string>``."""
    functions: list[R.FunctionCode] = []
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
                    found = E.read_once(_host_library, library, obj, filename, first, last, kernels)
                except Exception:  # malformed or unexpected DWARF: this host adds nothing
                    continue
                for func, ranges in found:
                    functions.append(func)
                    pieces.extend(ranges)
    return functions, pieces


@dataclass(frozen=True)
class _HostRow:
    """A line-table row of a host function, at runtime addresses, with the call sites of the
    inlined calls around it (in ``_all_calls`` order, with their depths)."""

    start: int
    end: int
    path: str
    line: int
    around: tuple[tuple[str, int, int], ...]  # (call path, call line, depth)


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
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(E._relocate_debug(obj)))
    symbols = E._function_symbols(elf)
    bases = E._runtime_bases(library, symbols)
    dwarf = elf.get_dwarf_info(relocate_dwarf_sections=False)
    rows, _ = R.rows_and_inlines(dwarf)
    rows = sorted(rows, key=lambda row: row.start)  # stable: rows at one address keep their order
    starts = [row.start for row in rows]
    calls = _all_calls(dwarf)
    out = []
    for name, fake_start, size, bind in symbols:
        section = fake_start >> E._SECTION_SHIFT
        if section not in bases:
            continue
        shift = bases[section] - (section << E._SECTION_SHIFT)
        if bind != "STB_LOCAL" and library.get_pointer_to_function(name) != fake_start + shift:
            continue
        fake_end = fake_start + size
        inside = [c for c in calls if c.start < fake_end and fake_start < c.end]
        host_rows = []
        for row in rows[bisect.bisect_left(starts, fake_start) : bisect.bisect_left(starts, fake_end)]:
            around = tuple((c.path, c.line, c.depth) for c in inside if c.start <= row.start < c.end)
            host_rows.append(
                _HostRow(row.start + shift, min(row.end, fake_end) + shift, row.path, row.line, around)
            )
        out.append(_HostFunction(name, fake_start + shift, fake_end + shift, tuple(host_rows)))
    return tuple(out)


def _host_library(library, obj: bytes, filename: str, first: int, last: int, kernels: frozenset[str]):
    """The host functions of ``library`` holding code of ``filename`` lines ``first``-``last``,
    each with its [(start, end, line)]: a row of those lines is that line; a row of other code
    inside an inlined call made from those lines is the innermost such call's line."""
    ours: dict[str, bool] = {}
    gufunc = False  # the function being read is a copy of one of ``kernels``

    def in_range(path: str, line: int) -> bool:
        if not first <= line <= last:
            return False
        if gufunc and os.path.basename(path) == "<string>":
            return True
        if path not in ours:
            ours[path] = R.same_file(path, filename)
        return ours[path]

    out = []
    for function in E.read_once(_host_code, library, obj):
        gufunc = R.is_kernel_of(function.name, kernels)
        ranges: list[tuple[int, int, int]] = []
        for row in function.rows:
            line = row.line if in_range(row.path, row.line) else None
            if line is None:
                inner = [(depth, at) for path, at, depth in row.around if in_range(path, at)]
                if inner:
                    line = max(inner, key=lambda c: c[0])[1]  # the innermost; the first of equals
            if line is None:
                continue
            if ranges and ranges[-1][1] == row.start and ranges[-1][2] == line:
                ranges[-1] = (ranges[-1][0], row.end, line)
            else:
                ranges.append((row.start, row.end, line))
        if ranges:
            out.append((R.FunctionCode(function.name, function.start, function.end, library.name), ranges))
    return out


def _all_calls(dwarf) -> list[_Call]:
    """Every inlined call (nested ones too), with its call site and nesting depth."""
    out: list[_Call] = []
    for cu in dwarf.iter_CUs():
        program = dwarf.line_program_for_CU(cu)
        if program is None:
            continue
        top = cu.get_top_DIE()
        comp_dir = top.attributes["DW_AT_comp_dir"].value if "DW_AT_comp_dir" in top.attributes else b""
        paths = R.file_paths(program, comp_dir.decode() if isinstance(comp_dir, bytes) else str(comp_dir))
        cu_base = top.attributes["DW_AT_low_pc"].value if "DW_AT_low_pc" in top.attributes else 0
        stack = [(child, 0) for child in top.iter_children()]
        while stack:
            die, depth = stack.pop()
            if die.tag == "DW_TAG_inlined_subroutine":
                attrs = die.attributes
                if "DW_AT_call_line" in attrs:
                    path = paths.get(attrs["DW_AT_call_file"].value, "") if "DW_AT_call_file" in attrs else ""
                    for start, end in R.die_ranges(dwarf, die, cu_base):
                        out.append(_Call(start, end, path, attrs["DW_AT_call_line"].value, depth))
                depth += 1
            stack.extend((child, depth) for child in die.iter_children())
    return out
