"""Stage 2: rewrite a function's AST so that it fires one probe per Python line event.

The hits must equal what line_profiler reports for the Python function, so the
probes follow CPython's own rule for line events (3.11): an event fires when the
executing line changes, and on every backward jump. In AST terms:

* a simple statement fires the line sequence of its bytecode, collapsed (a call
  spread over lines 8-9 fires 8, 9, 8); the first event is skipped when the
  previous event was on the same line (``a = 1; b = 2`` fires once);
* a loop fires its header on entry and again on every back edge (end of body and
  ``continue``), so a ``for`` header counts iterations + 1;
* ``if``/``elif``/``while`` tests fire where they are evaluated, ``else:`` never;
  ``try:`` fires once, ``except ...:`` when it matches, ``with`` on entry and exit.

Each probe charges the time since the previous probe to the previous line, so a
line's time includes the calls it makes, as in line_profiler. A return stores
its value in a variable of its own before the exit probe, so the last line is
charged after the value is computed. The plain twin gets the same entry and exit probes and no line probes.
"""

from __future__ import annotations

import ast
import dis
from dataclasses import dataclass, field

from . import probes as P

_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
_TERMINATORS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
_NO_CODE = (ast.Global, ast.Nonlocal)


@dataclass
class Rewritten:
    """The rewritten def and the line each counter row stands for."""

    tree: ast.FunctionDef
    rows: list[int]  # row index -> line number
    objmode_lines: set[int] = field(default_factory=set)  # lines whose times fold into their with line


def _marker(lineno: int) -> ast.stmt:
    call = ast.Call(func=ast.Name(id="_nlp_marker", ctx=ast.Load()), args=[], keywords=[])
    stmt = ast.Expr(value=call)
    for node in (stmt, call, call.func):
        node.lineno = node.end_lineno = lineno
        node.col_offset, node.end_col_offset = 0, 1
    return stmt


def line_sequence(stmt: ast.stmt) -> list[int]:
    """The line events CPython fires while executing ``stmt`` once (its own code only).

    Statements on one line fire that line. A statement spread over several lines
    is compiled on its own and its bytecode's line numbers are read in order;
    where its expression branches (``and``, ``or``, ``x if c else y``) the order
    depends on the data, so only the first line is used.
    """
    if getattr(stmt, "end_lineno", stmt.lineno) == stmt.lineno:
        return [stmt.lineno]
    probe_fn = ast.FunctionDef(
        name="_nlp_seq",
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[stmt, _marker(stmt.end_lineno + 1)],
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    ast.copy_location(probe_fn, stmt)
    module = ast.Module(body=[probe_fn], type_ignores=[])
    try:
        code = compile(ast.fix_missing_locations(module), "<nlp>", "exec")
    except SyntaxError:
        return [stmt.lineno]
    inner = next(c for c in code.co_consts if hasattr(c, "co_code"))
    seq: list[int] = []
    for ins in dis.get_instructions(inner):
        line = ins.positions.lineno if ins.positions else None
        if ins.opname == "RESUME" or line is None:
            continue
        if line > stmt.end_lineno:
            break
        if ins.opcode in _JUMPS:
            return [stmt.lineno]
        if not seq or seq[-1] != line:
            seq.append(line)
    return seq or [stmt.lineno]


def _header_sequence(node: ast.stmt, expr: ast.expr | None) -> list[int]:
    """Line events of a compound statement's header expression, ending on its line."""
    if expr is None or expr.end_lineno == expr.lineno == node.lineno:
        return [node.lineno]
    stand_in = ast.copy_location(ast.Expr(value=expr), expr)
    seq = line_sequence(stand_in)
    if seq[0] != node.lineno:
        seq.insert(0, node.lineno)
    return seq


class _Rewriter:
    """Walks one def's body, emitting probe calls before and after statements."""

    def __init__(self, timing_lines: bool, objmode_names: frozenset[str]):
        self.timing_lines = timing_lines  # False for the plain twin: entry and exit probes only
        self.objmode_names = objmode_names
        self.line_args: list[ast.Constant] = []  # each holds a line number until numbered
        self.objmode_lines: set[int] = set()
        self.n_returns = 0

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

    # -- statements -------------------------------------------------------------
    def block(
        self, stmts: list[ast.stmt], prev: int | None, loop: list[int] | None, in_py: bool
    ) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            out.extend(self.stmt(stmt, prev, loop, in_py))
            is_simple = not hasattr(stmt, "body")
            prev = stmt.lineno if is_simple and stmt.end_lineno == stmt.lineno else None
            if isinstance(stmt, _NO_CODE):
                continue
        return out

    def back_edge(self, loop: list[int] | None, at: ast.AST, in_py: bool) -> list[ast.stmt]:
        return self.events(loop or [], None, at, in_py) if loop else []

    def loop_body(
        self, body: list[ast.stmt], prev: int, back: list[int], at: ast.AST, in_py: bool
    ) -> list[ast.stmt]:
        new = self.block(body, prev, back, in_py)
        if not isinstance(body[-1], _TERMINATORS):
            new.extend(self.back_edge(back, body[-1], in_py))
        return new or [ast.copy_location(ast.Pass(), at)]

    def stmt(self, s: ast.stmt, prev: int | None, loop: list[int] | None, in_py: bool) -> list[ast.stmt]:
        if isinstance(s, _NO_CODE):
            return [s]
        if isinstance(s, (ast.For, ast.AsyncFor)):
            head = _header_sequence(s, s.iter)
            back = [s.lineno]
            s.body = self.loop_body(s.body, s.lineno, back, s, in_py)
            s.orelse = self.block(s.orelse, s.lineno, loop, in_py)
            return self.events(head, prev, s, in_py) + [s]
        if isinstance(s, ast.While):
            head = _header_sequence(s, s.test)
            s.body = self.loop_body(s.body, head[-1], head, s, in_py)
            s.orelse = self.block(s.orelse, head[-1], loop, in_py)
            return self.events(head, prev, s, in_py) + [s]
        if isinstance(s, ast.If):
            head = _header_sequence(s, s.test)
            s.body = self.block(s.body, head[-1], loop, in_py) or [ast.copy_location(ast.Pass(), s)]
            s.orelse = self.block(s.orelse, head[-1], loop, in_py)
            return self.events(head, prev, s, in_py) + [s]
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
            return pre + self.back_edge(loop, s, in_py) + [s]
        if isinstance(s, ast.Return) and not in_py:
            return pre + self.return_stmt(s)
        return pre + [s]

    def with_stmt(self, s: ast.With, prev: int | None, loop: list[int] | None, in_py: bool) -> list[ast.stmt]:
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
    import copy

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
