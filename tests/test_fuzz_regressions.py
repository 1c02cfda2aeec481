"""Mismatches the differential fuzzer found, minimised (functions in tests/fuzz/cases.py).

Each test profiles a real function from a source file on disk and checks the
result against the plain Numba call and CPython, and the hits against
line_profiler's on the Python function, over inputs that take every branch.
"""

import itertools

import pytest

import numba_lprun
from numba_lprun.instrument.line_events import backward_jumps_fire
from tests.conftest import hits_of, reference_hits
from tests.fuzz import cases as c


def check_all(func, arg_sets):
    """One profiler, run on each argument set: result == CPython == plain Numba, and
    the hits each run adds == line_profiler's for that call."""
    prof = numba_lprun.LineProfiler(func, sample_time=0.05)
    name = func.py_func.__name__
    before = {}
    for args in arg_sets:
        expected = func.py_func(*args)
        assert func(*args) == expected
        assert prof.runcall(func, *args) == expected
        total = hits_of(prof.get_stats(), name)
        added = {line: n - before.get(line, 0) for line, n in total.items() if n != before.get(line, 0)}
        before = total
        assert added == reference_hits(func, *args), args
    return prof


def line_of(func, text):
    """The line number of the first source line of ``func`` containing ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(func)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_literal_in_returned_tuple():
    check_all(c.literal_in_returned_tuple, [(3,), (-1,)])


@pytest.mark.parametrize(
    "func",
    [c.and_over_lines, c.or_over_lines_body_on_last_line],
    ids=lambda f: f.__name__,
)
def test_and_or_over_lines(func):
    check_all(func, itertools.product([5, 0], [1, 3]))


def test_names_over_lines():
    check_all(c.names_over_lines, itertools.product([0, 1], [0, 2]))


def test_mixed_boolean_test_over_lines():
    check_all(c.mixed_over_lines, itertools.product([-3, 0, 1, 2], [-3, 1, 2], [0, 1]))


def test_condition_on_the_line_after_the_header():
    prof = check_all(c.test_on_next_line, [(0,), (2,), (5,)])
    hits = hits_of(prof.get_stats(), "test_on_next_line")
    assert line_of(c.test_on_next_line, "if (") not in hits
    assert line_of(c.test_on_next_line, "while (") not in hits


def test_while_body_on_its_header_line():
    prof = check_all(c.while_body_on_header, [(3,)])
    hits = hits_of(prof.get_stats(), "while_body_on_header")
    # once per iteration under settrace (backward jumps fire), once in all under sys.monitoring
    expected = 3 if backward_jumps_fire() else 1
    assert hits[line_of(c.while_body_on_header, "while k < n")] == expected
    check_all(c.while_body_on_header, [(0,), (1,), (2,)])


@pytest.mark.parametrize(
    "func",
    [c.while_test_over_lines, c.while_or_body_on_last_line, c.while_continue_test_over_lines],
    ids=lambda f: f.__name__,
)
def test_while_test_over_lines(func):
    check_all(func, itertools.product([0, 2, 4], [0, 1, 3, 12]))


def test_while_chained_test_over_lines():
    import numpy as np

    check_all(c.while_chained_test_over_lines, [(0, np.zeros(1)), (2, np.zeros(0)), (7, np.zeros(13))])


def test_branchy_operand_over_lines():
    check_all(c.branchy_operand_over_lines, itertools.product([-1, 0, 3, 20], [0, 1, 5]))


def test_for_iterable_on_the_next_line():
    import numpy as np

    check_all(c.for_iterable_on_next_line, [(np.arange(3.0), 2), (np.zeros(0), 0)])


def test_one_line_branch_in_a_statement_over_lines():
    check_all(c.one_line_branch_in_statement_over_lines, itertools.product([1, 4], [-2, 3]))


def test_assert_over_lines():
    import numpy as np

    check_all(c.assert_over_lines, [(np.zeros(2), 3), (np.ones(1), -1)])


def test_constant_operand_still_pruned_in_the_twin():
    check_all(c.pruned_constant_test_over_lines, [(1,), (9,)])
