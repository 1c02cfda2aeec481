"""The unwind rules of the profiled code and the libraries it calls, as tables for the handler's own walk.

Unwind rules: DWARF call-frame information (``.eh_frame``) as the few rules the handler's
own walk follows, read from this process's memory, where the JIT loader or the dynamic linker put the
section (already relocated), once per module. A rule says, from one address on,
where the frame's CFA (the caller's stack pointer) is, ``rsp`` or ``rbp`` plus an
offset, and where ``rbp`` was saved (the only callee-saved register a caller's CFA
is computed from on x86-64); the return address is always at CFA - 8. A function
whose rules use anything else (a DWARF expression for the CFA, rbp kept in another
register) is left out: libgcc walks it.

A row is ``(start, how, cfa offset, rbp offset)``: ``how`` is ``GAP`` past the end of a
function (not ours), ``FROM_RSP`` or ``FROM_RBP``, or ``END`` (the thread's first frame:
its return address is undefined); an rbp offset of 0 means ``rbp`` is the caller's.

Why tables: libgcc's unwinder (GCC 12 and older) finds the unwind entry of each frame by
searching the modules JIT-registered with it one after another, and the twins,
compiled last, sit at the end of its list: after 1,200 compiles in a process one
frame of a twin cost 11 us to find, and a sample's walk 23-36 us, where the signal
itself costs a few. Most samples of a profile interrupt the profiled code or what
it calls, so the handler steps through those frames itself, with the rules
of the very ``.eh_frame`` libgcc would read: the twins' modules
(found once through ``_Unwind_Find_FDE``), per sampler, and the shared libraries
jitted code calls (``LIBRARIES``), once per process and kept on disk.

A table is one int64 array: ``[rows, stops, (stop lo, stop hi) * stops, rows * ROW]``,
sorted by start (rows as above); the stops are the code ranges that call in from
Python, where a walk that got there is complete.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import io
import os
import struct
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..instrument import disk_cache
from ..instrument.parfor_code import code_libraries
from ..internals import defined_function
from ._native import _DwarfEhBases, _find_fde
from .object_code import read_once

# -- unwind rules ------------------------------------------------------------------------

GAP, FROM_RSP, FROM_RBP, END = 0, 1, 2, 3
ROW = 4
_RSP, _RBP, _RA = 7, 6, 16  # DWARF register numbers on x86-64
_MAX_RECORDS = 100_000  # an .eh_frame longer than this is not walked further
_MAX_RECORD = 1 << 16  # bytes: a CIE or FDE claiming more is not read (its length is not believed)


_FORMATS = {ctypes.c_uint8: "<B", ctypes.c_uint16: "<H", ctypes.c_uint32: "<I", ctypes.c_uint64: "<Q",
            ctypes.c_int16: "<h", ctypes.c_int32: "<i", ctypes.c_int64: "<q"}  # fmt: skip
_STRUCTS = {ctype: struct.Struct(fmt) for ctype, fmt in _FORMATS.items()}


class _Reader:
    """Little-endian reads of this process's memory at absolute addresses, from a copy of the
    bytes from ``at`` to ``end`` (one record, or a program) made once: a ctypes read per byte
    took most of the 90 ms libc's rules cost. A read past ``end`` raises ``IndexError``."""

    def __init__(self, at: int, end: int):
        if end - at > _MAX_RECORD:
            raise ValueError("a record longer than any function's rules")
        self.at, self._base = at, at
        self._data = ctypes.string_at(at, max(0, end - at))

    def byte(self) -> int:
        value = self._data[self.at - self._base]
        self.at += 1
        return value

    def u(self, ctype) -> int:
        form = _STRUCTS[ctype]
        offset = self.at - self._base
        if offset + form.size > len(self._data):
            raise IndexError("read past the record")
        self.at += form.size
        return form.unpack_from(self._data, offset)[0]

    def _leb128(self, signed: bool) -> int:
        result = shift = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return result - (1 << shift) if signed and byte & 0x40 else result

    def uleb(self) -> int:
        return self._leb128(False)

    def sleb(self) -> int:
        return self._leb128(True)

    def cstring(self) -> bytes:
        out = bytearray()
        while (byte := self.byte()) != 0:
            out.append(byte)
        return bytes(out)

    def encoded(self, encoding: int) -> int:
        """A pointer in ``DW_EH_PE`` ``encoding`` (pc-relative or absolute; no indirection)."""
        field_at = self.at
        kinds = {0x0: ctypes.c_uint64, 0x3: ctypes.c_uint32, 0x4: ctypes.c_uint64, 0xB: ctypes.c_int32,
                 0xC: ctypes.c_int64, 0x2: ctypes.c_uint16, 0xA: ctypes.c_int16}  # fmt: skip
        value = self.u(kinds[encoding & 0x0F])
        if encoding & 0x70 == 0x10:
            value += field_at
        elif encoding & 0x70 != 0:
            raise ValueError(f"pointer encoding {encoding:#x}")
        return value & 0xFFFFFFFFFFFFFFFF


class _Cie:
    def __init__(self, reader: _Reader, end: int):
        version = reader.u(ctypes.c_uint8)
        augmentation = reader.cstring()
        if version >= 4:
            reader.u(ctypes.c_uint16)  # address and segment sizes
        self.code_align, self.data_align = reader.uleb(), reader.sleb()
        ra = reader.u(ctypes.c_uint8) if version == 1 else reader.uleb()
        if ra != _RA:
            raise ValueError("return address register")
        self.encoding, self.has_data = 0, augmentation.startswith(b"z")
        if self.has_data:
            data_end = reader.uleb() + reader.at
            for letter in augmentation[1:]:
                if letter == ord("R"):
                    self.encoding = reader.u(ctypes.c_uint8)
                elif letter == ord("P"):
                    reader.encoded(reader.u(ctypes.c_uint8) & 0x7F)
                elif letter == ord("L"):
                    reader.u(ctypes.c_uint8)
            reader.at = data_end
        self.program = (reader.at, end)
        self._start: tuple[dict, list] | Exception | None = None

    def start(self) -> tuple[dict, list]:
        """The rules its initial instructions set, and the rows they emit from address 0: run
        once per CIE, not once per function (libc's 2,900 functions share a few CIEs)."""
        if self._start is None:
            state: dict = {}
            rows: list = []
            try:
                _run(self.program, self, 0, state, rows, None)
                self._start = (state, rows)
            except (ValueError, KeyError, IndexError) as exc:
                self._start = exc
        if isinstance(self._start, Exception):
            raise self._start
        return self._start


def _run(program: tuple[int, int], cie: _Cie, start: int, state: dict, rows: list, initial: dict | None):
    """Run one CFA program from ``start``, appending a rule at each address it advances to.
    Only the CFA, ``rbp`` and the return address are followed (``_Rule``)."""
    reader, end = _Reader(*program), program[1]
    rule = _Rule(reader, cie, state, initial)
    at, stack = start, []

    def emit() -> None:
        how = END if state.get(_RA) == "undefined" else state["how"]
        row = (at, how, state["offset"], state.get(_RBP, 0))
        if rows and rows[-1][0] == at:
            rows[-1] = row
        else:
            rows.append(row)

    while reader.at < end:
        op = reader.byte()
        if op & 0xC0 == 0x40 or op in (0x02, 0x03, 0x04):  # advance_loc, advance_loc1/2/4
            emit()
            sizes = {2: ctypes.c_uint8, 3: ctypes.c_uint16, 4: ctypes.c_uint32}
            at += (op & 0x3F if op & 0xC0 else reader.u(sizes[op])) * cie.code_align
        elif op == 0x0A:  # remember_state
            stack.append(dict(state))
        elif op == 0x0B:  # restore_state
            state.clear()
            state.update(stack.pop())
        else:
            rule.apply(op)
    emit()


class _Rule:
    """The CFA instructions other than advances and the state stack, applied to ``state``."""

    def __init__(self, reader: _Reader, cie: _Cie, state: dict, initial: dict | None):
        self.reader, self.cie, self.state, self.initial = reader, cie, state, initial

    def saved_at(self, register: int, offset: int) -> None:
        if register == _RBP:
            self.state[_RBP] = offset
        elif register == _RA and offset != -8:
            raise ValueError("return address not at CFA - 8")

    def unknown(self, register: int, what: str = "undefined") -> None:
        if register == _RA and what == "undefined":
            self.state[_RA] = what  # the thread's first frame: the stack ends here
        elif register in (_RBP, _RA):
            raise ValueError(f"rbp or the return address {what}")

    def cfa(self, register: int | None, offset: int | None) -> None:
        if register is not None:
            if register not in (_RSP, _RBP):
                raise ValueError("CFA register")
            self.state["how"] = FROM_RSP if register == _RSP else FROM_RBP
        if offset is not None:
            self.state["offset"] = offset

    def apply(self, op: int) -> None:
        r, data_align = self.reader, self.cie.data_align
        if op & 0xC0 == 0x80:  # offset
            self.saved_at(op & 0x3F, r.uleb() * data_align)
        elif op & 0xC0 == 0xC0 or op == 0x06:  # restore, restore_extended: the CIE's rule
            _restore(self.state, op & 0x3F if op & 0xC0 else r.uleb(), self.initial)
        elif op in (0x05, 0x11):  # offset_extended, offset_extended_sf
            register = r.uleb()
            self.saved_at(register, (r.uleb() if op == 0x05 else r.sleb()) * data_align)
        elif op in (0x07, 0x08):  # undefined, same_value
            register = r.uleb()
            self.unknown(register, "undefined" if op == 0x07 else "same")
            if op == 0x08:
                self.state.pop(register, None)
        elif op == 0x09:  # register: saved in another register
            self.unknown(r.uleb(), "in a register")
            r.uleb()
        elif op in (0x0C, 0x12):  # def_cfa, def_cfa_sf
            register = r.uleb()
            self.cfa(register, r.uleb() if op == 0x0C else r.sleb() * data_align)
        elif op == 0x0D:  # def_cfa_register
            self.cfa(r.uleb(), None)
        elif op in (0x0E, 0x13):  # def_cfa_offset, def_cfa_offset_sf
            self.cfa(None, r.uleb() if op == 0x0E else r.sleb() * data_align)
        elif op in (0x10, 0x16):  # expression, val_expression: fine for other registers
            self.unknown(r.uleb(), "computed")
            r.at += r.uleb()
        elif op in (0x14, 0x15):  # val_offset(_sf)
            self.unknown(r.uleb(), "computed")
            r.uleb() if op == 0x14 else r.sleb()
        elif op == 0x2E:  # GNU_args_size
            r.uleb()
        elif op != 0x00:  # def_cfa_expression and the rest: libgcc walks such frames
            raise ValueError(f"CFA op {op:#x}")


def _restore(state: dict, register: int, initial: dict | None) -> None:
    if initial is not None and register in initial:
        state[register] = initial[register]
    else:
        state.pop(register, None)


def _function_rows(fde_at: int, end: int, cies: dict[int, _Cie], rows: list) -> None:
    """The rules of the function one FDE (``fde_at`` to ``end``) covers (a GAP row at its end)."""
    reader = _Reader(fde_at + 4, end)
    cie_at = reader.at - reader.u(ctypes.c_uint32)
    cie = cies.get(cie_at)
    if cie is None:
        cie_end = cie_at + 4 + ctypes.c_uint32.from_address(cie_at).value
        cie = cies[cie_at] = _Cie(_Reader(cie_at + 8, cie_end), cie_end)  # past its length and id (0)
    start = reader.encoded(cie.encoding)
    size = reader.encoded(cie.encoding & 0x0F)
    if cie.has_data:
        reader.at += reader.uleb()
    initial, first = cie.start()
    state = dict(initial)
    mine = [(start + at, *rule) for at, *rule in first]
    _run((reader.at, end), cie, start, state, mine, initial)  # restores read the initial rules only
    if size > 0 and mine[0][1] in (FROM_RSP, FROM_RBP, END):
        rows.extend(r for r in mine if r[0] < start + size)
        rows.append((start + size, GAP, 0, 0))


def section_rows(at: int) -> list[tuple[int, int, int, int]]:
    """The rules of every function whose FDE follows ``at`` (a record of an ``.eh_frame``)
    up to the section's terminator (the linker's, or the one the JIT loader adds)."""
    rows: list = []
    cies: dict[int, _Cie] = {}
    for _ in range(_MAX_RECORDS):
        length = ctypes.c_uint32.from_address(at).value
        if length in (0, 0xFFFFFFFF):  # the terminator, or 64-bit DWARF (not written here)
            break
        if ctypes.c_uint32.from_address(at + 4).value != 0:  # an FDE (a CIE's id is 0)
            try:
                _function_rows(at, at + 4 + length, cies, rows)
            except (ValueError, KeyError, IndexError):
                pass  # a function with rules the handler does not follow: libgcc walks it
        at += 4 + length
    return rows


# -- unwind tables -----------------------------------------------------------------------

_PT_GNU_EH_FRAME = 0x6474E550
#: The shared libraries whose code jitted code calls, walked by the handler too: libm and libc
#: (math, memory), Numba's runtime and helpers, the threading layers (Numba's and OpenMP's, TBB).
LIBRARIES = ("/libm.so", "/libmvec.so", "/libc.so", "/numba/", "libgomp", "libtbb", "libiomp")
#: What keys the rules kept on disk besides each file's identity: the reading code itself.
_PARSER_VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


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
    """The handler's table (the own walk's layout, no stops) of the loaded shared libraries whose
    path holds one of ``parts``: made once per set of loaded libraries, and never freed."""
    return _library_table(tuple(_loaded(parts)))


def _table(rows: np.ndarray, stops: list[tuple[int, int]]) -> np.ndarray:
    """The own walk's layout: one rule per address (a function starting where one ends wins)."""
    rows = rows[np.lexsort((rows[:, 1] != GAP, rows[:, 0]))]
    rows = rows[np.r_[rows[1:, 0] != rows[:-1, 0], True]] if len(rows) else rows
    head = [len(rows), len(stops)] + [bound for stop in stops for bound in stop]
    return np.concatenate([np.array(head, np.int64), rows.ravel()])


def own_table(dispatchers: Iterable[object], stops: list[tuple[int, int]]) -> np.ndarray | None:
    """The handler's table (the own walk's layout) for the code of ``dispatchers``' compiled
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
    ``PyObject_Call`` is: the executable or libpython) and Numba's dispatcher. Both stay mapped
    once loaded, so they are read once per process after Numba's dispatcher is imported (each
    sampler's start read ``/proc/self/maps`` for them: 2 ms where Numba has compiled much)."""
    if "numba._dispatcher" in sys.modules:
        return list(_python_calls_in_once())
    return _python_calls_in()


@functools.cache
def _python_calls_in_once() -> tuple[tuple[int, int], ...]:
    return tuple(_python_calls_in())


def _python_calls_in() -> list[tuple[int, int]]:
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
