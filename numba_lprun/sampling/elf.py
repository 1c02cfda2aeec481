"""The relocatable ELF objects Numba keeps: debug sections relocated, code symbols, bases.

Why: Numba keeps each library's object code (``library._get_compiled_object()``),
a relocatable ELF whose debug sections are not relocated. pyelftools cannot apply
every relocation type in it (``.eh_frame`` has R_X86_64_PC64), so the two the debug
sections use (R_X86_64_64 and R_X86_64_32) are applied here, giving each code
section a distinct fake base (its index << 36) so addresses of different sections
never collide. A known symbol's runtime address (``get_pointer_to_function``) turns
a fake base into the real one (``dwarf`` reads the line tables).
"""

from __future__ import annotations

import io
import struct
import weakref
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

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
