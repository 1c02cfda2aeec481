"""The profile describes the call the user made: one call's result, effects and hits.

Every kernel here changes state (sorts in place, pushes onto a heap, advances a
random state, mutates a jitclass, appends to a typed List). On a profiler that
runs the call twice without putting state back, each of these tests fails: the
result, the arguments afterwards or the hits differ from one unprofiled call.
"""

import line_profiler
import numpy as np
import pytest

import numba_lprun
from tests.conftest import hits_of, same
from tests.stateful import CASES, bubble_sort, numba_random_state, plain

QUICK = dict(sample_time=0.05)  # a few sampled repeats: enough to exercise restoring
#: Why a call that made the same calls in its plain runs has no overhead figure: the call's length
#: and the machine's load decide (measurements.compared tells "different calls" before these).
LENGTH_OR_LOAD = ("too short for the clock", "too few to tell the counters' cost from the machine's noise")


def unprofiled(case):
    """Result, argument state and Numba random state after one plain call from the case's state."""
    args = case.make()
    result = case.func(*args)
    return result, plain(args), numba_random_state()


def reference_hits(case):
    """line_profiler's hits on ``py_func`` from the same state."""
    args = case.make()
    prof = line_profiler.LineProfiler(case.func.py_func)
    prof.runcall(case.func.py_func, *args)
    return hits_of(prof.get_stats(), case.func.py_func.__name__)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_runcall_gives_one_calls_result_effects_and_hits(case):
    hits = reference_hits(case)
    result, after, rng_after = unprofiled(case)
    args = case.make()
    prof = numba_lprun.LineProfiler(case.func, **QUICK)
    got = prof.runcall(case.func, *args)
    assert same(got, result), (got, result)
    assert plain(args) == after
    assert numba_random_state() == rng_after
    assert hits_of(prof.get_stats(), case.func.py_func.__name__) == hits
    profile = prof.profile
    assert profile.runs.once is None
    assert profile.sampling.unavailable is not None or profile.sampling.extra_runs >= 1
    # the plain runs made the same calls as the user's run (the state was put back before each);
    # whether they fit the figure is the machine's: these calls take microseconds (too short for
    # the clock), and the 0.05 s of repeats may hold one only where other processes hold the CPU
    stats = profile.functions[0]
    assert stats.distortion.overhead is not None or any(
        why in stats.distortion.unmeasured for why in LENGTH_OR_LOAD
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_magic_gives_one_calls_result_effects_and_hits(case, ipshell):
    hits = reference_hits(case)
    result, after, rng_after = unprofiled(case)
    ns = ipshell.user_ns
    names = dict(zip("abc", case.make(), strict=False))
    ns.update(names)
    ns[case.func.py_func.__name__] = case.func
    prof = ipshell.run_line_magic(
        "nlprun", f"-r --sample-time 0.05 -f {case.func.py_func.__name__} result = {case.expr}"
    )
    try:
        assert same(ns["result"], result)
        assert plain(tuple(ns[n] for n in names)) == after
        assert all(ns[n] is value for n, value in names.items())  # same objects, same identity
        assert numba_random_state() == rng_after
        assert hits_of(prof.get_stats(), case.func.py_func.__name__) == hits
    finally:
        for n in [*names, "result", case.func.py_func.__name__]:
            ns.pop(n, None)


def test_statement_rebinding_a_name_runs_from_the_users_binding(ipshell):
    ns = ipshell.user_ns
    ns.update(bubble_sort=bubble_sort, a=np.arange(5.0)[::-1].copy(), n=10)
    try:
        ipshell.run_line_magic("nlprun", "--sample-time 0.05 -f bubble_sort n = n + bubble_sort(a)")
        assert ns["n"] == 20  # 10 swaps once, not twice
        assert ns["a"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    finally:
        for name in ("bubble_sort", "a", "n"):
            ns.pop(name, None)


def test_what_was_restored_is_said():
    prof = numba_lprun.LineProfiler(bubble_sort, **QUICK)
    prof.runcall(bubble_sort, np.random.default_rng(3).random(60))
    restored = prof.profile.runs.restored
    assert list(restored) == ["argument 1"]
    assert "array" in restored["argument 1"]
    from numba_lprun.renderers.text import profile_text

    assert "restored between runs: argument 1 (array, 480 bytes)" in profile_text(prof.profile)


def test_extra_runs_print_nothing(capfd, ipshell):
    from numba import njit

    @njit
    def chatty(a):
        print("numba says", a[0])
        a[0] += 1
        return a[0]

    ns = ipshell.user_ns
    ns.update(chatty=chatty, arr=np.zeros(1))
    try:
        capfd.readouterr()
        ipshell.run_line_magic("nlprun", "--sample-time 0.05 -f chatty print('python says', chatty(arr))")
        out = capfd.readouterr().out
        assert out.count("numba says 0.0") == 1, out
        assert out.count("python says 1.0") == 1, out
        assert ns["arr"][0] == 1.0
    finally:
        for name in ("chatty", "arr"):
            ns.pop(name, None)


def test_state_the_statement_holds_that_cannot_be_saved_does_not_stop_the_replays(tmp_path):
    """An open file the statement writes to is the statement's: only the kernel's call is
    replayed, so the file is written once and the extra runs are made all the same."""
    handle = open(tmp_path / "log.txt", "w")
    arr = np.random.default_rng(3).random(30)
    prof = numba_lprun.LineProfiler(bubble_sort, **QUICK)
    try:
        prof.runctx(
            "n = bubble_sort(arr); handle.write(str(n) + '\\n')",
            {"bubble_sort": bubble_sort, "arr": arr, "handle": handle},
            None,
        )
    finally:
        handle.close()
    assert (tmp_path / "log.txt").read_text().count("\n") == 1
    assert np.all(np.diff(arr) >= 0)  # sorted once, by the user's run, and left so
    profile = prof.profile
    assert profile.runs.once is None and profile.sampling.extra_runs >= 1
    assert any("replay" in e for e in profile.runs.extra)


def test_over_the_snapshot_budget_runs_once():
    arr = np.random.default_rng(3).random(2000)
    prof = numba_lprun.LineProfiler(bubble_sort, snapshot_budget=1000, **QUICK)
    swaps = prof.runcall(bubble_sort, arr)
    assert np.all(np.diff(arr) >= 0)
    assert "snapshot budget" in prof.profile.runs.once
    assert prof.profile.functions[0].counts.hits  # the one run was profiled
    assert swaps > 0


def test_parallel_workers_random_states_are_put_back():
    """prange workers draw from their own thread-local states: each run must start from them."""
    import numba

    from numba_lprun.internals import worker_random_state_addresses
    from tests.stateful import parallel_noise, seed_workers

    def worker_states():
        import ctypes

        return {label: ctypes.string_at(address, 2512) for label, address in worker_random_state_addresses()}

    threads = numba.get_num_threads()
    seed_workers(threads)
    expected = parallel_noise(np.zeros(4000))
    after = worker_states()
    seed_workers(threads)
    out = np.zeros(4000)
    prof = numba_lprun.LineProfiler(parallel_noise, **QUICK)
    got = prof.runcall(parallel_noise, out)
    assert got == expected  # the instrumented run drew the same numbers as one plain call
    assert worker_states() == after
    assert hits_of(prof.get_stats(), "parallel_noise")


def test_statement_drawing_from_numpys_global_state_sees_the_users_draw(ipshell):
    ns = ipshell.user_ns
    ns.update(bubble_sort=bubble_sort, np=np)
    try:
        np.random.seed(5)
        expected = bubble_sort(np.random.rand(50))
        after = np.random.rand()
        np.random.seed(5)
        ipshell.run_line_magic(
            "nlprun", "--sample-time 0.05 -f bubble_sort swaps = bubble_sort(np.random.rand(50))"
        )
        assert ns["swaps"] == expected  # sorted the data one call would have drawn
        assert np.random.rand() == after  # and the global state moved on by one draw
    finally:
        for name in ("bubble_sort", "swaps"):
            ns.pop(name, None)


def test_a_large_state_the_statement_holds_is_not_walked():
    """Only the replayed calls' state is saved: the statement's other names are never walked."""
    nested = [[float(i)] for i in range(250_000)]  # more objects than a snapshot walks
    prof = numba_lprun.LineProfiler(bubble_sort, **QUICK)
    arr = np.random.default_rng(3).random(20)
    prof.runctx("bubble_sort(arr); nested", {"bubble_sort": bubble_sort, "arr": arr, "nested": nested}, None)
    assert prof.profile.runs.once is None and prof.profile.sampling.extra_runs >= 1


def test_a_failed_compile_during_the_run_keeps_none_of_the_calls_arguments_alive():
    """Numba's typing tries ``@overload`` implementations and drops those that fail; a dropped
    one keeps its failure, whose traceback holds the frames of the call that compiled. The run
    held such implementations (its compile records): a typed dict passed in outlived the
    program's last reference, and Numba's own leak checks (``test_dictobject``) failed."""
    import gc
    import warnings
    import weakref

    from numba import types
    from numba.typed import Dict

    freed = []

    def body():
        d = Dict.empty(key_type=types.Tuple([types.uint32, types.uint32]), value_type=types.int64)
        with warnings.catch_warnings():  # Numba warns of the unsafe cast
            warnings.simplefilter("ignore")
            d[(1, 1)] = 12345  # an unsafe cast: typing tries implementations that fail
        kept = weakref.ref(d)
        del d
        gc.collect()
        freed.append(kept() is None)

    numba_lprun.LineProfiler(bubble_sort, timing=False).runcall(body)
    assert freed == [True]
