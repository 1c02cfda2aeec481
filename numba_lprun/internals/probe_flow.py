"""The flow between a twin's probes, read from its typed Numba IR just before lowering.

Why: a line whose count follows from others' need not be counted (``instrument.derived_counts``
says which); what it follows from is the flow between probe calls: which probe can run next
after each, and whether anything between them can raise (an error return leaves the function
between two probes, where flow conservation no longer holds). That is read here, on the IR
Numba is about to lower (after its rewrites, inlining and ``prange`` conversion), so the flow
is the flow of the code that runs. Nothing here decides what to count.

"Cannot raise" is a short list of statements on numbers, scalar array elements, slices of arrays
(views), ``range`` and array iteration, tuples and a few builtins; anything else (every other
call, a division by something not a nonzero constant, indexing with bounds checks on) is taken
to raise.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

from .registry import touches

#: a probe's kind and owner (the set of probes it belongs to), given the object a call's callee
#: names; None: not a probe
ProbeKind = Callable[[object], tuple[str, object] | None]
EXIT = -1  # the successor of a site whose code returns normally


@dataclass
class ProbeSite:
    """One probe call: where it is, what it counts, and the probe calls that can run next."""

    kind: str  # "enter" or "line"
    probe: object  # the intrinsic the call names
    row: int  # the literal it is called with (lines); -1 for enter
    depth: int  # how many loops hold its block
    next: set[int] = field(default_factory=set)  # sites (indices), or EXIT
    raise_free: bool = True  # nothing between it and each next site can raise
    where: tuple = ()  # (block label, statement index, the call's Expr): for ``ProbeFlow.relabel``


@dataclass
class ProbeFlow:
    """The probe sites of one function, in block order; ``relabel({site: literal})`` rewrites line
    calls' literals."""

    sites: list[ProbeSite]
    relabel: Callable[[dict[int, int]], None]


_SAFE_BINOPS = {
    operator.add, operator.sub, operator.mul, operator.and_, operator.or_, operator.xor,
    operator.lshift, operator.rshift, operator.eq, operator.ne, operator.lt, operator.le,
    operator.gt, operator.ge, operator.iadd, operator.isub, operator.imul, operator.iand,
    operator.ior, operator.ixor, operator.ilshift, operator.irshift,
}  # fmt: skip
_DIVISIONS = {
    operator.truediv, operator.floordiv, operator.mod,
    operator.itruediv, operator.ifloordiv, operator.imod,
}  # fmt: skip
_SAFE_UNARY = {operator.neg, operator.pos, operator.not_, operator.invert, "-", "+", "not", "~"}
_SAFE_BUILTINS = {bool, abs, min, max, int, float}


def _one_of(value: object, group: set) -> bool:
    """``value`` is a member of ``group``, compared by identity or equality (a callee may be any
    object, an unhashable one too: a ``ctypes`` function)."""
    return any(value is member or (isinstance(value, str) and value == member) for member in group)


class _Reader:
    """Reads one function's typed IR: which statements cannot raise, where its probes are."""

    def __init__(self, state: object, probe_kind: ProbeKind):
        from numba.core import config, ir, types

        self.ir, self.types = ir, types
        self.state = state
        self.func_ir = state.func_ir
        self.typemap = state.typemap
        self.probe_kind = probe_kind
        flags = state.flags
        self.boundscheck = config.BOUNDSCHECK if config.BOUNDSCHECK is not None else bool(flags.boundscheck)
        self.numpy_errors = getattr(flags, "error_model", "python") == "numpy"

    # -- what a variable is ---------------------------------------------------------------
    def definition(self, var: object) -> object:
        try:
            return self.func_ir.get_definition(var)
        except Exception:  # a name defined twice, or not at all: unknown
            return None

    def callee(self, expr: object) -> object:
        defined = self.definition(expr.func)
        return defined.value if isinstance(defined, (self.ir.Global, self.ir.FreeVar)) else None

    def typ(self, var: object) -> object:
        return self.typemap.get(var.name) if isinstance(var, self.ir.Var) else None

    def number(self, t: object) -> bool:
        return isinstance(t, (self.types.Number, self.types.Boolean))

    def nonzero_constant(self, var: object) -> bool:
        defined = self.definition(var)
        value = defined.value if isinstance(defined, self.ir.Const) else None
        return isinstance(value, (int, float)) and value != 0

    def scalar_index(self, t: object) -> bool:
        types = self.types
        if isinstance(t, types.Integer):
            return True
        return isinstance(t, types.BaseTuple) and all(isinstance(x, types.Integer) for x in t.types)

    def element(self, array: object, index: object) -> bool:
        """An array indexed by integers, bounds not checked: no raise."""
        return (
            isinstance(self.typ(array), self.types.Array)
            and not self.boundscheck
            and self.scalar_index(index)
        )

    def view(self, array: object, index: object) -> bool:
        """An array sliced (basic indexing: slices, and integers with bounds not checked): a view,
        clamped to the array's bounds, no raise."""
        types = self.types
        parts = index.types if isinstance(index, types.BaseTuple) else (index,)
        return (
            isinstance(self.typ(array), types.Array)
            and all(isinstance(p, (types.SliceType, types.Integer)) for p in parts)
            and any(isinstance(p, types.SliceType) for p in parts)
            and (not self.boundscheck or all(isinstance(p, types.SliceType) for p in parts))
        )

    # -- what cannot raise ----------------------------------------------------------------
    def safe_call(self, expr: object) -> bool:
        types = self.types
        target = self.callee(expr)
        if self.probe_kind(target) is not None:
            return True  # another function's probe, inlined (``flush``: not read at all)
        if expr.vararg or expr.kws:
            return False
        args = [self.typ(a) for a in expr.args]
        if _one_of(target, _SAFE_BUILTINS):
            return bool(args) and all(self.number(a) for a in args)
        if target is range:
            return 1 <= len(args) <= 2 and all(isinstance(a, types.Integer) for a in args)
        if target is len:
            return len(args) == 1 and isinstance(args[0], (types.Array, types.BaseTuple))
        if target is slice:  # (a step of 0 raises: only none or a nonzero constant)
            bounds = all(isinstance(a, (types.Integer, types.NoneType)) for a in args)
            step = len(args) < 3 or isinstance(args[2], types.NoneType) or self.nonzero_constant(expr.args[2])
            return 1 <= len(args) <= 3 and bounds and step
        return False

    def safe_expr(self, expr: object) -> bool:
        types, op, typ = self.types, expr.op, self.typ
        if op in ("binop", "inplace_binop"):
            if not (self.number(typ(expr.lhs)) and self.number(typ(expr.rhs))):
                return False
            if _one_of(expr.fn, _SAFE_BINOPS):
                return True
            return _one_of(expr.fn, _DIVISIONS) and (self.numpy_errors or self.nonzero_constant(expr.rhs))
        if op == "unary":
            return _one_of(expr.fn, _SAFE_UNARY) and self.number(typ(expr.value))
        if op == "static_getitem" and isinstance(typ(expr.value), types.BaseTuple):
            return isinstance(expr.index, int)
        if op in ("getitem", "static_getitem", "typed_getitem"):
            index = typ(expr.index_var if op == "static_getitem" else expr.index)
            return self.element(expr.value, index) or self.view(expr.value, index)
        if op in ("getiter", "iternext", "pair_first", "pair_second"):
            iterated = (types.RangeType, types.RangeIteratorType, types.ArrayIterator, types.Pair)
            return isinstance(typ(expr.value), iterated)
        if op == "getattr":
            return isinstance(typ(expr.value), (types.Array, types.Module))
        if op in ("build_tuple", "cast", "phi"):
            return True
        if op == "exhaust_iter":
            return isinstance(typ(expr.value), types.BaseTuple)
        return op == "call" and self.safe_call(expr)

    def safe(self, stmt: object) -> bool:
        ir = self.ir
        if isinstance(stmt, ir.Assign):
            value = stmt.value
            if isinstance(value, (ir.Var, ir.Const, ir.Global, ir.FreeVar, ir.Arg)):
                return True
            return isinstance(value, ir.Expr) and self.safe_expr(value)
        if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
            index = stmt.index_var if isinstance(stmt, ir.StaticSetItem) else stmt.index
            return self.element(stmt.target, self.typ(index)) and self.number(self.typ(stmt.value))
        return isinstance(stmt, ir.Del)

    # -- where the probes are -------------------------------------------------------------
    def probe_call(self, stmt: object) -> tuple[str, object] | None:
        """``(kind, owner)`` of a probe call statement, else None."""
        value = stmt.value if isinstance(stmt, self.ir.Assign) else None
        if isinstance(value, self.ir.Expr) and value.op == "call":
            return self.probe_kind(self.callee(value))
        return None

    def unreadable(self, stmt: object) -> bool:
        """A statement whose function is not read: a ``try`` block's (a raise inside it does not
        leave the function) or a ``prange`` loop (its probes are lowered apart, flushed per
        iteration)."""
        if type(stmt).__name__ == "Parfor":
            return True
        value = stmt.value if isinstance(stmt, self.ir.Assign) else None
        if isinstance(value, self.ir.Expr) and value.op == "call":
            module = getattr(self.callee(value), "__module__", "") or ""
            if module.startswith("numba.core.unsafe.eh"):
                return True
        return False

    def sites(self) -> tuple[list[ProbeSite], dict[tuple[int, int], int]] | None:
        """The function's own enter and line probe calls, in block order, and where each is."""
        sites: list[ProbeSite] = []
        at: dict[tuple[int, int], int] = {}
        own = None
        blocks = self.func_ir.blocks
        for label in sorted(blocks):
            for index, stmt in enumerate(blocks[label].body):
                found = self.probe_call(stmt)
                if found is None:
                    if self.unreadable(stmt):
                        return None
                    continue
                kind, owner = found
                if kind == "flush":
                    return None
                if own is None and kind == "enter":
                    own = owner
                if owner is not own or kind not in ("enter", "line"):
                    continue  # another function's probe (inlined), or a leave: a statement like others
                row = -1
                if kind == "line":
                    args = stmt.value.args
                    literal = self.typ(args[0]) if len(args) == 1 else None
                    if not isinstance(literal, self.types.IntegerLiteral):
                        return None
                    row = literal.literal_value
                at[label, index] = len(sites)
                sites.append(
                    ProbeSite(kind, self.callee(stmt.value), row, 0, where=(label, index, stmt.value))
                )
        if own is None or sites[0].kind != "enter" or len(sites) < 2:
            return None
        if any(s.kind == "enter" for s in sites[1:]):
            return None  # the function's own enter twice
        return sites, at

    def follow(self, site: ProbeSite, at: dict[tuple[int, int], int]) -> bool:
        """Fill ``site``'s next sites and whether the code up to them can raise, scanning forward
        from it; False where the flow is not one this reads."""
        ir, blocks = self.ir, self.func_ir.blocks
        label, index, _ = site.where
        todo = [(label, index + 1)]
        seen: set[int] = set()
        while todo:
            label, start = todo.pop()
            body = blocks[label].body
            reached = False
            for i in range(start, len(body) - 1):  # the statements before the terminator
                hit = at.get((label, i))
                if hit is not None:
                    if hit == 0:
                        return False  # control back at the function's entry probe
                    site.next.add(hit)
                    reached = True
                    break
                if not self.safe(body[i]):
                    site.raise_free = False
            if reached:
                continue
            term = body[-1]
            if isinstance(term, ir.Return):
                site.next.add(EXIT)
            elif isinstance(term, (ir.Jump, ir.Branch)):
                if isinstance(term, ir.Branch) and not self.number(self.typ(term.cond)):
                    site.raise_free = False  # the truth of an object
                for target in term.get_targets():
                    if target not in seen:
                        seen.add(target)
                        todo.append((target, 0))
            elif type(term).__name__ in ("Raise", "StaticRaise", "DynamicRaise"):
                site.raise_free = False  # (DynamicRaise: Numba 0.58 and newer)
            else:
                return False
        return True


@touches("numba.core.analysis", "compute_cfg_from_blocks", "instrument/derived_counts.py: loops of the IR")
@touches("numba.core.ir_utils", "mk_unique_var", "instrument/derived_counts.py: a probe's new literal")
def read_probe_flow(state: object, probe_kind: ProbeKind) -> ProbeFlow | None:
    """The probe flow of the function a compiler pass's ``state`` holds (typed IR), or None where
    it is not read: a statement kind this reader does not know, a ``try`` block, a ``prange`` loop
    (its body is lowered apart), or no line probe."""
    from numba.core import ir, types
    from numba.core.analysis import compute_cfg_from_blocks
    from numba.core.ir_utils import mk_unique_var

    reader = _Reader(state, probe_kind)
    found = reader.sites()
    if found is None:
        return None
    sites, at = found
    blocks = state.func_ir.blocks
    depth = dict.fromkeys(blocks, 0)
    for loop in compute_cfg_from_blocks(blocks).loops().values():
        for label in loop.body:
            depth[label] += 1
    for site in sites:
        site.depth = depth[site.where[0]]
        if not reader.follow(site, at):
            return None

    def relabel(values: dict[int, int]) -> None:
        """Have each line site ``k`` of ``values`` called with the literal ``values[k]``, retyped:
        all of them or, where a signature cannot be resolved, none (it raises first)."""
        resolve = state.typingctx.resolve_function_type
        prepared = []
        for k, value in values.items():
            label, _, call = sites[k].where
            literal = types.literal(value)
            signature = resolve(state.typemap[call.func.name], (literal,), {})
            if signature is None:
                raise TypeError(f"the probe at site {k} does not type with {value}")
            prepared.append((blocks[label], call, value, literal, signature))
        for block, call, value, literal, signature in prepared:
            index = next(i for i, s in enumerate(block.body) if isinstance(s, ir.Assign) and s.value is call)
            var = ir.Var(block.scope, mk_unique_var("$nlp_site"), call.loc)
            block.body.insert(index, ir.Assign(ir.Const(value, call.loc), var, call.loc))
            state.typemap[var.name] = literal
            call.args = [var]
            state.calltypes.pop(call, None)  # (a dict that refuses a key given twice)
            state.calltypes[call] = signature

    return ProbeFlow(sites, relabel)
