"""The profile is the user's one run: effects happen once, times come from samples.

Each test here failed on the run model where the statement ran two or three
times (plain, sampled repeats, instrumented) and the Time column came from
clock probes.
"""

import functools
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import numba_lprun
from tests import one_run_kernels as K
from tests.conftest import hits_of, linear_reference_hits, reference_hits

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def test_script_that_appends_to_a_file_appends_once(tmp_path):
    log = tmp_path / "log.txt"
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", str(SCRIPTS / "appending.py"), str(log)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert log.read_text().count("ran once") == 1
    assert done.stdout.count("appended") == 1
    assert "Function:   total at line" in done.stdout
    assert "a script runs once" in done.stdout  # says why nothing was repeated


@pytest.mark.parametrize("how", ["script", "module", "__main__"])
def test_f_naming_the_scripts_own_module_runs_it_once_and_profiles_its_kernel(tmp_path, how):
    """``-f appending:total appending.py`` imported the script as the module ``appending`` to find
    ``total``: its body ran twice (the log appended to twice), and the profile read "not
    called" (the script's own ``total`` ran, not the module's). Also with ``-m appending``."""
    log = tmp_path / "log.txt"
    program = ["-m", "appending"] if how == "module" else [str(SCRIPTS / "appending.py")]
    named = "__main__:total" if how == "__main__" else "appending:total"
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "-f", named, *program, str(log)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=SCRIPTS,
    )
    assert done.returncode == 0, done.stderr
    assert log.read_text().count("ran once") == 1
    assert "Function:   total at line" in done.stdout and "not called" not in done.stdout, done.stdout


def test_bound_method_with_a_log_logs_once_and_its_kernel_is_replayed():
    """The method writes to a log (no snapshot could put that back): the extra runs replay the
    kernel's call only, so the log has one line and the overhead is measured all the same."""
    model = K.Model()
    prof = numba_lprun.LineProfiler(K.step, sample_time=0.05)
    prof.runcall(model.train, 3)
    assert model.log.getvalue().count("trained") == 1
    profile = prof.profile
    assert profile.runs.once is None and any("replay" in e for e in profile.runs.extra)
    stats = profile.functions[0]
    assert stats.counts.hits == reference_hits(K.step, np.linspace(0.0, 1.0, 2000), 3)


def test_bound_method_whose_object_can_be_saved_is_restored_between_runs():
    model = K.ListModel()
    expected = K.step(model.x.copy(), 2)
    prof = numba_lprun.LineProfiler(K.step, sample_time=0.05)
    prof.runcall(model.train, 2)
    assert model.log == [expected]  # one run's effect, though extra runs were made
    assert prof.profile.runs.once is None and prof.profile.sampling.extra_runs >= 1


def repeats_for(seconds: float, size: int = 20_000) -> int:
    """How many repeats make ``step`` over ``size`` values take about ``seconds`` of this
    thread's CPU time here: CPU time, not wall time, so that a moment of other work on the
    machine during the calibration does not shorten the run (measured on the wall clock, a
    loaded machine made a 1 s run 0.46 s)."""
    x = np.linspace(0.0, 1.0, size)
    K.step(x, 1)
    start = time.thread_time()
    K.step(x, 200)
    return max(200, int(200 * seconds / max(time.thread_time() - start, 1e-6)))


def test_magic_on_package_code_holding_a_dataframe_samples_one_long_run(ipshell):
    pd = pytest.importorskip("pandas")
    model = K.Model(size=20_000, frame=pd.DataFrame({"a": np.arange(10)}))
    # 2 s of CPU time: the run's wall time (and its samples, at 2 kHz) stay above the bounds
    # below even if its CPU time per repeat is up to 4 times the calibration's (two threads
    # sharing a core)
    n = repeats_for(2.0)
    ns = ipshell.user_ns
    ns.update(m=model, step=K.step)
    try:
        prof = ipshell.run_line_magic("nlprun", f"-r -f step m.train({n})")
    finally:
        ns.pop("m", None)
        ns.pop("step", None)
    assert model.log.getvalue().count("trained") == 1
    profile = prof.profile
    stats = profile.functions[0]
    assert stats.counts.ticks * profile.unit >= 0.5  # a long statement, run once
    assert stats.samples.total >= 1000, stats.samples.total
    assert stats.counts.hits == linear_reference_hits(K.step, lambda r: (np.linspace(0.0, 1.0, 20_000), r), n)
    assert stats.distortion.overhead is None and "your run took" in stats.distortion.unmeasured
    notes = " ".join(n.text for n in stats.diagnosis.notes)
    assert "overhead not measured" in notes


def test_default_time_shares_follow_the_plain_twins_samples():
    """On a tight loop the counting run's shares agree with the optimized code's.

    Each line's two shares are compared within 4.4 standard errors of their difference
    (binomial, from the two profiles' sample counts) plus one point for the CPU weights and
    what the counters change: a false failure about 1e-5 per line, 4e-5 for the four."""
    a = np.random.default_rng(1).random(20_000)
    K.tight(a, 1)
    once = numba_lprun.LineProfiler(K.tight, repeat=False)
    once.runcall(K.tight, a, 8000)
    plain = numba_lprun.LineProfiler(K.tight, sample_time=1.0, min_samples=3000)
    plain.runcall(K.tight, a, 30)
    one, many = once.profile.functions[0], plain.profile.functions[0]
    assert one.counts.time_source == "samples" and one.samples.total > 1000
    first = K.tight.py_func.__code__.co_firstlineno
    for line in range(first + 2, first + 6):
        got, want = one.time_share(line) or 0.0, many.time_share(line) or 0.0
        p = min(max(want / 100.0, 0.01), 0.99)
        error = 100.0 * (p * (1 - p) * (1 / one.samples.total + 1 / max(many.samples.total, 1))) ** 0.5
        assert abs(got - want) <= 4.4 * error + 1.0, (line, got, want, error)
    assert hits_of(once.get_stats(), "tight") == linear_reference_hits(K.tight, lambda n: (a, n), 8000)


def script_output(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=240, cwd=cwd)


@functools.cache
def unprofiled_stdout(script: str) -> str:
    """What ``script`` prints run plainly (one run per script, shared by its cases)."""
    done = script_output(script)
    assert done.returncode == 0, done.stderr
    return done.stdout


def own_lines(stdout: str) -> list[str]:
    """The script's own output: everything up to its end marker (the profile follows)."""
    return stdout.split("FIDELITY-END")[0].splitlines()


def test_profiled_script_behaves_as_unprofiled():
    """py_func, names, isinstance, signatures, inspect_types, pickling, nested functions."""
    script = str(SCRIPTS / "fidelity.py")
    plain = script_output(script)
    profiled = script_output("-m", "numba_lprun", script)
    assert plain.returncode == profiled.returncode == 3, profiled.stderr
    assert own_lines(profiled.stdout) == own_lines(plain.stdout)
    assert "same result: True" in plain.stdout
    assert "Function:   mergesort at line" in profiled.stdout
    assert "Function:   make_scaler.<locals>.scale at line" in profiled.stdout  # made at run time


def test_magic_statement_calling_py_func_behaves_as_unprofiled(ipshell, capsys):
    data = np.random.default_rng(0).random(64)
    expected = f"first: {K.mergesort.py_func(data)[:2].tolist()}"
    ns = ipshell.user_ns
    ns.update(mergesort=K.mergesort, data=data)
    try:
        capsys.readouterr()
        ipshell.run_line_magic("nlprun", "-f mergesort print('first:', mergesort.py_func(data)[:2].tolist())")
        out = capsys.readouterr().out
        assert ns["mergesort"] is K.mergesort
    finally:
        ns.pop("mergesort", None)
        ns.pop("data", None)
    assert out.count(expected) == 1, out  # printed once, by the user's run
    assert "Function:   mergesort at line" in out


def test_cache_true_function_is_profiled_and_its_cache_left_alone(tmp_path):
    """The script runs as Python runs it: statement by statement, each compiled to the bytecode
    it has in the whole module (``math.floor(...)`` was a method call when compiled alone: other
    bytecode, so Numba's cache found no entry and the profile wrote a second one), without
    the profiler's own ``from __future__ import annotations`` (the script's annotations
    were strings)."""
    script = tmp_path / "cached.py"
    script.write_text(
        "import math\nfrom numba import njit\n\n@njit(cache=True)\ndef twice(n: int):\n    s = 0\n"
        "    for i in range(n):\n        s += 2 * math.floor(i)\n    return s\n\n"
        "print(twice(10), twice.py_func.__annotations__)\n",
        encoding="utf-8",
    )
    first = script_output(str(script), cwd=tmp_path)
    cache = sorted(p.name for p in (tmp_path / "__pycache__").iterdir())
    profiled = script_output("-m", "numba_lprun", str(script), cwd=tmp_path)
    shown = "90 {'n': <class 'int'>}\n"
    assert first.stdout == shown and profiled.stdout.startswith(shown), profiled.stderr
    assert "s += 2 * math.floor(i)" in profiled.stdout
    assert sorted(p.name for p in (tmp_path / "__pycache__").iterdir()) == cache  # nothing written


@pytest.mark.parametrize(
    "script, function, line",
    [
        ("jitclass_script.py", "Particles.step", "self.pos[i] += self.vel[i] * dt"),
        ("guvectorize_script.py", "row_norm", "acc += v * v"),
        ("nested_script.py", "squares (make_kernel.<locals>.kernel)", "s += v**power"),  # bound to squares
        ("made_in_main.py", "clamp_py", "return 0.0"),  # a ufunc made inside main()
        ("made_in_main.py", "main.<locals>.average", "return (a[-1] + a[0] + a[1]) / 3.0"),  # a stencil
    ],
)
def test_jitted_code_of_every_kind_is_found_in_scripts_and_cells(script, function, line, ipshell, capsys):
    """nlprun script.py and %%nlprun (no -f) profile what the source defines, whatever its kind."""
    path = SCRIPTS / script
    plain = unprofiled_stdout(str(path))
    profiled = script_output("-m", "numba_lprun", str(path))
    assert profiled.returncode == 0, profiled.stderr
    assert profiled.stdout.startswith(plain)  # the script's own output, once
    assert f"Function:   {function} at line" in profiled.stdout and line in profiled.stdout
    capsys.readouterr()
    ipshell.run_cell_magic("nlprun", "", path.read_text(encoding="utf-8"))
    out = capsys.readouterr().out
    assert out.startswith(plain), out
    assert f"Function:   {function} at line" in out and line in out


def test_when_nothing_ran_the_script_says_what_could_be_named(tmp_path):
    (tmp_path / "kern.py").write_text("from numba import njit\n\n@njit\ndef add(a, b):\n    return a + b\n")
    (tmp_path / "main.py").write_text("from kern import add\n\nprint(add(1, 2))\n")
    done = script_output("-m", "numba_lprun", "main.py", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("3\n"), done.stderr
    assert "what the script could have profiled: -f kern:add" in done.stdout
    assert done.stdout.count("no profiled function ran") == 1  # said once (it was said twice)
    named = script_output("-m", "numba_lprun", "-f", "kern:add", "main.py", cwd=tmp_path)
    assert "Function:   add at line" in named.stdout and "could have profiled" not in named.stdout


def _vector_sum(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * 1.5
    return s


def test_a_plain_build_dearer_than_a_tenth_of_the_profile_is_left_out_and_said():
    """After a one-run profile the plain twins are compiled only to compare vectorization; where
    that is expected to take long (here: a recorded 1,000 s compile of this source) it is left
    out and the note says so and how to ask; ``compare_code=True`` compiles it anyway."""
    from numba import njit

    from numba_lprun.instrument import disk_cache
    from numba_lprun.instrument.source import read_source
    from numba_lprun.run import plain_build
    from numba_lprun.twin_kind import PLAIN

    func = njit(_vector_sum)
    a = np.ones(1000)
    key = plain_build.record_key(read_source(func))
    assert disk_cache.update_record(plain_build.RECORDS, key, seconds=1e3)
    first = numba_lprun.LineProfiler(func, repeat=False)
    assert first.runcall(func, a) == 1500.0
    (stats,) = first.profile.functions
    said = " ".join(n.text for n in stats.diagnosis.notes)
    assert "plain twins were not compiled to compare vectorization" in said and "--compare-code" in said
    assert PLAIN not in stats.source.compile_seconds
    second = numba_lprun.LineProfiler(func, repeat=False, compare_code=True)
    second.runcall(func, a)
    (stats,) = second.profile.functions
    said = " ".join(n.text for n in stats.diagnosis.notes)
    assert "vectorized as the plain twin's did" in said and "not compiled" not in said


def test_when_the_named_function_did_not_run_the_hint_never_names_it_again(tmp_path):
    (tmp_path / "kern.py").write_text(
        "from numba import njit\n\n@njit\ndef add(a, b):\n    return a + b\n\n"
        "@njit\ndef sub(a, b):\n    return a - b\n"
    )
    (tmp_path / "main.py").write_text("from kern import sub\n\nprint(sub(1, 2))\n")
    done = script_output("-m", "numba_lprun", "-f", "kern:add", "main.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "could have profiled: -f kern:sub" in done.stdout and "-f kern:add" not in done.stdout
    (tmp_path / "main.py").write_text("print(1)\n")
    (tmp_path / "kern.py").write_text("from numba import njit\n\n@njit\ndef add(a, b):\n    return a + b\n")
    done = script_output("-m", "numba_lprun", "-f", "kern:add", "main.py", cwd=tmp_path)
    assert "no profiled function ran in this process" in done.stdout and "-f kern:add" not in done.stdout


CODE_OUTSIDE_DISPATCHERS = """\
import numpy as np
from numba import cfunc, guvectorize, njit, vectorize


@guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def row_total(a, out):
    s = 0.0
    for v in a:
        s += v
    out[0] = s


@guvectorize("(n)->()")
def row_peak(a, out):
    m = a[0]
    for v in a:
        if v > m:
            m = v
    out[0] = m


@vectorize
def twice(x):
    return 2.0 * x


@cfunc("float64(float64)")
def halve(x):
    return x / 2.0


@njit
def spread(a):
    return a.max() - a.min()


data = np.arange(4000.0).reshape(40, 100)
peaks = np.empty(40)
row_peak(data, peaks)
print(row_total(data).sum(), peaks.sum(), twice(data[0]).sum(), halve.ctypes(8.0), spread(data))
"""


def test_no_code_is_generated_while_the_sampler_is_armed(ipshell, capsys, monkeypatch):
    """Numba generates code with the sampler paused, whatever generates it: a compiled dispatcher
    fires a compile event, but a ufunc's wrapper, a gufunc twin rebuilt for one the cell
    defined, a dynamic gufunc's new loop and a ``cfunc`` fire none; each holds Numba's compiler
    lock, which pauses the sampler (``run.compiles``). Generated with the sampler armed, a gufunc
    twin's wrapper aborted a test worker in libgcc's unwinder (a walk meeting frames being
    registered)."""
    from numba.core.codegen import JitEngine

    from numba_lprun.sampling import sampler_running

    armed: list[bool] = []
    finalize = JitEngine.finalize_object

    def watched(self, *args, **kwargs):
        armed.append(sampler_running())
        return finalize(self, *args, **kwargs)

    monkeypatch.setattr(JitEngine, "finalize_object", watched)
    plain: dict = {}
    exec(compile(CODE_OUTSIDE_DISPATCHERS, "<plain>", "exec"), plain)  # warm: Numba's own first compiles
    shown = capsys.readouterr().out
    armed.clear()
    ipshell.run_cell_magic("nlprun", "", CODE_OUTSIDE_DISPATCHERS)
    out = capsys.readouterr().out
    assert out.startswith(shown), out
    assert "Function:   row_total at line" in out and "Function:   row_peak at line" in out
    assert armed, "no code generated: the test saw nothing"
    assert not any(armed), f"{sum(armed)} of {len(armed)} code generations ran with the sampler armed"
