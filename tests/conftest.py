"""Shared helpers: compare numba_lprun's hits with line_profiler's on ``py_func``."""

import copy

import line_profiler
import pytest

import numba_lprun
from tests.compare import same  # noqa: F401  (the one comparison, re-exported for tests)


def hits_of(stats, name):
    """{lineno: hits} of function ``name`` in a LineStats."""
    for (_, _, func_name), rows in stats.timings.items():
        if func_name == name or func_name.endswith("." + name):
            return {line: hits for line, hits, _ in rows if hits}
    raise KeyError(name)


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
