"""Which loops LLVM vectorized, read from a twin's optimized LLVM IR.

Both twins carry line tables, so the branch that closes a loop names its source
line (``!dbg``), and the loop vectorizer tags the loops it vectorized with
``llvm.loop.isvectorized``. A line vectorized in the plain twin and not in the
counting or probed one is a loop whose counters or probes cost it its SIMD speed.

The twins also run other code than the program in one place: a jitted function a
function calls and LLVM did not inline. Numba links the callee's optimized module into
the caller's, where LLVM optimizes it a second time with the caller, but keeps that copy
``linkonce_odr``, and the JIT resolves the call to the first definition it saw: the
callee's own library, optimized once. The twins call their own copies
(``instrument.unwind``). The two builds mostly compile alike; where the copy's second
round vectorized what the callee's own build kept scalar (a ``@stencil``'s loop nest,
which Numba compiles apart with its default flags: the wraparound selects of its relative
indices stay in the first round, go in the second, and the loop then vectorizes; 2.5-3.3x
faster on the stencil benchmark), the profile describes faster code than the program's
(``callees_faster_in_copies``).
"""

from __future__ import annotations

import re

from .internals import CPUDispatcher, from_disk_cache, linked_libraries, optimized_ir

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


_DEFINE = re.compile(r"^define ([^@]*)@(\"[^\"]+\"|[-\w$.]+)\(", re.MULTILINE)
#: packed arithmetic: what a vectorized loop computes with
_SIMD_OP = re.compile(r"^\s+%\S+ = (?:fadd|fsub|fmul|fdiv|add|sub|mul)(?: \w+)* <\d+ x ", re.MULTILINE)
#: linkages of a definition that is not its library's own build of the function
_NOT_OWN = frozenset(
    {"linkonce_odr", "linkonce", "weak_odr", "weak", "internal", "private", "available_externally"}
)


def defined_functions(ir: str) -> dict[str, tuple[str, str]]:
    """Each function ``ir`` (an LLVM module's text) defines: its name -> (what precedes the name
    on its ``define`` line: linkage and attributes, its body)."""
    found = {}
    for match in _DEFINE.finditer(ir):
        end = ir.find("\n}", match.end())
        found[match.group(2).strip('"')] = (match.group(1), ir[match.end() : end if end >= 0 else len(ir)])
    return found


def _simd(body: str) -> bool:
    return _SIMD_OP.search(body) is not None


def callees_faster_in_copies(
    dispatcher: CPUDispatcher, memo: dict | None = None, copies: str = "linkonce_odr"
) -> frozenset[str]:
    """The callees (readable names) that ``dispatcher``'s code calls as their own library's
    build, not vectorized, while the copy optimized inside its code, which the twins run, is
    (see the module docstring). Code loaded from Numba's disk cache links no library in (its
    copies are what runs): none there. ``copies``: the linkage of the copies in ``dispatcher``'s
    code (a twin's are ``internal``: it runs them). ``memo``: as ``vectorized_lines``'."""
    names: set[str] = set()
    for sig, cres in list(dispatcher.overloads.items()):
        library = cres.library
        known = memo.get(sig) if memo is not None else None
        if known is None or known[0] is not library:
            try:
                known = (library, _faster_copies(library, copies))
            except Exception:  # a library of a shape not read here: no warning, never an error
                known = (library, frozenset())
            if memo is not None:
                memo[sig] = known
        names |= known[1]
    return frozenset(names)


def _faster_copies(library: object, linkage: str) -> frozenset[str]:
    if from_disk_cache(library) or not linked_libraries(library):  # nothing linked: no copies
        return frozenset()
    copies = {
        name: body
        for name, (head, body) in defined_functions(optimized_ir(library)).items()
        if linkage in head.split() and _simd(body)
    }
    faster: set[str] = set()
    seen: list[object] = []
    pending = linked_libraries(library)
    while copies and pending:
        linked = pending.pop()
        if any(linked is other for other in seen):
            continue
        seen.append(linked)
        pending.extend(linked_libraries(linked))
        for name, (head, body) in defined_functions(optimized_ir(linked)).items():
            if name in copies and _NOT_OWN.isdisjoint(head.split()) and not _simd(body):
                faster.add(readable_symbol(name))
                del copies[name]
    return frozenset(faster)


_PART = re.compile(r"(\d+)")


def readable_symbol(symbol: str) -> str:
    """A Numba function's mangled symbol as its dotted name (``_ZN5numba8stencils7stencil32
    __numba_stencil_0x7f..._0B2v3...E...`` -> "a @stencil's loop nest"); the symbol itself
    where it is not one."""
    if not symbol.startswith("_ZN"):
        return symbol
    parts, at = [], 3
    while at < len(symbol) and symbol[at].isdigit():
        digits = _PART.match(symbol, at).group(1)
        start = at + len(digits)
        parts.append(symbol[start : start + int(digits)])
        at = start + int(digits)
    if not parts:
        return symbol
    if parts[-1].startswith("__numba_stencil_"):
        return "a @stencil's loop nest"
    name = ".".join(parts)
    for escaped, plain in (("_3c", "<"), ("_3e", ">")):
        name = name.replace(escaped, plain)
    return name
