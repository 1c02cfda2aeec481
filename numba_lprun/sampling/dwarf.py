"""Map machine addresses of Numba-generated code to source lines (DWARF line tables).

Why the detours:

* Numba keeps each library's object code (``library._get_compiled_object()``), a
  relocatable ELF whose debug sections are not relocated. pyelftools cannot apply
  every relocation type in it (``.eh_frame`` has R_X86_64_PC64), so we apply the two
  the debug sections use (R_X86_64_64 and R_X86_64_32) ourselves, giving each code
  section a distinct fake base (its index << 36) so addresses of different sections
  never collide. A known symbol's runtime address (``get_pointer_to_function``)
  turns a fake base into the real one.
* A library also holds *copies* of functions linked in from other libraries
  (``linkonce_odr``, weak). The JIT resolves each weak symbol to its first
  definition, so only a function whose symbol resolves into this very library is
  code that runs; the others are skipped.
* ``parallel=True`` bodies run in parfor gufuncs, compiled in their own libraries
  (reached through ``_linking_libraries``) from generated source: their line table
  names the file ``<string>`` but keeps the user's line numbers for the loop body,
  while the generated scaffolding (thread id, loop header, reductions, return) has
  small line numbers of its own. Rows of a gufunc count when their line is inside
  the profiled range; the rest are charged like line-0 rows (below).
* Rows with line 0 (code the compiler could not place), rows of code inlined from
  other files (Numba's implementations of NumPy functions) and scaffolding rows are
  charged to the enclosing inlined call's line when DWARF records one
  (``DW_TAG_inlined_subroutine``), else to the nearest earlier row of the same
  function that has a line in range (the next one, for a function's first rows).
"""

from __future__ import annotations

import io
import os
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..private_api import compiled_object, parse_line_program_at

_SECTION_SHIFT = 36
_GUFUNC_PARTS = ("parallelgufuncwrapper", "_GufuncWrapper", "__numba_parfor_gufunc")
_R_X86_64_64, _R_X86_64_32, _R_X86_64_32S = 1, 10, 11


@dataclass
class FunctionCode:
    """One native function whose samples count for the profiled function."""

    name: str
    start: int  # runtime address
    end: int
    library: str


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
    for cres in overloads:
        for library, is_gufunc in _libraries(cres.library):
            obj = compiled_object(library)
            if obj is None:
                continue  # no object code kept (wrapper libraries): nothing of ours inside
            if not is_gufunc and os.path.basename(filename).encode() not in obj:
                continue
            try:
                found = _map_library(library, obj, filename, first_line, last_line, is_gufunc)
            except Exception as exc:  # malformed or unexpected DWARF: skip this library
                problems.append(f"{library.name}: {type(exc).__name__}: {exc}")
                continue
            for func, ranges in found:
                result.functions.append(func)
                pieces.extend(ranges)
    if hosts:
        from .inlined import inlined_ranges

        functions, ranges = inlined_ranges(
            [h for h in hosts if h is not dispatcher], filename, first_line, last_line
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


def _libraries(root: object) -> Iterator[tuple[object, bool]]:
    """The overload's library, then the parfor gufunc libraries linked into it.

    Other linked libraries are other functions (callees, NumPy implementations):
    their code is charged to the calling line by walking the stack instead.
    """
    yield root, False
    seen = {id(root)}
    stack = [lib for lib in getattr(root, "_linking_libraries", ())]
    while stack:
        lib = stack.pop()
        if id(lib) in seen or not any(part in lib.name for part in _GUFUNC_PARTS):
            continue
        seen.add(id(lib))
        yield lib, lib.name.startswith("__numba_parfor_gufunc")
        stack.extend(getattr(lib, "_linking_libraries", ()))


# --- one library -----------------------------------------------------------------------
def _map_library(library, obj: bytes, filename: str, first: int, last: int, is_gufunc: bool):
    """[(FunctionCode, [(start, end, line), ...])] for the live functions of ``library``
    that have rows in ``filename`` between ``first`` and ``last``."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(_relocate_debug(obj)))
    symbols = _function_symbols(elf)
    bases = _runtime_bases(library, symbols)
    dwarf = elf.get_dwarf_info(relocate_dwarf_sections=False)
    rows, inlines = _rows_and_inlines(dwarf)
    out = []
    for name, fake_start, size, bind in symbols:
        section = fake_start >> _SECTION_SHIFT
        if section not in bases:
            continue
        shift = bases[section] - (section << _SECTION_SHIFT)
        if bind != "STB_LOCAL" and library.get_pointer_to_function(name) != fake_start + shift:
            continue  # a weak copy: the JIT runs the first definition, elsewhere
        fake_end = fake_start + size
        ranges = _function_lines(rows, inlines, fake_start, fake_end, filename, first, last, is_gufunc)
        if ranges:
            func = FunctionCode(name, fake_start + shift, fake_end + shift, library.name)
            out.append((func, [(s + shift, e + shift, line) for s, e, line in ranges]))
    return out


def _relocate_debug(obj: bytes) -> bytes:
    """``obj`` with the relocations of its debug sections applied (see module docstring)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection

    elf = ELFFile(io.BytesIO(obj))
    data = bytearray(obj)
    fake = {}
    for index, section in enumerate(elf.iter_sections()):
        fake[index] = (index << _SECTION_SHIFT) if section["sh_flags"] & 0x4 else 0  # SHF_EXECINSTR
    symtab = elf.get_section_by_name(".symtab")
    for section in elf.iter_sections():
        if not isinstance(section, RelocationSection) or not section.is_RELA():
            continue
        target = elf.get_section(section["sh_info"])
        if not target.name.startswith(".debug"):
            continue
        base = target["sh_offset"]
        for rel in section.iter_relocations():
            sym = symtab.get_symbol(rel["r_info_sym"])
            shndx = sym["st_shndx"]
            value = (fake.get(shndx, 0) if isinstance(shndx, int) else 0) + sym["st_value"] + rel["r_addend"]
            kind, where = rel["r_info_type"], base + rel["r_offset"]
            if kind == _R_X86_64_64:
                struct.pack_into("<Q", data, where, value & 0xFFFFFFFFFFFFFFFF)
            elif kind in (_R_X86_64_32, _R_X86_64_32S):
                struct.pack_into("<I", data, where, value & 0xFFFFFFFF)
    return bytes(data)


def _function_symbols(elf) -> list[tuple[str, int, int, str]]:
    """(name, fake address, size, binding) of each defined function in a code section."""
    symtab = elf.get_section_by_name(".symtab")
    out = []
    for sym in symtab.iter_symbols() if symtab is not None else ():
        shndx = sym["st_shndx"]
        if sym["st_info"]["type"] != "STT_FUNC" or not isinstance(shndx, int) or sym["st_size"] == 0:
            continue
        out.append(
            (sym.name, (shndx << _SECTION_SHIFT) + sym["st_value"], sym["st_size"], sym["st_info"]["bind"])
        )
    return out


def _runtime_bases(library, symbols) -> dict[int, int]:
    """Runtime address of each code section: the base most global symbols agree on."""
    votes: dict[int, Counter] = {}
    for name, fake, _, bind in symbols:
        if bind == "STB_LOCAL":
            continue
        ptr = library.get_pointer_to_function(name)
        if ptr:
            section = fake >> _SECTION_SHIFT
            weight = 2 if bind == "STB_GLOBAL" else 1
            votes.setdefault(section, Counter())[ptr - (fake - (section << _SECTION_SHIFT))] += weight
    return {section: counter.most_common(1)[0][0] for section, counter in votes.items()}


@dataclass
class _Row:
    start: int
    end: int
    path: str
    line: int


@dataclass
class _Inline:
    start: int
    end: int
    path: str
    line: int


def _rows_and_inlines(dwarf) -> tuple[list[_Row], list[_Inline]]:
    """Line-table rows as address intervals, and the outermost inlined calls."""
    rows: list[_Row] = []
    inlines: list[_Inline] = []
    cus = list(dwarf.iter_CUs())
    for cu in cus:
        program = dwarf.line_program_for_CU(cu)
        if program is None:
            continue
        top = cu.get_top_DIE()
        comp_dir = top.attributes["DW_AT_comp_dir"].value if "DW_AT_comp_dir" in top.attributes else b""
        paths = _file_paths(program, comp_dir.decode() if isinstance(comp_dir, bytes) else str(comp_dir))
        rows += _program_rows(program, paths)
        cu_base = top.attributes["DW_AT_low_pc"].value if "DW_AT_low_pc" in top.attributes else 0
        for die in top.iter_children():
            _collect_inlines(dwarf, die, cu_base, paths, inlines)
    if not cus:  # line directives only (no .debug_info): read .debug_line unit by unit
        for program in _bare_line_programs(dwarf):
            rows += _program_rows(program, _file_paths(program, ""))
    rows.sort(key=lambda r: r.start)
    return rows, inlines


def _program_rows(program, paths: dict[int, str]) -> list[_Row]:
    rows = []
    previous = None
    for entry in program.get_entries():
        state = entry.state
        if state is None:
            continue
        if previous is not None and state.address > previous.address:
            rows.append(_Row(previous.address, state.address, paths.get(previous.file, ""), previous.line))
        previous = None if state.end_sequence else state
    return rows


def _bare_line_programs(dwarf) -> Iterator:
    """Line programs of a ``.debug_line`` with no compile units pointing at them.

    Twins are compiled with line directives only (full debug info slows some
    code down), which leaves no ``.debug_info``; the units of ``.debug_line`` are
    then parsed one after another (64-bit x86 object files: DWARF32, 8-byte
    addresses). The file names are relative: the directory was the compile unit's.
    """
    from elftools.dwarf.structs import DWARFStructs

    section = getattr(dwarf, "debug_line_sec", None)
    if section is None:
        return
    structs = DWARFStructs(little_endian=True, dwarf_format=32, address_size=8)
    offset = 0
    while offset + 4 <= section.size:
        try:
            program = parse_line_program_at(dwarf, offset, structs)
        except Exception:  # a malformed unit ends the walk, not the profile
            return
        yield program
        offset += program.header["unit_length"] + 4


def _file_paths(program, comp_dir: str) -> dict[int, str]:
    """Line-program file index -> path as Numba wrote it (directory joined with name).

    Directory index 0 is the compilation directory (DWARF 4), where Numba puts the
    directory of the source file."""
    version = program.header["version"]
    dirs = [d.decode() if isinstance(d, bytes) else str(d) for d in program.header["include_directory"]]
    paths = {}
    for i, entry in enumerate(program.header["file_entry"]):
        name = entry.name.decode() if isinstance(entry.name, bytes) else str(entry.name)
        d = entry.dir_index
        directory = comp_dir if d == 0 else ""
        if version >= 5:
            directory = dirs[d] if d < len(dirs) else directory
        elif d > 0 and d - 1 < len(dirs):
            directory = dirs[d - 1]
        paths[i if version >= 5 else i + 1] = os.path.join(directory, name) if directory else name
    return paths


def _collect_inlines(dwarf, die, cu_base: int, paths: dict[int, str], out: list[_Inline]) -> None:
    """Record outermost DW_TAG_inlined_subroutine ranges under ``die`` (not nested ones)."""
    if die.tag == "DW_TAG_inlined_subroutine":
        attrs = die.attributes
        if "DW_AT_call_line" in attrs:
            path = paths.get(attrs["DW_AT_call_file"].value, "") if "DW_AT_call_file" in attrs else ""
            for start, end in _die_ranges(dwarf, die, cu_base):
                out.append(_Inline(start, end, path, attrs["DW_AT_call_line"].value))
        return
    for child in die.iter_children():
        _collect_inlines(dwarf, child, cu_base, paths, out)


def _die_ranges(dwarf, die, cu_base: int) -> list[tuple[int, int]]:
    attrs = die.attributes
    if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
        low = attrs["DW_AT_low_pc"].value
        high = attrs["DW_AT_high_pc"]
        return [(low, low + high.value if high.form.startswith("DW_FORM_data") else high.value)]
    if "DW_AT_ranges" in attrs and dwarf.range_lists() is not None:
        out, base = [], cu_base
        for entry in dwarf.range_lists().get_range_list_at_offset(attrs["DW_AT_ranges"].value):
            if hasattr(entry, "base_address"):
                base = entry.base_address
            elif entry.is_absolute:
                out.append((entry.begin_offset, entry.end_offset))
            else:
                out.append((base + entry.begin_offset, base + entry.end_offset))
        return out
    return []


def _same_file(path: str, filename: str) -> bool:
    if path == filename:
        return True
    if not path:
        return False
    if not os.path.isabs(path) and not os.path.dirname(path):  # directives only: a bare name
        return path == os.path.basename(filename)
    return os.path.normpath(os.path.abspath(path)) == os.path.normpath(os.path.abspath(filename))


def _function_lines(rows, inlines, start, end, filename, first, last, is_gufunc):
    """[(start, end, line)] covering the function's rows, or [] if none is ours."""
    ours = {}

    def in_range(path: str, line: int) -> bool:
        if not first <= line <= last:
            return False
        if path not in ours:
            ours[path] = _same_file(path, filename) or (is_gufunc and os.path.basename(path) == "<string>")
        return ours[path]

    local = [r for r in rows if start <= r.start < end]
    calls = [c for c in inlines if c.start < end and c.end > start]
    lines: list[int | None] = []
    for row in local:
        line = None
        for call in calls:
            if call.start <= row.start < call.end and in_range(call.path, call.line):
                line = call.line
                break
        if line is None and in_range(row.path, row.line):
            line = row.line
        lines.append(line)
    known = [line for line in lines if line is not None]
    if not known:
        return []
    current = known[0]  # rows before the first placed one take the next line
    out = []
    for row, line in zip(local, lines, strict=True):
        current = line if line is not None else current
        if out and out[-1][1] == row.start and out[-1][2] == current:
            out[-1] = (out[-1][0], min(row.end, end), current)
        else:
            out.append((row.start, min(row.end, end), current))
    return out
