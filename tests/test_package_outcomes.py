"""A published package's own tests keep their outcome under ``nlprun --source PKG`` (issue 53).

numbagg (from PyPI, ``numbagg`` in the ``test`` extra, with the tests its wheel ships): its
matrix functions are gufuncs over jitted helpers (``move_corrmatrix`` calls
``_leading_rows_shift``), the kind of code whose helpers once showed "not called" where the
gufunc had compiled first. Each test's outcome and the exit status are compared with a plain
run (``tests/suite_outcomes.py``); QuantEcon.py's suite is compared hit by hit in
``tests/test_package_suite.py``. ``benchmarks/package_suites.py`` runs four packages' suites.
"""

import pytest

from tests.suite_outcomes import differences, run_pytest

pytest.importorskip("numbagg", reason="numbagg is not installed (pip install -e '.[test]' installs it)")
pytest.importorskip("pandas", reason="numbagg's tests need pandas (the test extra installs it)")

# the moving matrices' tests (move_corrmatrix, move_covmatrix over _leading_rows_shift), a sixth
# of the module's 107 tests: the whole module took a minute of CI for the same gufuncs and helpers
SUITE = ["--pyargs", "numbagg.test.test_matrix_functions", "-k", "TestMovingMatrices"]


def test_numbaggs_matrix_functions_keep_their_outcome_and_count_their_helpers():
    plain = run_pytest(SUITE, None, timeout=600)
    assert plain.tests and plain.status == 0, plain.output[-3000:]
    profiled = run_pytest(SUITE, "numbagg", timeout=600)
    assert differences(plain, profiled) == [], profiled.output[-4000:]
    assert profiled.status == plain.status
    text = profiled.output
    assert "Function:   _leading_rows_shift at line" in text, text[-3000:]
    table = text.split("Function:   _leading_rows_shift at line", 1)[1].split("Timer unit", 1)[0]
    assert "not called during the run" not in table
