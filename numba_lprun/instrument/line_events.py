"""Which lines fire line events, and in what order: the model the rewriter follows.

numba_lprun's hits must equal line_profiler's on the Python function, on the
Python that runs it and with the core line_profiler uses there. Both depend on
the interpreter, so nothing here is a table per version: statements are
compiled on their own in stand-in functions and their bytecode's line numbers
are read, and the one rule that depends on the tracing core is measured
(``backward_jumps_fire``). Nothing here places probes or compiles with Numba.

The rule CPython follows (3.11 and later): a line event fires when execution
reaches an instruction on another line than the previous instruction executed.
Version- and core-specific parts, each marked ``VERSION:`` below:

* the core (``backward_jumps_fire``): ``sys.settrace`` (line_profiler's
  ``legacy`` core, the only one before 3.12) also fires on every backward jump,
  so a loop on one line counts once per iteration; ``sys.monitoring`` (the
  default core on 3.12+) does not, so it counts once in all;
* the layout of a ``for`` header (``for_events``): 3.13 puts ``FOR_ITER`` on the
  iterable's line, 3.11/3.12 on the ``for`` line, so which line a back edge
  fires differs; read from the bytecode;
* ``while`` tests (``plan_test``): 3.12+ may place a copy of the loop's exit
  block between the test and the body, and ends the test copy after the body
  with a conditional jump over a ``JUMP_BACKWARD`` (3.11: one backward
  conditional jump); both are read from the bytecode;
* Python 3.10 is not supported: its bytecode has no column positions (the test
  of an ``if``/``while`` is split into operands by them) and its tracer fires
  at the start of line-table entries, a different rule.
"""

from __future__ import annotations

import ast
import dis
import functools
import sys
from dataclasses import dataclass

if sys.version_info < (3, 11):  # noqa: UP036  (VERSION: see the module docstring)
    raise ImportError(
        "numba_lprun needs Python 3.11 or newer: Python 3.10 bytecode has no column positions, which "
        "numba_lprun needs to match line_profiler's hit counts"
    )

_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def marker(lineno: int) -> ast.stmt:
    call = ast.Call(func=ast.Name(id="_nlp_marker", ctx=ast.Load()), args=[], keywords=[])
    stmt = ast.Expr(value=call)
    for node in (stmt, call, call.func):
        node.lineno = node.end_lineno = lineno
        node.col_offset, node.end_col_offset = 0, 1
    return stmt


def _instructions(node: ast.stmt, after: list[ast.stmt]) -> list:
    """The instructions (with line numbers) of ``node`` compiled alone in a function,
    followed by the ``after`` statements; None if it does not compile alone."""
    probe_fn = ast.FunctionDef(
        name="_nlp_seq",
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[node, *after],
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    ast.copy_location(probe_fn, node)
    module = ast.Module(body=[probe_fn], type_ignores=[])
    try:
        code = compile(ast.fix_missing_locations(module), "<nlp>", "exec")
    except (SyntaxError, ValueError, TypeError):
        return None
    inner = next(c for c in code.co_consts if hasattr(c, "co_code"))
    return [
        ins
        for ins in dis.get_instructions(inner)
        if ins.opname != "RESUME" and ins.positions and ins.positions.lineno is not None
    ]


def _collapse(instrs: list) -> list[int]:
    seq: list[int] = []
    for ins in instrs:
        if not seq or seq[-1] != ins.positions.lineno:
            seq.append(ins.positions.lineno)
    return seq


def line_sequence(stmt: ast.stmt) -> list[int]:
    """The line events CPython fires while executing ``stmt`` once (its own code only).

    Statements on one line fire that line. A statement spread over several lines
    is compiled on its own and its bytecode's line numbers are read in order.
    Where it branches over lines (``and``, ``or``, ``x if c else y`` as values,
    chained comparisons) the order depends on the data, and only the first line
    is used: a known limitation. Branches within one line change nothing.
    """
    if getattr(stmt, "end_lineno", stmt.lineno) == stmt.lineno:
        return [stmt.lineno]
    instrs = _instructions(stmt, [marker(stmt.end_lineno + 1)])
    if instrs is None:
        return [stmt.lineno]
    own = []
    for ins in instrs:
        own.append(ins)
        if ins.positions.lineno > stmt.end_lineno:
            break  # the marker after the statement: where its jumps may go
    if len(own) < 2:
        return [stmt.lineno]
    if isinstance(stmt, ast.Assert):  # counted as it passes: drop the code that raises
        passes = [i for i, ins in enumerate(own) if ins.opcode in _JUMPS and ins.argval == own[-1].offset]
        if passes:
            own = own[: passes[-1] + 1] + own[-1:]
    if any(ins.opcode in _JUMPS for ins in own) and not _straight(own):
        return [stmt.lineno]
    return _collapse(own[:-1])


def header_sequence(node: ast.stmt, expr: ast.expr | None) -> list[int]:
    """Line events of a compound statement's header expression, ending on its line
    (the fallback for tests whose events are not known leaf by leaf)."""
    if expr is None or expr.end_lineno == expr.lineno == node.lineno:
        return [node.lineno]
    stand_in = ast.copy_location(ast.Expr(value=expr), expr)
    seq = line_sequence(stand_in)
    if seq[0] != node.lineno:
        seq.insert(0, node.lineno)
    return seq


@dataclass(frozen=True)
class ForEvents:
    """A ``for`` header's events: ``entry`` once on entering the loop (the iterable,
    ``GET_ITER`` and the first ``FOR_ITER``); ``test``, the line of ``FOR_ITER``, on
    every back edge, the last one too; ``bind`` (the store to the target) at the
    start of every iteration, after ``test``."""

    entry: list[int]
    test: int
    bind: list[int]


def for_events(node: ast.For | ast.AsyncFor) -> ForEvents:
    """Read a ``for`` header's events from its bytecode. VERSION: ``FOR_ITER`` is on
    the ``for`` line up to 3.12 and on the iterable's line from 3.13, so ``for v in
    (\n b):`` fires ``b``'s line on every back edge there, the ``for`` line before."""
    fallback = ForEvents(header_sequence(node, node.iter), node.lineno, [])
    if isinstance(node, ast.AsyncFor) or node.end_lineno == node.lineno:
        return fallback
    body_line = node.end_lineno + 1
    stand_in = ast.For(target=node.target, iter=node.iter, body=[marker(body_line)], orelse=[])
    instrs = _instructions(ast.copy_location(stand_in, node), [])
    lines = [ins.positions.lineno for ins in instrs or []]
    if body_line not in lines:
        return fallback
    head = instrs[: lines.index(body_line)]
    loop = [i for i, ins in enumerate(head) if ins.opname == "FOR_ITER"]
    if len(loop) != 1 or any(ins.opcode in _JUMPS for ins in head[loop[0] + 1 :]):
        return fallback
    at = loop[0]
    return ForEvents(_collapse(head[: at + 1]), head[at].positions.lineno, _collapse(head[at:])[1:])


BODY, EXIT = "body", "exit"  # where a test's last jump goes: into the body, or past it


@dataclass
class TestPlan:
    """The line events of an ``if``/``while`` test, leaf by leaf.

    In a test, ``and``/``or``/``not`` compile to jumps, one per *leaf* (an operand
    that is not itself ``and``/``or``/``not``), so which lines fire depends on the
    data when the test spans lines. ``top[j]`` is the line sequence of leaf ``j``'s
    code ending with its jump's line; ``bottom`` the same for the copy of a while
    loop's test that CPython 3.11 evaluates after the body; ``targets[j]`` is where
    leaf ``j`` goes when true and when false (another leaf's index, BODY or EXIT).
    """

    test: ast.expr
    leaves: list[ast.expr]
    targets: list[tuple[object, object]]
    top: list[list[int]]
    bottom: list[list[int]] | None = None

    def same_line(self) -> int | None:
        """The one line every event of the test is on, if there is one."""
        lines = {line for segs in (self.top, self.bottom or []) for seg in segs for line in seg}
        return lines.pop() if len(lines) == 1 else None

    def static(self) -> list[int] | None:
        """The test's events when they do not depend on the data (one leaf, or one line)."""
        if len(self.leaves) == 1 and (self.bottom is None or self.bottom == self.top):
            return self.top[0]
        line = self.same_line()
        return [line] if line is not None else None


def _leaves(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp):
        return [leaf for value in test.values for leaf in _leaves(value)]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _leaves(test.operand)
    return [test]


def _targets(test: ast.expr, index: dict[int, int]) -> list[tuple[object, object]]:
    """Per leaf (in order): where evaluation goes when it is true, and when false."""
    out: dict[int, tuple[object, object]] = {}

    def first(e: ast.expr) -> int:
        return index[id(_leaves(e)[0])]

    def walk(e: ast.expr, if_true: object, if_false: object) -> None:
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            walk(e.operand, if_false, if_true)
        elif isinstance(e, ast.BoolOp):
            values = e.values
            for i, value in enumerate(values[:-1]):
                nxt = first(values[i + 1])
                walk(value, nxt, if_false) if isinstance(e.op, ast.And) else walk(value, if_true, nxt)
            walk(values[-1], if_true, if_false)
        else:
            out[index[id(e)]] = (if_true, if_false)

    walk(test, BODY, EXIT)
    return [out[i] for i in range(len(out))]


def _inside(pos, node: ast.expr) -> bool:
    if pos.col_offset is None or pos.end_lineno is None or pos.end_col_offset is None:
        return False
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= (pos.lineno, pos.col_offset) and (pos.end_lineno, pos.end_col_offset) <= end


def _straight(part: list) -> bool:
    """Whether every path through ``part`` (a test leaf's code ending with its own jump,
    or a statement's code and the next instruction) fires the same line events: each
    jump before the last goes forward, within ``part``, and skips only instructions
    on its own line (an ``assert`` that holds, a one-line ``x if c else y``)."""
    where = {ins.offset: i for i, ins in enumerate(part)}
    for i, ins in enumerate(part[:-1]):
        if ins.opcode not in _JUMPS:
            continue
        target = where.get(ins.argval)
        if target is None or target <= i:
            return False
        if len({other.positions.lineno for other in part[i:target]}) > 1:
            return False
    return True


def _one_jump(part: list) -> list:
    """VERSION: 3.12+ ends a test evaluated after a loop body with ``POP_JUMP_IF_FALSE
    exit; JUMP_BACKWARD body`` on one line where 3.11 has one ``POP_JUMP_BACKWARD_IF_TRUE``:
    the pair fires what one conditional jump would, so the unconditional jump is dropped."""
    if len(part) > 1 and part[-1].opname.startswith("JUMP") and part[-2].opname.startswith("POP_JUMP"):
        if part[-1].positions.lineno == part[-2].positions.lineno:
            return part[:-1]
    return part


def _segments(instrs: list, leaves: list[ast.expr]) -> list[list[int]] | None:
    """Split a test's instructions into per-leaf line sequences, or None if they
    cannot be told apart or a leaf's own lines depend on the data."""
    starts, at = [], 0
    for leaf in leaves:
        while at < len(instrs) and (instrs[at].opcode in _JUMPS or not _inside(instrs[at].positions, leaf)):
            at += 1
        if at == len(instrs):
            return None
        starts.append(at)
        at += 1
    starts[0] = 0
    segs = []
    for j, start in enumerate(starts):
        part = instrs[start : starts[j + 1] if j + 1 < len(starts) else len(instrs)]
        if len({ins.positions.lineno for ins in part}) == 1:
            segs.append([part[0].positions.lineno])  # one line, whatever jumps it holds
            continue
        part = _one_jump(part)
        if not part[-1].opname.startswith("POP_JUMP") or not _straight(part):
            return None  # the leaf branches over several lines: its own events depend on the data
        seq: list[int] = []
        for ins in part:
            if not seq or seq[-1] != ins.positions.lineno:
                seq.append(ins.positions.lineno)
        segs.append(seq)
    return segs


def plan_test(node: ast.If | ast.While) -> TestPlan | None:
    """Compile the test in a stand-in statement and read its line events, leaf by leaf."""
    body_line = node.end_lineno + 1
    stand_in = type(node)(test=node.test, body=[marker(body_line)], orelse=[])
    instrs = _instructions(ast.copy_location(stand_in, node), [marker(body_line + 1)])
    if instrs is None:
        return None
    lines = [ins.positions.lineno for ins in instrs]
    if body_line not in lines:
        return None
    first_body = lines.index(body_line)
    last_body = len(lines) - 1 - lines[::-1].index(body_line)
    leaves = _leaves(node.test)
    # VERSION: 3.12+ may put a copy of the exit block (the marker after the statement)
    # between the test and the body; it is not part of the test
    exit_line = body_line + 1
    top = _segments([ins for ins in instrs[:first_body] if ins.positions.lineno != exit_line], leaves)
    if top is None:
        return None
    bottom = None
    if isinstance(node, ast.While):
        after = next((i for i in range(last_body + 1, len(lines)) if lines[i] == exit_line), len(lines))
        bottom = _segments(instrs[last_body + 1 : after], leaves)
        if bottom is None:
            return None
    index = {id(leaf): i for i, leaf in enumerate(leaves)}
    return TestPlan(node.test, leaves, _targets(node.test, index), top, bottom)


def body_fires(plan: TestPlan, segs: list[list[int]], first: int | None) -> bool:
    """Whether every jump into the body changes the line, so the body fires its own first line."""
    into = [seg[-1] for seg, outcomes in zip(segs, plan.targets, strict=True) if BODY in outcomes]
    return first is not None and all(line != first for line in into)


_PROBE_LOOP = "def _nlp_probe(n):\n    k = 0\n    while k < n: k += 1\n    return k\n"


@functools.cache
def backward_jumps_fire() -> bool:
    """Whether the line profiler in use fires a new line event on a jump back to the
    line that jumped (``while k < n: k += 1`` counts n, not 1).

    VERSION: true for ``sys.settrace``, which line_profiler uses before 3.12 and with
    ``LINE_PROFILER_CORE=legacy``; false for ``sys.monitoring``, its default on 3.12+.
    Measured once per process by profiling a one-line loop with line_profiler itself,
    so it follows whatever selects the core; line_profiler's own flag if that fails.
    """
    import line_profiler

    try:
        namespace: dict = {}
        exec(compile(_PROBE_LOOP, "<numba_lprun-probe>", "exec"), namespace)
        func = namespace["_nlp_probe"]
        prof = line_profiler.LineProfiler(func)
        prof.runcall(func, 3)
        (rows,) = [rows for (_, _, name), rows in prof.get_stats().timings.items() if name == "_nlp_probe"]
        hits = {line: n for line, n, _ in rows}
        return hits[func.__code__.co_firstlineno + 2] == 3
    except Exception:  # no stats (another tool owns the tracer): fall back on the core's name
        from line_profiler import _line_profiler

        return bool(getattr(_line_profiler, "USE_LEGACY_TRACE", sys.version_info < (3, 12)))
