"""What the machine-code reading produces: instructions grouped by source line.

Plain frozen values, defined here (the machine stage) rather than with the
profile, because the disassembler builds them; the profile holds them as they
are and renderers read them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Instruction:
    """One machine instruction of a twin, as the disassembler wrote it."""

    address: int  # where it runs
    size: int  # bytes
    text: str  # mnemonic and operands
    samples: int = 0  # samples charged here (the interrupted pc, or a call whose callee was running)
    target: str | None = None  # the called function's name, for a call or jump out of the function
    origin: str | None = None  # where that function comes from: libm.so.6, Numba's runtime, jitted code
    packed: bool = False  # packed (SIMD) arithmetic on several lanes at once


@dataclass(frozen=True)
class LineCode:
    """A twin's machine code for one source line, and its allocation count."""

    line: int
    instructions: tuple[Instruction, ...] = ()
    allocations: int | None = None  # arrays allocated from this line in a counted run (None: not counted)
    executions: int | None = None  # the line's hits in that same counted run

    @property
    def samples(self) -> int:
        return sum(i.samples for i in self.instructions)

    @property
    def calls(self) -> list[str]:
        """Names of what the line's code calls, each once, in address order."""
        return list(self.call_origins)

    @property
    def call_origins(self) -> dict[str, str]:
        """Name -> origin of what the line's code calls, in address order."""
        seen: dict[str, str] = {}
        for ins in self.instructions:
            if ins.target is not None:
                seen.setdefault(ins.target, ins.origin or "")
        return seen

    @property
    def packed(self) -> list[str]:
        """Mnemonics of the line's packed (SIMD) arithmetic, each once."""
        seen: dict[str, None] = {}
        for ins in self.instructions:
            if ins.packed:
                seen.setdefault(ins.text.split()[0])
        return list(seen)


@dataclass(frozen=True)
class Hint:
    """One fact read from a line's machine code, as a sentence (``kind``: alloc, simd,
    hot-call, refcount, call, no-code)."""

    line: int
    kind: str
    text: str
