"""Lines whose counts follow from others' are not counted in a loop: they are derived at the flush.

Why: a counting twin counts each line event in a register of its own (``probes``, hits only),
and in a tight loop those adds are the cost: a branchy ``while`` (Collatz steps) has the loop
test, the ``if``, an arm and the line after the ``if`` each adding per step, 16 instructions to
the plain loop's 8 (1.2x its time). Most of those counts are sums and differences of others:
the line after an ``if`` ran as often as its two arms together, one arm as often as the ``if``
less the other arm. Counting a few and deriving the rest is how compiled code's profilers have
done it for decades (counters on a spanning tree's complement, Ball and Larus 1994; gcov's
arcs); this is that, on the probes' own flow.

How: just before lowering, ``internals.read_probe_flow`` gives the probe calls of the function
(its entry's and each line's) and, for each, the probe calls that can run next and whether
anything between can raise. Counts obey conservation: a probe ran as often as control came to
it from its predecessors, and one whose code up to the next probes cannot raise ran as often as
control left it for its successors (or the function's normal return). Lines are dropped one at
a time, most deeply nested first, wherever what is left still determines every count by those
equations (solved by substitution, so every derived count is a sum and difference of counted
ones, the call itself and whether it returned normally). The dropped probes emit nothing; the
rest count into fields of their own; the flush at each exit of the call (``exits``) adds each
line's sum to its row. The equations hold at the error exit too: every probe used for a flow out
of it has no way to raise before the next probe runs, and the normal return is known not taken.

Where it does not apply (nothing is derived, every line counts as before): twins that do not
count in registers (with times, generators), ``prange`` code, ``try`` blocks, code built without
the exit flushes (ufunc and stencil kernels), and functions with no loop.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from ..internals import EXIT, ProbeFlow, read_probe_flow
from .exits import exits_flushed

#: a line probe's literal at or above this names a plan and a field (``encode``), not a row
PLANNED = 1 << 40
_SITE_BITS = 16
DERIVED = (1 << _SITE_BITS) - 1  # the field of a probe that counts nothing
_MAX_SITES = 4000
_WORK = 200_000  # equation terms solved, all tries together (about 0.1 s)
ENTRY, RETURNED = -1, -2  # the call itself (1) and its normal return (1, or 0 at the error exit)

Expr = dict[int, int]  # counted field (or ENTRY, RETURNED) -> coefficient


@dataclass(frozen=True)
class Plan:
    """Which probes of one function count, into which field, and each row's count from them."""

    n_fields: int
    #: (row, ((counted field, or ENTRY or RETURNED), coefficient), ...)
    rows: tuple[tuple[int, tuple[tuple[int, int], ...]], ...]


def encode(plan_id: int, field: int) -> int:
    return PLANNED + (plan_id << _SITE_BITS) + field


def decode(value: int) -> tuple[int, int]:
    """``(plan_id, field)`` of a line probe's literal (``field`` is ``DERIVED`` for no count)."""
    value -= PLANNED
    return value >> _SITE_BITS, value & DERIVED


class _Flow:
    """Conservation of the probes' flow, as equations over numbered quantities (each a list of
    (quantity, coefficient) summing to 0): a site's count (quantity ``site``; the return's is
    ``n_sites``), each transition from a site to a next one (numbered after) and, for each site
    that can raise, how often a raise left the function before the next probes (numbered last)."""

    def __init__(self, flow: ProbeFlow):
        sites = flow.sites
        n = len(sites)
        self.node = {k: k for k in range(n)} | {EXIT: n}
        transitions: dict[tuple[int, int], int] = {}
        preds: dict[int, list[int]] = defaultdict(list)
        for p, site in enumerate(sites):
            for q in sorted(site.next):
                transitions[p, q] = n + 1 + len(transitions)
                preds[q].append(p)
        self.valid = not preds.get(0)  # else control comes back to the entry probe
        equations = []
        for q in [*range(1, n), EXIT]:  # a site ran as often as control came to it
            equations.append([(self.node[q], 1)] + [(transitions[p, q], -1) for p in preds.get(q, ())])
        raised = n + 1 + len(transitions)  # the first "raised after site p" quantity
        raising = []
        for p, site in enumerate(sites):  # and as often as it left (or raised, where it can)
            out = [(p, 1)] + [(transitions[p, q], -1) for q in sorted(site.next)]
            if not site.raise_free:
                out.append((raised + len(raising), -1))
                raising.append(p)
            equations.append(out)
        # a call that did not return raised once (no ``try`` here: a raise leaves the function)
        equations.append([(raised + k, 1) for k in range(len(raising))] + [(self.node[EXIT], 1), (0, -1)])
        self.equations = equations
        self.size = raised + len(raising)
        self.where: list[list[int]] = [[] for _ in range(self.size)]
        for k, eq in enumerate(equations):
            for q, _ in eq:
                self.where[q].append(k)
        self.terms = sum(len(eq) for eq in equations)

    def determined(self, known: set[int]) -> bytearray:
        """Which quantities the equations determine from ``known`` (by substitution: an equation
        with one unknown left gives it)."""
        got = bytearray(self.size)
        for q in known:
            got[q] = 1
        left = [sum(1 for q, _ in eq if not got[q]) for eq in self.equations]
        ready = [k for k, n in enumerate(left) if n == 1]
        while ready:
            k = ready.pop()
            if left[k] != 1:
                continue
            u = next(q for q, _ in self.equations[k] if not got[q])
            got[u] = 1
            for j in self.where[u]:
                left[j] -= 1
                if left[j] == 1:
                    ready.append(j)
        return got

    def solved(self, known: dict[int, Expr]) -> dict[int, Expr]:
        """Each quantity determined from ``known``, as a sum over its bases (the order of
        ``determined``, with the arithmetic)."""
        values = dict(known)
        left = [sum(1 for q, _ in eq if q not in values) for eq in self.equations]
        ready = [k for k, n in enumerate(left) if n == 1]
        while ready:
            k = ready.pop()
            if left[k] != 1:
                continue
            eq = self.equations[k]
            u, coeff_u = next((q, c) for q, c in eq if q not in values)
            value: Expr = {}
            for q, c in eq:
                if q != u:
                    for base, b in values[q].items():
                        value[base] = value.get(base, 0) - coeff_u * c * b
            values[u] = {base: c for base, c in value.items() if c}
            for j in self.where[u]:
                left[j] -= 1
                if left[j] == 1:
                    ready.append(j)
        return values


def plan_for(flow: ProbeFlow) -> tuple[Plan, list[int]] | None:
    """The plan for ``flow`` and each site's field (``DERIVED`` where dropped; the entry's
    unused), or None where nothing can be dropped.

    Each try solves the whole system again (linear in its size), so the tries are bounded by a
    budget of work: in a long function only its most deeply nested lines are tried."""
    sites = flow.sites
    if len(sites) > _MAX_SITES:
        return None
    lines = list(range(1, len(sites)))
    candidates = sorted((k for k in lines if sites[k].depth > 0), key=lambda k: -sites[k].depth)
    system = _Flow(flow)
    if not candidates or not system.valid:
        return None
    counted = set(lines)
    fixed = {0, system.node[EXIT]}
    for k in candidates[: max(8, _WORK // system.terms)]:
        counted.discard(k)
        got = system.determined(fixed | counted)
        if not all(got[j] for j in lines):
            counted.add(k)
    if len(counted) == len(lines):
        return None
    fields = {k: n for n, k in enumerate(sorted(counted))}
    known = {0: {ENTRY: 1}, system.node[EXIT]: {RETURNED: 1}} | {k: {fields[k]: 1} for k in counted}
    solved = system.solved(known)
    rows: dict[int, Expr] = defaultdict(dict)
    for k in lines:
        total = rows[sites[k].row]
        for base, c in solved[k].items():
            total[base] = total.get(base, 0) + c
    plan_rows = tuple(
        (row, tuple(sorted((b, c) for b, c in expr.items() if c))) for row, expr in sorted(rows.items())
    )
    site_fields = [DERIVED] + [fields.get(k, DERIVED) for k in lines]
    return Plan(len(fields), plan_rows), site_fields


def derive(state: object, owner_of: Callable, planning_emitter: Callable) -> None:
    """The pass's work: read the function's probe flow, plan it, and relabel its line probes
    (``owner_of``, ``planning_emitter``: ``probes``' readers of a probe intrinsic).

    An IR this does not read as expected is left as it is (every line then counts): a profile
    is never refused for a count it could have derived. The relabelling is all or nothing."""
    if not exits_flushed(state.targetctx):
        return
    try:
        flow = read_probe_flow(state, owner_of)
        emitter = None if flow is None else planning_emitter(flow.sites[0].probe)
        planned = None if emitter is None else plan_for(flow)
        if planned is None:
            return
        plan, fields = planned
        plan_id = emitter.register_plan(plan)
        flow.relabel({k: encode(plan_id, fields[k]) for k in range(1, len(flow.sites))})
    except Exception:  # (see the docstring: nothing changed, nothing derived)
        return
