"""Profile a package while its own test suite runs: ``nlprun --source PKG -m pytest --pyargs
PKG.tests...``. The package is other people's code, installed from PyPI as its users install it
(QuantEcon.py, ``quantecon`` in the ``test`` extra), with the tests its wheel ships: those of its
root finding and scalar maximization (``quantecon.optimize``). The suite's outcome is the same
with and without the profiler, and every kernel that ran has a table whose hits equal
line_profiler's on the Python functions over the same test run. The run without the profiler
is that reference run (JIT disabled, so every kernel runs as written): a plain jitted run of
the suite would cost another 10 s of Numba compiles to say the same."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import line_profiler
import pytest

quantecon = pytest.importorskip(
    "quantecon", reason="QuantEcon.py is not installed (pip install -e '.[test]' installs it)"
)

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "quantecon.optimize"
#: The package's own test modules that run (the wheel ships them inside the package).
SUITE = [f"{PACKAGE}.tests.test_root_finding", f"{PACKAGE}.tests.test_scalar_max"]
PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", *SUITE]


def run(args, cwd, **env):
    """``python ARGS`` in ``cwd``, where no ini file sets pytest's options (the package's tests
    run from their own rootdir), with this repository importable (``tests.package_reference``)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    environment = {**os.environ, "PYTHONPATH": path, **env}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=environment, timeout=300
    )


def outcome(stdout: str) -> str:
    """pytest's closing counts ("14 passed")."""
    found = re.findall(r"^(\d+ passed.*?) in [\d.]+s", stdout, re.M)
    assert found, stdout[-2000:]
    return found[-1]


def test_a_packages_own_suite_profiled_with_source(tmp_path):
    lprof = tmp_path / "suite.lprof"
    profiled = run(
        # --hits: what is compared is hits (the sampled view of scripts is tested in test_one_run)
        ["-m", "numba_lprun", "--hits", "--source", PACKAGE, "-z", "-D", str(lprof), *PYTEST],
        tmp_path,
    )
    assert profiled.returncode == 0, profiled.stdout[-3000:] + profiled.stderr[-3000:]
    reference = tmp_path / "reference.json"
    ref_run = run(
        ["-m", "tests.package_reference", PACKAGE, str(reference), *PYTEST[2:]],
        tmp_path,
        NUMBA_DISABLE_JIT="1",
    )
    assert ref_run.returncode == 0, ref_run.stdout[-3000:] + ref_run.stderr[-3000:]
    assert outcome(profiled.stdout) == outcome(ref_run.stdout)
    expected = json.loads(reference.read_text())["hits"]
    got = {}
    for (filename, _, name), rows in line_profiler.load_stats(str(lprof)).timings.items():
        counted = {str(line): n for line, n, _ in rows if n}
        if counted:
            got[f"{os.path.basename(filename)}:{name.rsplit('.', 1)[-1]}"] = counted
    # every jitted function that ran: the package's kernels, and those its test modules define
    kernels = {"root_finding.py:brentq", "root_finding.py:newton", "scalar_maximization.py:brent_max"}
    assert kernels <= set(got) and any(key.startswith("test_root_finding.py:") for key in got), sorted(got)
    for key in sorted(got):
        assert got[key] == expected.get(key), key
    assert "Function:   brentq at line" in profiled.stdout


def test_source_in_the_magic_profiles_a_package_named_once(ipshell):
    """``%nlprun --source PKG``: every jitted function the package defines, with none named."""
    cell = "import quantecon.optimize as qe_opt\nfrom numba import njit\n"
    cell += "@njit\ndef qe_f(x):\n    return x * x - 2.0\n"
    assert ipshell.run_cell(cell).success
    line = f"-r -z --hits --source {PACKAGE} r = qe_opt.brentq(qe_f, 0.0, 2.0)"
    prof = ipshell.run_line_magic("nlprun", line)
    assert abs(ipshell.user_ns["r"].root - 2**0.5) < 1e-9
    names = {f.source.name for f in prof.profile.functions if f.counts.hits}
    assert {"brentq", "_results"} <= names and "qe_f" not in names  # the package's, not the cell's
