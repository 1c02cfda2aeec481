"""The other ways Numba code is written, each profiled from the API and the magic:
result equal to the unprofiled call, hits equal to line_profiler's, state put back."""

import time
from pathlib import Path

import numpy as np
import pytest

import numba_lprun
from numba_lprun.internals import installed_numba, ufunc_dispatcher
from tests import kinds
from tests.conftest import hits_of, same
from tests.test_cli import nlprun


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


def test_signatures_name_a_function_argument_and_a_jitclass_without_their_addresses():
    """Numba's type names carry addresses (``<function integrand at 0x7f...>``, ``Particle#7f48...``):
    noise in the header, and different in every process, so a worker's signature did not merge
    with the parent's. The profile names them without."""
    prof = numba_lprun.LineProfiler(kinds.integrate, kinds.simulate, sample=False)
    prof.runcall(kinds.integrate, kinds.integrand, 0.0, 1.0, 10)
    prof.runcall(kinds.simulate, kinds.Particle(0.0, 2.0), 3)
    said = {stats.source.name: stats.source.signatures for stats in prof.profile.functions}
    assert said["integrate"] == ("type(CPUDispatcher(integrand)), float64, float64, int64",)
    (particle,) = said["simulate"]
    assert particle.startswith("instance.jitclass.Particle<x:float64,") and particle.endswith(", int64")


def test_function_passed_inside_jitted_code():
    expected = kinds.integrate_both(40)
    prof = numba_lprun.LineProfiler(kinds.integrand, sample_time=0.05)
    assert same(prof.runcall(kinds.integrate_both, 40), expected)
    ref = python_hits(
        [kinds.integrand.py_func], lambda: kinds.integrate.py_func(kinds.integrand.py_func, 0.0, 1.0, 40)
    )
    assert hits_of(prof.get_stats(), "integrand") == ref["integrand"]
    assert kinds.integrate_both.py_func.__globals__["integrand"] is kinds.integrand


# -- @vectorize / @guvectorize (target cpu) ------------------------------------------------
A = np.linspace(0.0, 1.0, 10)
A2 = A.reshape(2, -1)


def kernel(ufunc):
    """The Python function a @vectorize/@guvectorize ufunc compiles."""
    return ufunc_dispatcher(ufunc).py_func


def per_element(py_func, *arrays):
    """Call a @vectorize kernel's Python function on each element, as the ufunc does."""
    return [py_func(*values) for values in zip(*(np.broadcast_arrays(*arrays)), strict=True)]


def per_row(py_func, x):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        py_func(x[i], out[i : i + 1])
    return out


def ufunc_state(u):
    return type(u), dict(vars(u))


#: VERSION: jitted code calls a @guvectorize function from Numba 0.60 on (0.59: "Untyped global
#: name ... Cannot determine Numba type of GUFunc"), so the cases where jitted code calls the
#: ufuncs need 0.60; the ufuncs themselves are profiled on 0.59 too.
GUFUNC_FROM_JIT = pytest.mark.skipif(
    installed_numba() < (0, 60), reason="jitted code calls a @guvectorize function from Numba 0.60 on"
)

UFUNC_CASES = [
    ("clip_add", lambda k: k.clip_add(A, A), lambda: per_element(kernel(kinds.clip_add), A, A)),
    ("clip_add", lambda k: k.clip_add(A.astype(np.float32), np.float32(0.5)), None),
    ("lazy_double", lambda k: k.lazy_double(A), lambda: per_element(kernel(kinds.lazy_double), A)),
    (
        "row_total",
        lambda k: k.row_total(A.reshape(2, -1)),
        lambda: per_row(kernel(kinds.row_total), A.reshape(2, -1)),
    ),
    pytest.param(
        "clip_add",
        lambda k: k.uses_ufuncs(A),
        lambda: per_element(kernel(kinds.clip_add), A, A),
        marks=GUFUNC_FROM_JIT,
    ),
    pytest.param(
        "row_total",
        lambda k: k.uses_ufuncs(A),
        lambda: per_row(kernel(kinds.row_total), A2),
        marks=GUFUNC_FROM_JIT,
    ),
]


@pytest.mark.parametrize("name, call, reference", UFUNC_CASES)
def test_ufunc_api(name, call, reference):
    u = getattr(kinds, name)
    expected = call(kinds)
    before = ufunc_state(u)
    prof = numba_lprun.LineProfiler(u, sample_time=0.05)
    got = prof.runcall(call, kinds)
    assert np.array_equal(got, expected)
    (stats,) = prof.profile.functions
    if reference is None:
        f32 = A.astype(np.float32)
        reference = lambda: per_element(kernel(kinds.clip_add), f32, np.float32(0.5))  # noqa: E731
    assert stats.counts.hits == python_hits([kernel(u)], reference)[kernel(u).__name__]
    # the user's run is probed (a ufunc's loops have no line tables): no separate probed run
    # was made, so no note says one was not compared
    assert stats.probes.ticks and stats.distortion.probe_unmeasured is None
    said = " ".join(n.text for n in stats.diagnosis.notes)  # why probes: the ufunc kind's reason, not a guess
    assert "a ufunc's loops without line tables" in said and "stencil" not in said, said
    assert stats.source.unsampled and ufunc_state(u) == before and getattr(kinds, name) is u
    assert np.array_equal(call(kinds), expected)  # the user's ufunc still works


@pytest.mark.parametrize(
    "name, statement, reference",
    [
        ("clip_add", "clip_add(A, A)", lambda: per_element(kernel(kinds.clip_add), A, A)),
        ("row_total", "row_total(A2)", lambda: per_row(kernel(kinds.row_total), A2)),
    ],
)
def test_ufunc_magic(ipshell, name, statement, reference):
    u = getattr(kinds, name)
    expected = eval(statement, {name: u, "A": A, "A2": A2})
    before = ufunc_state(u)
    got, prof = in_magic(ipshell, name, statement, {name: u, "A": A, "A2": A2})
    assert np.array_equal(got, expected)
    ref = python_hits([kernel(u)], reference)
    assert hits_of(prof.get_stats(), name) == ref[name]
    assert ipshell.user_ns[name] is u and ufunc_state(u) == before


def test_ufunc_cli(tmp_path):
    script = tmp_path / "ufuncs.py"
    script.write_text(
        "import numpy as np\nfrom tests import kinds\n"
        "print('sum', kinds.clip_add(np.linspace(0, 1, 10), 0.5).sum())\n"
    )
    root = Path(kinds.__file__).resolve().parents[1]
    done = nlprun("--no-sample", "-f", "tests.kinds:clip_add", str(script), cwd=tmp_path, env_path=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("sum ") == 1
    assert "Function:   clip_add at line" in done.stdout
    first = kernel(kinds.clip_add).__code__.co_firstlineno
    rows = {ln.split()[0]: ln.split()[1] for ln in done.stdout.splitlines() if ln.strip()[:1].isdigit()}
    assert rows[str(first + 2)] == "10" and rows[str(first + 4)] == "5"


def test_parallel_target_ufunc_refused():
    from numba import vectorize

    par = vectorize(["float64(float64)"], target="parallel")(lambda x: x + 1.0)
    with pytest.raises(numba_lprun.NotProfilableError, match="target='parallel'"):
        numba_lprun.LineProfiler(par)


# -- @register_jitable and @overload implementations ---------------------------------------
def overload_impl():
    from numba_lprun.instrument.profilable import implementations, overload_templates

    (template,) = overload_templates(kinds.sum_squares)
    # the program's own compile is the first; a profiled caller's twin, compiled with line
    # tables, has Numba build and keep another for its flags (see
    # test_an_overload_profiled_with_its_caller_counts_its_hits)
    return implementations(template)[0]


def overload_state():
    from numba_lprun.instrument.profilable import overload_templates

    found = []
    for f in (kinds.jitable_helper, kinds.sum_squares):
        for t in overload_templates(f):
            found.append((dict(t._impl_cache), dict(t._compiled_overloads)))
    return found


def overload_reference(name):
    """The Python function profiled for ``name`` (a ``@register_jitable`` one, or ``sum_squares``'s
    ``@overload`` implementation) and its hits under line_profiler's model in ``uses_overloads``."""
    if name == "jitable_helper":
        py_func = kinds.jitable_helper
        return py_func, python_hits([py_func], lambda: kinds.uses_overloads.py_func(A, 4))[py_func.__name__]
    py_func = overload_impl().py_func
    return py_func, python_hits([py_func], lambda: py_func(A))["impl"]


@pytest.fixture(scope="module")
def overloads_compiled():
    return kinds.uses_overloads(A, 4)


@pytest.mark.parametrize("via_magic", [False, True], ids=["api", "magic"])
@pytest.mark.parametrize("name", ["jitable_helper", "sum_squares"])
def test_register_jitable_and_overload(ipshell, overloads_compiled, name, via_magic):
    expected = overloads_compiled
    py_func, ref = overload_reference(name)
    before = overload_state()
    if via_magic:
        ns = {name: getattr(kinds, name), "uses_overloads": kinds.uses_overloads, "A": A}
        got, prof = in_magic(ipshell, name, "uses_overloads(A, 4)", ns)
    else:
        prof = numba_lprun.LineProfiler(getattr(kinds, name), sample_time=0.05)
        got = prof.runcall(kinds.uses_overloads, A, 4)
    assert same(got, expected)
    assert hits_of(prof.get_stats(), py_func.__qualname__) == ref
    assert overload_state() == before
    assert kinds.uses_overloads.py_func.__globals__[name] is getattr(kinds, name)


@pytest.mark.parametrize("name", ["jitable_helper", "sum_squares"])
def test_an_overload_profiled_with_its_caller_counts_its_hits(overloads_compiled, name):
    """The caller profiled too: its twin compiles with line tables, and Numba keys a template's
    implementations by the flags of the caller being compiled, so the twin's lookup missed the
    entry swapped for the implementation's twin, and Numba built the implementation again from
    the original function: the helper read "not called" (0 hits) beside its caller's hits."""
    py_func, ref = overload_reference(name)
    caller_ref = python_hits([kinds.uses_overloads.py_func], lambda: kinds.uses_overloads.py_func(A, 4))
    prof = numba_lprun.LineProfiler(getattr(kinds, name), kinds.uses_overloads, sample_time=0.05)
    assert same(prof.runcall(kinds.uses_overloads, A, 4), overloads_compiled)
    assert hits_of(prof.get_stats(), py_func.__qualname__) == ref
    assert hits_of(prof.get_stats(), "uses_overloads") == caller_ref["uses_overloads"]


def test_a_helper_called_from_overload_bodies_profiled_alone_counts_its_hits():
    """``halved`` is called from the bodies of an @overload, a @register_jitable and an
    @overload_method, none of them profiled: jitted code reaches those bodies through their
    typing templates, which kept the implementations compiled before the run (linked to the
    original helper), so the helper read "not called". Each template holding a body that calls
    a target now gets the body's relinked copy for the run, and the callers (naming the
    overloaded function, or holding the array's bound method in their types) are relinked;
    after the run the templates hold their own implementations again."""
    from numba_lprun.internals import cached_dispatchers, templates_with_implementations

    a = np.random.default_rng(0).random(200)
    expected = kinds.through_overloads(a)
    before = {t: list(cached_dispatchers(t)) for t in templates_with_implementations()}
    prof = numba_lprun.LineProfiler(kinds.halved, timing=False)
    assert prof.runcall(kinds.through_overloads, a) == expected
    want = python_hits([kinds.halved.py_func], lambda: [kinds.halved.py_func(x) for x in [*a, *a, *a]])
    assert hits_of(prof.get_stats(), "halved") == want["halved"]
    assert {t: list(cached_dispatchers(t)) for t in before} == before  # put back
    assert kinds.through_overloads(a) == expected


def test_overload_not_compiled_yet_refused():
    from numba.extending import register_jitable

    @register_jitable
    def never_used(x):
        return x

    with pytest.raises(numba_lprun.NotProfilableError, match="never_used.*no jitted code has compiled it"):
        numba_lprun.LineProfiler(never_used)


# -- generators ----------------------------------------------------------------------------
G = np.linspace(0.0, 1.0, 12)


@pytest.mark.parametrize("via_magic", [False, True], ids=["api", "magic"])
@pytest.mark.parametrize("consumer", ["consume", "consume_in_python"])
def test_generator_hits(ipshell, consumer, via_magic):
    args = (G, 3, 2) if consumer == "consume" else (G, 3)
    call = getattr(kinds, consumer)
    expected = call(*args)
    ref = python_hits([kinds.produce.py_func], lambda: sum(kinds.produce.py_func(G, 3)))["produce"]
    if via_magic:
        ns = {"produce": kinds.produce, consumer: call, "G": G}
        got, prof = in_magic(ipshell, "produce", f"{consumer}(G, {', '.join(map(str, args[1:]))})", ns)
    else:
        prof = numba_lprun.LineProfiler(kinds.produce, sample_time=0.05)
        got = prof.runcall(call, *args)
    assert same(got, expected)
    assert hits_of(prof.get_stats(), "produce") == ref
    assert kinds.consume.py_func.__globals__["produce"] is kinds.produce


def test_generator_suspended_time_charged_to_no_line():
    """The consumer's work between two yields is not the generator's time.

    That work (12 x 4,000,000 additions, about 60 ms) is timed unprofiled and compared with the
    generator's whole probed time (its own work is 2,400 sines, tens of microseconds): charged
    to a line, it would double the bound. False-failure odds under load: the generator runs
    for about 0.1% of the call, so of the ~20 preemptions a loaded machine makes in it, fewer
    than 0.02 land in the generator's time on average; passing the bound (15 ms) takes about
    four, a chance below 1e-8.
    """
    kinds.consume(G, 3, 2)
    wait = 4_000_000

    def plain_seconds(wait):
        start = time.perf_counter()
        kinds.consume(G, 200, wait)
        return time.perf_counter() - start

    suspended_work = plain_seconds(wait) - plain_seconds(1)
    prof = numba_lprun.LineProfiler(kinds.produce, sample=False, repeat=False)
    prof.runcall(kinds.consume, G, 200, wait)
    (stats,) = prof.profile.functions
    generator_seconds = stats.probe_total() * prof.profile.unit
    assert suspended_work > 0.01, suspended_work
    assert generator_seconds < 0.25 * suspended_work, (generator_seconds, suspended_work)


def test_generator_hits_only():
    prof = numba_lprun.LineProfiler(kinds.produce, timing=False, sample=False)
    prof.runcall(kinds.consume, G, 3, 1)
    ref = python_hits([kinds.produce.py_func], lambda: sum(kinds.produce.py_func(G, 3)))["produce"]
    assert hits_of(prof.get_stats(), "produce") == ref


# -- stencils ------------------------------------------------------------------------------
S = np.linspace(0.0, 1.0, 20)


class Relative:
    """An array seen from one point, indexed relatively, as a stencil kernel sees it."""

    def __init__(self, a, i):
        self.a, self.i = a, i

    def __getitem__(self, k):
        return self.a[self.i + k]


def stencil_reference():
    kernel = kinds.smooth.kernel_ir.func_id.func
    call = lambda: [kernel(Relative(S, i)) for i in range(1, S.size - 1)]  # noqa: E731
    return python_hits([kernel], call)["smooth"]


@pytest.mark.parametrize("via_magic", [False, True], ids=["api", "magic"])
@pytest.mark.parametrize("caller", ["smooth", "smooth_twice", "smooth_parallel"])
def test_stencil(ipshell, caller, via_magic):
    call = getattr(kinds, caller)
    expected = call(S)
    if via_magic:
        ns = {"smooth": kinds.smooth, caller: call, "S": S}
        got, prof = in_magic(ipshell, "smooth", f"{caller}(S)", ns)
    else:
        prof = numba_lprun.LineProfiler(kinds.smooth, sample_time=0.05)
        got = prof.runcall(call, S)
    assert np.allclose(got, expected)
    assert hits_of(prof.get_stats(), "smooth") == stencil_reference()
    assert type(kinds.smooth).__name__ == "StencilFunc"
    assert kinds.smooth_twice.py_func.__globals__["smooth"] is kinds.smooth
    assert np.allclose(call(S), expected)


def test_a_stencil_profiled_for_hits_only_reads_no_clock():
    """With ``--hits`` a stencil's twin counts hits and reads no clock, since the table says
    no clock ran."""
    prof = numba_lprun.LineProfiler(kinds.smooth, timing=False)
    prof.runcall(kinds.smooth_twice, S)
    assert hits_of(prof.get_stats(), "smooth") == stencil_reference()
    (stats,) = prof.profile.functions
    assert stats.counts.time_source is None and not any(
        t for _, _, t in prof.get_stats().timings[stats.source.key]
    )
    said = [note.text for note in stats.diagnosis.notes]
    assert "hits only: no clock and no sampler, so no times are shown" in said
    assert not any("probe" in text for text in said), said


def _stencil_code(prof, kind):
    """The machine code of every loop nest ``prof``'s stencil twin of ``kind`` compiled."""
    (twin,) = [t for t in prof.twins() if t.kind == kind]
    return "\n".join(cres.library.get_asm_str() for cres in twin.code.overloads.values())


@pytest.mark.parametrize("caller", ["weigh", "weigh_twice"])
def test_a_stencil_is_sampled_and_its_loop_nest_reads_no_clock(caller):
    """A stencil's loop nest compiles with a twin's pipeline, line tables included: the
    default profile times its lines by samples (not by a clock probe at every point), called
    from Python (a compile per call) or from jitted code, its counting and plain loop nests
    read no clock, and its samples land on its body's lines, none on the ``def`` line (where
    Numba puts the relative index arithmetic) or outside.

    Called from Python, Numba compiles a stencil at every call (0.12 s idle, more under load),
    so only a few runs fit in 0.3 s: its input is large enough that each run spends about
    20 ms in the loop (4 million points), so the timed plain run and the user's run alone
    bring about 40 samples at 1 kHz of wall time, and none at all has odds below 1e-15 even
    at a 10% share of a loaded machine's time (200,000 points gave 5 to 8 samples idle, and
    none on a loaded CI lane). From jitted code it compiles once and 0.3 s of repeats bring
    hundreds. The plain run is made however long the user's run took (``extra_limit``): on a
    loaded machine the compile alone passed the default 0.5 s, and no plain loop nest was made."""
    big = np.linspace(0.0, 1.0, 4_000_000 if caller == "weigh" else 200_000)
    call = getattr(kinds, caller)
    prof = numba_lprun.LineProfiler(kinds.weigh, sample_time=0.3, extra_limit=60.0)
    assert np.allclose(prof.runcall(call, big), call(big))
    (stats,) = prof.profile.functions
    assert stats.counts.time_source == "samples" and not stats.counts.calls_timed
    first = kinds.weigh.kernel_ir.func_id.func.__code__.co_firstlineno  # the decorator's line
    body = set(range(first + 2, first + 6))
    assert stats.samples.counts and set(stats.samples.counts) <= body, stats.samples.counts
    points, over = big.size - 2, int(np.count_nonzero(big[:-2] + 2.0 * big[1:-1] > 2.0))
    assert stats.counts.hits == {first + 2: points, first + 3: points, first + 4: over, first + 5: points}
    for kind in ("counting", "plain"):
        code = _stencil_code(prof, kind)
        assert code and "rdtsc" not in code and "clock_gettime" not in code, kind
    assert not any("Clock probes on every line" in n.text for n in stats.diagnosis.notes), (
        stats.diagnosis.notes
    )


def test_a_second_profile_of_a_stencil_and_its_jitted_caller_compiles_no_twin():
    """A stencil keeps its twins between profilers, as a dispatcher does: rebuilt each time,
    the new twin made its jitted caller's twins compile again (2.4 s a profile for the
    benchmarks' 4-line ``relax``). The second profile counts the same hits."""
    data = np.linspace(0.0, 1.0, 2_000)
    profiles = []
    for _ in range(2):
        prof = numba_lprun.LineProfiler(kinds.weigh, kinds.weigh_twice, repeat=False)
        assert np.allclose(prof.runcall(kinds.weigh_twice, data), kinds.weigh_twice(data))
        profiles.append(prof.profile)
    first, second = ({f.source.name: f for f in p.functions} for p in profiles)
    assert all(sec == 0.0 for f in second.values() for sec in f.source.compile_seconds.values()), {
        name: f.source.compile_seconds for name, f in second.items()
    }
    assert {n: f.counts.hits for n, f in second.items()} == {n: f.counts.hits for n, f in first.items()}
    assert second["weigh"].counts.hits, second["weigh"]


def test_a_stencil_a_parallel_caller_inlines_is_timed_by_probes():
    """A ``parallel=True`` caller inlines a stencil's kernel into its own loops (Numba's
    parfor pass), where no line table names the kernel's lines: there the stencil's lines
    are timed by probes, and the notes say why, not that the run was too short."""
    prof = numba_lprun.LineProfiler(kinds.smooth, sample_time=0.05)
    prof.runcall(kinds.smooth_parallel, S)
    (stats,) = prof.profile.functions
    assert stats.counts.time_source == "probes" and stats.counts.hits == stencil_reference()
    said = " ".join(n.text for n in stats.diagnosis.notes)
    assert "inlines a stencil into its parallel caller's loops" in said and "too short" not in said
    assert "ufunc" not in said, said  # the stencil kind's reason, not one for both kinds


def test_a_stencil_timed_by_probes_warns_of_their_cost():
    """Timed by clock probes on every point (``--probes``), a stencil's run is many times
    slower than the unprofiled one: a one-run profile must warn, not only say its loops
    vectorized alike."""
    prof = numba_lprun.LineProfiler(kinds.smooth, repeat=False, probes=True)
    prof.runcall(kinds.smooth_twice, S)
    (stats,) = prof.profile.functions
    warned = [n.text for n in stats.diagnosis.notes if n.level == "warning"]
    assert any("Clock probes on every line slow tight loops" in text for text in warned), warned


@pytest.mark.parametrize("name, args", [("clip_add", (A, A)), ("row_total", (A2,)), ("smooth", (S,))])
def test_kernel_object_kept_in_a_container(name, args):
    holder = {"k": getattr(kinds, name)}
    expected = holder["k"](*args)
    prof = numba_lprun.LineProfiler(holder["k"], sample=False)
    assert np.allclose(prof.runcall(lambda: holder["k"](*args)), expected)
    (stats,) = prof.profile.functions
    assert stats.counts.hits and stats.counts.calls
    assert type(holder["k"]).__name__ in ("DUFunc", "GUFunc", "StencilFunc")


CACHED_OVERLOAD_CALLERS = """
import json
import numpy as np
from numba import njit, types
from numba.extending import overload, overload_method, register_jitable
import numba_lprun


@njit(cache=True)
def halved(x):
    if x < 0.5:
        return x * 2.0
    return x - 0.5


@register_jitable
def halved_total(a):
    t = 0.0
    for x in a:
        t += halved(x)
    return t


def halved_sum(a):
    pass


@overload(halved_sum)
def _halved_sum(a):
    def impl(a):
        t = 0.0
        for x in a:
            t += halved(x)
        return t

    return impl


@overload_method(types.Array, "nlp_cached_halved_total")
def _cached_halved_total(a):
    def impl(a):
        t = 0.0
        for x in a:
            t += halved(x)
        return t

    return impl


@njit(cache=True)
def through_overloads(a):
    return halved_sum(a) + halved_total(a) + a.nlp_cached_halved_total()


a = np.arange(100) / 100.0
expected = through_overloads(a)
prof = numba_lprun.LineProfiler(halved, timing=False)
got = prof.runcall(through_overloads, a)
print(json.dumps({"same": got == expected, "hits": sorted(prof.profile.functions[0].counts.hits.items())}))
"""


def test_a_helper_called_from_overload_bodies_of_cached_callers_counts_its_hits(tmp_path):
    """The callers ``cache=True``: in a second process they load from Numba's cache with the
    bodies inside, the templates compile no body, and so none was found calling the helper
    ("not called" again); the templates are now found from the bodies' source too. And Numba
    keeps no types of a ``cache=True`` compile, where the @overload_method's callers were found
    (even in the first process): its source naming the method's attribute now counts."""
    import json
    import os
    import subprocess
    import sys

    path = tmp_path / "cached_overloads.py"
    path.write_text(CACHED_OVERLOAD_CALLERS)
    env = dict(
        os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), NUMBA_LPRUN_CACHE_DIR=str(tmp_path / "twins")
    )
    runs = []
    for _ in range(2):  # the program's cache empty, then warm
        done = subprocess.run(
            [sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=240
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    want = [[11, 300], [12, 150], [13, 150]]  # the three bodies call it for each of the 100 values
    for run in runs:
        assert run == {"same": True, "hits": want}, runs
