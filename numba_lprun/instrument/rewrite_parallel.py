"""Flush points for ``prange`` bodies, added after the line rewrite.

A ``prange`` body runs in a worker function that Numba outlines and calls per
chunk of iterations; it never passes through the twin's ``leave`` probe. In
hits-only mode hits are counted in a per-call stack slot, so each iteration of
a ``prange`` body (its end, and every ``continue`` of that loop) flushes them.
In timed mode the flush probe compiles to nothing.
"""

from __future__ import annotations

import ast

from . import probes as P


def _is_prange(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "prange"


def _flush_call(at: ast.AST) -> ast.stmt:
    call = ast.Call(func=ast.Name(id=P.FLUSH, ctx=ast.Load()), args=[], keywords=[])
    stmt = ast.Expr(value=call)
    for node in (stmt, call, call.func):
        ast.copy_location(node, at)
    return stmt


def _before_continues(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Put a flush before each ``continue`` of the current loop (not of nested loops)."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Continue):
            out.append(_flush_call(stmt))
        elif isinstance(stmt, (ast.If, ast.With, ast.Try)):
            for field in ("body", "orelse", "finalbody"):
                if getattr(stmt, field, None):
                    setattr(stmt, field, _before_continues(getattr(stmt, field)))
            for handler in getattr(stmt, "handlers", []):
                handler.body = _before_continues(handler.body)
        out.append(stmt)
    return out


def add_prange_flushes(tree: ast.FunctionDef) -> ast.FunctionDef:
    """Add flush probes to every ``prange`` loop body of ``tree`` (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and _is_prange(node.iter):
            node.body = _before_continues(node.body)
            node.body.append(_flush_call(node.body[-1]))
    return tree
