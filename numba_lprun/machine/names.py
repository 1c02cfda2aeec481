"""Names of the functions a profiled function's machine code calls.

Why from the object code: Numba keeps each library's relocatable ELF object, and its
code sections' relocations name every outside symbol the code refers to (Numba's
runtime ``NRT_*``, libm's ``sin``, helpers such as ``numba_do_raise``, other jitted
functions). Each name is then looked up where the JIT resolved it (the library's
engine, else the process's symbol table), which gives the address a ``call`` or a
``movabs`` in the running code holds. Functions defined in the library itself
(weak copies of ``NRT_incref``, the function's own wrappers) are named the same way.
"""

from __future__ import annotations

import io
import re

from ..internals import compiled_object, numba_helper_address, symbol_address
from ..sampling._native import dl_info

_NUMBA_NAME = re.compile(r"(\d+)")
_ESCAPES = re.compile(r"_(3c|3e|24)")  # Numba writes <, > and $ as _3c, _3e, _24 in symbol names


def pretty(name: str) -> str:
    """A readable name: Numba's mangled ``_ZN8__main__4convB2v1...`` becomes ``__main__.conv``."""
    if not name.startswith("_ZN"):
        return name
    parts, i = [], 3
    while i < len(name) and name[i].isdigit():
        match = _NUMBA_NAME.match(name, i)
        size = int(match.group(1))
        start = match.end()
        parts.append(name[start : start + size])
        i = start + size
        while i < len(name) and name[i] == "B":  # ABI tags (B2v1, B54...) follow the name
            tag = _NUMBA_NAME.match(name, i + 1)
            if tag is None:
                break
            i = tag.end() + int(tag.group(1))
    parts = [p for p in parts if p and not p.startswith("0")]
    text = ".".join(parts) if parts else name
    return _ESCAPES.sub(lambda m: chr(int(m.group(1), 16)), text)


def shared_object(address: int) -> str | None:
    """The file name of the shared library holding ``address`` (``libm.so.6``), or None."""
    found = dl_info(address)
    return None if found is None else found[0]


def origin(name: str, jitted: bool, address: int) -> str:
    """Where a called function comes from, in words.

    Numba links C math functions (``sin``, ``exp``...) to entries of its helper
    library that call the C library's, so those read as libm through that helper.
    """
    if name.startswith("NRT_"):
        return "Numba's runtime"
    if jitted:
        return "jitted code"
    if numba_helper_address(name) == address:
        return "Numba's helpers" if name.startswith("numba_") else "libm, through Numba's helpers"
    return shared_object(address) or "a native library"


def call_names(libraries: list[object]) -> dict[int, tuple[str, str]]:
    """Runtime address -> (readable name, origin) of every symbol the libraries' code refers
    to or defines."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection

    out: dict[int, str] = {}
    for library in libraries:
        obj = compiled_object(library)
        if obj is None:
            continue
        try:
            elf = ELFFile(io.BytesIO(obj))
            symtab = elf.get_section_by_name(".symtab")
            if symtab is None:
                continue
            wanted: set[str] = set()
            for sym in symtab.iter_symbols():
                if sym["st_info"]["type"] == "STT_FUNC" and sym.name:
                    wanted.add(sym.name)
            for section in elf.iter_sections():
                if not isinstance(section, RelocationSection):
                    continue
                if not elf.get_section(section["sh_info"])["sh_flags"] & 0x4:  # code sections only
                    continue
                for rel in section.iter_relocations():
                    name = symtab.get_symbol(rel["r_info_sym"]).name
                    if name:
                        wanted.add(name)
        except Exception:  # unreadable object code: fewer names, never a failed profile
            continue
        for name in wanted:
            address = 0
            try:
                address = library.get_pointer_to_function(name) or 0
            except Exception:  # not a JIT symbol
                address = 0
            jitted = bool(address)
            if not address:
                address = symbol_address(name)
            if address and address not in out:
                out[address] = (pretty(name), origin(name, jitted, address))
    return out
