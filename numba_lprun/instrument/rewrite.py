"""Rewrite a function's AST so that it fires one probe per Python line event.

The hits must equal what line_profiler reports for the Python function, so the
probes follow the model of line events in ``line_events`` (an event fires when
the executing line changes; under ``sys.settrace`` also on every backward jump),
which reads each statement's lines from the running interpreter's bytecode. In
AST terms:

* a simple statement fires the line sequence of its bytecode, collapsed (a call
  spread over lines 8-9 fires 8, 9, 8); the first event is skipped when the
  previous event was on the same line (``a = 1; b = 2`` fires once);
* a ``for`` fires its header on entry and again on every back edge (end of body
  and ``continue``), so it counts iterations + 1, except that a back edge from
  the header's own line fires nothing when backward jumps do not fire
  (``sys.monitoring``: ``for i in r: s += i`` counts 1);
* an ``if``/``elif``/``while`` test fires where it is evaluated, ``else:`` never.
  A test's lines are read from its bytecode leaf by leaf (the operands of
  ``and``/``or``/``not``): over several lines which of them fire depends on the
  data, so the rewritten test carries the probes inside it, each firing as its
  operand is reached (``TestPlan``). CPython evaluates a copy of a while loop's
  test after the body, and jumps back into the body: under ``sys.settrace`` that
  always fires the body's first line (``while k < 3: k += 1`` counts its line
  once per iteration), under ``sys.monitoring`` only if the line changes;
* ``try:`` fires once, ``except ...:`` when it matches, ``with`` on entry and exit.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from . import line_events as E
from . import probes as P
from .line_events import TestPlan, body_fires, header_sequence, line_sequence
from .rewrite_conditions import ConditionProbes

_TERMINATORS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
_NO_CODE = (ast.Global, ast.Nonlocal)


@dataclass
class Rewritten:
    """The rewritten def and the line each counter row stands for."""

    tree: ast.FunctionDef
    rows: list[int]  # row index -> line number
    objmode_lines: set[int] = field(default_factory=set)  # lines whose times fold into their with line


def _load(name: str, at: ast.AST) -> ast.expr:
    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), at)


@dataclass
class _Loop:
    """What a ``continue`` in this loop fires, and the flag it clears (see while_stmt)."""

    back: list[int]
    flag: str | None = None


class _Rewriter(ConditionProbes):
    """Walks one def's body, emitting probe calls before and after statements."""

    def __init__(self, timing_lines: bool, objmode_names: frozenset[str]):
        self.timing_lines = timing_lines  # False for the plain twin: entry and exit probes only
        self.objmode_names = objmode_names
        self.line_args: list[ast.Constant] = []  # each holds a line number until numbered
        self.objmode_lines: set[int] = set()
        self.n_returns = 0
        self.n_flags = 0
        self.plans: dict[ast.AST, TestPlan | None] = {}  # by node (nodes hash by identity)
        # VERSION: whether a jump back to the line that jumped fires (the profiling core)
        self.backward = E.backward_jumps_fire() if timing_lines else True

    # -- probe statements -------------------------------------------------------
    def line_arg(self, lineno: int) -> ast.Constant:
        arg = ast.Constant(value=lineno)
        self.line_args.append(arg)
        return arg

    def lines_seen(self) -> set[int]:
        return {arg.value for arg in self.line_args}

    def number_rows(self) -> list[int]:
        """Turn the line numbers in probe calls into row indexes, rows in line order."""
        rows = sorted(self.lines_seen())
        index = {line: i for i, line in enumerate(rows)}
        for arg in self.line_args:
            arg.value = index[arg.value]
        return rows

    def call(self, name: str, at: ast.AST, *args: ast.expr) -> ast.stmt:
        call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])
        stmt = ast.Expr(value=call)
        for node in (stmt, call, call.func, *args):
            ast.copy_location(node, at)
            node.end_lineno, node.end_col_offset = at.lineno, getattr(at, "col_offset", 0)
        return stmt

    def events(
        self, seq: list[int], prev: int | None, at: ast.AST, in_py: bool, force_first: bool = False
    ) -> list[ast.stmt]:
        if not self.timing_lines:
            return []
        if seq and seq[0] == prev and not force_first:
            seq = seq[1:]
        name = P.PYHIT if in_py else P.LINE
        return [self.call(name, at, self.line_arg(line)) for line in seq]

    def flag_stmt(self, flag: str, value: bool, at: ast.AST) -> ast.stmt:
        target = ast.copy_location(ast.Name(id=flag, ctx=ast.Store()), at)
        return ast.copy_location(
            ast.Assign(targets=[target], value=ast.copy_location(ast.Constant(value), at)), at
        )

    # -- statements -------------------------------------------------------------
    def block(
        self, stmts: list[ast.stmt], prev: int | None, loop: _Loop | None, in_py: bool
    ) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            out.extend(self.stmt(stmt, prev, loop, in_py))
            if isinstance(stmt, _NO_CODE):
                continue
            prev = self.last_line(stmt)
        return out

    @staticmethod
    def last_line(stmt: ast.stmt) -> int | None:
        """The line of the last event of ``stmt`` when known (a one-line simple statement)."""
        is_simple = not hasattr(stmt, "body")
        return stmt.lineno if is_simple and stmt.end_lineno == stmt.lineno else None

    def back_edge(self, loop: _Loop | None, at: ast.AST, in_py: bool, last: int | None) -> list[ast.stmt]:
        """The jump back to the loop header (end of body, ``continue``) fires its first
        events: always under settrace, else only if ``last``, the line jumped from, differs."""
        if loop is None:
            return []
        out = self.events(loop.back, None if self.backward else last, at, in_py)
        if loop.flag is not None:
            out.append(self.flag_stmt(loop.flag, False, at))
        return out

    def loop_body(
        self,
        body: list[ast.stmt],
        prev: int | None,
        loop: _Loop,
        at: ast.AST,
        in_py: bool,
        fall_off: list[ast.stmt] | None = None,
    ) -> list[ast.stmt]:
        new = self.block(body, prev, loop, in_py)
        if not isinstance(body[-1], _TERMINATORS):
            last = self.last_line(body[-1])
            new.extend(self.back_edge(loop, body[-1], in_py, last) if fall_off is None else fall_off)
        return new or [ast.copy_location(ast.Pass(), at)]

    def plan(self, s: ast.If | ast.While) -> TestPlan | None:
        """The per-leaf events of ``s``'s test (None for a constant test, or when unknown)."""
        if not self.timing_lines or isinstance(s.test, ast.Constant):
            return None
        if s not in self.plans:
            self.plans[s] = E.plan_test(s)
        return self.plans[s]

    def first_event(self, stmts: list[ast.stmt]) -> int | None:
        """The line of the first event ``stmts`` fire when entered from another line."""
        for s in stmts:
            if isinstance(s, _NO_CODE):
                continue
            if isinstance(s, (ast.For, ast.AsyncFor)):
                return E.for_events(s).entry[0]
            if isinstance(s, (ast.If, ast.While)):
                plan = self.plan(s)
                return plan.top[0][0] if plan is not None else header_sequence(s, s.test)[0]
            if isinstance(s, (ast.With, ast.AsyncWith, ast.Try)):
                return s.lineno
            return line_sequence(s)[0]
        return None

    def if_stmt(self, s: ast.If, prev: int | None, loop: _Loop | None, in_py: bool) -> list[ast.stmt]:
        plan = self.plan(s)
        head = plan.static() if plan is not None else header_sequence(s, s.test)
        if head is not None:
            s.body = self.block(s.body, head[-1], loop, in_py) or [ast.copy_location(ast.Pass(), s)]
            s.orelse = self.block(s.orelse, head[-1], loop, in_py)
            return self.events(head, prev, s, in_py) + [s]
        first = self.first_event(s.body)
        fires = body_fires(plan, plan.top, first)
        s.test = self.probed_test(plan, plan.top, first, fires, False, in_py)
        s.body = self.block(s.body, None if fires else first, loop, in_py) or [
            ast.copy_location(ast.Pass(), s)
        ]
        s.orelse = self.block(s.orelse, None, loop, in_py)
        return self.events([plan.top[0][0]], prev, s, in_py) + [s]

    def while_stmt(self, s: ast.While, prev: int | None, loop: _Loop | None, in_py: bool) -> list[ast.stmt]:
        """A while loop. CPython (3.11-3.13) evaluates the test at the top on entry and
        after ``continue``, and a copy of it after the body, which jumps back into the
        body (a backward jump: under settrace the body's first line always fires, under
        sys.monitoring only if the line changes). When the test's events depend on the
        data, or the body starts on the test's last line (``while k < 3: k += 1``), the
        top and bottom evaluations may fire differently: a flag set at the end of the
        body selects the bottom one."""
        plan = self.plan(s)
        first = self.first_event(s.body)
        head = plan.static() if plan is not None else header_sequence(s, s.test)
        if head is not None and (plan is None or first != head[-1]):
            s.body = self.loop_body(s.body, head[-1], _Loop(head), s, in_py)
            s.orelse = self.block(s.orelse, head[-1], loop, in_py)
            return self.events(head, prev, s, in_py) + [s]
        # the jumps back from the bottom fire the body's first line always under settrace
        fires = body_fires(plan, plan.top, first) and (self.backward or body_fires(plan, plan.bottom, first))
        top = self.probed_test(plan, plan.top, first, fires, False, in_py)
        bottom = self.probed_test(plan, plan.bottom, first, fires, self.backward, in_py)
        flag = None
        if ast.dump(top) != ast.dump(bottom):
            self.n_flags += 1
            flag = f"_nlp_w{self.n_flags}"
            is_top = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=_load(flag, s)), s)
            top = ast.copy_location(ast.BoolOp(op=ast.And(), values=[is_top, top]), s)
            bottom = ast.copy_location(ast.BoolOp(op=ast.And(), values=[_load(flag, s), bottom]), s)
            s.test = ast.copy_location(ast.BoolOp(op=ast.Or(), values=[top, bottom]), s)
        else:
            s.test = top
        last = s.body[-1]
        ends_on = line_sequence(last)[-1] if not hasattr(last, "body") else None
        fall_off = self.events([plan.bottom[0][0]], ends_on, last, in_py)
        if flag is not None:
            fall_off.append(self.flag_stmt(flag, True, last))
        s.body = self.loop_body(
            s.body, None if fires else first, _Loop([plan.top[0][0]], flag), s, in_py, fall_off
        )
        s.orelse = self.block(s.orelse, None, loop, in_py)
        pre = self.events([plan.top[0][0]], prev, s, in_py)
        if flag is not None:
            pre.append(self.flag_stmt(flag, False, s))
        return pre + [s]

    def stmt(self, s: ast.stmt, prev: int | None, loop: _Loop | None, in_py: bool) -> list[ast.stmt]:
        if isinstance(s, _NO_CODE):
            return [s]
        if isinstance(s, (ast.For, ast.AsyncFor)):
            ev = E.for_events(s) if self.timing_lines else E.ForEvents([s.lineno], s.lineno, [])
            bind = self.events(ev.bind, ev.test, s, in_py)  # each iteration, after FOR_ITER
            body = self.loop_body(s.body, ev.bind[-1] if ev.bind else ev.test, _Loop([ev.test]), s, in_py)
            s.body = bind + body
            s.orelse = self.block(s.orelse, None, loop, in_py)
            return self.events(ev.entry, prev, s, in_py) + [s]
        if isinstance(s, ast.While):
            return self.while_stmt(s, prev, loop, in_py)
        if isinstance(s, ast.If):
            return self.if_stmt(s, prev, loop, in_py)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return self.with_stmt(s, prev, loop, in_py)
        if isinstance(s, ast.Try):
            s.body = self.block(s.body, s.lineno, loop, in_py)
            for handler in s.handlers:
                head = self.events([handler.lineno], None, handler, in_py)
                handler.body = head + self.block(handler.body, handler.lineno, loop, in_py)
            s.orelse = self.block(s.orelse, None, loop, in_py)
            s.finalbody = self.block(s.finalbody, None, loop, in_py)
            return self.events([s.lineno], prev, s, in_py) + [s]
        seq = line_sequence(s)
        pre = self.events(seq, prev, s, in_py)
        if isinstance(s, ast.Continue):
            return pre + self.back_edge(loop, s, in_py, seq[-1]) + [s]
        if isinstance(s, ast.Return) and not in_py:
            return pre + self.return_stmt(s)
        return pre + [s]

    def with_stmt(self, s: ast.With, prev: int | None, loop: _Loop | None, in_py: bool) -> list[ast.stmt]:
        head = self.events([s.lineno], prev, s, in_py)
        lifted = in_py or any(self.is_objmode(item.context_expr) for item in s.items)
        before = self.lines_seen()
        s.body = self.block(s.body, s.lineno, loop, lifted) or [ast.copy_location(ast.Pass(), s)]
        if lifted and not in_py:
            self.objmode_lines |= self.lines_seen() - before
        exit_event = self.events([s.lineno], None, s, in_py)
        return head + [s] + (exit_event if not isinstance(s.body[-1], _TERMINATORS) else [])

    def is_objmode(self, expr: ast.expr) -> bool:
        target = expr.func if isinstance(expr, ast.Call) else expr
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        return name in self.objmode_names

    def return_stmt(self, s: ast.Return) -> list[ast.stmt]:
        """``return v`` becomes ``_nlp_retK = v; leave(); return _nlp_retK``.

        The last line is charged after the value is computed, and the returned
        variable keeps the value's exact type, so the twin's return type is the
        original's (a tuple holding a literal int stays ``Literal[int]``, which the
        twin must match when compiled with the original's full signature).
        """
        leave = self.call(P.LEAVE, s)
        if s.value is None:
            return [leave, s]
        self.n_returns += 1
        name = f"_nlp_ret{self.n_returns}"
        target = ast.copy_location(ast.Name(id=name, ctx=ast.Store()), s)
        assign = ast.copy_location(ast.Assign(targets=[target], value=s.value), s)
        s.value = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), s)
        return [assign, leave, s]


def _strip_signature(fdef: ast.FunctionDef) -> None:
    """Drop decorators, annotations and default expressions: the twin gets the
    original's defaults as objects, and none of these may be evaluated again."""
    fdef.decorator_list = []
    fdef.returns = None
    args = fdef.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None:
            arg.annotation = None
    args.defaults = [ast.copy_location(ast.Constant(value=None), d) for d in args.defaults]
    args.kw_defaults = [
        None if d is None else ast.copy_location(ast.Constant(value=None), d) for d in args.kw_defaults
    ]


def instrument(
    fdef: ast.FunctionDef, *, lines: bool = True, objmode_names: frozenset[str] = frozenset({"objmode"})
) -> Rewritten:
    """A rewritten copy of ``fdef``: entry, exit and (if ``lines``) line probes.

    ``objmode_names`` are the names under which ``numba.objmode`` is called in the
    function: lines inside those blocks run in object mode, where the nopython
    probes cannot run, so they get Python-level hit counters and their time is
    charged to the ``with`` line.
    """
    tree = copy.deepcopy(fdef)
    _strip_signature(tree)
    rewriter = _Rewriter(lines, objmode_names)
    body = tree.body
    doc = []
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        doc, body = body[:1], body[1:]
    first = body[0] if body else tree
    new_body = [rewriter.call(P.ENTER, first)] + rewriter.block(body, None, None, False)
    if not body or not isinstance(body[-1], (ast.Return, ast.Raise)):
        new_body.append(rewriter.call(P.LEAVE, body[-1] if body else tree))
    tree.body = doc + new_body
    rows = rewriter.number_rows()
    return Rewritten(ast.fix_missing_locations(tree), rows, rewriter.objmode_lines)
