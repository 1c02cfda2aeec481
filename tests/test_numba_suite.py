"""Numba's own tests keep their outcome under ``nlprun --source numba.tests`` (issue 52).

A subset of Numba's test modules, from the installed wheel, run plain and profiled in fresh
processes, each test's outcome compared (``tests/suite_outcomes.py``): the closures that call
themselves or a sibling defined after them, recursion (mutual, through closures), and the
objmode blocks cached with ``cache=True`` (their cache hits). The whole list of issue 52 runs in
``benchmarks/numba_suite.py`` (about 10 minutes).
"""

import pytest

from tests.suite_outcomes import differences, run_numba_module

SUBSET = ("test_closure", "test_recursion", "test_withlifting::TestLiftObjCaching")


@pytest.mark.parametrize("module", SUBSET)
def test_numbas_own_tests_keep_their_outcome_under_the_profiler(module):
    plain = run_numba_module(module, profiled=False, timeout=600)
    assert plain.tests, plain.output[-3000:]
    profiled = run_numba_module(module, profiled=True, timeout=600)
    assert differences(plain, profiled) == [], profiled.output[-4000:]
    assert plain.status == profiled.status
    assert "Function:" in profiled.output  # the kernels were profiled, not left alone
