"""Profile a package while its own test suite runs: ``nlprun --source PKG -m pytest --pyargs
PKG``. The package is other people's code (QuantEcon.py's root finding and scalar maximization,
``tests/packages/qe_optimize``, MIT), with its own tests: the suite's outcome is the same with
and without the profiler, and every kernel that ran has a table whose hits equal
line_profiler's on the Python functions over the same test run. The run without the
profiler is that reference run (JIT disabled, so every kernel runs as written): a plain
jitted run of the suite would cost another 10 s of Numba compiles to say the same."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import line_profiler

PACKAGES = Path(__file__).resolve().parent / "packages"
PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", "qe_optimize"]


def run(args, cwd, **env):
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(cwd), str(PACKAGES.parent.parent)]),
        **env,
    }
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=environment, timeout=300
    )


def outcome(stdout: str) -> str:
    """pytest's closing counts ("14 passed")."""
    found = re.findall(r"^(\d+ passed.*?) in [\d.]+s", stdout, re.M)
    assert found, stdout[-2000:]
    return found[-1]


def test_a_packages_own_suite_profiled_with_source(tmp_path):
    shutil.copytree(PACKAGES / "qe_optimize", tmp_path / "qe_optimize")  # no ini file above: its own rootdir
    lprof = tmp_path / "suite.lprof"
    profiled = run(
        # --hits: what is compared is hits (the sampled view of scripts is tested in test_one_run)
        ["-m", "numba_lprun", "--hits", "--source", "qe_optimize", "-z", "-D", str(lprof), *PYTEST],
        tmp_path,
    )
    assert profiled.returncode == 0, profiled.stderr[-3000:]
    reference = tmp_path / "reference.json"
    ref_run = run(
        ["-m", "tests.package_reference", "qe_optimize", str(reference), *PYTEST[2:]],
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
    kernels = {key for key in expected if not key.startswith("test_")}
    assert {"root_finding.py:brentq", "root_finding.py:newton", "scalar_maximization.py:brent_max"} <= kernels
    for key in sorted(kernels):
        assert got.get(key) == expected[key], key
    assert "Function:   brentq at line" in profiled.stdout


def test_source_in_the_magic_profiles_a_package_named_once(ipshell, monkeypatch):
    """``%nlprun --source PKG``: every jitted function the package defines, with none named."""
    monkeypatch.syspath_prepend(str(PACKAGES))
    cell = "import qe_optimize\nfrom numba import njit\n@njit\ndef qe_f(x):\n    return x * x - 2.0\n"
    assert ipshell.run_cell(cell).success
    line = "-r -z --hits --source qe_optimize r = qe_optimize.brentq(qe_f, 0.0, 2.0)"
    prof = ipshell.run_line_magic("nlprun", line)
    assert abs(ipshell.user_ns["r"].root - 2**0.5) < 1e-9
    names = {f.name for f in prof.profile.functions if f.hits}
    assert {"brentq", "_results"} <= names and "qe_f" not in names  # the package's, not the cell's
