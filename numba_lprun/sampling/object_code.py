"""Numba's object code read as plain data: relocated debug sections, code symbols, line rows.

ELF objects. Numba keeps each library's object code (``library._get_compiled_object()``),
a relocatable ELF whose debug sections are not relocated. pyelftools cannot apply
every relocation type in it (``.eh_frame`` has R_X86_64_PC64), so the two the debug
sections use (R_X86_64_64 and R_X86_64_32) are applied here, giving each code
section a distinct fake base (its index << 36) so addresses of different sections
never collide. A known symbol's runtime address (``get_pointer_to_function``) turns
a fake base into the real one (``dwarf`` reads the line tables).

Line rows. Shared by ``dwarf``'s line maps (a function's own code) and inlined code (its
code inlined into other functions): the line rows and inlined-call records of one object file, and
the names that tell a function's gufuncs apart in the copies other libraries run
(which libraries hold a function: ``instrument.parfor_code``).
"""

from __future__ import annotations

import ctypes
import functools
import io
import os
import platform
import struct
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from ..instrument.parfor_code import own_gufuncs
from ..internals import parse_line_program_at

# -- elf objects -------------------------------------------------------------------------

T = TypeVar("T")

#: What was read from each library's object code, by what was asked (see ``read_once``).
_reads: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_SECTION_SHIFT = 36
_R_X86_64_64, _R_X86_64_32, _R_X86_64_32S = 1, 10, 11


def read_once(read: Callable[..., T], library: object, obj: bytes, *question: object) -> T:
    """``read(library, obj, *question)``, remembered for ``library`` while it lives.

    A finalized library's code and debug info never change, and parsing its ELF is most of
    what a profile of reused twins costs beyond the call (about 10 ms a library): the
    second profile of a function reads nothing again. What ``read`` returns is shared, so
    it is never modified. An exception is not remembered."""
    answers = _reads.get(library)
    if answers is None:
        answers = _reads.setdefault(library, {})
    key = (read, question)
    if key not in answers:
        answers[key] = read(library, obj, *question)
    return answers[key]


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


def parsed(obj: bytes):
    """(the ELF file, its DWARF info) of ``obj``, its debug sections relocated."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(_relocate_debug(obj)))
    return elf, elf.get_dwarf_info(relocate_dwarf_sections=False)


def live_functions(library, elf) -> Iterator[tuple[str, int, int, int]]:
    """(name, start, end, shift) of each function of ``library`` that the JIT runs: start and
    end at the object's fake addresses, ``+ shift`` at runtime ones. A weak copy whose symbol
    resolves to a definition elsewhere is not one (the JIT runs the first definition)."""
    symbols = _function_symbols(elf)
    bases = _runtime_bases(library, symbols)
    for name, fake_start, size, bind in symbols:
        section = fake_start >> _SECTION_SHIFT
        if section not in bases:
            continue
        shift = bases[section] - (section << _SECTION_SHIFT)
        if bind != "STB_LOCAL" and library.get_pointer_to_function(name) != fake_start + shift:
            continue
        yield name, fake_start, fake_start + size, shift


def first_call_in(start: int, end: int) -> int | None:
    """The runtime address of the first call instruction in the loaded code ``[start, end)``
    (x86-64, where the code starts at an instruction: a line-table row), or None."""
    if platform.machine() not in ("x86_64", "AMD64") or end <= start:
        return None
    instructions = _decoder().disasm_lite(ctypes.string_at(start, end - start), start)
    return next((address for address, _, mnemonic, _ in instructions if mnemonic.startswith("call")), None)


@functools.cache
def _decoder():
    import capstone

    return capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)


# -- line rows ---------------------------------------------------------------------------


@dataclass
class FunctionCode:
    """One native function whose samples count for the profiled function."""

    name: str
    start: int  # runtime address
    end: int
    library: str


def gufunc_kernels(dispatcher: object) -> frozenset[str]:
    """Names of the parfor gufuncs of ``dispatcher``'s ``prange`` loops.

    Their code also runs as copies inside other libraries (``instrument.unwind``
    makes a twin run its own copies of what it links; a library loaded from the
    disk cache has only those), where a function whose symbol contains one of these
    names is this function's loop body: its rows name the file ``<string>``, so the
    symbol is what tells whose body it is (``instrument.parfor_code``).
    """
    names: set[str] = set()
    for cres in list(getattr(dispatcher, "overloads", {}).values()):
        names.update(own_gufuncs(cres.library))
    return frozenset(names)


def is_kernel_of(symbol: str, kernels: frozenset[str]) -> bool:
    """Whether ``symbol`` is (a wrapper of) one of the gufuncs named in ``kernels``."""
    return any(name in symbol for name in kernels)


@dataclass
class Row:
    start: int
    end: int
    path: str
    line: int


@dataclass(frozen=True)
class InlinedCall:
    """The code of one inlined call, its call site, and how many inlined calls it lies in."""

    start: int
    end: int
    path: str
    line: int
    depth: int  # 0: an outermost inlined call
    origin: str = ""  # the name of the function inlined (its symbol in a twin's code; "": unnamed)


def _units(dwarf) -> Iterator[tuple[object, object, dict[int, str], int]]:
    """(top DIE, line program, file paths, base address) of each compile unit with a line program."""
    for cu in dwarf.iter_CUs():
        program = dwarf.line_program_for_CU(cu)
        if program is None:
            continue
        top = cu.get_top_DIE()
        comp_dir = top.attributes["DW_AT_comp_dir"].value if "DW_AT_comp_dir" in top.attributes else b""
        paths = file_paths(program, comp_dir.decode() if isinstance(comp_dir, bytes) else str(comp_dir))
        cu_base = top.attributes["DW_AT_low_pc"].value if "DW_AT_low_pc" in top.attributes else 0
        yield top, program, paths, cu_base


def line_rows(dwarf) -> list[Row]:
    """Line-table rows as address intervals, sorted by address (stable)."""
    rows = [row for _, program, paths, _ in _units(dwarf) for row in program_rows(program, paths)]
    if next(iter(dwarf.iter_CUs()), None) is None:  # line directives only: read .debug_line unit by unit
        for program in bare_line_programs(dwarf):
            rows += program_rows(program, file_paths(program, ""))
    rows.sort(key=lambda r: r.start)
    return rows


def inlined_calls(dwarf, nested: bool) -> list[InlinedCall]:
    """The inlined calls in ``dwarf``, in the order of its entries: the outermost ones only, or
    with ``nested`` the calls inside them too (with their depths)."""
    out: list[InlinedCall] = []
    names: dict[int, str] = {}  # abstract subprogram (offset) -> its name
    for top, _, paths, cu_base in _units(dwarf):
        stack = [(child, 0) for child in reversed(list(top.iter_children()))]
        while stack:
            die, depth = stack.pop()
            if die.tag == "DW_TAG_inlined_subroutine":
                attrs = die.attributes
                if "DW_AT_call_line" in attrs:
                    path = paths.get(attrs["DW_AT_call_file"].value, "") if "DW_AT_call_file" in attrs else ""
                    origin = _origin_name(die, names)
                    line = attrs["DW_AT_call_line"].value
                    for start, end in die_ranges(dwarf, die, cu_base):
                        out.append(InlinedCall(start, end, path, line, depth, origin))
                if not nested:
                    continue
                depth += 1
            stack.extend((child, depth) for child in reversed(list(die.iter_children())))
    return out


def _origin_name(die, names: dict[int, str]) -> str:
    """The name of the function an inlined-call entry is a copy of: its linkage name where DWARF
    keeps one (full debug info), else its name ("" where it has neither or cannot be read)."""
    try:
        origin = die.get_DIE_from_attribute("DW_AT_abstract_origin")
    except Exception:  # no origin, or a reference pyelftools cannot follow: unnamed
        return ""
    if origin.offset not in names:
        attrs = origin.attributes
        for key in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name", "DW_AT_name"):
            if key in attrs:
                value = attrs[key].value
                names[origin.offset] = value.decode(errors="replace") if isinstance(value, bytes) else value
                break
        else:
            names[origin.offset] = ""
    return names[origin.offset]


def program_rows(program, paths: dict[int, str]) -> list[Row]:
    rows = []
    previous = None
    for entry in program.get_entries():
        state = entry.state
        if state is None:
            continue
        if previous is not None and state.address > previous.address:
            rows.append(Row(previous.address, state.address, paths.get(previous.file, ""), previous.line))
        previous = None if state.end_sequence else state
    return rows


def bare_line_programs(dwarf) -> Iterator:
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


def file_paths(program, comp_dir: str) -> dict[int, str]:
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


def die_ranges(dwarf, die, cu_base: int) -> list[tuple[int, int]]:
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


def same_file(path: str, filename: str) -> bool:
    if path == filename:
        return True
    if not path:
        return False
    if not os.path.isabs(path) and not os.path.dirname(path):  # directives only: a bare name
        return path == os.path.basename(filename)
    return os.path.normpath(os.path.abspath(path)) == os.path.normpath(os.path.abspath(filename))


def function_lines(rows, inlines, start, end, filename, first, last, is_gufunc, first_call=None):
    """[(start, end, line)] covering the function's rows, or [] if none is ours (``inlines``:
    the outermost inlined calls).

    A row with no line of ours takes the line before it, except in a row that runs into a row
    of ours: there its calls, from the first (``first_call(start, end)``: the call's address,
    or None), and the code after them (the results read back) take the line that follows, the
    one the calls return to with their results. LLVM drops the line of calls it copies (a libm
    call in an unrolled loop) or combines (``np.sin`` and ``np.cos`` of one value made one
    ``sincos``): their samples went to the loop header or the next statement, 59% where the
    call's line had 97%. From the last call only, the others went to the line before: on an
    AMD Zen 2, ``sincos`` then ``exp`` of ``np.exp(np.sin(x)) * np.cos(x)`` followed the loop's
    ``inc``, and the header read 45% of the samples where the line had 90%."""
    ours = {}

    def in_range(path: str, line: int) -> bool:
        if not first <= line <= last:
            return False
        if path not in ours:
            ours[path] = same_file(path, filename) or (is_gufunc and os.path.basename(path) == "<string>")
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
    return placed_ranges(local, lines, end, first_call)


def placed_ranges(
    rows: list, lines: list[int | None], end: int, first_call: Callable[[int, int], int | None] | None = None
) -> list[tuple[int, int, int]]:
    """[(start, end, line)] covering ``rows`` (code of one function, in address order; ``end``:
    where its code ends), each on its line in ``lines``, or, where that is None, the line
    before it (the next one before the first placed row), except in a row that runs into a
    placed row: there its calls from the first (``first_call(start, end)``) and the code after
    them take the line that follows (see ``function_lines``). [] if no row is placed."""
    known = [line for line in lines if line is not None]
    if not known:
        return []

    current = known[0]  # rows before the first placed one take the next line
    out: list[tuple[int, int, int]] = []
    for index, (row, line) in enumerate(zip(rows, lines, strict=True)):
        if line is not None:
            current = line
        stop = min(row.end, end)
        after = lines[index + 1] if index + 1 < len(lines) else None
        followed = line is None and after is not None and rows[index + 1].start == stop
        call = first_call(row.start, stop) if followed and first_call is not None else None
        if line is not None:
            extend_ranges(out, row.start, stop, line)
        elif call is not None:
            if call > row.start:
                extend_ranges(out, row.start, call, current)
            extend_ranges(out, call, stop, after)
        else:
            extend_ranges(out, row.start, stop, current)
    return out


def extend_ranges(ranges: list[tuple[int, int, int]], start: int, stop: int, line: int) -> None:
    """Add ``[start, stop)`` on ``line`` to ``ranges``, joined to the last range where it
    continues it on the same line."""
    if ranges and ranges[-1][1] == start and ranges[-1][2] == line:
        ranges[-1] = (ranges[-1][0], stop, line)
    else:
        ranges.append((start, stop, line))
