"""A counting twin's select gets a compare of its own, so LLVM may still make it a branch.

Why: LLVM turns a short ``if``/``else`` into a select (SimplifyCFG), computing both arms, and
only at code generation turns a select back into a branch when one arm holds an expensive
instruction used nowhere else (a division, a remainder): CodeGenPrepare sinks that
instruction into the branch, so the plain code skips it when the condition says so. But it
does so only when the select's compare has no other use ("there is probably another cmov or
setcc around"). In a counting twin the arms' hit counts, kept in registers, become additions
of that compare (``zext i1 %c``, or of its negation): the compare has more uses, and the twin
ran the division on every iteration where the plain code branched around it. A kernel-density
estimate over a helper that returns early outside its support (``if abs(u) >= 1.0: return
0.0``, then a division) cost 1.4-2.2x hits only on this alone (Numba 0.68's LLVM 22, an AVX-512
CPU; LLVM 14 and 15 did not speculate the division there); a hand-written Numba loop that adds
the same counts reproduces it, and one that counts only the calls does not.

What it does: in a counting twin's optimized code, a compare whose only uses are selects and
counts (zero- or sign-extensions of it, or of its negation) gets a copy, right after it, that
the selects use instead. The copy computes the same value from the same operands, so nothing
the code computes changes; the selects are then what they were in the plain code, and LLVM's
code generation decides about them as it does there. Applied between LLVM's optimization and
code generation (``internals.rewrite_final_module``), where no pass merges the two compares
again before the decision (instruction selection merges them after it, where both stay
selects).

The same sharing, one step earlier: an arm's count of a bit test (``if k % 2 == 0``) is that
bit itself, and LLVM's optimizer makes ``zext (icmp ne (and k, 1), 0)`` the ``and`` alone, so the
select's compare and the count share the ``and``. Code generation then computes the bit into a
register for the count and tests that register for the select, a step more on the loop's
critical path than the plain code's single ``test $1, k`` (the Collatz step: 1.28x the plain
loop on a Zen 2 CPU, 1.13x with the bit computed apart). So a count's ``and`` of a value whose
bit test a select's compare makes is computed from an opaque copy of that value (an empty
inline ``asm`` that code generation cannot see through, so it cannot merge the two
``and`` instructions again): the compare keeps its ``and`` to itself and becomes the plain
code's ``test``. The count reads the same bit of the same value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: an LLVM value's name, and the pattern that finds each in a line (shared with ``congruent_counts``)
VALUE_NAME = r'%(?:"[^"]*"|[-\w$.]+)'
VALUE_TOKEN = re.compile(VALUE_NAME)
_DEF_RE = re.compile(rf"^(\s+)({VALUE_NAME}) = (.*)$")
_COMPARE_RE = re.compile(r"^[if]cmp ")
_COUNT_RE = re.compile(rf"^[sz]ext i1 ({VALUE_NAME}) to i\d+")
_NOT_RE = re.compile(rf"^xor i1 ({VALUE_NAME}), true")
_SELECT_RE = re.compile(rf"^select (?:[a-z]+ )*i1 ({VALUE_NAME}), ")
_BIT_RE = re.compile(rf"^and (i8|i16|i32|i64) ({VALUE_NAME}), (-?\d+)(.*)$")  # a register-sized value's
_ZERO_TEST_RE = re.compile(rf"^icmp (?:eq|ne) i\d+ ({VALUE_NAME}), 0\b")
_ADD_RE = re.compile(rf"^add (?:n[su]w )*i\d+ ({VALUE_NAME}), ({VALUE_NAME})")
#: the names of the allocas that counts live in until SROA makes them registers (``probes``):
#: SROA's values keep them as a prefix, which is how a count's add is told from the program's
REGISTER_COUNTS = ("nlp.fields", "nlp.state")
_COUNT_PREFIXES = tuple(f"%{name}" for name in REGISTER_COUNTS)


def own_select_compares(text: str) -> tuple[str, int]:
    """``text`` (an LLVM module) with a copy of each compare that selects share only with
    counts, used by those selects; and how many compares were copied."""
    if " = select " not in text:
        return text, 0
    return each_function_rewritten(
        text,
        lambda function: _function_with_own_compares(function) if _may_share(function) else (function, 0),
    )


def each_function_rewritten(
    text: str, rewrite: Callable[[list[str]], tuple[list[str], int]]
) -> tuple[str, int]:
    """``text`` (an LLVM module) with each function's lines (``define`` to ``}``) replaced by
    ``rewrite``'s (new lines, changes made); and the changes made in all."""
    lines = text.split("\n")
    out: list[str] = []
    changed = 0
    start = None
    for i, line in enumerate(lines):
        if line.startswith("define "):
            start = i
        elif line == "}" and start is not None:
            body, n = rewrite(lines[start : i + 1])
            out.extend(body)
            changed += n
            start = None
        elif start is None:
            out.append(line)
    return "\n".join(out), changed


def _may_share(function: list[str]) -> bool:
    """Whether a function has a select and a count (a zero- or sign-extended compare, or an add
    to a count): without both, nothing is copied (a cheap look before the scan)."""
    return any(" = select " in line for line in function) and any(
        "ext i1 " in line or line.lstrip().startswith(_COUNT_PREFIXES) for line in function
    )


def _function_with_own_compares(lines: list[str]) -> tuple[list[str], int]:
    """One function's lines (``define`` to ``}``), rewritten."""
    defs: dict[str, tuple[int, str]] = {}  # value name -> (line index, right-hand side)
    uses: dict[str, list[int]] = {}
    for i, line in enumerate(lines[1:-1], start=1):
        found = _DEF_RE.match(line)
        rhs = found.group(3) if found else line
        if found:
            defs[found.group(2)] = (i, rhs)
        for token in VALUE_TOKEN.findall(rhs):
            uses.setdefault(token, []).append(i)
    taken = set(defs) | set(uses)
    copies: dict[int, str] = {}  # line index of a compare -> its copy's line
    renamed: dict[int, tuple[str, str]] = {}  # line index of a select -> (compare, copy)
    for name, (at, rhs) in defs.items():
        if not _COMPARE_RE.match(rhs):
            continue
        selects = _selects_sharing_with_counts(name, uses.get(name, []), lines, uses)
        if not selects:
            continue
        copy = _fresh_name(taken, len(copies))
        taken.add(copy)
        indent = _DEF_RE.match(lines[at]).group(1)
        copies[at] = f"{indent}{copy} = {rhs}"
        for s in selects:
            renamed[s] = (name, copy)
    inserted: dict[int, list[str]] = {at: [line] for at, line in copies.items()}
    rewritten: dict[int, str] = {}
    for i, (name, copy) in renamed.items():
        head, rhs = lines[i].split(" = ", 1)
        rewritten[i] = f"{head} = {rhs.replace(f'i1 {name}, ', f'i1 {copy}, ', 1)}"
    bits = _own_bit_tests(lines, defs, uses, taken, inserted, rewritten)
    if not copies and not bits:
        return lines, 0
    out = []
    for i, line in enumerate(lines):
        out.append(rewritten.get(i, line))
        out.extend(inserted.get(i, ()))
    return out, len(copies) + bits


def _own_bit_tests(
    lines: list[str], defs: dict, uses: dict, taken: set[str], inserted: dict, rewritten: dict
) -> int:
    """Give the counts of each ``and`` that a select's zero test shares with them an ``and`` of
    their own, of an opaque copy of the same value (see the module docstring): its lines go to
    ``inserted`` (after the ``and``), the counts' rewritten lines to ``rewritten``; how many."""
    made = 0
    for name, (at, rhs) in defs.items():
        bit = _BIT_RE.match(rhs)
        if bit is None or at in inserted:
            continue
        counts = _counts_sharing_with_selects(name, uses.get(name, []), lines, uses)
        if not counts:
            continue
        ty, value, mask, tail = bit.groups()
        own = _fresh_name(taken, made, "%nlp.own.bit", ".of")
        opaque = f"{own}.of"
        taken.update((opaque, own))
        indent = _DEF_RE.match(lines[at]).group(1)
        inserted[at] = [
            f'{indent}{opaque} = call {ty} asm "", "=r,0"({ty} {value}){tail}',
            f"{indent}{own} = and {ty} {opaque}, {mask}{tail}",
        ]
        token = re.compile(re.escape(name) + r"(?![-\w$.])")
        for i in counts:
            head, rest = lines[i].split(" = ", 1)
            rewritten[i] = f"{head} = {token.sub(own, rest)}"
        made += 1
    return made


def _counts_sharing_with_selects(name: str, used_at: list[int], lines: list[str], uses: dict) -> list[int]:
    """The lines of the adds to counts that use ``name`` (an ``and``), when every other use of it
    is a zero test whose every use is a select's condition; else none."""
    counts, tests = [], 0
    for i in used_at:
        found = _DEF_RE.match(lines[i])
        rhs = found.group(3) if found else lines[i].strip()
        if _operand(rhs, _ZERO_TEST_RE) == name:
            test_uses = uses.get(found.group(2), [])
            if not test_uses or any(
                _operand(_rhs(lines[j]), _SELECT_RE) != found.group(2) for j in test_uses
            ):
                return []
            tests += 1
        elif found and found.group(2).startswith(_COUNT_PREFIXES) and _adds(rhs, name):
            counts.append(i)
        else:
            return []
    return sorted(set(counts)) if tests else []


def _selects_sharing_with_counts(name: str, used_at: list[int], lines: list[str], uses: dict) -> list[int]:
    """The lines of the selects that use compare ``name`` as their condition, when every
    other use of it is a count; else none."""
    selects, counts = [], 0
    for i in used_at:
        rhs = _rhs(lines[i])
        if used_at.count(i) == 1 and _operand(rhs, _SELECT_RE) == name:
            selects.append(i)
        elif _operand(rhs, _COUNT_RE) == name or _is_counted_negation(lines[i], name, lines, uses):
            counts += 1
        else:
            return []
    return selects if counts else []


def _is_counted_negation(line: str, name: str, lines: list[str], uses: dict) -> bool:
    """Whether ``line`` negates ``name`` and that negation is only ever extended to a count."""
    found = _DEF_RE.match(line)
    if not found or _operand(found.group(3), _NOT_RE) != name:
        return False
    negation = found.group(2)
    used_at = uses.get(negation, [])
    return bool(used_at) and all(_operand(_rhs(lines[i]), _COUNT_RE) == negation for i in used_at)


def _adds(rhs: str, name: str) -> bool:
    """Whether ``rhs`` is an add with ``name`` as an operand."""
    found = _ADD_RE.match(rhs)
    return found is not None and name in found.groups()


def _operand(rhs: str, pattern: re.Pattern) -> str | None:
    found = pattern.match(rhs)
    return found.group(1) if found else None


def _rhs(line: str) -> str:
    found = _DEF_RE.match(line)
    return found.group(3) if found else line.strip()


def _fresh_name(taken: set[str], n: int, stem: str = "%nlp.own.cmp", *suffixes: str) -> str:
    """``stem.n`` for the first ``n`` on from the one given where neither it nor it with any of
    ``suffixes`` is taken."""
    while any(f"{stem}.{n}{suffix}" in taken for suffix in ("", *suffixes)):
        n += 1
    return f"{stem}.{n}"
