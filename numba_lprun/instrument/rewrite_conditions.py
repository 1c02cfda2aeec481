"""Probes inside the test of an ``if``/``while`` whose line events depend on the data.

Part of the rewriter (``rewrite``): over several lines, which operands of an
``and``/``or``/``not`` test run, and so which lines fire, is known only at run
time, so the rewritten test carries probe calls inside it, each firing as its
operand is reached (the model, ``line_events.TestPlan``, says which lines each
operand and each jump fires).
"""

from __future__ import annotations

import ast
import copy

from . import probes as P
from .line_events import BODY, EXIT, TestPlan


class ConditionProbes:
    """Mixin of ``rewrite._Rewriter``, which provides ``line_arg`` (a probe's row argument)."""

    def probe_expr(self, line: int, at: ast.AST, in_py: bool, value: bool = True) -> ast.expr:
        """``_nlp_line(row) is None``: fires the line event and is True (False with ``value=False``)."""
        call = ast.Call(func=ast.Name(id=P.PYHIT if in_py else P.LINE, ctx=ast.Load()), args=[], keywords=[])
        call.args.append(self.line_arg(line))
        op = ast.Is() if value else ast.IsNot()
        test = ast.Compare(left=call, ops=[op], comparators=[ast.Constant(value=None)])
        for node in ast.walk(test):
            ast.copy_location(node, at)
        return test

    def probes_expr(self, lines: list[int], at: ast.AST, in_py: bool, value: bool) -> ast.expr:
        """Fire ``lines`` in order, then be ``value``."""
        parts = [
            self.probe_expr(line, at, in_py, value or i < len(lines) - 1) for i, line in enumerate(lines)
        ]
        return parts[0] if len(parts) == 1 else ast.copy_location(ast.BoolOp(op=ast.And(), values=parts), at)

    def probed_test(
        self,
        plan: TestPlan,
        segs: list[list[int]],
        body_first: int | None,
        body_fires: bool,
        backward: bool,
        in_py: bool,
    ) -> ast.expr:
        """A copy of the test that fires its line events as CPython does, data-dependently.

        Each leaf fires its own line sequence as it is evaluated, except the first
        event when the jump that led to it was on that line already. Where that
        depends on which leaf jumped there (or, for the body's first line, when
        ``body_fires`` is False), the event goes on the jumps instead: fired on the
        outcome of the leaf that jumps, when it changes the line (always, for a
        backward jump into a while body). Truth values and the order of evaluation
        are unchanged, and a leaf whose jumps carry no events is left as it is, so
        Numba still prunes a branch on a constant leaf as in the original.
        """
        incoming: dict[int, list[bool]] = {}  # leaf -> whether each jump to it changes the line
        for i, outcomes in enumerate(plan.targets):
            for target in outcomes:
                if isinstance(target, int):
                    incoming.setdefault(target, []).append(segs[target][0] != segs[i][-1])
        own_first = {j: all(changes) for j, changes in incoming.items()}

        def entering(target: object, jump_line: int) -> list[int]:
            if target == EXIT:
                return []
            if target == BODY:
                if body_fires or body_first is None or (body_first == jump_line and not backward):
                    return []
                return [body_first]
            first = segs[target][0]
            return [first] if first != jump_line and not own_first[target] else []

        wrapped: dict[int, ast.expr] = {}
        for j, (leaf, seg, (if_true, if_false)) in enumerate(
            zip(plan.leaves, segs, plan.targets, strict=True)
        ):
            expr = copy.deepcopy(leaf)
            own = seg if own_first.get(j) else seg[1:]
            if own:
                expr = ast.BoolOp(op=ast.And(), values=[self.probes_expr(own, leaf, in_py, True), expr])
            on_true, on_false = entering(if_true, seg[-1]), entering(if_false, seg[-1])
            if on_true:
                expr = ast.BoolOp(op=ast.And(), values=[expr, self.probes_expr(on_true, leaf, in_py, True)])
            if on_false:
                expr = ast.BoolOp(op=ast.Or(), values=[expr, self.probes_expr(on_false, leaf, in_py, False)])
            wrapped[j] = ast.copy_location(expr, leaf)
        index = {id(leaf): j for j, leaf in enumerate(plan.leaves)}

        def rebuild(e: ast.expr) -> ast.expr:
            if isinstance(e, ast.BoolOp):
                return ast.copy_location(ast.BoolOp(op=e.op, values=[rebuild(v) for v in e.values]), e)
            if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
                return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=rebuild(e.operand)), e)
            return wrapped[index[id(e)]]

        return rebuild(plan.test)
