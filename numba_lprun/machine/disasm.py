"""Disassemble a profiled function's plain twin, line by line, with samples per instruction.

Why from memory: the bytes the JIT loaded are the code that ran (relocations
applied, call targets final), so an address a sample holds is an address here. The
line map (``sampling.line_map``) already splits the twin's code into ranges, each
with its source line, at instruction boundaries; each function's ranges are
decoded in address order (capstone, x86-64) so a register loaded with a callee's
address (``movabs rax, ADDR``; ``call rax``: how Numba's large code model calls out)
can be followed to the ``call`` that uses it.

What "packed" means: arithmetic that works on several lanes of an ``xmm``/``ymm``/
``zmm`` register at once (``vmulpd``, ``vfmadd231pd``, ``vpaddq``...), the mark of a
loop LLVM vectorized. Moves and logic (``vmovupd``, ``vxorpd``) are not counted:
they also copy memory and zero registers in scalar code.
"""

from __future__ import annotations

import bisect
import ctypes
import re

from ..sampling.dwarf import LineMap
from .values import Instruction, LineCode

_PACKED = re.compile(
    r"^v?(?:(?:add|sub|mul|div|min|max|sqrt|hadd|rcp|rsqrt|round)p[sd]"
    r"|f(?:n?m(?:add|sub)|maddsub|msubadd)\d{3}p[sd]"
    r"|p(?:add|sub|mull|mulh|mulu|max|min|madd|abs|cmp\w+)[bwdq]?\w*)$"
)
_VECTOR_REG = re.compile(r"\b[xyz]mm\d+\b")


def is_packed(mnemonic: str, operands: str) -> bool:
    """Whether an instruction is packed (SIMD) arithmetic on vector registers."""
    return bool(_PACKED.match(mnemonic)) and bool(_VECTOR_REG.search(operands))


def _disassembler():
    import capstone

    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    return md


def read_code(
    lmap: LineMap, names: dict[int, tuple[str, str]], sample_addresses: dict[int, int]
) -> dict[int, LineCode]:
    """The code of every line in ``lmap``, with call targets named and samples counted.

    ``names`` maps runtime addresses to function names and origins (``names.call_names``);
    ``sample_addresses`` counts samples by the address they were charged at.
    """
    import capstone
    from capstone import x86

    md = _disassembler()
    rows: list[tuple[int, dict]] = []  # (line, instruction fields), in address order
    ranges = sorted(zip(lmap.starts.tolist(), lmap.ends.tolist(), lmap.lines.tolist(), strict=True))
    loaded: dict[int, int] = {}  # register -> immediate last loaded into it (address order)
    previous_end = None
    for start, end, line in ranges:
        if start != previous_end:
            loaded = {}  # a new function or a gap: what registers held is unknown
        previous_end = end
        code = ctypes.string_at(start, end - start)
        for ins in md.disasm(code, start):
            item = {
                "address": ins.address,
                "size": ins.size,
                "text": f"{ins.mnemonic} {ins.op_str}".strip(),
                "packed": is_packed(ins.mnemonic, ins.op_str),
            }
            ops = ins.operands
            if ins.group(capstone.CS_GRP_CALL) or ins.group(capstone.CS_GRP_JUMP):
                target = None
                if ops and ops[0].type == x86.X86_OP_IMM:
                    target = ops[0].imm
                elif ops and ops[0].type == x86.X86_OP_REG:
                    target = loaded.get(ops[0].reg)
                elif ops and ops[0].type == x86.X86_OP_MEM and ops[0].mem.base == x86.X86_REG_RIP:
                    slot = ins.address + ins.size + ops[0].mem.disp
                    target = ctypes.c_uint64.from_address(slot).value if slot else None
                if target is not None and target in names:
                    item["target"], item["origin"] = names[target]
            try:
                _, written = ins.regs_access()
            except capstone.CsError:
                written = ()
            for reg in written:
                loaded.pop(_full(reg), None)
            if ins.mnemonic in ("mov", "movabs") and len(ops) == 2 and ops[1].type == x86.X86_OP_IMM:
                if ops[0].type == x86.X86_OP_REG:
                    loaded[_full(ops[0].reg)] = ops[1].imm & 0xFFFFFFFFFFFFFFFF
            rows.append((line, item))
    _count_samples([item for _, item in rows], sample_addresses)
    by_line: dict[int, list[Instruction]] = {}
    for line, item in rows:
        by_line.setdefault(line, []).append(Instruction(**item))
    return {line: LineCode(line, tuple(items)) for line, items in by_line.items()}


def _count_samples(items: list[dict], sample_addresses: dict[int, int]) -> None:
    """Add each charged address's samples to the instruction that holds it."""
    starts = [item["address"] for item in items]
    for address, count in sample_addresses.items():
        index = bisect.bisect_right(starts, address) - 1
        if index >= 0 and address < starts[index] + items[index]["size"]:
            items[index]["samples"] = items[index].get("samples", 0) + count


def _full(reg: int) -> int:
    """The 64-bit register a 32-bit move writes (``mov eax, imm`` zero-extends into ``rax``)."""
    from capstone import x86

    pairs = {
        x86.X86_REG_EAX: x86.X86_REG_RAX,
        x86.X86_REG_ECX: x86.X86_REG_RCX,
        x86.X86_REG_EDX: x86.X86_REG_RDX,
        x86.X86_REG_EBX: x86.X86_REG_RBX,
        x86.X86_REG_ESI: x86.X86_REG_RSI,
        x86.X86_REG_EDI: x86.X86_REG_RDI,
    }
    for n in range(8, 16):
        pairs[getattr(x86, f"X86_REG_R{n}D")] = getattr(x86, f"X86_REG_R{n}")
    return pairs.get(reg, reg)
