"""A count that always equals a value the program computes anyway is read from that value.

Why: a ``while`` loop's iteration count is a register the counting twin adds 1 to on every
iteration, and programs often keep the same count themselves (``steps += 1`` in the loop
body, from 0, in a loop nest). LLVM does not see the two are equal: its induction-variable
analysis cannot describe a count across a nested loop whose trip count depends on the data,
and its value numbering (GVN) does not assume the two cycles of phis equal in order to prove
it. So the twin ran both adds, one more instruction on every iteration of the loop (the
Collatz steps: ``incq`` twice where the plain code has it once).

What it does: in a counting twin's optimized code, an optimistic congruence over the count's
values (Alpern, Wegman and Zadeck's partition refinement, restricted to what a count is made
of): each of the count's phis is first taken to equal each of the program's phis of the same
type in the same block, each of its arithmetic instructions each of the program's of the same
operation and type in its block computed before every use of it there; a pairing is dropped
while an operand (on the same incoming edge, for phis) differs and is not itself paired, until
nothing changes. What stays paired is equal on every path (each value equals its partner when
both are first defined, and every later definition computes the same operation of equal
operands), so the count's uses read the program's value instead and its own instructions go.
Only a count's values are replaced, and only those whose every use, and every use of what is
computed from them, is another such value or a write to the counter table (or to the spill a
flush passes out of line): a value the program reads (a loop's exit test LLVM made of a count, a
store to the user's array, a call) keeps its own instructions, and so does every count it is
computed from. Each replaced value is replaced by a value equal to it on every path, so the
counts are the same numbers; and were that congruence wrong, only counts would be, never what
the program computes. Applied between LLVM's optimization and code generation, with ``select_compares``
(``internals.rewrite_final_module``); the module is verified when parsed back, and kept as it
was should it not verify.
"""

from __future__ import annotations

import re

from .counter_slots import SYMBOL_PREFIX
from .select_compares import REGISTER_COUNTS, VALUE_NAME, VALUE_TOKEN, each_function_rewritten

_LABEL_RE = re.compile(r'^("[^"]*"|[-\w$.]+):')
_DEF_RE = re.compile(rf"^\s+({VALUE_NAME}) = (.*)$")
_PHI_RE = re.compile(r"^phi (?:[a-z]+ )*(\S+) (\[.*\])")
_INCOMING_RE = re.compile(rf"\[ ([^,\]]+), ({VALUE_NAME}) \]")
_ARITH_RE = re.compile(
    r"^(add|sub|mul|and|or|xor|shl|lshr|ashr)((?: (?:nuw|nsw|exact|disjoint))*) (i\d+) ([^,\s]+), ([^,\s]+)"
)
#: a store: the value stored, and the rest of the line from the pointer on
_STORE_RE = re.compile(rf"^\s+store (?:atomic )?(?:volatile )?\S+ ({VALUE_NAME}), (?:ptr|\S+\*) (.*)$")
#: an atomic add: the pointer (to the end of the line), and the value added
_ATOMIC_ADD_RE = re.compile(rf"^atomicrmw (?:volatile )?add (?:ptr|\S+\*) (.*), i\d+ ({VALUE_NAME})\b")
_ADDRESS_RE = re.compile(r"^(?:getelementptr|bitcast|addrspacecast) ")
_OPERAND_RE = re.compile(rf"{VALUE_NAME}|@[-\w$.]+")
#: where a flush writes: the counter table's symbol, or the stack array a flush out of line reads
_COUNTER_BASES = (f"@{SYMBOL_PREFIX}", "%nlp.spill")
_DEBUG_RE = re.compile(r"^\s+(?:#dbg_|(?:tail )?call void @llvm\.dbg\.)")
_UNDEFINED = {"undef", "poison"}
_COMMUTATIVE = {"add", "mul", "and", "or", "xor"}
_COUNT_PREFIXES = tuple(f"%{name}" for name in REGISTER_COUNTS)


def merge_congruent_counts(text: str) -> tuple[str, int]:
    """``text`` (an LLVM module) with each count value that equals a program value on every path
    replaced by that value; and how many were replaced."""
    if not any(prefix in text for prefix in _COUNT_PREFIXES):
        return text, 0
    return each_function_rewritten(text, _function_merged)


class _Value:
    """One definition: its line, block, and what it computes (a phi's incoming values by block,
    or an operation's key and operands)."""

    __slots__ = ("line", "block", "key", "operands")

    def __init__(self, line: int, block: str, key: tuple, operands: tuple | dict) -> None:
        self.line, self.block, self.key, self.operands = line, block, key, operands


def _parsed(lines: list[str]) -> tuple[dict[str, _Value], dict[str, list[int]], list[str]]:
    """The function's phis and integer arithmetic by name, every name's using lines, and each
    line's block."""
    values: dict[str, _Value] = {}
    uses: dict[str, list[int]] = {}
    block = "%entry"
    blocks = [block] * len(lines)
    for i, line in enumerate(lines[1:-1], start=1):
        label = _LABEL_RE.match(line)
        if label:
            block = "%" + label.group(1)
        blocks[i] = block
        if label:
            continue
        found = _DEF_RE.match(line)
        rhs = found.group(2) if found else line
        for token in VALUE_TOKEN.findall(rhs):
            uses.setdefault(token, []).append(i)
        if not found:
            continue
        phi = _PHI_RE.match(rhs)
        if phi:
            incoming = dict((blk, v) for v, blk in _INCOMING_RE.findall(phi.group(2)))
            if len(incoming) != phi.group(2).count("["):
                continue  # an incoming value not read (a constant expression): never paired
            values[found.group(1)] = _Value(i, block, ("phi", phi.group(1), frozenset(incoming)), incoming)
            continue
        arith = _ARITH_RE.match(rhs)
        if arith:
            op, _flags, ty, a, b = arith.groups()
            values[found.group(1)] = _Value(i, block, (op, ty), (a, b))
    return values, uses, blocks


def _counts(values: dict[str, _Value], uses: dict[str, list[int]], defined_at: dict[int, str]) -> set[str]:
    """The count's values: its phis (named after the count's allocas) and what is computed
    from them (``defined_at``: each value's name by the line defining it)."""
    counts = {name for name in values if name.startswith(_COUNT_PREFIXES)}
    todo = list(counts)
    while todo:
        for line in uses.get(todo.pop(), ()):
            user = defined_at.get(line)
            if user is not None and user not in counts:
                counts.add(user)
                todo.append(user)
    return counts


def _counter_addresses(lines: list[str]) -> set[str]:
    """The values that address the counter table or a flush's spill (offsets from them)."""
    addresses: set[str] = set()
    grew = True
    while grew:  # a block's text may come before the block that dominates it
        grew = False
        for line in lines:
            found = _DEF_RE.match(line)
            if not found or found.group(1) in addresses or not _ADDRESS_RE.match(found.group(2)):
                continue
            base = _OPERAND_RE.search(found.group(2))
            if base and (base.group(0).startswith(_COUNTER_BASES) or base.group(0) in addresses):
                addresses.add(found.group(1))
                grew = True
    return addresses


def _into_counters(pointer: str, addresses: set[str]) -> bool:
    """Whether a write's pointer (the line's text from it on) addresses the counters."""
    if pointer.startswith("%"):
        name = VALUE_TOKEN.match(pointer).group(0)
        return name.startswith(_COUNTER_BASES) or name in addresses
    return any(base in pointer for base in _COUNTER_BASES)  # a constant expression of the symbol


def _flushed_only(
    counts: set[str],
    values: dict[str, _Value],
    uses: dict[str, list[int]],
    defined_at: dict[int, str],
    lines: list[str],
) -> set[str]:
    """The count values whose every use is another such value or a write of it to the counters:
    what the program reads is none of them, nor computed from them."""
    addresses = _counter_addresses(lines)

    def flushed(name: str, line: str) -> bool:
        if _DEBUG_RE.match(line):
            return True
        store = _STORE_RE.match(line)
        if store:
            return (
                store.group(1) == name
                and name not in VALUE_TOKEN.findall(store.group(2))
                and _into_counters(store.group(2), addresses)
            )
        found = _DEF_RE.match(line)
        atomic = _ATOMIC_ADD_RE.match(found.group(2)) if found else None
        return bool(atomic) and atomic.group(2) == name and _into_counters(atomic.group(1), addresses)

    read = [
        name
        for name in counts
        if any(defined_at.get(i) not in counts and not flushed(name, lines[i]) for i in uses.get(name, ()))
    ]
    read_set = set(read)
    while read:  # what a read value is computed from is read too
        value = values[read.pop()]
        operands = value.operands.values() if isinstance(value.operands, dict) else value.operands
        for operand in operands:
            if operand in counts and operand not in read_set:
                read_set.add(operand)
                read.append(operand)
    return counts - read_set


def _congruent(
    values: dict[str, _Value], counts: set[str], uses: dict[str, list[int]], blocks: list[str]
) -> dict[str, str]:
    """Each count value that equals a program value on every path, with that value."""
    phis = {value.line for value in values.values() if value.key[0] == "phi"}
    program: dict[tuple, list[str]] = {}  # (what it computes, block) -> the program's values
    for name, value in values.items():
        if name not in counts:
            program.setdefault((value.key, value.block), []).append(name)
    partners: dict[str, set[str]] = {}
    for name in counts:
        value = values[name]
        partners[name] = {
            other
            for other in program.get((value.key, value.block), ())
            if value.key[0] == "phi" or _reads_after(uses.get(name, ()), values[other], blocks, phis)
        }

    def same(mine: str, theirs: str) -> bool:
        if mine in _UNDEFINED:
            return False  # two undefined values need not be equal
        return mine == theirs or theirs in partners.get(mine, ())

    def still(name: str, other: str) -> bool:
        mine, theirs = values[name].operands, values[other].operands
        if isinstance(mine, dict):
            return all(same(v, theirs[blk]) for blk, v in mine.items())
        if same(mine[0], theirs[0]) and same(mine[1], theirs[1]):
            return True
        return values[name].key[0] in _COMMUTATIVE and same(mine[0], theirs[1]) and same(mine[1], theirs[0])

    changed = True
    while changed:
        changed = False
        for name, others in partners.items():
            dropped = {other for other in others if not still(name, other)}
            if dropped:
                others -= dropped
                changed = True
    return {name: min(others, key=lambda o: values[o].line) for name, others in partners.items() if others}


def _reads_after(used_at: list[int], other: _Value, blocks: list[str], phis: set[int]) -> bool:
    """Whether every use of a value in ``other``'s block comes after ``other``, or is a phi's
    (which reads it at the end of the block, on the way round): ``other``, computed in the same
    block, is then there wherever the value is read."""
    return all(i > other.line or i in phis or blocks[i] != other.block for i in used_at)


def _function_merged(lines: list[str]) -> tuple[list[str], int]:
    """One function's lines (``define`` to ``}``), with its congruent counts merged."""
    values, uses, blocks = _parsed(lines)
    defined_at = {value.line: name for name, value in values.items()}
    counts = _counts(values, uses, defined_at)
    if not counts:
        return lines, 0
    only = _flushed_only(counts, values, uses, defined_at, lines)
    replaced = {
        name: other for name, other in _congruent(values, counts, uses, blocks).items() if name in only
    }
    if not replaced:
        return lines, 0
    gone = {values[name].line for name in replaced}

    def renamed(token: re.Match) -> str:
        return replaced.get(token.group(0), token.group(0))

    out = [
        line if i in (0, len(lines) - 1) else VALUE_TOKEN.sub(renamed, line)
        for i, line in enumerate(lines)
        if i not in gone
    ]
    return out, len(replaced)
