"""A profiled helper is reached through the callers compiled before the profile (issue 53).

A ufunc or jitted function compiled before the profile links the helper's code as it was
then; each is run on a relinked twin for the run, so the helper's calls are counted, whether
the caller compiled before the profile or during it, with listed signatures or on demand.
"""

import numpy as np
import pytest
from numba import float64, guvectorize, njit, vectorize

import numba_lprun
from tests.conftest import hits_of


@njit
def shift(x):
    return x + 1.0


def rows(a, out):
    for i in range(a.shape[0]):
        out[i] = shift(a[i])


def one(x):
    return shift(x)


def total(a):
    s = 0.0
    for v in a:
        s += shift(v)
    return s


#: How each kind of caller is made (each test makes its own: a fresh one compiles in the run).
MAKERS = {
    "guvectorize on demand": lambda: guvectorize("(n)->(n)")(rows),
    "guvectorize with signatures": lambda: guvectorize([(float64[:], float64[:])], "(n)->(n)")(rows),
    "vectorize on demand": lambda: vectorize(one),
    "vectorize with signatures": lambda: vectorize([float64(float64)])(one),
    "jitted caller": lambda: njit(total),
}


def _calling(kernel):
    if not hasattr(kernel, "signature"):  # a ufunc (gufuncs have a layout signature) or a function
        return kernel

    def call(a):
        out = np.empty_like(a)
        kernel(a, out)
        return out

    return call


@pytest.mark.parametrize("compiled_before", [True, False], ids=["compiled before", "compiled in the run"])
@pytest.mark.parametrize("caller", list(MAKERS))
def test_a_helper_called_from_a_compiled_caller_has_its_hits(caller, compiled_before):
    kernel = MAKERS[caller]()
    call = _calling(kernel)
    a = np.arange(12.0).reshape(3, 4) if "guvectorize" in caller else np.arange(5.0)
    expected = call(a.copy())  # as it computes without the profiler
    if compiled_before:  # the caller is kept where programs keep them, and its code links the helper's
        globals()["kept_caller"] = kernel
    else:  # made (and compiled: listed signatures compile at once) inside the profiled call

        def call(a):
            return _calling(MAKERS[caller]())(a)

    try:
        profiler = numba_lprun.LineProfiler(shift, timing=False)
        result = profiler.runcall(call, a.copy())
    finally:
        globals().pop("kept_caller", None)
    np.testing.assert_array_equal(result, expected)
    line = shift.py_func.__code__.co_firstlineno + 2
    assert hits_of(profiler.get_stats(), "shift") == {line: a.size}


@pytest.mark.parametrize("caller", list(MAKERS))
def test_a_caller_compiled_before_and_held_only_in_a_dict_reaches_the_helper(caller):
    """No module binds the caller (a library's own cache of built gufuncs, a registry dict, a
    closure): it is found among the live objects all the same (issue 64)."""
    held = {"kernel": MAKERS[caller]()}  # in no module's namespace
    a = np.arange(12.0).reshape(3, 4) if "guvectorize" in caller else np.arange(5.0)

    def call(a):
        return _calling(held["kernel"])(a)

    expected = call(a.copy())  # compiled now, before the profile, linking the helper's own code
    profiler = numba_lprun.LineProfiler(shift, timing=False)
    np.testing.assert_array_equal(profiler.runcall(call, a.copy()), expected)
    line = shift.py_func.__code__.co_firstlineno + 2
    assert hits_of(profiler.get_stats(), "shift") == {line: a.size}


def _notes(profiler) -> list[str]:
    (function,) = profiler.profile.functions
    return [note.text for note in function.diagnosis.notes]


def test_code_the_run_cannot_reach_is_named_instead_of_not_called():
    """A target="parallel" gufunc is NumPy's own ufunc around Numba's code: built before the
    profile, no Python object leads the profiler to a kernel it could compile again, so the
    helper's calls from it are not counted, and the table says so instead of "not called"."""
    parallel = guvectorize([(float64[:], float64[:])], "(n)->(n)", target="parallel")(rows)
    a = np.arange(12.0).reshape(3, 4)
    expected = parallel(a)
    profiler = numba_lprun.LineProfiler(shift, timing=False)
    np.testing.assert_array_equal(profiler.runcall(parallel, a), expected)
    (function,) = profiler.profile.functions
    assert function.source.unreached == ("rows",)
    notes = _notes(profiler)
    assert "not called during the run" not in notes
    assert any("no hits counted" in n and "`rows`" in n for n in notes), notes
    from numba_lprun.session import nothing_ran

    assert not nothing_ran(profiler.profile)  # and the closing hint does not say nothing ran


@pytest.mark.parametrize("caller", ["guvectorize on demand", "vectorize with signatures", "jitted caller"])
def test_a_helper_whose_reachable_callers_did_not_run_is_not_called(caller):
    """Callers the run can reach (their wrappers link their kernels) name nothing when unused."""
    kernel = MAKERS[caller]()
    a = np.arange(12.0).reshape(3, 4) if "guvectorize" in caller else np.arange(5.0)
    _calling(kernel)(a.copy())
    globals()["kept_caller"] = kernel
    try:
        profiler = numba_lprun.LineProfiler(shift, timing=False)
        profiler.runcall(len, a)
    finally:
        globals().pop("kept_caller", None)
    assert profiler.profile.functions[0].source.unreached == ()
    assert "not called during the run" in _notes(profiler)
