"""Numba's own test suite, run plain and under ``nlprun --source``: the per-test outcomes must agree.

Numba's tests are the fullest description of what Numba code means (closures,
generators, recursion, exceptions, literal dispatch, records, explicit signatures,
object-mode blocks, caching). Each test module of the installed wheel (``numba.tests``)
runs twice in fresh processes: ``python -m pytest --pyargs numba.tests.MODULE`` and
``nlprun --source numba.tests -z -m pytest --pyargs numba.tests.MODULE`` (the whole test
package, so the kernels its tests import from the ``*_usecases`` modules count too), each
writing pytest's JUnit XML. A test whose outcome differs (passed, failed, error, skipped)
is a case where the profile changed what the program computed, raised or warned.

    python benchmarks/numba_suite.py                  # the modules of issue 52, a table
    python benchmarks/numba_suite.py test_closure ... # those modules
    python benchmarks/numba_suite.py --all            # every numba.tests.test_* module (hours)

Prints, per module: the plain and profiled outcome counts, the tests whose outcome
differs (up to 5 named), the functions profiled, and both wall times. The exit status
is 1 when any outcome differs. ``tests/test_numba_suite.py`` runs a subset in the suite.
"""

from __future__ import annotations

import argparse
import os
import pkgutil
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.suite_outcomes import header, report, run_numba_module

#: The modules issues 52 and 64 ask to keep their outcomes (``TestBuiltins`` only, of test_builtins).
MODULES = (
    "test_closure",
    "test_generators",
    "test_try_except",
    "test_exceptions",
    "test_dicts",
    "test_range",
    "test_optional",
    "test_recursion",
    "test_literal_dispatch",
    "test_record_dtype",
    "test_withlifting",
    "test_jitclasses",
    "test_builtins::TestBuiltins",
    "test_looplifting",
    "test_dictobject",  # issue 64: its NRT leak checks (a typed dict kept alive by the run's compile records)
)


def all_modules() -> list[str]:
    import numba.tests

    return sorted(m.name for m in pkgutil.iter_modules(numba.tests.__path__) if m.name.startswith("test_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="numba.tests modules (default: issue 52's)")
    parser.add_argument("--all", action="store_true", help="every numba.tests.test_* module")
    parser.add_argument("--show", action="store_true", help="print nlprun's output of modules that differ")
    opts = parser.parse_args(argv)
    modules = all_modules() if opts.all else (opts.modules or list(MODULES))
    print(header("module", 34))
    differ = 0
    for spec in modules:
        plain, profiled = run_numba_module(spec, False), run_numba_module(spec, True)
        differ += report(spec, 34, plain, profiled, opts.show)
    print(f"{len(modules) - differ} of {len(modules)} modules keep every test's outcome")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
