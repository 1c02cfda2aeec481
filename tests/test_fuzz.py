"""Differential fuzzing: random jitted functions, profiled, against CPython and line_profiler.

Hypothesis writes small Numba-compatible functions (tests/fuzz/gen.py: nested
``for`` and ``while`` loops with bounded trip counts, if/elif/else, break,
continue, early returns, loop else clauses, several statements on one line,
statements and conditions spread over lines, int, float and 1-D array arithmetic,
calls to jitted helpers, statements that raise on some inputs) and runs each on
random inputs. For every program the plain Numba compile accepts, the CPython
result, the plain Numba result and the instrumented result (``LineProfiler.runcall``)
must agree (or raise the same exception), and numba_lprun's hits must equal
line_profiler's on ``target.py_func``, call by call. Programs Numba rejects are
filtered out (``hypothesis.reject``) and counted; run with ``-s`` to see the
counts. The source is registered in ``linecache`` under a fake file name,
as IPython does for cells, so ``inspect.getsource`` reads it.

The default run checks a fixed, derandomized set of 8 examples (about 13 s on
two cores: each example compiles the original, a plain and an instrumented
twin); what the fuzzer finds, it finds in campaigns (below), and each find stays
as a regression test, so the default run guards the mechanism, not
the search. Environment variables for longer runs:

* ``NUMBA_LPRUN_FUZZ_EXAMPLES=N``: check N examples instead of 8;
* ``NUMBA_LPRUN_FUZZ_SEED=S``: draw from random seed S instead of the fixed
  derandomized sequence (use different seeds for parallel or repeated runs).

A failure is shrunk by Hypothesis (slow: every step compiles) and printed with the
program's numbered lines, the arguments and the hits that differ. For campaigns
of thousands of examples use ``python -m tests.fuzz.campaign N SEED DIR``, which
does not shrink, keeps going, and saves each failing program to DIR. Minimised
failures live on as plain tests in test_fuzz_regressions.py (tests/fuzz/cases.py).

Known limitations (the generator does not write these; ``campaign ... risky``
does, and counts their failures apart): an expression that *branches over lines*
has line events that depend on the data, and numba_lprun counts only its first
line. That is ``and``/``or``, a conditional expression or a chained comparison
spread over lines (checked against line_profiler on CPython 3.11)::

    y = (x % 3 and      # x % 3 != 0: CPython fires lines 1, 2, 1; numba_lprun 1
         x % 5)
    z = (x if c         # c false: CPython fires 1, 2, 1; numba_lprun 1
         else y)
    w = (0 <= x <       # 0 <= x: CPython fires 1, 2, 1; numba_lprun 1
         c)

also as (an operand of) the test of an ``if`` or ``while``. As a test,
``and``/``or``/``not`` over lines are handled exactly (each operand's lines fire
as it is evaluated), and branches that stay within one line are fine anywhere.
An ``assert`` is counted as it passes (one that fails raises out of the function).

A statement spread over lines fires its line events before it runs, all of them: one that
raises part-way counts the events after the raising operation as if it had completed
(found at 2,000 examples)::

    g = b[len(b)::((len(b) -      # step 0: CPython fires 1, 2, 1, 2, 1 and raises;
             len(b))) % 3].sum()  # numba_lprun 1, 2, 1, 2, 1, 2, 1 (``.sum`` and its call)

The events before the first raising operation are exact; a statement on one line is exact.
"""

import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.fuzz import harness
from tests.fuzz.gen import inputs, programs

EXAMPLES = int(os.environ.get("NUMBA_LPRUN_FUZZ_EXAMPLES", "8"))
SEED = os.environ.get("NUMBA_LPRUN_FUZZ_SEED")


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    stats = harness.STATS
    total = stats["checked"] + stats["rejected by numba"]
    print(
        f"\nfuzz: {stats['checked']} programs checked, {stats['rejected by numba']} of {total} "
        "rejected by Numba"
    )


def _fuzz(test):
    test = settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=SEED is None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )(test)
    return seed(int(SEED))(test) if SEED is not None else test


@_fuzz
@given(source=programs(), arg_sets=st.lists(inputs(), min_size=1, max_size=3), timing=st.booleans())
def test_random_program_matches_cpython_and_line_profiler(source, arg_sets, timing):
    harness.check_program(source, arg_sets, timing)
