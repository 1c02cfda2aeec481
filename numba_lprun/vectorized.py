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


def vectorized_lines(dispatcher: CPUDispatcher, memo: dict | None = None) -> set[int]:
    """Source lines of vectorized loops over every compiled signature of ``dispatcher``.

    Includes the code of ``prange`` bodies, which Numba compiles into libraries
    linked into the function's own. ``memo`` (signature -> (library, its lines)) keeps what
    was read for a twin that later profiles reuse: the IR's text of a large function takes
    milliseconds to print and read, at every profile.
    """
    lines: set[int] = set()
    for sig, cres in list(dispatcher.overloads.items()):
        library = cres.library
        known = memo.get(sig) if memo is not None else None
        if known is None or known[0] is not library:  # compiled again since: read again
            known = (library, frozenset(vectorized_lines_in_ir(optimized_ir(library))))
            if memo is not None:
                memo[sig] = known
        lines |= known[1]
    return lines
