"""Published Numba packages' own test suites, plain and under ``nlprun --source PKG``: the per-test
outcomes and the exit status must agree (issue 53).

Each package is installed from PyPI (``pip install PKG==VERSION``) into the interpreter that runs
this script, never copied into this repository; its tests are the ones its wheel ships
(``--pyargs``), or, where the wheel ships none, the ones in its source distribution from PyPI
(``pip download --no-binary``, unpacked in a temporary folder). Both runs are fresh processes
with their own Numba cache; ``benchmarks/numba_suite.py`` says how outcomes are compared.

    python benchmarks/package_suites.py                   # every package below, a table
    python benchmarks/package_suites.py numbagg resampy   # those packages
    python benchmarks/package_suites.py --show pyts       # and nlprun's output where they differ

Exit status 1 when any package's outcomes differ.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.suite_outcomes import header, report, run_pytest


@dataclass(frozen=True)
class Suite:
    """A package's test suite: its PyPI name and version, what ``--source`` names, and how its
    tests are found: ``pyargs`` (shipped in the wheel) or ``folder`` (in its sdist)."""

    name: str
    version: str
    source: str
    pyargs: str | None = None  # the test package, where the wheel ships it
    folder: str | None = None  # the tests folder of the sdist, where it does not
    pytest_args: tuple[str, ...] = ()


SUITES = (
    Suite("numba-stats", "1.12.0", "numba_stats", folder="tests", pytest_args=("-o", "addopts=")),
    # numbagg's whole suite runs for over an hour here: its matrix functions (gufuncs over helpers)
    Suite("numbagg", "0.9.6", "numbagg", pyargs="numbagg.test.test_matrix_functions"),
    Suite("resampy", "0.4.3", "resampy", folder="tests", pytest_args=("-o", "addopts=")),
    Suite("pyts", "0.14.1", "pyts", pyargs="pyts"),
)


def _sdist_tests(suite: Suite, into: str) -> str:
    """The sdist of ``suite`` from PyPI, unpacked in ``into``: the folder its tests run from."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         f"{suite.name}=={suite.version}", "-d", into],
        check=True,
    )  # fmt: skip
    archive = glob.glob(os.path.join(into, "*.tar.gz"))[0]
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return glob.glob(os.path.join(into, f"{suite.name.replace('-', '_')}-{suite.version}"))[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", help="PyPI names (default: all)")
    parser.add_argument("--show", action="store_true", help="print nlprun's output where outcomes differ")
    opts = parser.parse_args(argv)
    suites = [s for s in SUITES if not opts.packages or s.name in opts.packages]
    print(header("package", 22))
    differ = 0
    for suite in suites:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", f"{suite.name}=={suite.version}"], check=True
        )
        with tempfile.TemporaryDirectory(prefix="package-suite-") as work:
            cwd = _sdist_tests(suite, work) if suite.folder else None
            args = [*suite.pytest_args, suite.folder] if suite.folder else ["--pyargs", suite.pyargs]
            plain = run_pytest(args, None, cwd=cwd)
            profiled = run_pytest(args, suite.source, cwd=cwd)
        differ += report(f"{suite.name} {suite.version}", 22, plain, profiled, opts.show)
    print(f"{len(suites) - differ} of {len(suites)} packages keep every test's outcome and exit status")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
