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
import collections
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

#: The modules issue 52 asks to keep their outcomes (``TestBuiltins`` only, of test_builtins).
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
)


@dataclass
class Outcomes:
    """One run of one module: each test's outcome, the wall time, and what nlprun printed."""

    tests: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    status: int = 0
    output: str = ""

    def counts(self) -> str:
        found = collections.Counter(self.tests.values())
        return ", ".join(f"{n} {what}" for what, n in sorted(found.items())) or "no tests"


def _outcomes(xml_path: str) -> dict[str, str]:
    """test id -> passed / failed / error / skipped, from pytest's JUnit XML."""
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return {}
    found = {}
    for case in root.iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        found[name] = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(
            kinds[0] if kinds else "", "passed"
        )
    return found


def run_module(spec: str, profiled: bool, python: str = sys.executable, timeout: float = 3600) -> Outcomes:
    """Run one module's tests (``module`` or ``module::Class``) in a fresh process."""
    module, _, klass = spec.partition("::")
    target = f"numba.tests.{module}" + (f"::{klass}" if klass else "")
    return run_pytest(["--pyargs", target], "numba.tests" if profiled else None, python, timeout=timeout)


def run_pytest(
    args: list[str],
    source: str | None,
    python: str = sys.executable,
    cwd: str | None = None,
    timeout: float = 3600,
) -> Outcomes:
    """pytest with ``args`` in a fresh process (in ``cwd``, or a folder of its own), plain or, with
    ``source``, under ``nlprun --source SOURCE -z``; each test's outcome from its JUnit XML."""
    with tempfile.TemporaryDirectory(prefix="suite-outcomes-") as work:
        xml_path = os.path.join(work, "out.xml")
        pytest_args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
        pytest_args += ["-n", "0"] if _has_xdist(python) else []
        pytest_args += [f"--junitxml={xml_path}", *args]
        if source is not None:
            command = [python, "-m", "numba_lprun", "--source", source, "-z", *pytest_args]
        else:
            command = [python, *pytest_args]
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(work, "numba-cache"))
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=cwd or work, env=env, capture_output=True, text=True, timeout=timeout
        )
        seconds = time.perf_counter() - started
        return Outcomes(_outcomes(xml_path), seconds, done.returncode, done.stdout + done.stderr)


def _has_xdist(python: str) -> bool:
    probe = [python, "-c", "import xdist"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def differences(plain: Outcomes, profiled: Outcomes) -> list[str]:
    """The tests whose outcome differs, as ``name: plain -> profiled``."""
    names = sorted(set(plain.tests) | set(profiled.tests))
    return [
        f"{name}: {plain.tests.get(name, 'absent')} -> {profiled.tests.get(name, 'absent')}"
        for name in names
        if plain.tests.get(name) != profiled.tests.get(name)
    ]


def functions_profiled(output: str) -> int:
    """How many functions' tables nlprun printed."""
    return len(re.findall(r"^Function: ", output, flags=re.MULTILINE))


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
    print(f"{'module':<34} {'plain':<28} {'profiled':<28} {'funcs':>5} {'plain s':>8} {'nlprun s':>8}")
    differ = 0
    for spec in modules:
        plain, profiled = run_module(spec, False), run_module(spec, True)
        diff = differences(plain, profiled)
        if plain.status != profiled.status and not diff:
            diff = [f"exit status {plain.status} -> {profiled.status}"]
        differ += bool(diff)
        funcs = functions_profiled(profiled.output)
        row = f"{spec:<34} {plain.counts():<28} {profiled.counts():<28} {funcs:>5}"
        print(f"{row} {plain.seconds:>8.1f} {profiled.seconds:>8.1f}", flush=True)
        for line in diff[:5]:
            print(f"    {line}")
        if len(diff) > 5:
            print(f"    ... and {len(diff) - 5} more")
        if diff and opts.show:
            print(profiled.output[-6000:])
    print(f"{len(modules) - differ} of {len(modules)} modules keep every test's outcome")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
