"""The machine-code view as plain text lines: hints under the table, listings of hot lines.

Shared by the text and rich renderers (the HTML report builds its own ``<details>``
from the same figures), so both say the same thing. A line with hundreds of
instructions (inlined NumPy code) is cut to the ones that matter: those with
samples, calls and packed arithmetic, in address order, and the rest counted.
"""

from __future__ import annotations

from ..stats import FunctionStats, Instruction, LineCode

MAX_INSTRUCTIONS = 40  # per listed line; more are cut to the telling ones


def hint_lines(stats: FunctionStats) -> list[str]:
    """The hints as sentences (``hint: ...``), hottest line first."""
    return [f"hint: {h.text}" for h in stats.machine.hints]


def shown_instructions(code: LineCode, limit: int = MAX_INSTRUCTIONS) -> tuple[list[Instruction], int]:
    """The instructions to list, and how many were left out."""
    items = list(code.instructions)
    if len(items) <= limit:
        return items, 0
    telling = [i for i in items if i.samples or i.target or i.packed]
    if len(telling) > limit:
        keep = {id(i) for i in sorted(telling, key=lambda i: -i.samples)[:limit]}
        telling = [i for i in telling if id(i) in keep]
    return telling, len(items) - len(telling)


def instruction_text(ins: Instruction) -> str:
    """``vmulpd ymm0, ...`` with ``-> name (origin)`` for a call whose target is known."""
    text = ins.text
    if ins.target:
        text += f"   -> {ins.target}" + (f" ({ins.origin})" if ins.origin else "")
    return text


def listing_lines(stats: FunctionStats, count: int) -> list[str]:
    """The instructions of the ``count`` hottest lines, with samples per instruction."""
    if count <= 0:
        return []
    if stats.machine.unavailable:
        return [f"machine code: unavailable: {stats.machine.unavailable}"]
    by_line = stats.machine.lines
    hot = list(stats.diagnosis.hot_lines[:count])
    lines = hot or sorted(by_line, key=lambda n: -by_line[n].samples)[:count]
    out = [f"machine code of the {stats.machine.twin} twin, by line:"] if stats.machine.twin else []
    total = sum(c.samples for c in by_line.values())
    for lineno in lines:
        code = by_line.get(lineno)
        source = stats.line_text(lineno).strip()
        if code is None or not code.instructions:
            out.append(f"line {lineno}: no machine code of its own   {source}")
            continue
        share = f", {code.samples} of the {total} samples in this code" if total else ""
        items, left = shown_instructions(code)
        out.append(f"line {lineno} ({len(code.instructions)} instructions{share}):   {source}")
        out.append(f"  {'samples':>7}  {'address':<14}  instruction")
        for ins in items:
            samples = str(ins.samples) if ins.samples else ""
            out.append(f"  {samples:>7}  {ins.address:#014x}  {instruction_text(ins)}")
        if left:
            out.append(f"  ... {left} more instruction(s) with fewer samples (or none), not shown")
    return out
