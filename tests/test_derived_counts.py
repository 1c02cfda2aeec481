"""Lines whose counts follow from others' are derived, not counted (``instrument.derived_counts``):
the hits stay line_profiler's on every way out of a loop, a raise on an iteration included, and
the planner derives only what the flow determines."""

import line_profiler
import numpy as np
import pytest

import numba_lprun
from numba_lprun.instrument.clock import current_clock
from numba_lprun.instrument.derived_counts import DERIVED, ENTRY, RETURNED, plan_for
from numba_lprun.instrument.probes import LINE, owner_of
from numba_lprun.internals import EXIT, ProbeFlow, ProbeSite
from numba_lprun.run.targets import cached_target
from tests import derived_kernels as K
from tests.conftest import hits_of

A = K.data()
IDX_OUT = np.array([0, 2, 3, 5, 99, 1])  # index 99 of a 50-element array: IndexError on the 5th
CASES = [
    (K.collatz_steps, (300,), None),
    (K.arms_then_helper, (A,), ValueError),  # a[i] odd and < 5: the helper raises
    (K.arms_then_helper, (A * 2 + 6,), None),
    (K.raise_statement, (A, 15), ValueError),
    (K.raise_statement, (A, 100), None),
    (K.raise_with_value, (A, 15), ValueError),
    (K.divides, (A,), ZeroDivisionError),  # a[i] == 3
    (K.divides, (A[A != 3],), None),
    (K.indexes, (A, IDX_OUT), IndexError),
    (K.indexes, (A, IDX_OUT[:4]), None),
    (K.ways_out, (A, 7), None),  # break
    (K.ways_out, (np.array([2, 3, -1, 5]), 99), None),  # return inside the loop
    (K.ways_out, (A, 99), None),  # the loop's else
    (K.nested, (np.random.default_rng(1).random((20, 30)),), None),
    (K.recurse, (3, A), None),
    (K.numpy_errors, (A - 5.0,), None),
    (K.windows, (A, 4, 1), None),
    (K.windows, (A - 3, 4, 1), ValueError),  # a window summing below 0: the helper raises
    (K.windows, (A, 4, 0), ValueError),  # a slice's step of 0
]


def reference(func, args):
    """line_profiler's hits for the Python function (recursive calls to it too), and its result
    or error."""
    py_func = func.py_func
    prof = line_profiler.LineProfiler(py_func)
    py_func.__globals__[py_func.__name__] = py_func
    try:
        outcome = prof.runcall(py_func, *args)
    except Exception as exc:
        outcome = type(exc)
    finally:
        py_func.__globals__[py_func.__name__] = func
    return hits_of(prof.get_stats(), py_func.__name__), outcome


def profiled(func, args, **options):
    prof = numba_lprun.LineProfiler(func, sample_time=0.05, **options)
    try:
        outcome = prof.runcall(func, *args)
    except Exception as exc:
        outcome = type(exc)
    return hits_of(prof.get_stats(), func.py_func.__name__), outcome


@pytest.mark.parametrize("options", [{"timing": False}, {}], ids=["hits", "sampled"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].py_func.__name__}-{c[2] and c[2].__name__}")
def test_derived_hits_equal_line_profilers_on_every_way_out(case, options):
    func, args, raises = case
    expected_hits, expected = reference(func, args)
    assert expected is raises or (raises is None and not isinstance(expected, type))
    hits, outcome = profiled(func, args, **options)
    if raises is None:
        assert np.array_equal(outcome, expected)
    else:
        assert outcome is raises
    assert hits == expected_hits


def plans_of(func):
    """The derivation plans the counting twin of ``func`` was compiled with (one per signature)."""
    twin = cached_target(func, current_clock().kind).twins["counting"]
    return owner_of(twin.dispatcher.py_func.__globals__[LINE])[1].plans


def test_a_loops_lines_are_derived_where_the_flow_determines_them():
    """The Collatz loop counts fewer lines than it has probes: the line after the ``if`` is the
    arms' sum, one arm the ``if`` less the other (it ran 1.2x the plain loop counting each)."""
    prof = numba_lprun.LineProfiler(K.collatz_steps, timing=False)
    prof.runcall(K.collatz_steps, 30)
    (plan,) = plans_of(K.collatz_steps)
    derived_rows = [row for row, terms in plan.rows if len(terms) != 1 or terms[0][1] != 1]
    assert derived_rows and plan.n_fields < len(plan.rows) + 2


def test_no_plan_where_a_loop_cannot_be_read():
    """A ``prange`` loop (lowered apart, flushed per iteration) is counted line by line."""
    from numba import njit, prange

    @njit(parallel=True)
    def rows(a):
        out = np.zeros(a.shape[0])
        for i in prange(a.shape[0]):
            if a[i] > 0.5:
                out[i] = 1.0
            else:
                out[i] = 2.0
        return out

    a = np.random.default_rng(0).random(100)
    prof = numba_lprun.LineProfiler(rows, timing=False)
    prof.runcall(rows, a)
    assert hits_of(prof.get_stats(), "rows")[rows.py_func.__code__.co_firstlineno + 5] == int((a > 0.5).sum())


def site(row, depth, nxt, raise_free=True, kind="line"):
    return ProbeSite(kind, None, row, depth, set(nxt), raise_free)


def collatz_flow(arm_raises=False):
    """The probe flow of a ``while`` over an ``if``/``else`` (the Collatz loop's shape): sites 0
    enter, 1 before the loop, 2 the ``if``, 3 and 4 the arms, 5 the line after, 6 the return."""
    sites = [
        site(-1, 0, [1], kind="enter"),
        site(0, 0, [2, 6]),
        site(1, 1, [3, 4]),
        site(2, 1, [5], raise_free=not arm_raises),
        site(3, 1, [5]),
        site(4, 1, [2, 6]),
        site(5, 0, [EXIT]),
    ]
    return ProbeFlow(sites, lambda values: None)


def test_the_planner_derives_a_joins_and_an_arms_count():
    plan, fields = plan_for(collatz_flow())
    assert fields.count(DERIVED) - 1 >= 2  # (the entry's field is unused)
    assert fields[3] == DERIVED or fields[4] == DERIVED  # one arm: the if less the other


def simulated(flow, plan, fields, rng):
    """One random run through ``flow`` (a raise possible after any site that is not raise-free):
    each row's true count, and the count the plan gives from the counted sites'."""
    sites, truth, taken = flow.sites, {}, [0] * len(flow.sites)
    k, returned = 0, False
    for _ in range(200):
        taken[k] += 1
        if k:
            truth[sites[k].row] = truth.get(sites[k].row, 0) + 1
        if not sites[k].raise_free and rng.random() < 0.05:
            break  # raised
        nxt = sorted(sites[k].next)
        k = nxt[rng.integers(len(nxt))]
        if k == EXIT:
            returned = True
            break
    else:
        return None  # a run too long to finish: not drawn
    counted = {fields[k]: taken[k] for k in range(1, len(sites)) if fields[k] != DERIVED}
    bases = {ENTRY: 1, RETURNED: int(returned), **counted}
    given = {row: sum(c * bases[b] for b, c in terms) for row, terms in plan.rows}
    return {r: n for r, n in truth.items()}, {r: n for r, n in given.items() if n or r in truth}


@pytest.mark.parametrize("arm_raises", [False, True])
def test_the_planners_counts_are_exact_on_random_runs_raises_included(arm_raises):
    """Runs drawn at random through the Collatz-shaped flow, leaving by a raise where a site can
    raise: the plan's counts equal the true counts on every run (exact arithmetic: no odds)."""
    flow = collatz_flow(arm_raises)
    plan, fields = plan_for(flow)
    rng = np.random.default_rng(0)
    runs = [simulated(flow, plan, fields, rng) for _ in range(2000)]
    runs = [r for r in runs if r is not None]
    assert len(runs) > 500
    for truth, given in runs:
        assert given == truth
    # one site able to raise costs no count: it raised once where the call did not return
    assert fields == plan_for(collatz_flow(False))[1]


def test_a_loop_whose_lines_can_raise_counts_one_line_fewer():
    """A loop of two lines that can each raise (an allocation, a helper's call) and its ``for``
    line (probed once before the loop, once after each iteration, as in Numba's IR): two counts,
    not three. Where the call did not return, one raise left it, so how often the second line
    raised follows from the first's and the ``for`` line's counts."""
    flow = ProbeFlow(
        [
            site(-1, 0, [1], kind="enter"),
            site(0, 0, [2], raise_free=False),
            site(1, 0, [3, 6]),
            site(2, 1, [4], raise_free=False),
            site(3, 1, [5], raise_free=False),
            site(1, 1, [3, 6]),
            site(4, 0, [EXIT]),
        ],
        lambda values: None,
    )
    plan, fields = plan_for(flow)
    assert sum(fields[k] != DERIVED for k in (3, 4, 5)) == 2
    rng = np.random.default_rng(1)
    runs = [r for r in (simulated(flow, plan, fields, rng) for _ in range(2000)) if r is not None]
    assert len(runs) > 500 and all(given == truth for truth, given in runs)


def random_flow(rng):
    """A random probe flow: 2-9 line sites, each going on to 1-3 sites or the return, some able
    to raise, at random loop depths."""
    n = int(rng.integers(3, 11))
    sites = [site(-1, 0, [1], kind="enter")]
    for _ in range(1, n):
        choices = [*range(1, n), EXIT]
        nxt = set(rng.choice(choices, size=int(rng.integers(1, 4))).tolist())
        sites.append(site(int(rng.integers(0, n)), int(rng.integers(0, 3)), nxt, bool(rng.random() < 0.7)))
    return ProbeFlow(sites, lambda values: None)


def test_the_planners_counts_are_exact_on_random_flows():
    """Random flows, random runs through each: wherever the planner derives, its counts equal the
    true counts on every run (exact integer arithmetic: no false-failure odds)."""
    rng = np.random.default_rng(20261206)
    planned = 0
    for _ in range(300):
        flow = random_flow(rng)
        found = plan_for(flow)
        if found is None:
            continue
        planned += 1
        plan, fields = found
        for _ in range(30):
            run = simulated(flow, plan, fields, rng)
            if run is not None:
                truth, given = run
                assert given == truth, (flow, plan, fields)
    assert planned > 50
