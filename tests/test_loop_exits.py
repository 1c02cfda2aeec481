"""Every way out of a loop keeps its hits: a counting twin holds a loop's hits in registers
and adds them to the counters at the function's exits (``instrument.exits``), so a ``break``,
a ``return`` inside the loop, an exception raised on the k-th iteration, a generator left
suspended mid-loop and an inlined helper's early return must each leave line_profiler's
hits, in the hits-only profile and in the default (sampled) one."""

from itertools import islice

import line_profiler
import numpy as np
import pytest

import numba_lprun
from tests import loop_exit_kernels as K
from tests.conftest import hits_of

MODES = {"hits only": {"timing": False, "repeat": False}, "default": {"repeat": False}}
A = np.array([1.0, 2.0, 3.0, 9.0, 4.0, 5.0])
GRID = np.array([[1.0, 2.0, 7.0], [-1.0, 0.0, 0.0], [3.0, 4.0, 5.0], [6.0, 1.0, 1.0]])


def reference(functions, call):
    """line_profiler's hits of ``functions`` over ``call(interpreted)``, where ``interpreted``
    maps each function's name to its Python function (which call each other's Python
    functions too), and the exception ``call`` raised, if any."""
    names = vars(K)
    saved = {f.__name__: names[f.__name__] for f in (g.py_func for g in functions)}
    profiler = line_profiler.LineProfiler(*(f.py_func for f in functions))
    raised = None
    names.update({name: jitted.py_func for name, jitted in saved.items()})
    try:
        profiler.runcall(call, {name: f.py_func for name, f in saved.items()})
    except Exception as exc:
        raised = exc
    finally:
        names.update(saved)
    stats = profiler.get_stats()
    return {f.py_func.__name__: hits_of(stats, f.py_func.__name__) for f in functions}, raised


def profiled(functions, call, mode):
    prof = numba_lprun.LineProfiler(*functions, **MODES[mode])
    raised = None
    try:
        prof.runcall(call, {f.py_func.__name__: f for f in functions})
    except Exception as exc:
        raised = exc
    stats = prof.get_stats()
    return {f.py_func.__name__: hits_of(stats, f.py_func.__name__) for f in functions}, raised


CASES = {
    "break": ([K.break_when_over], lambda f: f["break_when_over"](A, 5.0)),
    "return inside the loop": ([K.return_from_inside], lambda f: f["return_from_inside"](A, 10.0)),
    "raise on the 4th iteration": (
        [K.checked_sum],
        lambda f: f["checked_sum"](np.array([1.0, 4.0, 9.0, -1.0, 16.0])),
    ),
    "continue and an inner break": ([K.continue_and_break], lambda f: f["continue_and_break"](GRID)),
    "generator left mid-loop": ([K.squares], lambda f: list(islice(f["squares"](10), 3))),
    "a helper's early return, inlined": (
        [K.density, K.compact],
        lambda f: f["density"](np.linspace(-2.0, 2.0, 41), 0.25),
    ),
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("case", list(CASES))
def test_every_way_out_of_a_loop_keeps_line_profilers_hits(case, mode):
    functions, call = CASES[case]
    want, want_raised = reference(functions, call)
    got, got_raised = profiled(functions, call, mode)
    assert type(got_raised) is type(want_raised), (got_raised, want_raised)
    assert (want_raised is not None) == case.startswith("raise"), want_raised
    assert got == want
