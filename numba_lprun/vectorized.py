"""Which loops LLVM vectorized, read from a twin's optimized LLVM IR.

Both twins carry line tables, so the branch that closes a loop names its source
line (``!dbg``), and the loop vectorizer tags the loops it vectorized with
``llvm.loop.isvectorized``. A line vectorized in the plain twin and not in the
counting or probed one is a loop whose counters or probes cost it its SIMD speed.
"""

from __future__ import annotations

import re

from .internals import CPUDispatcher, optimized_ir

_NODE = re.compile(r"^!(\d+) = (?:distinct )?!(?:\{(.*)\}|DILocation\((.*)\))\s*$")
_LOOP_BRANCH = re.compile(r"^\s*br .*!dbg !(\d+), !llvm\.loop !(\d+)")
_REF = re.compile(r"!(\d+)")
_LINE = re.compile(r"\bline: (\d+)")


def vectorized_lines_in_ir(ir: str) -> set[int]:
    """Source lines of the loops that ``ir`` (optimized, with debug info) vectorized."""
    tuples: dict[str, str] = {}
    locations: dict[str, int] = {}
    branches: list[tuple[str, str]] = []
    for line in ir.splitlines():
        if line.startswith("!"):
            match = _NODE.match(line)
            if match is None:
                continue
            if match.group(2) is not None:
                tuples[match.group(1)] = match.group(2)
            else:
                found = _LINE.search(match.group(3))
                if found:
                    locations[match.group(1)] = int(found.group(1))
            continue
        match = _LOOP_BRANCH.match(line)
        if match:
            branches.append((match.group(1), match.group(2)))
    marked = {key for key, body in tuples.items() if '"llvm.loop.isvectorized"' in body}
    lines = set()
    for dbg, loop in branches:
        if any(ref in marked for ref in _REF.findall(tuples.get(loop, ""))) and dbg in locations:
            lines.add(locations[dbg])
    return lines


def vectorized_lines(dispatcher: CPUDispatcher) -> set[int]:
    """Source lines of vectorized loops over every compiled signature of ``dispatcher``.

    Includes the code of ``prange`` bodies, which Numba compiles into libraries
    linked into the function's own.
    """
    lines: set[int] = set()
    for cres in list(dispatcher.overloads.values()):
        lines |= vectorized_lines_in_ir(optimized_ir(cres.library))
    return lines
