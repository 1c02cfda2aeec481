"""The profiled code's unwind rules, read once, for the handler's own walk (``own_walk``).

Why: libgcc's unwinder (GCC 12 and older) finds the unwind entry of each frame by
searching the modules JIT-registered with it one after another, and the twins,
compiled last, sit at the end of its list: after 1,200 compiles in a process one
frame of a twin cost 11 us to find, and a sample's walk 23-36 us, where the signal
itself costs a few. Most samples of a profile interrupt the profiled code or what
it calls, so the handler steps through those frames itself, with the rules
(``cfa_rules``) of the very ``.eh_frame`` libgcc would read: the twins' modules
(found once through ``_Unwind_Find_FDE``), per sampler, and the shared libraries
jitted code calls (``LIBRARIES``), once per process and kept on disk.

A table is one int64 array: ``[rows, stops, (stop lo, stop hi) * stops, rows * ROW]``,
sorted by start (``cfa_rules``' rows); the stops are the code ranges that call in from
Python, where a walk that got there is complete.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import io
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..instrument import disk_cache
from ..instrument.parfor_code import code_libraries
from ..internals import defined_function
from .cfa_rules import GAP, ROW, _Reader, section_rows
from .elf import read_once
from .walks import _DwarfEhBases, _find_fde

_PT_GNU_EH_FRAME = 0x6474E550
#: The shared libraries whose code jitted code calls, walked by the handler too: libm and libc
#: (math, memory), Numba's runtime and helpers, the threading layers (Numba's and OpenMP's, TBB).
LIBRARIES = ("/libm.so", "/libmvec.so", "/libc.so", "/numba/", "libgomp", "libtbb", "libiomp")
#: What keys the rules kept on disk besides each file's identity: the reading code itself.
_PARSER_VERSION = hashlib.sha256(
    b"".join(Path(__file__).with_name(name).read_bytes() for name in ("cfa_rules.py", "unwind_rows.py"))
).hexdigest()[:16]


def module_rows(address: int) -> list[tuple[int, int, int, int]]:
    """The rules of every function in the JIT module whose code holds ``address``: its FDE is
    found through libgcc, and its ``.eh_frame`` read from that FDE's CIE on (LLVM writes the
    CIE first). [] when not found."""
    find = _find_fde()
    fde = find(ctypes.c_void_p(address), ctypes.byref(_DwarfEhBases())) if find is not None else None
    return section_rows(fde + 4 - ctypes.c_uint32.from_address(fde + 4).value) if fde else []


def _as_array(rows: list) -> np.ndarray:
    return np.array(rows, dtype=np.int64).reshape(-1, ROW)


def _library_rows(name: str, base: int, eh_frame_hdr: int) -> np.ndarray:
    """One shared library's rules (its ``.eh_frame``, found from its ``.eh_frame_hdr``), kept
    on disk by the file's identity, relative to its base: libc's take 70 ms to read."""
    try:
        stat = os.stat(name)
        key = f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0{_PARSER_VERSION}".encode()
    except OSError:
        key = None
    folder = disk_cache.subdir("unwind") if key is not None else None
    path = folder / (hashlib.sha256(key).hexdigest()[:24] + ".npy") if folder is not None else None
    if path is not None and path.exists():
        try:
            relative = np.load(path, allow_pickle=False)
            return relative + np.array([base, 0, 0, 0], np.int64)
        except (OSError, ValueError):
            pass
    reader = _Reader(eh_frame_hdr, eh_frame_hdr + 12)  # version, 3 encodings, the section's address
    version, frame_encoding = reader.u(ctypes.c_uint8), reader.u(ctypes.c_uint8)
    reader.at += 2
    rows = _as_array(section_rows(reader.encoded(frame_encoding)) if version == 1 else [])
    if path is not None:
        buffer = io.BytesIO()
        np.save(buffer, rows - np.array([base, 0, 0, 0], np.int64), allow_pickle=False)
        disk_cache.write_atomically(path, buffer.getvalue())
    return rows


class _PhdrInfo(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("name", ctypes.c_char_p), ("phdr", ctypes.c_void_p),
                ("phnum", ctypes.c_uint16)]  # fmt: skip


def _loaded(parts: tuple[str, ...]) -> list[tuple[str, int, int]]:
    """(path, base, ``.eh_frame_hdr`` address) of the loaded libraries whose path holds a part."""
    found: list[tuple[str, int, int]] = []

    def visit(info, size, data) -> int:
        item = info.contents
        name = (item.name or b"").decode(errors="replace")
        if any(part in name for part in parts):
            for k in range(item.phnum):
                at = item.phdr + 56 * k  # Elf64_Phdr: p_type, p_flags, p_offset, p_vaddr, ...
                if ctypes.c_uint32.from_address(at).value == _PT_GNU_EH_FRAME:
                    found.append((name, item.addr, item.addr + ctypes.c_uint64.from_address(at + 16).value))
        return 0

    callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_PhdrInfo), ctypes.c_size_t, ctypes.c_void_p)
    try:
        ctypes.CDLL(None).dl_iterate_phdr(callback(visit), None)
    except (OSError, AttributeError):
        return []
    return found


@functools.cache  # every table ever handed out stays alive: a handler may read it
def _library_table(loaded: tuple[tuple[str, int, int], ...]) -> np.ndarray:
    parts = [_library_rows(*item) for item in loaded]
    return _table(np.concatenate(parts) if parts else _as_array([]), [])


def library_table(parts: tuple[str, ...] = LIBRARIES) -> np.ndarray:
    """The handler's table (``own_walk``'s layout, no stops) of the loaded shared libraries whose
    path holds one of ``parts``: made once per set of loaded libraries, and never freed."""
    return _library_table(tuple(_loaded(parts)))


def _table(rows: np.ndarray, stops: list[tuple[int, int]]) -> np.ndarray:
    """``own_walk``'s layout: one rule per address (a function starting where one ends wins)."""
    rows = rows[np.lexsort((rows[:, 1] != GAP, rows[:, 0]))]
    rows = rows[np.r_[rows[1:, 0] != rows[:-1, 0], True]] if len(rows) else rows
    head = [len(rows), len(stops)] + [bound for stop in stops for bound in stop]
    return np.concatenate([np.array(head, np.int64), rows.ravel()])


def own_table(dispatchers: Iterable[object], stops: list[tuple[int, int]]) -> np.ndarray | None:
    """The handler's table (``own_walk``'s layout) for the code of ``dispatchers``' compiled
    overloads (each one's module: the twin, its wrappers, its copies of what it calls; the
    gufunc libraries its ``prange`` loops run), and the ``stops`` ranges: code that calls in
    from Python. None when no rule was found."""
    rows: list = []
    seen: set[int] = set()
    for dispatcher in dispatchers:
        for cres in list(getattr(dispatcher, "overloads", {}).values()):
            library, fndesc = getattr(cres, "library", None), getattr(cres, "fndesc", None)
            if library is None or fndesc is None:
                continue
            for lib, _ in code_libraries(library):
                address = _some_function(lib, fndesc.llvm_func_name if lib is library else None)
                if address and address not in seen:
                    seen.add(address)  # read once while the library lives (its code never changes)
                    rows += read_once(_rows_of, lib, b"", address)
    return _table(_as_array(rows), stops) if rows else None


def _rows_of(library: object, obj: bytes, address: int) -> list[tuple[int, int, int, int]]:
    return module_rows(address)


def _some_function(library: object, name: str | None) -> int:
    """The address of ``name`` in ``library``, or of any function it defines (None)."""
    try:
        name = name or defined_function(library)
        return int(library.get_pointer_to_function(name) or 0) if name else 0
    except Exception:  # a library that cannot be asked (freed, not finalized)
        return 0


def python_calls_in() -> list[tuple[int, int]]:
    """The code ranges that call jitted code from Python: the interpreter (wherever
    ``PyObject_Call`` is: the executable or libpython) and Numba's dispatcher."""
    interpreter = ctypes.cast(ctypes.pythonapi.PyObject_Call, ctypes.c_void_p).value or 0
    found = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if len(parts) < 6 or "x" not in parts[1]:
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                if lo <= interpreter < hi or "numba/_dispatcher" in parts[5]:
                    found.append((lo, hi))
    except OSError:
        pass
    return found
