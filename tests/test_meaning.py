"""The twin means what the original means: a profiled program computes, raises and warns exactly
as it does without the profiler (issue 52), through ``nlprun`` and through ``LineProfiler``.

``tests/scripts/meaning.py`` holds one case per way a twin once differed (explicit signatures,
``disable_compile``, mangled private names, closures calling themselves or a later sibling,
mutual recursion, object mode made during the run, warnings of the twins' own compiles, an
objmode block, ``cache=True`` hits, a global rebound after the ``def``, an objmode block naming
a global bound later, the program disassembling its own function); it prints each result as a
line starting with ``R``.
"""

import os
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import numba_lprun
from numba_lprun.stats import read_line_stats
from tests.conftest import hits_of

SCRIPTS = Path(__file__).parent / "scripts"


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=SCRIPTS, env=env, timeout=300
    )


def _results(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("R ")]


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory):
    """The script's results plain and under ``nlprun --hits`` (each with a Numba cache of its own,
    so each run's second cache=True dispatcher loads what its first one saved), and the hits."""
    work = tmp_path_factory.mktemp("meaning")
    plain = _run(["meaning.py"], work / "plain-cache")
    stats_file = work / "meaning.lprof"
    profiled = _run(["-m", "numba_lprun", "--hits", "-D", str(stats_file), "meaning.py"], work / "nlp-cache")
    return plain, profiled, read_line_stats(str(stats_file)) if stats_file.exists() else None


def test_a_profiled_script_computes_raises_and_warns_as_it_does_plain(both_runs):
    plain, profiled, _ = both_runs
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert profiled.returncode == 0, profiled.stderr[-3000:]
    expected = _results(plain.stdout)
    assert len(expected) == 20
    assert "R cast to the signature: 3.0" in expected  # what the plain run says, as a sanity check
    assert _results(profiled.stdout) == expected


def _lines(after: str, *texts: str) -> list[int]:
    """The numbers of the first lines of meaning.py holding each of ``texts``, after the line
    holding ``after``."""
    source = (SCRIPTS / "meaning.py").read_text().splitlines()
    at = next(i for i, line in enumerate(source) if after in line)
    return [next(i + 1 for i in range(at, len(source)) if text in source[i]) for text in texts]


def test_the_cases_that_ran_on_twins_have_exact_hits(both_runs):
    _, profiled, stats = both_runs
    assert stats is not None, profiled.stderr[-2000:]
    # fib3(10) makes 177 calls, of which 89 with n < 2
    test, base, recurse = _lines("def fib3", "if n < 2", "return n", "return fib3")
    assert hits_of(stats, "make_fib.<locals>.fib3") == {test: 177, base: 89, recurse: 88}
    # outer_fac(10) -> inner_fac(9) -> ... -> outer_fac(0): outer runs for 10, 8, 6, 4, 2, 0
    test, base, recurse = _lines("def outer_fac", "if n < 1", "return 1", "return n *")
    assert hits_of(stats, "outer_fac") == {test: 6, base: 1, recurse: 5}
    test, recurse = _lines("def inner_fac", "if n < 1", "return n *")
    assert hits_of(stats, "inner_fac") == {test: 5, recurse: 5}
    assert hits_of(stats, "later_sibling.<locals>.foo") == dict.fromkeys(_lines("def foo", "return inner"), 1)
    assert hits_of(stats, "later_sibling.<locals>.inner") == dict.fromkeys(_lines("def inner", "return x"), 1)
    assert hits_of(stats, "Counter.get") == dict.fromkeys(_lines("def get", "return self"), 1)
    # one call: the loop header 101 times, the with line on entry and exit (line_profiler's count)
    lines = _lines("def with_objmode", "s = 0", "for i", "s += i", "with objmode", "y = sum", "return s")
    assert hits_of(stats, "with_objmode") == dict(zip(lines, (1, 101, 100, 2, 1, 1), strict=True))
    lines = _lines("def consume", "s = 0", "for v", "s += v", "return s")
    assert hits_of(stats, "consume") == dict(zip(lines, (1, 6, 5, 1), strict=True))


def test_what_ran_as_itself_is_named_once_after_the_tables(both_runs):
    """An object-mode function made during the run, and one whose twin cannot compile (its own
    pipeline refuses the probes' calls): both ran unprofiled, each said once, with the reason."""
    _, profiled, _ = both_runs
    text = " ".join(profiled.stdout.split())  # the notes are folded to the table's width
    said = text.split("not profiled (it ran as itself): ")[1:]
    assert len(said) == 2, profiled.stdout[-3000:]
    assert said[0].startswith("made_in_object_mode.<locals>.plus_one is compiled in object mode")
    assert said[1].startswith("sandboxed: its twin failed to compile (_nlp_")
    assert "is not a call this pipeline allows" in said[1]
    assert "did not compile" not in text  # it ran: its table is not a compile failure's


def _ident(x):
    return x


def test_runcall_honours_signatures_disable_compile_and_gives_the_original_back_its_types():
    eager = njit("float64(float64)")(_ident)

    @njit
    def halve(x):
        return x / 2

    def program():
        made = njit("int32(int32, int32)")(lambda a, b: a // b)
        out = (eager(3), made(2**40, 3), halve(3))
        halve.disable_compile()
        return (*out, halve(5.5))

    profiler = numba_lprun.LineProfiler(eager, halve, timing=False)
    assert profiler.runcall(program) == program()
    assert type(profiler.runcall(program)[0]) is float
    # the original holds what its twin compiled (and no more: compile stays disabled after the run)
    assert [str(sig) for sig in halve.signatures] == ["(int64,)"]
    assert halve(5.5) == 2.5 and halve.stats is not None


REBOUND = """
from numba import njit

SCALE = 2.0

@njit
def scaled_sum(x):
    s = 0.0
    for i in range(3):
        s += x * SCALE
    return s

@njit
def part(a):
    return a.sum()

@njit
def calls_part(a):
    t = 0.0
    for j in range(3):
        t += part(a)
    return t


def part_edited(a):
    return 100.0 - a.sum()
"""


@pytest.mark.parametrize("profiled", [("scaled_sum", "calls_part"), ("part",), ("part", "calls_part")])
def test_globals_rebound_after_the_compile_keep_the_values_the_code_read(profiled, tmp_path):
    """Numba reads a global once, when it compiles: ``SCALE = 10.0`` afterwards, or ``part``
    defined again (a notebook's edited cell), changes nothing in the compiled code. The twins,
    compiled at the profile from the module's globals as they were then, computed 30.0 for 6.0
    and 282.0 for 18.0 (and counted hits of a ``part`` the program never calls)."""
    import importlib.util

    path = tmp_path / f"rebound_{len(profiled)}_{profiled[0]}.py"
    path.write_text(REBOUND)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    x = np.arange(4.0)
    plain = (namespace["scaled_sum"](1.0), namespace["calls_part"](x))
    assert plain == (6.0, 18.0)
    namespace["SCALE"] = 10.0
    namespace["part"] = njit(namespace["part_edited"])
    assert (namespace["scaled_sum"](1.0), namespace["calls_part"](x)) == plain  # as Numba froze them
    prof = numba_lprun.LineProfiler(*(namespace[name] for name in profiled), timing=False)
    results = (prof.runcall(namespace["scaled_sum"], 1.0), prof.runcall(namespace["calls_part"], x))
    assert results == plain
    calls = {f.source.name: f.counts.calls for f in prof.profile.functions}
    assert calls.get("part", 0) == 0  # the program's code calls the first part, not this one
    assert (namespace["scaled_sum"](1.0), namespace["calls_part"](x)) == plain  # and still does


def test_a_function_with_an_objmode_block_counts_each_call_once():
    from tests.meaning_kernels import with_objmode

    profiler = numba_lprun.LineProfiler(with_objmode, repeat=False)
    assert profiler.runcall(with_objmode, 1000) == with_objmode.py_func(1000)
    counts = profiler.profile.functions[0].counts
    assert counts.calls == 1
    # its time is the call's, not the clock's reading (the second flush made it the uptime)
    assert 0 < counts.ticks * profiler.profile.unit < 5.0


def test_mutually_recursive_twins_run_and_are_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_LPRUN_CACHE_DIR", str(tmp_path))
    from tests.meaning_kernels import inner_fac, outer_fac

    for functions in ((outer_fac,), (outer_fac, inner_fac), (inner_fac,)):
        profiler = numba_lprun.LineProfiler(*functions, timing=False)
        assert profiler.runcall(outer_fac, 10) == 3628800
        assert hits_of(profiler.get_stats(), functions[0].__name__)
    uncached = [why for f in profiler.profile.functions for why in f.source.uncached.values()]
    assert any("mutually recursive" in why for why in uncached), uncached
    assert np.isfinite(outer_fac(5))


def test_a_call_whose_compile_fails_keeps_none_of_its_arguments_alive():
    """A twin's failed compile is kept by Numba (its compiler's failed cache); its traceback held
    the call's arguments, so a jitclass instance passed in was never freed (Numba's own memory
    checks saw it: test_jitclasses' test_numeric_fallback)."""
    from numba.core.errors import TypingError
    from numba.core.runtime import _nrt_python, rtsys
    from numba.experimental import jitclass

    _nrt_python.memsys_enable_stats()  # as Numba's own memory checks do (MemoryLeakMixin)

    @jitclass([])
    class Holder:
        def __init__(self):
            pass

    @njit
    def as_int(x):
        return int(x)

    def program():
        try:
            as_int(Holder())
        except TypingError as exc:  # as unittest's assertRaises leaves it: its frames cleared
            traceback.clear_frames(exc.__traceback__)
        else:
            raise AssertionError("as_int(Holder()) compiled")

    profiler = numba_lprun.LineProfiler(as_int, timing=False)
    program()  # Numba's own first compiles (the class's constructor), outside the count
    before = rtsys.get_allocation_stats()
    profiler.runcall(program)
    after = rtsys.get_allocation_stats()
    assert after.alloc - before.alloc == after.free - before.free
