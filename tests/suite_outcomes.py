"""Run a test suite with pytest, plain and under ``nlprun --source``, and compare each test's outcome.

Shared by ``tests/test_numba_suite.py`` (a subset of Numba's own tests, in the suite) and the
benchmark-like scripts that run whole suites (``benchmarks/numba_suite.py``,
``benchmarks/package_suites.py``). A test whose outcome differs (passed, failed, error,
skipped) is one where the profile changed what the program computed, raised or warned.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field


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


def run_numba_module(
    spec: str, profiled: bool, python: str = sys.executable, timeout: float = 3600
) -> Outcomes:
    """Run one module of Numba's own tests (``module`` or ``module::Class``) in a fresh process,
    under ``nlprun --source numba.tests`` when ``profiled`` (the whole test package, so the kernels
    its tests import from the ``*_usecases`` modules count too)."""
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


def header(first: str, width: int) -> str:
    """The table's first line: ``first`` (what each row is), the outcome counts, the functions
    profiled and both wall times."""
    return f"{first:<{width}} {'plain':<30} {'profiled':<30} {'funcs':>5} {'plain s':>8} {'nlprun s':>8}"


def report(label: str, width: int, plain: Outcomes, profiled: Outcomes, show: bool = False) -> bool:
    """Print a row of the table (and, below it, the tests whose outcome differs, up to five, and
    with ``show`` what nlprun printed); whether anything differs, the exit status included."""
    diff = differences(plain, profiled)
    if plain.status != profiled.status:
        diff.append(f"exit status {plain.status} -> {profiled.status}")
    funcs = functions_profiled(profiled.output)
    row = f"{label:<{width}} {plain.counts():<30} {profiled.counts():<30} {funcs:>5}"
    print(f"{row} {plain.seconds:>8.1f} {profiled.seconds:>8.1f}", flush=True)
    for line in diff[:5]:
        print(f"    {line}")
    if len(diff) > 5:
        print(f"    ... and {len(diff) - 5} more")
    if diff and show:
        print(profiled.output[-6000:])
    return bool(diff)
