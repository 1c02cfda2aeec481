"""The other ways Numba code is written, each profiled from the API and the magic:
result equal to the unprofiled call, hits equal to line_profiler's, state put back."""

import numba_lprun
from tests import kinds
from tests.conftest import hits_of, same


def python_hits(py_funcs, call):
    """line_profiler's hits of each of ``py_funcs`` while ``call()`` runs interpreted."""
    import line_profiler

    prof = line_profiler.LineProfiler(*py_funcs)
    prof.runcall(call)
    stats = prof.get_stats()
    return {f.__name__: hits_of(stats, f.__qualname__) for f in py_funcs}


def in_magic(ipshell, expr, statement, ns):
    ipshell.push(ns)
    prof = ipshell.run_line_magic("nlprun", f"-r --sample-time 0.05 -f {expr} _r = {statement}")
    return ipshell.user_ns["_r"], prof


# -- first-class functions -----------------------------------------------------------------
def test_function_passed_as_argument(ipshell):
    f, n = kinds.integrand, 50
    expected = kinds.integrate(f, 0.0, 1.0, n)
    ref = python_hits([f.py_func], lambda: kinds.integrate.py_func(f.py_func, 0.0, 1.0, n))["integrand"]
    prof = numba_lprun.LineProfiler(f, sample_time=0.05)
    assert same(prof.runcall(kinds.integrate, f, 0.0, 1.0, n), expected)
    assert hits_of(prof.get_stats(), "integrand") == ref
    ns = {"integrand": f, "integrate": kinds.integrate}
    got, prof = in_magic(ipshell, "integrand", "integrate(integrand, 0.0, 1.0, 50)", ns)
    assert same(got, expected)
    assert hits_of(prof.get_stats(), "integrand") == ref
    assert type(f).__name__ == "CPUDispatcher" and kinds.integrand is f
    assert kinds.integrate(f, 0.0, 1.0, n) == expected  # the original specialization still runs


def test_function_passed_inside_jitted_code():
    expected = kinds.integrate_both(40)
    prof = numba_lprun.LineProfiler(kinds.integrand, sample_time=0.05)
    assert same(prof.runcall(kinds.integrate_both, 40), expected)
    ref = python_hits(
        [kinds.integrand.py_func], lambda: kinds.integrate.py_func(kinds.integrand.py_func, 0.0, 1.0, 40)
    )
    assert hits_of(prof.get_stats(), "integrand") == ref["integrand"]
    assert kinds.integrate_both.py_func.__globals__["integrand"] is kinds.integrand
