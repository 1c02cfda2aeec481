"""The tests on every supported Python, Numba and line_profiler release, each in a fresh
virtual environment (``nox``; ``nox`` alone runs the sessions tagged ``ci``, what CI runs).

Line events differ between Python versions and between line_profiler's two cores
(``sys.settrace``, the only one before 3.12; ``sys.monitoring``, its default from
3.12), and the hits must equal line_profiler's on each. CI runs the whole suite on
the oldest supported Python (``suite``), and on each newer one what differs between
Pythons (``lines``: line events and hits, the fuzzer, the kinds, the sampler's view
of the interpreter, saved state, the front ends), again with ``LINE_PROFILER_CORE=legacy``
for the hits; all on the newest Numba. ``nox -t full`` runs the whole suite on every
Python and core (``tests``, ``tests_legacy_core``).

Numba releases differ in their private API (``numba_lprun/internals``, each use naming
the releases it was checked on) and in the LLVM they bundle (14 up to 0.60, 15 in
0.61, 20 from 0.62, 22 from 0.66), which changes what gets inlined and vectorized.
Each older minor release runs the demo and the tests that go through Numba's
internals (session ``numba``, ``FAST_TESTS``; ``KIND_TESTS`` too on the releases where
LLVM or the private API changed) on one Python it has wheels for; the Pythons take
turns, so each meets old Numbas and each of line_profiler's cores meets old LLVMs. The
oldest line_profiler supported runs the tests that compare hits with line_profiler's
and write its files (``line_profiler_floor``).

Interpreters are found as ``python3.X`` on PATH. With pyenv, a shim answers only for
the versions in ``PYENV_VERSION``; when that is unset this file names the newest
installed patch release of each supported Python there. A missing interpreter is an
error, not a skip.

    nox                      # what CI runs (about 40 minutes on 2 cores)
    nox -l                   # the sessions
    nox -t full              # the whole suite on every Python and core
    nox -s tests-3.13        # one Python, newest Numba, whole suite
    nox -s "numba(0.61)"     # one older Numba: demo and internals tests
    nox -s suite -- -k fuzz  # arguments after -- go to pytest
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import nox

PYTHONS = ["3.11", "3.12", "3.13"]
BOTH_CORES = ["3.12", "3.13"]  # sys.monitoring exists from 3.12

#: The newest supported Numba minor release: the whole suite runs on it (numba_lprun.internals
#: NUMBA_RANGE and pyproject.toml say the same; tests/test_private_api.py checks they agree).
NEWEST_NUMBA = "0.68"
#: Every older supported minor release (its latest patch is installed) and the Python it runs on.
#: numba, llvmlite and NumPy have wheels for each pair (checked 2026-11-30); 0.59 and 0.60 support
#: Python up to 3.12 only; 0.59 is the only one on NumPy 1.x (1.26).
OLDER_NUMBA = [
    ("0.59", "3.11"),
    ("0.60", "3.12"),
    ("0.61", "3.13"),
    ("0.62", "3.11"),
    ("0.63", "3.12"),
    ("0.64", "3.13"),
    ("0.65", "3.11"),
    ("0.66", "3.12"),
    ("0.67", "3.13"),
]
#: What a Numba release changes (its private API, and the LLVM that compiles and describes the
#: twins), run on every older release: the door and its registry, the sampler's line maps read
#: from LLVM's debug info, samples charged to lines, threads' atomic counters (about 20 s; the demo
#: runs before them and goes through every stage once).
FAST_TESTS = [
    "tests/test_private_api.py",
    "tests/test_sampled_view.py",
    "tests/test_threads.py",
    "tests/test_twin_cache.py",
]
#: Each kind of function and state the internals reach (jitclasses, recursive jitclasses, ufuncs,
#: stencils, overloads, random states, machine code) and the twins cached on disk, through the API
#: (the front ends do not meet the internals): on the releases where LLVM or the private API
#: changed most (0.59: LLVM 14, NumPy 1.x; 0.61: LLVM 15; 0.62: LLVM 20; 0.66: LLVM 22).
KIND_TESTS = [
    "tests/test_kinds.py",
    "tests/test_isolation.py",
    "tests/test_machine_code.py",
    "tests/test_jitclass.py",
    "tests/test_disk_cache.py",
    "tests/test_recursive_types.py",
]
KIND_SELECTION = "not magic and not cli"
KIND_RELEASES = {"0.59", "0.61", "0.62", "0.66"}
#: What differs between Pythons, run on each Python the whole suite does not run on: line events
#: and hits against line_profiler's (the fuzzer too, and every kind's hits), the sampler's view of
#: the interpreter, and the front ends (IPython, the CLI, a Jupyter kernel; errors shown with the
#: user's frames). Where samples land, saved state, the disk cache and the package suite depend on
#: Numba and LLVM, not on Python: the whole suite runs them.
PYTHON_TESTS = [
    "tests/test_line_events.py",
    "tests/test_fuzz.py",
    "tests/test_fuzz_regressions.py",
    "tests/test_paths.py",
    "tests/test_kinds.py",
    "tests/test_sampling.py",
    "tests/test_cli.py",
    "tests/test_magic.py",
    "tests/test_notebook.py",
    "tests/test_raising.py",
]
#: Again with line_profiler's settrace core where sys.monitoring is the default: the hits.
LEGACY_CORE_TESTS = [
    "tests/test_line_events.py",
    "tests/test_fuzz_regressions.py",
    "tests/test_paths.py",
]
#: The oldest line_profiler supported (pyproject.toml): 4.2 has wheels for Python 3.11-3.13
#: (4.1 none for 3.13). line_profiler 4 has one core (settrace-style) on every Python.
LINE_PROFILER_FLOOR = "4.2"
#: The tests that compare hits with line_profiler's, read its core, or write and read .lprof files.
LINE_PROFILER_TESTS = [
    "tests/test_line_events.py",
    "tests/test_paths.py",
    "tests/test_cli.py",
    "tests/test_kinds.py",
    "tests/test_jitclass.py",
]

#: Fuzz examples per session (tests/test_fuzz.py's default; more with NUMBA_LPRUN_FUZZ_EXAMPLES, and
#: the long runs are campaigns: README, Tests); every program a fuzz run ever failed on is kept in
#: tests/test_fuzz_regressions.py, which runs on every Python.
FUZZ_EXAMPLES = "25"

nox.options.error_on_missing_interpreters = True
nox.options.tags = ["ci"]  # `nox` alone runs what CI runs; `nox -t full` the whole suite everywhere
nox.options.reuse_existing_virtualenvs = False
#: uv makes and fills each session's environment in seconds where pip takes a minute (uv is in the
#: test extra); plain virtualenv and pip where it is missing.
nox.options.default_venv_backend = "uv|virtualenv"


def _pyenv_versions() -> None:
    """Let pyenv's ``python3.X`` shims run every supported Python (see the docstring)."""
    if os.environ.get("PYENV_VERSION") or not shutil.which("pyenv"):
        return
    out = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True, check=False)
    chosen = []
    for python in PYTHONS:
        patches = [v for v in out.stdout.split() if re.fullmatch(re.escape(python) + r"\.\d+", v)]
        if patches:
            chosen.append(max(patches, key=lambda v: int(v.rsplit(".", 1)[1])))
    if chosen:
        os.environ["PYENV_VERSION"] = ":".join(chosen)


_pyenv_versions()

_SHOW_VERSIONS = (
    "import sys, numba, llvmlite, numpy, line_profiler as lp; "
    "print('python', sys.version.split()[0], 'numba', numba.__version__, 'llvmlite', llvmlite.__version__, "
    "'numpy', numpy.__version__, 'line_profiler', lp.__version__)"
)


def _test_tools() -> list[str]:
    """The ``test`` extra without numba-cuda, which needs Numba 0.60 or newer and serves only
    the CUDA tests (not among the fast ones)."""
    pyproject = tomllib.loads(Path(__file__).with_name("pyproject.toml").read_text(encoding="utf-8"))
    tools = pyproject["project"]["optional-dependencies"]["test"]
    return [r for r in tools if not r.startswith("numba-cuda")]


def _install(session: nox.Session, numba: str, *extra: str, cuda: bool = True) -> None:
    """The project and its test tools, with the latest patch of Numba ``numba`` (wheels only, so a
    missing wheel fails the session instead of building LLVM); the versions go to the log."""
    project = ["-e", ".[test]"] if cuda else ["-e", ".", *_test_tools()]
    session.install("--only-binary=numba,llvmlite,numpy", *project, f"numba=={numba}.*", *extra)
    session.run("python", "-c", _SHOW_VERSIONS)


def _run_suite(session: nox.Session, core: str | None) -> None:
    _install(session, NEWEST_NUMBA)
    env = {"NUMBA_LPRUN_FUZZ_EXAMPLES": os.environ.get("NUMBA_LPRUN_FUZZ_EXAMPLES", FUZZ_EXAMPLES)}
    if core is not None:
        env["LINE_PROFILER_CORE"] = core
    session.run("python", "-m", "pytest", "-q", *session.posargs, env=env)


@nox.session(python=PYTHONS[0], tags=["ci"])
def suite(session: nox.Session) -> None:
    """The whole suite on the oldest supported Python and the newest Numba (line_profiler's
    settrace core, the only one before 3.12)."""
    _run_suite(session, None)


@nox.session(python=PYTHONS[1:], tags=["ci"])
def lines(session: nox.Session) -> None:
    """What differs between Pythons, with each of line_profiler's cores: line events and hits
    against line_profiler's, the rewriter (fuzzed), the sampler's view of the interpreter, where
    samples land, the front ends and the one-run model (PYTHON_TESTS)."""
    _install(session, NEWEST_NUMBA)
    env = {"NUMBA_LPRUN_FUZZ_EXAMPLES": os.environ.get("NUMBA_LPRUN_FUZZ_EXAMPLES", FUZZ_EXAMPLES)}
    session.run("python", "-m", "pytest", "-q", *PYTHON_TESTS, *session.posargs, env=env)
    env["LINE_PROFILER_CORE"] = "legacy"
    session.run("python", "-m", "pytest", "-q", *LEGACY_CORE_TESTS, *session.posargs, env=env)


@nox.session(python=PYTHONS, tags=["full"])
def tests(session: nox.Session) -> None:
    """The whole suite on the newest Numba, with line_profiler's default core on this Python
    (not in CI, which runs ``suite`` and ``lines``: about 7 minutes per Python)."""
    _run_suite(session, None)


@nox.session(python=BOTH_CORES, tags=["full"])
def tests_legacy_core(session: nox.Session) -> None:
    """The whole suite with line_profiler's settrace core, where sys.monitoring is the default."""
    _run_suite(session, "legacy")


@nox.session(tags=["numba", "ci"])
@nox.parametrize(
    "python,numba", [(python, numba) for numba, python in OLDER_NUMBA], ids=[n for n, _ in OLDER_NUMBA]
)
def numba(session: nox.Session, numba: str) -> None:
    """The demo and the tests that go through Numba's internals, on an older Numba release."""
    _install(session, numba, cuda=False)
    session.run("python", "-m", "numba_lprun.demo", silent=True)  # the first thing a new user runs
    session.run("python", "-m", "pytest", "-q", *FAST_TESTS, *session.posargs)
    if numba in KIND_RELEASES:
        session.run("python", "-m", "pytest", "-q", *KIND_TESTS, "-k", KIND_SELECTION, *session.posargs)


@nox.session(python="3.12", tags=["line_profiler", "ci"])
def line_profiler_floor(session: nox.Session) -> None:
    """The tests that meet line_profiler, on the oldest line_profiler supported.

    On 3.12, where line_profiler 5 would use sys.monitoring and 4 uses its settrace-style core.
    """
    _install(session, NEWEST_NUMBA, f"line_profiler=={LINE_PROFILER_FLOOR}.*", cuda=False)
    session.run("python", "-m", "pytest", "-q", *LINE_PROFILER_TESTS, *session.posargs)
