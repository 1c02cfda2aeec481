"""nogil functions run by several Python threads at once: exact hits, every thread sampled."""

import threading

import line_profiler
import numba
import numpy as np
import pytest
from numba import njit, stencil

import numba_lprun
from numba_lprun.instrument import probes as P
from numba_lprun.instrument.clock import current_clock
from numba_lprun.instrument.rewrite import instrument
from numba_lprun.instrument.source import read_source
from numba_lprun.instrument.stripes import CounterTable, stripes_supported
from numba_lprun.instrument.twins import compile_like_original, make_twin, objmode_names
from numba_lprun.run.targets import cached_target
from numba_lprun.sampling import Sampler
from numba_lprun.sampling import _native as N
from numba_lprun.twin_kind import COUNTING
from tests import kinds
from tests.conftest import hits_of, reference_hits

CHUNKS = [np.full(50_000 + 1000 * i, 1.0 + i) for i in range(4)]


def sequential_hits(func, chunks):
    """line_profiler's hits of ``func`` called on each chunk in turn."""
    total: dict[int, int] = {}
    for chunk in chunks:
        for line, hits in reference_hits(func, chunk).items():
            total[line] = total.get(line, 0) + hits
    return total


@pytest.fixture(scope="module")
def expected():
    kinds.nogil_body(CHUNKS[0])
    return kinds.threaded_sum(CHUNKS), sequential_hits(kinds.nogil_body, CHUNKS)


def test_threaded_nogil_hits_exact(expected):
    """Four Python threads in one nogil function: every one of ten profiles is exact. Without
    atomic counters about half of such profiles lost hits, so ten runs would all pass with a
    chance of about 0.1% (repetition to expose a race, not a retry: any loss fails)."""
    result, hits = expected
    for _ in range(10):
        prof = numba_lprun.LineProfiler(kinds.nogil_body, sample=False)
        assert prof.runcall(kinds.threaded_sum, CHUNKS) == result
        assert hits_of(prof.get_stats(), "nogil_body") == hits
    assert kinds.threaded_sum.__globals__["nogil_body"] is kinds.nogil_body
    assert type(kinds.nogil_body).__name__ == "CPUDispatcher"


def test_callee_of_nogil_caller_counts_exact():
    chunks = [np.ones(30_000) for _ in range(4)]
    kinds.nogil_caller(chunks[0])
    prof = numba_lprun.LineProfiler(kinds.inner_counted, sample=False)
    assert prof.runcall(kinds.threaded_caller, chunks) == kinds.threaded_caller(chunks)
    (stats,) = prof.profile.functions
    assert stats.counts.calls == 120_000
    assert kinds.nogil_caller.py_func.__globals__["inner_counted"] is kinds.inner_counted


def test_threaded_nogil_in_magic(ipshell, expected):
    result, hits = expected
    ipshell.push({"kinds": kinds, "CHUNKS": CHUNKS})
    line = "-r --no-sample -f kinds.nogil_body r = kinds.threaded_sum(CHUNKS)"
    prof = ipshell.run_line_magic("nlprun", line)
    assert ipshell.user_ns["r"] == result
    assert hits_of(prof.get_stats(), "nogil_body") == hits
    assert kinds.nogil_body is ipshell.user_ns["kinds"].nogil_body


@pytest.mark.skipif(N.check_platform() is not None, reason=str(N.check_platform()))
def test_sampler_sees_threads_started_while_it_runs():
    big = np.ones(3_000_000)
    kinds.nogil_body(big)
    stop = threading.Event()
    seen = []

    def spin():
        seen.append(threading.get_native_id())
        while not stop.is_set():
            kinds.nogil_body(big)

    with Sampler(rate_hz=1000) as sampler:
        worker = threading.Thread(target=spin)
        worker.start()
        try:
            threading.Event().wait(0.3)
        finally:
            stop.set()
            worker.join()
    assert sampler.unavailable is None
    samples = sampler.samples
    assert seen[0] in samples.tids
    assert samples.per_thread.get(seen[0], 0) > 20


DENSITY_X, DENSITY_POINTS = np.linspace(0.0, 1.0, 1500), np.linspace(0.0, 1.0, 400)


@pytest.fixture(scope="module")
def density_expected():
    """The parallel caller's result and the helper's exact hits: one line per call, 600,000 calls."""
    calls = DENSITY_X.size * DENSITY_POINTS.size
    return kinds.parallel_density(DENSITY_X, DENSITY_POINTS), calls


def test_helper_of_profiled_parallel_caller_counts_exact(density_expected):
    """A helper called from a ``prange`` body runs on every worker thread: profiled with its
    caller, its counters must be atomic. Before they were (non-atomic adds from 2+ threads),
    every run lost 0.3-3% of a helper's hits; 20 runs of 600,000 calls must all be exact."""
    result, calls = density_expected
    first = kinds.gauss_weight.py_func.__code__.co_firstlineno
    lines = {first + 2: calls, first + 3: calls}
    for _ in range(20):
        prof = numba_lprun.LineProfiler(kinds.parallel_density, kinds.gauss_weight, timing=False)
        assert np.array_equal(prof.runcall(kinds.parallel_density, DENSITY_X, DENSITY_POINTS), result)
        assert hits_of(prof.get_stats(), "gauss_weight") == lines


def python_helper_hits(caller, helper, *args) -> dict[int, int]:
    """line_profiler's hits of ``helper`` in ``caller``'s Python function (``prange`` is
    ``range`` there), the raise that ends it caught."""
    prof = line_profiler.LineProfiler(helper.py_func)
    names = caller.py_func.__globals__
    bound = [name for name, value in names.items() if value is helper]
    for name in bound:
        names[name] = helper.py_func
    try:
        prof.runcall(caller.py_func, *args)
    except ValueError:
        pass
    finally:
        for name in bound:
            names[name] = helper
    return hits_of(prof.get_stats(), helper.py_func.__name__)


def outcome(call, *args) -> object:
    """What ``call(*args)`` returned (an array's bytes) or raised."""
    try:
        return call(*args).tobytes()
    except ValueError as error:
        return error


def test_a_helper_that_raises_in_a_prange_loop_keeps_every_hit():
    """A helper of a ``prange`` loop raises on bad data: the hits its workers held when the
    error ended their chunk reach the table (the flush at the function's exit). Numba ends the
    chunk where the error was raised, and then raises it to the caller or not (the rest of that
    chunk's output stays zero), which the profiled call must do alike; the chunk that raised
    stops at the bad point and the others run whole, so on one thread or two the helper's hits
    are line_profiler's up to the raise."""
    x, points = np.linspace(0.0, 1.0, 200), np.linspace(0.0, 1.0, 50)
    points[31] = 1e6
    expected = python_helper_hits(kinds.parallel_checked_density, kinds.checked_weight, x, points)
    first = kinds.checked_weight.py_func.__code__.co_firstlineno
    assert expected[first + 3] == 1 and expected[first + 2] == 31 * 200 + 1  # the raise, the test
    threads = numba.get_num_threads()
    try:
        for count in sorted({1, min(2, threads)}):
            numba.set_num_threads(count)
            plain = outcome(kinds.parallel_checked_density, x, points)
            prof = numba_lprun.LineProfiler(
                kinds.parallel_checked_density, kinds.checked_weight, timing=False
            )
            profiled = outcome(prof.runcall, kinds.parallel_checked_density, x, points)
            assert type(profiled) is type(plain) and str(profiled) == str(plain), (profiled, plain)
            assert hits_of(prof.get_stats(), "checked_weight") == expected, count
    finally:
        numba.set_num_threads(threads)


EARLY_RETURN_HELPER = """\
@njit
def cut_weight(d):
    if abs(d) > 0.3:
        return 0.0
    return math.exp(-0.5 * d * d)
"""
PARALLEL_CALLER = """\
@njit(parallel=True)
def cut_density(x, points):
    out = np.zeros(points.size)
    for j in prange(points.size):
        s = 0.0
        for i in range(x.size):
            s += cut_weight(points[j] - x[i])
        out[j] = s
    return out
r = cut_density(x, points)
"""


PARALLEL_UFUNC = """\
@vectorize(["float64(float64)"], target="parallel")
def cut_ufunc(d):
    return cut_weight(d)
r = cut_ufunc(np.subtract.outer(points, x).ravel())
"""


@pytest.mark.parametrize("defined", ["before", "with", "through", "ufunc"])
def test_a_helper_whose_parallel_caller_a_magic_cell_defines_keeps_every_hit(ipshell, defined):
    """The helper's twin was built before its ``prange`` caller existed (defined by the cell,
    later in the run, profiled or not): built with serial counters, two threads added their
    held hits over each other and half the helper's calls were lost, silently. Its twin is
    built again, atomic, when the parallel caller is defined (profiled: ``Runner.build``) or
    compiled (not profiled: ``Runner.widen_for``); ``through``: the parallel caller reaches it
    through a serial function the cell compiled first (against the serial twin: compiled again)."""
    ns = ipshell.user_ns
    ipshell.run_cell("import math\nimport numpy as np\nfrom numba import njit, prange\n")
    x, points = np.linspace(0.0, 1.0, 300), np.linspace(0.0, 1.0, 40)
    ns.update(x=x, points=points)
    caller, extra = PARALLEL_CALLER, 0
    try:
        if defined == "before":  # the helper exists, the cell defines its caller: -f the helper
            ipshell.run_cell(EARLY_RETURN_HELPER)
            prof = ipshell.run_cell_magic("nlprun", "--hits -r -f cut_weight", caller)
        elif defined == "with":  # the cell defines both, helper first: both profiled
            prof = ipshell.run_cell_magic("nlprun", "--hits -r", EARLY_RETURN_HELPER + caller)
        elif defined == "ufunc":  # a parallel ufunc's kernel: compiled without a compile event
            ipshell.run_cell(EARLY_RETURN_HELPER + "from numba import vectorize\n")
            prof = ipshell.run_cell_magic("nlprun", "--hits -r -f cut_weight", PARALLEL_UFUNC)
        else:
            serial = "@njit\ndef via(d):\n    return cut_weight(d)\nvia(0.1)\n"
            caller, extra = serial + caller.replace("s += cut_weight(", "s += via("), 1
            prof = ipshell.run_cell_magic("nlprun", "--hits -r -f cut_weight", EARLY_RETURN_HELPER + caller)
        first = ns["cut_weight"].py_func.__code__.co_firstlineno
        outside = int((np.abs(np.subtract.outer(ns["points"], ns["x"])) > 0.3).sum())
        calls = 300 * 40 + extra  # via(0.1): one more, inside
        expected = {first + 2: calls, first + 3: outside, first + 4: calls - outside}
        if defined == "before":  # and as line_profiler counts the Python functions
            assert python_helper_hits(ns["cut_density"], ns["cut_weight"], ns["x"], ns["points"]) == expected
        assert hits_of(prof.get_stats(), "cut_weight") == expected
        target = cached_target(ns["cut_weight"], current_clock().kind)
        assert target.atomic == {"counting": True}  # whatever the threads' timing let through
        if defined == "ufunc":  # the plain run after the profile, alike
            assert np.array_equal(ns["r"], ns["cut_ufunc"](np.subtract.outer(points, x).ravel()))
        else:
            assert np.array_equal(ns["r"], ns["cut_density"](x, points))
    finally:
        for name in ("cut_weight", "cut_density", "cut_ufunc", "via", "r", "x", "points"):
            ns.pop(name, None)


JITCLASS_AND_PARALLEL_USER = """\
@jitclass([("h", float64)])
class CutKernel:
    def __init__(self, h):
        self.h = h

    def weight(self, d):
        u = d / self.h
        if abs(u) > 1.0:
            return 0.0
        return 1.0 - u * u


@njit(parallel=True)
def cut_kernel_density(kernel, x, points):
    out = np.zeros(points.size)
    for j in prange(points.size):
        s = 0.0
        for i in range(x.size):
            s += kernel.weight(points[j] - x[i])
        out[j] = s
    return out
r = cut_kernel_density(CutKernel(0.3), x, points)
"""


def test_a_jitclass_method_whose_parallel_user_a_magic_cell_defines_keeps_every_hit(ipshell):
    """A jitclass method reached through an instance by a ``prange`` function the cell defines
    after the class (``-f Class.member``, a member of a class the cell makes): no name shows
    that the parallel function reaches it, only the instance its typing meets, so the method's
    twin is built again with per-thread counters when that function compiles, and swapped into
    the class in place of the first (half its hits were lost on two threads)."""
    ns = ipshell.user_ns
    ipshell.run_cell("import numpy as np\nfrom numba import njit, prange, float64\n")
    ipshell.run_cell("from numba.experimental import jitclass\n")
    x, points = np.linspace(0.0, 1.0, 300), np.linspace(0.0, 1.0, 40)
    ns.update(x=x, points=points)
    try:
        prof = ipshell.run_cell_magic("nlprun", "--hits -r -f CutKernel.weight", JITCLASS_AND_PARALLEL_USER)
        assert [f.heading for f in prof.profile.functions] == ["CutKernel.weight"]
        first = ns["CutKernel"].class_type.jit_methods["weight"].py_func.__code__.co_firstlineno
        outside = int((np.abs(np.subtract.outer(points, x) / 0.3) > 1.0).sum())
        calls = x.size * points.size
        expected = {first + 1: calls, first + 2: calls, first + 3: outside, first + 4: calls - outside}
        assert hits_of(prof.get_stats(), "weight") == expected
    finally:
        for name in ("CutKernel", "cut_kernel_density", "r", "x", "points"):
            ns.pop(name, None)


def test_a_counter_table_taken_over_keeps_its_counts_and_is_taken_back():
    """A twin built again with other stripes (``Runner.widen_for``) counts in a new table, while
    compiled code may still add to the old one: both are read, zeroed and totalled together, and
    switching back takes the old table again (two tables however often a session switches)."""
    serial = CounterTable(3, 0)
    serial.shared[0, 0], serial.shared[-1] = 5, (1, 10)
    striped = serial.succeeded(64)
    striped.array[3, 0, 0] = 7
    assert striped.read()[0, 0] == 12 and striped.earlier == (serial,)
    assert striped.take_totals() == (1, 10) and striped.take_totals() == (0, 0)
    again = striped.succeeded(0)
    assert again is serial and again.earlier == (striped,) and again.read()[0, 0] == 12
    assert again.succeeded(64) is striped and striped.earlier == (serial,)
    striped.zero()
    assert not striped.read().any()


def test_atomic_counters_only_where_threads_meet():
    """A helper that only serial code reaches keeps plain (non-atomic) counters: atomics cost, so
    they go only where code can run on several threads at once (any parallel function that
    reaches the helper, profiled or not, would make them atomic)."""
    prof = numba_lprun.LineProfiler(kinds.parallel_density, kinds.square_weight, timing=False)
    prof.runcall(kinds.serial_density, DENSITY_X, DENSITY_POINTS)
    assert hits_of(prof.get_stats(), "square_weight") == {
        kinds.square_weight.py_func.__code__.co_firstlineno + 2: 400
    }
    assert cached_target(kinds.square_weight, current_clock().kind).atomic == {"counting": False}
    assert cached_target(kinds.parallel_density, current_clock().kind).atomic == {"counting": True}


@stencil
def blur(a):
    return 0.5 * (a[-1] + a[1])


@njit
def blur_serially(a):
    return blur(a)


def test_a_stencil_that_only_serial_code_calls_keeps_plain_counters():
    """A stencil's code runs on worker threads only inside a ``parallel=True`` caller, which then
    reaches it (tests.kinds.smooth_parallel: atomic, and exact in test_kinds). Called from Python
    or serial jitted code it runs on one thread: plain adds, which cost a 1000x1000 stencil a
    third of what atomic ones did (benchmarks/counting_cost.py)."""
    a = np.linspace(0.0, 1.0, 50)
    prof = numba_lprun.LineProfiler(blur, timing=False)
    assert np.allclose(prof.runcall(blur_serially, a), blur_serially(a))
    assert hits_of(prof.get_stats(), "blur") == {blur.kernel_ir.func_id.func.__code__.co_firstlineno + 2: 48}
    (target,) = prof._runner.targets.values()
    assert target.atomic == {"counting": False}


@pytest.mark.skipif(not stripes_supported(), reason="no per-thread stripes on this platform")
def test_threads_that_share_a_stripe_slot_lose_no_count():
    """Counters with one per-thread stripe: the first of four threads alive at once claims it
    and adds without a lock, the other three find its slot held and add atomically to the shared
    stripe; the sum over stripes is exact, and both paths took counts (a stripe that lost adds,
    or a thread that wrote another's stripe, would show as a wrong sum)."""
    src = read_source(kinds.nogil_body)
    rewritten = instrument(src.tree, lines=True, objmode_names=objmode_names(src.py_func))
    table = CounterTable(len(rewritten.rows), stripes=1)
    cfg = P.ProbeConfig(table.address, len(rewritten.rows), "tsc", timing=False, atomic=True, stripes=1)
    twin = make_twin(kinds.nogil_body, src, rewritten.tree, P.make_probes(cfg), COUNTING, line_tables=False)
    compile_like_original(twin, src)
    body = twin.dispatcher
    chunk = np.ones(200_000)
    body(chunk)  # compiled; this thread now holds the slot, so the owner table is cleared too
    table.array[:] = 0
    start = threading.Barrier(4)

    def work():
        start.wait()  # all four alive together: four thread pointers, one slot
        for _ in range(20):
            body(chunk)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    text = {i: src.lines[line - src.first_lineno] for i, line in enumerate(rewritten.rows)}
    loop_row = next(i for i, line in text.items() if "s +=" in line)
    assert table.read()[loop_row, 0] == 4 * 20 * chunk.size
    assert table.read()[-1, 0] == 80  # calls
    assert table.array[1, loop_row, 0] > 0 and table.array[0, loop_row, 0] > 0


def test_a_thread_an_engine_named_for_itself_is_never_armed():
    """A native thread that named itself (Ray's and gRPC's do: 25 of them, busy, cost a profiled
    Ray map 3.5x when each was sampled) runs no jitted code: the sampler leaves it alone; Python's
    threads and native threads that kept the process's name (Numba's, OpenMP's) are kept."""
    import ctypes
    import os
    import threading

    from numba_lprun.sampling._native import list_threads, user_threads

    libc = ctypes.CDLL(None)
    ready, stop, found = threading.Event(), threading.Event(), {}
    body_type = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)

    @body_type
    def body(_):
        libc.prctl(15, b"engine-io", 0, 0, 0)  # PR_SET_NAME, as an engine's thread names itself
        found["tid"] = threading.get_native_id()
        ready.set()
        stop.wait(30)
        return None

    handle = ctypes.c_ulong()
    assert libc.pthread_create(ctypes.byref(handle), None, body, None) == 0
    try:
        assert ready.wait(10)
        tids = list_threads()
        assert found["tid"] in tids
        kept = user_threads(tids)
        assert found["tid"] not in kept and os.getpid() in kept
        assert {t.native_id for t in threading.enumerate() if t.native_id} <= set(kept)
    finally:
        stop.set()
        libc.pthread_join(handle, None)


PASSED_TO_A_PARALLEL_CALLER = (
    PARALLEL_CALLER.replace("cut_density(x, points", "cut_density_of(x, points, kernel")
    .replace("cut_weight(", "kernel(")
    .replace("r = cut_density_of(x, points, kernel)", "r = cut_density_of(x, points, passed_weight)")
)


HELD_BY_A_PARALLEL_CALLER = {
    # the helper reached through a closure cell and a global tuple: both hold the serial twin
    # the program's name held when they were made, not a name the profile can point elsewhere
    "closure": PARALLEL_CALLER.replace("@njit(", "def make(kernel):\n @njit(")
    .replace("\ndef", "\n def")
    .replace("\n    ", "\n     ")
    .replace("cut_weight(", "kernel(")
    .replace("\nr = ", "\n return cut_density\ncut_density = make(held_weight)\nr = "),
    "tuple": "KERNELS = (held_weight,)\n"
    + PARALLEL_CALLER.replace("    out = np.zeros", "    kernel = KERNELS[0]\n    out = np.zeros").replace(
        "cut_weight(", "kernel("
    ),
}


@pytest.mark.parametrize("holder", sorted(HELD_BY_A_PARALLEL_CALLER))
def test_a_helper_a_parallel_function_reaches_through_a_closure_or_a_tuple_keeps_every_hit(ipshell, holder):
    """The serial twin of a helper held in a closure cell or a global tuple of a ``prange``
    function made later: rebuilt with per-thread counters, and the object held made to compile as
    the new twin (``twins.compile_in_place``), so no hit is lost to the two threads."""
    ns = ipshell.user_ns
    ipshell.run_cell("import math\nimport numpy as np\nfrom numba import njit, prange\n")
    x, points = np.linspace(0.0, 1.0, 300), np.linspace(0.0, 1.0, 40)
    ns.update(x=x, points=points)
    try:
        ipshell.run_cell(EARLY_RETURN_HELPER.replace("cut_weight", "held_weight"))
        cell = HELD_BY_A_PARALLEL_CALLER[holder]
        prof = ipshell.run_cell_magic("nlprun", "--hits -r -f held_weight", cell)
        first = ns["held_weight"].py_func.__code__.co_firstlineno
        outside = int((np.abs(np.subtract.outer(points, x)) > 0.3).sum())
        expected = {first + 2: 300 * 40, first + 3: outside, first + 4: 300 * 40 - outside}
        assert hits_of(prof.get_stats(), "held_weight") == expected, cell
        assert np.array_equal(ns["r"], ns["cut_density"](x, points))
    finally:
        for name in ("held_weight", "cut_density", "make", "KERNELS", "r", "x", "points"):
            ns.pop(name, None)


@pytest.mark.parametrize("signature", ["lazy", "explicit"])
def test_a_helper_passed_to_a_parallel_function_keeps_every_hit(ipshell, signature):
    """A helper passed as an argument to a ``prange`` function is typed as the dispatcher it was
    passed as: the serial twin the program's name held. Built serial (no parallel code named it),
    two threads added their held hits over each other and half its calls were lost (then said:
    "hits may be short"). The twin is built again, atomic, and the object passed compiles as the
    new one (``twins.compile_in_place``), also for explicit signatures (compiled again at once,
    since it compiles nothing on demand). The program's result is its own."""
    ns = ipshell.user_ns
    ipshell.run_cell("import math\nimport numpy as np\nfrom numba import njit, prange\n")
    x, points = np.linspace(0.0, 1.0, 300), np.linspace(0.0, 1.0, 40)
    ns.update(x=x, points=points)
    helper = EARLY_RETURN_HELPER.replace("cut_weight", "passed_weight")
    if signature == "explicit":
        helper = helper.replace("@njit", '@njit("float64(float64)")')
    try:  # a name of its own: a parallel function of another test that names it would make it atomic
        ipshell.run_cell(helper)
        assert "def cut_density_of(x, points, kernel)" in PASSED_TO_A_PARALLEL_CALLER
        prof = ipshell.run_cell_magic("nlprun", "--hits -r -f passed_weight", PASSED_TO_A_PARALLEL_CALLER)
        assert prof.profile.short == ()
        first = ns["passed_weight"].py_func.__code__.co_firstlineno
        outside = int((np.abs(np.subtract.outer(points, x)) > 0.3).sum())
        expected = {first + 2: 300 * 40, first + 3: outside, first + 4: 300 * 40 - outside}
        assert hits_of(prof.get_stats(), "passed_weight") == expected
        assert np.array_equal(ns["r"], ns["cut_density_of"](x, points, ns["passed_weight"]))
    finally:
        for name in ("passed_weight", "cut_density_of", "r", "x", "points"):
            ns.pop(name, None)
