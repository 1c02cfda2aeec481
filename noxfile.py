"""The tests on every supported Python, Numba and line_profiler release, each in a fresh
virtual environment (``nox``; ``nox`` alone runs the session tagged ``ci``, what CI runs:
the sessions tagged ``lane``, in two lanes at once).

Each session tests what changes along its axis, not everything again. Line events differ
between Python versions and between line_profiler's two cores (``sys.settrace``, the only
one before 3.12; ``sys.monitoring``, its default from 3.12), and the hits must equal
line_profiler's on each. CI runs the whole suite on the oldest supported Python
(``suite``), and on each newer one what differs between Pythons (``lines``: line events
and hits, the fuzzer, the generators' hits, the sampler's view of the interpreter; on the
newest also the front ends that meet it); all on the newest Numba. A settrace-style core on
a sys.monitoring Python is line_profiler 4's (``line_profiler_floor``, on 3.12); ``nox -t
full`` runs the whole suite on every Python and core (``tests``, ``tests_legacy_core``,
``LINE_PROFILER_CORE=legacy``).

Numba releases differ in their private API (``numba_lprun/internals``, each use naming
the releases it was checked on) and in the LLVM they bundle (14 up to 0.60, 15 in
0.61, 20 from 0.62, 22 from 0.66), which changes what gets inlined and vectorized and
the debug info the sampler reads. Each older minor release runs the demo and the tests
of its private API (session ``numba``, ``FAST_TESTS``), one release per LLVM the tests of
the line maps (``LINE_MAP_TESTS``), and the releases whose LLVM the whole suite does not
meet every kind of function too (``KIND_TESTS``), on one Python it has wheels for; the
Pythons take turns, so each meets old Numbas and each of line_profiler's cores meets old
LLVMs. The oldest line_profiler supported runs the tests that compare hits with
line_profiler's and write its files (``line_profiler_floor``).

Interpreters are found as ``python3.X`` on PATH. With pyenv, a shim answers only for
the versions in ``PYENV_VERSION``; when that is unset this file names the newest
installed patch release of each supported Python there. A missing interpreter is an
error, not a skip.

    nox                      # what CI runs: the lanes (README, Set-up, says how long)
    nox -l                   # the sessions
    nox -t lane              # the same sessions one after the other
    nox -t full              # the whole suite on every Python and core
    nox -s tests-3.13        # one Python, newest Numba, whole suite
    nox -s "numba(0.61)"     # one older Numba: demo and internals tests
    nox -s suite -- -k fuzz  # arguments after -- go to pytest
    nox -s docs              # the documentation site, warnings as errors
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
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
#: What a Numba release changes in its private API, run on every older release after the demo
#: (which goes through every stage once): the door and its registry (a few seconds).
FAST_TESTS = ["tests/test_private_api.py"]
#: What the LLVM a release bundles changes: samples charged to lines through the line maps read
#: from the debug info LLVM writes (about 15 s), on the oldest LLVM and the one between it and the
#: newest (the newest's, LLVM 22 from 0.66, is the whole suite's): the same tests on two releases
#: with one LLVM met the same debug info (CI ran them on every release until the lanes passed 20
#: minutes, then on LLVM 15 too until they passed it again).
LINE_MAP_TESTS = ["tests/test_sampled_view.py"]
LINE_MAP_RELEASES = {"0.59", "0.62"}  # LLVM 14, 20
#: Each kind of function and state the internals reach (jitclasses, recursive jitclasses, ufuncs,
#: stencils, overloads, random states, machine code, threads' atomic counters) and the twins cached
#: on disk, through the API (the front ends do not meet the internals: the whole suite runs them),
#: on the oldest release, whose LLVM the whole suite does not meet and which differs most: 0.59
#: (LLVM 14, NumPy 1.x). The newest release's LLVM 22 (0.66-0.68) is the whole suite's; 0.61's
#: LLVM 15 ran them too until CI's 20 minutes ran out.
KIND_TESTS = [
    "tests/test_kinds.py",
    "tests/test_isolation.py",
    "tests/test_machine_code.py",
    "tests/test_jitclass.py",
    "tests/test_disk_cache.py",
    "tests/test_recursive_types.py",
    "tests/test_threads.py",
    "tests/test_twin_cache.py",
]
KIND_SELECTION = "not magic and not cli"
#: The releases that run KIND_TESTS, and what each leaves out: the disk cache of cache=True
#: functions (Numba's own cache, whose door test_private_api and the twin-cache tests still meet
#: there), the isolation and jitclass tests (Numba's machinery, not LLVM's).
KIND_RELEASES = {"0.59"}
KIND_LITE = {
    "0.59": [
        "tests/test_disk_cache.py",
        "tests/test_isolation.py",
        "tests/test_jitclass.py",
        "tests/test_twin_cache.py",  # the twins' own cache: Numba's caching machinery, not LLVM's
        "tests/test_recursive_types.py",  # a recursive jitclass's debug info: the line maps' tests
    ]
}
#: What differs between Pythons in line events, hits and the interpreter itself, run on each Python
#: the whole suite does not run on: line events and hits against line_profiler's (the fuzzer too;
#: and the generators' hits), the sampler's view of the interpreter, and the bytecode each
#: statement of a script compiles to (which changes with CPython's compiler). Where samples land,
#: saved state, the disk cache, Jupyter and the package suite depend on Numba, LLVM or ipykernel,
#: not on Python: the whole suite runs them.
LINE_TESTS = [
    "tests/test_line_events.py",
    "tests/test_derived_counts.py",
    "tests/test_fuzz.py",
    "tests/test_fuzz_regressions.py",
    "tests/test_paths.py",
    "tests/test_sampling.py",
    "tests/test_cli.py::test_a_script_runs_statement_by_statement_with_the_bytecode_of_the_whole_module",
    # the replays read Python's global random generator in place: CPython's object layout
    "tests/test_replay.py::test_pythons_global_random_state_is_compared_in_place_and_put_back",
]
#: The front ends that meet the interpreter (IPython's magic, errors shown with the user's frames,
#: worker processes), on the newest Python: the whole suite runs them on the oldest, and 3.12 lies
#: between (both newer ones have sys.monitoring; CI's 20 minutes ran out with them on every
#: Python). The CLI's script runner: the whole suite's, and a script's bytecode (LINE_TESTS) on each.
FRONT_END_TESTS = [
    "tests/test_magic.py",
    "tests/test_raising.py",
    # fork's rules and multiprocessing's start-up change between Pythons: every start method, and
    # workers on the parent's probed twins (the others, joblib's, Dask's and nlprun's, run in the suite)
    "tests/test_processes.py::test_a_kernel_run_by_worker_processes_has_the_exact_hits_of_every_task",
    "tests/test_processes.py::test_workers_of_a_run_on_probed_twins_run_the_probed_twins",
]


def python_tests(python: str) -> list[str]:
    """What ``lines`` runs on ``python``: LINE_TESTS, and FRONT_END_TESTS on the newest Python
    (a test of a file given whole is not named again)."""
    tests = LINE_TESTS + (FRONT_END_TESTS if python == PYTHONS[-1] else [])
    return [t for t in tests if "::" not in t or t.split("::")[0] not in tests]


#: The oldest line_profiler supported (pyproject.toml): 4.2 has wheels for Python 3.11-3.13
#: (4.1 none for 3.13). line_profiler 4 has one core (settrace-style) on every Python.
LINE_PROFILER_FLOOR = "4.2"
#: The tests that compare hits with line_profiler's, read its core, or write and read .lprof files.
LINE_PROFILER_TESTS = [
    "tests/test_line_events.py",
    "tests/test_paths.py",
    "tests/test_jitclass.py",
    # the CLI's .lprof files read by line_profiler, its stats read back, hits equal to its own, and
    # a script written for kernprof
    "tests/test_cli.py::test_script_with_argparse_keeps_its_argv_and_exit_status",
    "tests/test_cli.py::test_show_refuses_what_holds_no_profile_and_options_of_a_run",
    "tests/test_cli.py::test_stateful_kernels_run_as_one_unprofiled_script",
    "tests/test_cli.py::test_a_kernprof_script_runs_as_written_and_every_f_that_names_nothing_exits_2",
]

#: Fuzz examples per nox session (tests/test_fuzz.py runs 8 when run alone; more with
#: NUMBA_LPRUN_FUZZ_EXAMPLES, and the long runs are campaigns: docs/tests.md); every program a
#: fuzz run ever failed on is kept in tests/test_fuzz_regressions.py, which runs on every Python.
FUZZ_EXAMPLES = "8"

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


def _test_tools() -> list[str]:
    """The ``test`` extra without numba-cuda, which needs Numba 0.60 or newer and serves only
    the CUDA tests, without numba-mpi (and the MPI it brings), which serves only the MPI
    tests, without Ray, which serves only the Ray tests, and without JupyterLab and Notebook 7,
    which serve only the live notebook tests (none among the fast ones)."""
    pyproject = tomllib.loads(Path(__file__).with_name("pyproject.toml").read_text(encoding="utf-8"))
    tools = pyproject["project"]["optional-dependencies"]["test"]
    left_out = ("numba-cuda", "numba-mpi", "mpi4py", "mpich", "ray", "jupyterlab", "notebook")
    return [r for r in tools if not r.startswith(left_out)]


def _install(session: nox.Session, numba: str, *extra: str, cuda: bool = True) -> None:
    """The project and its test tools, with the latest patch of Numba ``numba`` (wheels only, so a
    missing wheel fails the session instead of building LLVM); the tests' first line in the log
    names the versions (``tests/conftest.py``)."""
    project = ["-e", ".[test]"] if cuda else ["-e", ".", *_test_tools()]
    session.install("--only-binary=numba,llvmlite,numpy", *project, f"numba=={numba}.*", *extra)


def _one_process() -> list[str]:
    """``-n 0`` where pytest-xdist would start a single worker (CI's lanes: one per session): the
    tests then run in pytest's own process, which imports numba_lprun and Numba once, not twice
    (1.3-2 s of each short session's run). The suite's halves keep their worker."""
    return ["-n", "0"] if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") == "1" else []


def _run_suite(session: nox.Session, core: str | None, *tests: str) -> None:
    _install(session, NEWEST_NUMBA)
    env = {"NUMBA_LPRUN_FUZZ_EXAMPLES": os.environ.get("NUMBA_LPRUN_FUZZ_EXAMPLES", FUZZ_EXAMPLES)}
    if core is not None:
        env["LINE_PROFILER_CORE"] = core
    # the slowest tests named in the log: where CI's minutes go
    session.run("python", "-m", "pytest", "-q", "--durations=15", *tests, *session.posargs, env=env)


#: The whole suite's second half (about half its time): CI runs the two halves in different lanes.
SUITE_SECOND_HALF = [
    "tests/test_attribution_corpus.py",
    "tests/test_package_outcomes.py",
    "tests/test_one_run.py",
    "tests/test_package_suite.py",
    "tests/test_disk_cache.py",
    "tests/test_matrix.py",
    "tests/test_cli.py",
    "tests/test_dispatchers.py",
    "tests/test_notebook.py",
    "tests/test_sampling.py",
    "tests/test_unwinding.py",
    "tests/test_run_order.py",
    "tests/test_render_width.py",
    "tests/test_html_report.py",
    "tests/test_live_notebook.py",
    "tests/test_twin_cache.py",
    "tests/test_repeat.py",
    "tests/test_mpi.py",
    "tests/test_program_cache.py",
    "tests/test_compiled_callers.py",
    "tests/test_ray.py",
]
#: Run apart, after the rest of their half: a Ray cluster's start-up loads the machine enough to
#: change what an MPI job's ranks sample, and the MPI tests compare them.
RUN_ALONE = "tests/test_ray.py"


@nox.session(python=PYTHONS[0], tags=["lane"])
@nox.parametrize("half", ["first", "second"], ids=["first", "second"])
def suite(session: nox.Session, half: str) -> None:
    """The whole suite on the oldest supported Python and the newest Numba (line_profiler's
    settrace core, the only one before 3.12), in two halves (``nox -s suite`` runs both)."""
    if half == "second":
        _run_suite(session, None, *(p for p in SUITE_SECOND_HALF if p != RUN_ALONE))
        session.run("python", "-m", "pytest", "-q", "--durations=5", RUN_ALONE, *session.posargs)
    else:
        _run_suite(session, None, *(f"--ignore={path}" for path in SUITE_SECOND_HALF))


@nox.session(python=PYTHONS[1:], tags=["lane"])
def lines(session: nox.Session) -> None:
    """What differs between Pythons: line events and hits against line_profiler's (the fuzzer
    too, and the generators' hits), the sampler's view of the interpreter, a script's bytecode
    (LINE_TESTS); on the newest Python also the front ends that meet it (FRONT_END_TESTS)."""
    _install(session, NEWEST_NUMBA)
    env = {"NUMBA_LPRUN_FUZZ_EXAMPLES": os.environ.get("NUMBA_LPRUN_FUZZ_EXAMPLES", FUZZ_EXAMPLES)}
    # and generators' line events, which changed in 3.12: their hits against line_profiler's (one
    # pytest run: the kinds' tests whose names say generator, and every test of the other files)
    pick = ["tests/test_kinds.py", "-k", "generator or not test_kinds"]
    pytest = ["python", "-m", "pytest", "-q", *_one_process()]
    session.run(*pytest, *python_tests(session.python), *pick, *session.posargs, env=env)


@nox.session(python=PYTHONS, tags=["full"])
def tests(session: nox.Session) -> None:
    """The whole suite on the newest Numba, with line_profiler's default core on this Python
    (not in CI, which runs ``suite`` and ``lines``: about 6 minutes per Python)."""
    _run_suite(session, None)


@nox.session(python=BOTH_CORES, tags=["full"])
def tests_legacy_core(session: nox.Session) -> None:
    """The whole suite with line_profiler's settrace core, where sys.monitoring is the default."""
    _run_suite(session, "legacy")


@nox.session(tags=["numba", "lane"])
@nox.parametrize(
    "python,numba", [(python, numba) for numba, python in OLDER_NUMBA], ids=[n for n, _ in OLDER_NUMBA]
)
def numba(session: nox.Session, numba: str) -> None:
    """The demo and the tests that go through Numba's internals, on an older Numba release."""
    _install(session, numba, cuda=False)
    line_maps = LINE_MAP_TESTS if numba in LINE_MAP_RELEASES else []
    one = _one_process()
    session.run("python", "-m", "pytest", "-q", *one, *FAST_TESTS, *line_maps, *session.posargs)
    session.run("python", "-m", "numba_lprun.demo", silent=True)  # the first thing a new user runs
    if numba in KIND_RELEASES:
        kinds = [t for t in KIND_TESTS if t not in KIND_LITE.get(numba, [])]
        session.run("python", "-m", "pytest", "-q", *one, *kinds, "-k", KIND_SELECTION, *session.posargs)


@nox.session(python="3.12", tags=["line_profiler", "lane"])
def line_profiler_floor(session: nox.Session) -> None:
    """The tests that meet line_profiler, on the oldest line_profiler supported.

    On 3.12, where line_profiler 5 would use sys.monitoring and 4 uses its settrace-style core.
    """
    _install(session, NEWEST_NUMBA, f"line_profiler=={LINE_PROFILER_FLOOR}.*", cuda=False)
    session.run("python", "-m", "pytest", "-q", *_one_process(), *LINE_PROFILER_TESTS, *session.posargs)


#: The documentation's build (README and CONTRIBUTING.md say the same command).
SPHINX_BUILD = ("-W", "--keep-going", "-b", "html", "docs", "docs/_build/html")


@nox.session(python=PYTHONS[0], tags=["docs", "lane"])
def docs(session: nox.Session) -> None:
    """The documentation site (``docs/``, Sphinx and MyST), built with warnings as errors: the
    option reference is generated from ``numba_lprun/options.py`` and the API read from the
    docstrings, so a broken link, docstring or option shows here (importing the package is the
    only Numba work: nothing compiles)."""
    session.install("--only-binary=numba,llvmlite,numpy", "-e", ".[docs]")
    session.run("python", "-m", "sphinx", *SPHINX_BUILD, *session.posargs)


#: CI's sessions in two lanes of about equal length (one pytest worker per session; how long each
#: took is in CI's log and CHANGELOG.md).
#: Each lane is one nox process; they run at once, so one lane's installs, interpreter start-ups
#: and subprocess waits overlap the other's tests, and the two cores stay busy (one after the
#: other, with two workers per session, they were busy 63% of the time).
LANES = (
    [
        "suite(first)",
        "docs",
        "lines-3.12",
        "numba(0.59)",
        "numba(0.60)",
        "numba(0.61)",
        "numba(0.63)",
    ],
    [
        "suite(second)",
        "lines-3.13",
        "numba(0.62)",
        "line_profiler_floor",
        "numba(0.64)",
        "numba(0.65)",
        "numba(0.66)",
        "numba(0.67)",
    ],
)


@nox.session(python=False, tags=["ci"])
def ci(session: nox.Session) -> None:
    """What CI runs: every session tagged ``lane``, in the two ``LANES`` at once, one pytest
    worker per session (``PYTEST_XDIST_AUTO_NUM_WORKERS``: the other lane is the second). Each
    lane's log is printed as it ends; the session fails if a lane does."""
    lanes = [name for lane in LANES for name in lane]
    every = subprocess.run(
        [sys.executable, "-m", "nox", "-l", "-t", "lane", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = sorted(s["session"] for s in json.loads(every.stdout) if s.get("tags") and "lane" in s["tags"])
    if sorted(lanes) != expected:
        session.error(f"LANES {sorted(lanes)} must name each session tagged lane once: {expected}")
    env = {
        **os.environ,
        "PYTEST_XDIST_AUTO_NUM_WORKERS": os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "1"),
    }
    logs = Path(session.create_tmp())
    began = time.monotonic()
    running = []
    for number, lane in enumerate(LANES, 1):
        log = open(logs / f"lane{number}.log", "w", encoding="utf-8")
        args = [
            sys.executable,
            "-m",
            "nox",
            "--no-color",
            "-s",
            *lane,
            *(["--", *session.posargs] if session.posargs else []),
        ]
        running.append((number, subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env), log))
    failed = []
    while running:
        for item in list(running):
            number, process, log = item
            if process.poll() is None:
                continue
            running.remove(item)
            log.close()
            print((logs / f"lane{number}.log").read_text(encoding="utf-8"), flush=True)
            print(
                f"lane {number} ({', '.join(LANES[number - 1])}): exit {process.returncode} "
                f"after {time.monotonic() - began:.0f} s",
                flush=True,
            )
            if process.returncode:
                failed.append(number)
        time.sleep(1.0)
    if failed:
        session.error(f"lane(s) {failed} failed: see their logs above")
