"""@jitclass members (methods, __init__, properties, static methods) profiled from the API,
the magic and the CLI: results, hits equal to line_profiler's, the class put back after."""

import line_profiler
import numpy as np
import pytest

import numba_lprun
from numba_lprun.instrument.profilable import class_members
from numba_lprun.internals import box_class, jitclass_constructor
from tests import kinds
from tests.conftest import comparable_key
from tests.test_cli import nlprun

Particle = kinds.Particle
PyParticle = Particle.__bases__[0]  # the Python class @jitclass compiled


def all_hits(stats) -> dict:
    """{(filename, first line, name): {line: hits}} of every function with hits."""
    found = {}
    for key, rows in stats.timings.items():
        hits = {line: n for line, n, _ in rows if n}
        if hits:
            found[comparable_key(key)] = hits
    return found


def python_functions(members):
    return [disp.py_func for disp in members]


def reference(members):
    """line_profiler's hits for the workload run on the Python class and functions."""
    prof = line_profiler.LineProfiler(*python_functions(members))
    g = kinds.make_and_run.py_func.__globals__
    g["Particle"] = PyParticle  # make_and_run's interpreted body builds the Python class
    try:
        result = prof.runcall(
            kinds.particle_workload, PyParticle, kinds.simulate.py_func, kinds.make_and_run.py_func
        )
    finally:
        g["Particle"] = Particle
    return result, all_hits(prof.get_stats())


def class_state():
    ct = Particle.class_type
    box = box_class(Particle)
    return (
        dict(ct.jit_methods),
        {k: dict(v) for k, v in ct.jit_props.items()},
        dict(ct.jit_static_methods),
        jitclass_constructor(Particle),
        dict(vars(box)) if box is not None else None,
        [type(d) for _, d in class_members(Particle)],
    )


def workload():
    return kinds.particle_workload(Particle, kinds.simulate, kinds.make_and_run)


@pytest.fixture(scope="module")
def warm():
    return workload()


@pytest.mark.parametrize(
    "what, names",
    [
        (Particle, None),
        (Particle.step, ["step"]),
        (Particle.energy, ["energy.fget", "energy.fset"]),
        (Particle.scaled, ["scaled"]),
    ],
    ids=["class", "method", "property", "staticmethod"],
)
def test_api(warm, what, names):
    members = [d for label, d in class_members(Particle) if names is None or label in names]
    expected, hits = reference(members)
    assert warm == expected
    before = class_state()
    prof = numba_lprun.LineProfiler(what, sample_time=0.05)
    assert prof.runcall(workload) == expected
    assert all_hits(prof.get_stats()) == hits
    assert class_state() == before
    assert workload() == expected  # the class still works unprofiled


def test_magic_method_and_class(ipshell, warm):
    ipshell.push({"Particle": Particle, "workload": workload})
    before = class_state()
    for expr, names in (("Particle.step", ["step"]), ("Particle", None)):
        members = [d for label, d in class_members(Particle) if names is None or label in names]
        expected, hits = reference(members)
        prof = ipshell.run_line_magic("nlprun", f"-r --sample-time 0.05 -f {expr} r = workload()")
        assert ipshell.user_ns["r"] == expected
        assert all_hits(prof.get_stats()) == hits
        assert class_state() == before
    assert ipshell.user_ns["Particle"] is Particle


def test_cli_jitclass_method(tmp_path):
    script = tmp_path / "particles.py"
    script.write_text(
        "from tests import kinds\n"
        "print('result', kinds.particle_workload(kinds.Particle, kinds.simulate, kinds.make_and_run))\n"
    )
    root = __import__("pathlib").Path(kinds.__file__).resolve().parents[1]
    done = nlprun("--no-sample", "-f", "tests.kinds:Particle.step", str(script), cwd=tmp_path, env_path=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("result") == 1
    assert "Function:   Particle.step at line" in done.stdout
    step_line = kinds.Particle.class_type.jit_methods["step"].py_func.__code__.co_firstlineno + 1
    _, hits = reference([kinds.Particle.class_type.jit_methods["step"]])
    (step_hits,) = hits.values()
    row = next(ln for ln in done.stdout.splitlines() if ln.split()[:1] == [str(step_line)])
    assert int(row.split()[1]) == step_hits[step_line]


def test_a_helper_the_members_call_profiled_alone_counts_every_call():
    """``clipped`` is profiled, the jitclass whose method and property call it is not: Python
    reaches the members through the box class's wrappers, jitted code through the class
    type's dicts, and both linked the original helper, so the profile read "not called". The
    class is now recompiled against the twins as for a profiled member (and put back after):
    hits are line_profiler's for the same calls, from Python, from jitted code using an
    instance, and from a ``prange`` loop's threads (the helper's counters made atomic)."""
    rng = np.random.default_rng(0)
    a, m = rng.normal(0.5, 1.0, 1000), rng.normal(0.5, 1.0, (64, 50))
    c = kinds.Clipper(0.0, 1.0)

    def work():
        return c.total(a), c.width, kinds.clip_total(c, a), kinds.clip_rows(c, m).sum()

    expected = work()
    methods = dict(kinds.Clipper.class_type.jit_methods)
    prof = numba_lprun.LineProfiler(kinds.clipped)
    assert prof.runcall(work) == expected
    assert dict(kinds.Clipper.class_type.jit_methods) == methods  # put back
    assert work() == expected

    reference = line_profiler.LineProfiler(kinds.clipped.py_func)
    calls = [(x, 0.0, 1.0) for x in [*a, 1.0, *a, 1.0, *m.ravel()]]  # total, width, clip_total, rows
    for args in calls:
        reference.runcall(kinds.clipped.py_func, *args)
    want = {line: n for line, n, _ in next(iter(reference.get_stats().timings.values()))}
    (stats,) = prof.profile.functions
    assert stats.counts.hits == want
