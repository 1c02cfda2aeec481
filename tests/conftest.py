"""Shared helpers: compare numba_lprun's hits with line_profiler's on ``py_func``."""

import copy
import os
import re
import shutil
import signal
import sys
import tempfile

import line_profiler
import pytest

import numba_lprun
from tests.compare import same

_OWN_CACHE: list[str] = []


#: Set while NUMBA_LPRUN_CACHE_DIR is a directory this suite made (not one the developer chose).
_SUITE_CACHE = "NUMBA_LPRUN_SUITE_CACHE"


def pytest_configure(config):
    """Twins and calibrations cached by the tests go to a directory of this session, never the
    user's cache (subprocesses inherit it), so every session starts from an empty cache. Each
    pytest-xdist worker has its own: tests that count compiles assume no other process fills
    the cache beside them."""
    # Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE=1, as on
    # these machines): else every xdist worker and each of the suite's ~60 subprocesses compiles
    # numba_lprun's modules again, and pytest rewrites and compiles every test module again
    # (collection 8.7 s -> 4.4 s). Set here, before the workers start, they inherit it.
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    ours = os.environ.get(_SUITE_CACHE) == os.environ.get("NUMBA_LPRUN_CACHE_DIR")
    if "NUMBA_LPRUN_CACHE_DIR" not in os.environ or (ours and os.environ.get("PYTEST_XDIST_WORKER")):
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="numba-lprun-tests-"))
        os.environ["NUMBA_LPRUN_CACHE_DIR"] = os.environ[_SUITE_CACHE] = _OWN_CACHE[0]


def pytest_sessionstart(session):
    """The versions under test, first in each run's log, ``-q`` or not (each of CI's nox sessions
    installs its own: this is where its log says which)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(session.config, "workerinput"):  # (an xdist worker: no terminal)
        return
    import llvmlite
    import numba
    import numpy

    reporter.write_line(
        f"python {sys.version.split()[0]} numba {numba.__version__} llvmlite {llvmlite.__version__}"
        f" numpy {numpy.__version__} line_profiler {line_profiler.__version__}"
    )


def pytest_unconfigure(config):
    for path in _OWN_CACHE:
        shutil.rmtree(path, ignore_errors=True)


#: The files that take longest (``--durations``, 2026-12-01), run first. pytest-xdist's
#: ``--dist loadfile`` hands out whole files in collection order, so a long file collected last
#: ran while the other worker sat idle: 40 s of a 6-minute suite. Longest first, the short
#: files fill in at the end. Order within a file is unchanged, and no test depends on another
#: file having run.
LONGEST_FIRST = (
    "test_ray.py",  # real Ray clusters: about 2 minutes (2026-12-05); collected last, it ran alone
    "test_attribution_corpus.py",
    "test_dask_clusters.py",
    "test_package_outcomes.py",
    "test_numba_suite.py",
    "test_live_notebook.py",
    "test_one_run.py",
    "test_kinds.py",
    "test_disk_cache.py",
    "test_matrix.py",
    "test_fuzz.py",
    "test_cuda.py",
    "test_package_suite.py",
    "test_jitclass.py",
    "test_cli.py",
    "test_fuzz_regressions.py",
    "test_repeat.py",
    "test_isolation.py",
    "test_dispatchers.py",
    "test_notebook.py",
    "test_magic.py",
    "test_machine_code.py",
    "test_recursive_types.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay whole


#: line_profiler 4 keys functions by name (``step``), 5 by qualified name (``Particle.step``);
#: numba_lprun keys by qualified name with both, so with 4 keys are compared by name.
LINE_PROFILER_4 = int(line_profiler.__version__.split(".")[0]) < 5


def comparable_key(key):
    """A function's stats key as line_profiler's own keys spell it, for comparison."""
    filename, first, name = key
    return (filename, first, name.rsplit(".", 1)[-1]) if LINE_PROFILER_4 else key


def hits_of(stats, name):
    """{lineno: hits} of function ``name`` (a name or qualified name) in a LineStats.

    line_profiler 5 keys functions by qualified name (``Particle.step``), 4 by name (``step``).
    """
    for (_, _, func_name), rows in stats.timings.items():
        if name in (func_name, func_name.rsplit(".", 1)[-1]) or name.rsplit(".", 1)[-1] == func_name:
            return {line: hits for line, hits, _ in rows if hits}
    raise KeyError(name)


def own_machine_code(dispatcher) -> str:
    """A compiled function's own machine code (its CPython wrapper left out), every signature's,
    symbol names blanked: two compiles of one function compare equal."""
    own = "\n".join(code.split("_ZN7cpython")[0] for code in dispatcher.inspect_asm().values())
    return re.sub(r"_ZN\S+", "SYMBOL", own)


def reference_hits(func, *args, **kwargs):
    """What line_profiler reports for the interpreted Python function."""
    py_func = func.py_func
    prof = line_profiler.LineProfiler(py_func)
    own = [name for name, value in py_func.__globals__.items() if value is func]
    for name in own:  # recursive calls go through the Python function too
        py_func.__globals__[name] = py_func
    try:
        prof.runcall(py_func, *copy.deepcopy(args), **copy.deepcopy(kwargs))
    finally:
        for name in own:
            py_func.__globals__[name] = func
    return hits_of(prof.get_stats(), py_func.__code__.co_name)


def linear_reference_hits(func, make_args, n):
    """line_profiler's hits for ``func(*make_args(n))``, read off runs with n = 1 and 2.

    For kernels whose hits grow linearly with ``n`` (a loop repeated ``n`` times),
    so a long run can be checked without running it in the interpreter.
    """
    one, two = reference_hits(func, *make_args(1)), reference_hits(func, *make_args(2))
    return {
        line: one.get(line, 0) + (two.get(line, 0) - one.get(line, 0)) * (n - 1)
        for line in set(one) | set(two)
    }


def check_matches(func, *args, **kwargs):
    """Profile ``func(*args)``: result equals the plain call, hits equal line_profiler's."""
    expected = func(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    prof = numba_lprun.LineProfiler(func, sample_time=0.05)
    got = prof.runcall(func, *copy.deepcopy(args), **copy.deepcopy(kwargs))
    assert same(got, expected), (got, expected)
    name = func.py_func.__code__.co_name
    assert hits_of(prof.get_stats(), name) == reference_hits(func, *args, **kwargs)
    return prof


@pytest.fixture
def check():
    return check_matches


@pytest.fixture(scope="session")
def ipshell():
    """The one global IPython test shell, with the extension loaded."""
    from IPython.terminal.interactiveshell import TerminalInteractiveShell
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or TerminalInteractiveShell.instance()
    shell.run_line_magic("load_ext", "numba_lprun")
    return shell


@pytest.fixture(autouse=True)
def full_sampling_rate(monkeypatch):
    """Tests sample at the rate they ask for: by the end of the suite the process holds
    thousands of compiled modules and a stack walk costs about 100 us, which would lower
    the rate of every sampler (``WALK_BUDGET``) and starve the tests that count samples.
    The attribution corpus and the sampler's own test keep the limit."""
    monkeypatch.setenv("NUMBA_LPRUN_WALK_BUDGET", "1")


@pytest.fixture(autouse=True)
def no_sampler_left_armed():
    """Every test leaves the process's one sampler slot free (a leaked one silences the rest)."""
    yield
    from numba_lprun.sampling import sampler_running

    assert not sampler_running(), "this test left a Sampler armed"


@pytest.fixture
def python_sigint():
    """SIGINT handled as Python handles it by default, for a test that sends one. A process
    that a shell without job control starts in the background (a CI runner's, a tool's)
    inherits SIGINT ignored; Python then installs no handler and a SIGINT does nothing, so
    such a test would pass or fail by how the suite was started (README, Tests)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
