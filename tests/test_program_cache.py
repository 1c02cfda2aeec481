"""The program's own Numba cache (``cache=True``) after a profile: what a plain run would hold.

A package whose functions are all ``cache=True``, profiled by a helper every caller kind
calls: a caller compiled during the run links the helper's twin, and one Numba loads from
its cache links the helper's own code. Neither may reach the program's cache or the
profile: the next plain process must run (it crashed loading the twin's counters symbol),
and the hits must be exact whether the cache was empty or warm (a cached caller read
"not called"). Real processes, real Numba caches.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import line_profiler
import pytest

UTIL = """
import numba as nb


@nb.njit(cache=True)
def trans(x, loc, scale):
    inv = 1.0 / scale
    return (x - loc) * inv
"""

CALLERS = """
import numpy as np
import numba as nb

from .util import trans


@nb.njit(cache=True)
def logpdf(x, loc, scale):
    z = trans(x, loc, scale)
    return -0.5 * z * z - np.log(scale)


@nb.njit(cache=True)
def middle(x):  # the helper two calls down
    return logpdf(x, 0.5, 1.5)


@nb.njit("float64[:](float64[:])", cache=True)
def eager(x):  # compiled (or loaded) at import, by its signature
    return trans(x, 1.0, 2.0)


@nb.njit(cache=True)
def steps(n):
    for i in range(n):
        yield trans(float(i), 0.0, 2.0)


@nb.njit(cache=True)
def consume(n):
    s = 0.0
    for v in steps(n):
        s += v
    return s


@nb.njit(parallel=True, cache=True)
def rows(m):
    out = np.empty(m.shape[0])
    for i in nb.prange(m.shape[0]):
        out[i] = trans(m[i, 0], 0.0, 4.0)
    return out


@nb.guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", cache=True)
def shifted(x, out):
    for i in range(x.shape[0]):
        out[i] = trans(x[i], 1.0, 1.0)
"""

# The package is imported by the script, so while the profile runs: every caller is made then.
USE = """
import sys

import numpy as np

from pkg_c import callers

x = np.linspace(-3, 3, 101)
total = 0.0
for _ in range(3):
    total += callers.logpdf(x, 0.5, 1.5).sum()
total += callers.middle(x).sum()
total += callers.eager(x).sum()
total += callers.consume(4)
total += callers.rows(np.ones((6, 2))).sum()
total += callers.shifted(np.ones((2, 3))).sum()
if "more" in sys.argv:  # a new signature of a cached caller
    total += callers.logpdf(np.arange(5), 0, 2).sum()
print(f"{total:.6f}")
"""
CALLS = 3 + 1 + 1 + 4 + 6 + 2 * 3  # trans's calls in one run of USE, as line_profiler counts them
MORE = 1
SYMBOL = b"_nlp_ctr_"


@pytest.fixture
def package(tmp_path):
    (tmp_path / "pkg_c").mkdir()
    (tmp_path / "pkg_c" / "__init__.py").write_text("")
    (tmp_path / "pkg_c" / "util.py").write_text(textwrap.dedent(UTIL))
    (tmp_path / "pkg_c" / "callers.py").write_text(textwrap.dedent(CALLERS))
    (tmp_path / "use.py").write_text(textwrap.dedent(USE))
    return tmp_path


def _run(where: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(where / "numba-cache"), PYTHONPATH=str(where))
    return subprocess.run(
        [sys.executable, *args], cwd=where, env=env, capture_output=True, text=True, timeout=300
    )


def _entries(where: Path) -> dict[str, bytes]:
    """Numba's index and data files under ``where`` (its cache directory, or ``__pycache__``)."""
    return {str(p.relative_to(where)): p.read_bytes() for p in where.rglob("*.nb[ic]")}


def _hits(lprof: Path) -> list[int]:
    stats = line_profiler.load_stats(str(lprof))
    (rows,) = [rows for (_, _, name), rows in stats.timings.items() if name.endswith("trans")]
    return [hits for _, hits, _ in sorted(rows)]


@pytest.mark.parametrize("cache", ["empty", "warm"])
def test_a_profile_leaves_the_programs_cache_as_a_plain_run_would(package, cache):
    plain = _run(package, "use.py")
    assert plain.returncode == 0, plain.stderr
    if cache == "empty":
        for path in package.rglob("*.nb[ic]"):
            path.unlink()
    before = _entries(package)

    lprof = package / "out.lprof"
    profiled = _run(package, "-m", "numba_lprun", "--no-sample", "-D", str(lprof), "-f", "pkg_c.util:trans",
                    "use.py", "more")  # fmt: skip
    assert profiled.returncode == 0, profiled.stderr
    # exact hits from every caller kind, compiled or loaded from the cache during the run
    assert _hits(lprof) == [CALLS + MORE, CALLS + MORE], profiled.stdout
    assert "not called" not in profiled.stdout
    # what compiled against the twin was not written, and the profile says so
    assert "Numba's cache: " in profiled.stdout and "callers.logpdf" in profiled.stdout

    after = _entries(package)
    assert not [name for name, data in after.items() if SYMBOL in data]
    # no code a plain run had written was changed (an index may list a new signature of the helper
    # itself: the profile compiled it from the program's code, as a plain run would)
    assert {name: after[name] for name in before if name.endswith(".nbc")} == {
        name: data for name, data in before.items() if name.endswith(".nbc")
    }

    for args in (("use.py",), ("use.py", "more")):  # the next plain processes run, and as before
        again = _run(package, *args)
        assert again.returncode == 0, again.stderr
        if args == ("use.py",):
            assert again.stdout == plain.stdout
    assert not [name for name, data in _entries(package).items() if SYMBOL in data]


def test_an_entry_the_cache_already_holds_is_not_said_lost(tmp_path):
    """The note names the entries the run compiled against twins and did not write, which then
    compile again: with the cache warm from a plain run, ``total`` (whose helper is profiled)
    compiled against the twins, its entry was refused, and the note said "not written; they
    compile again at their next call", though the cache held it and the next run loaded it."""
    (tmp_path / "ckern.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef helper(x):\n    return x * 2.0 + 1.0\n\n"
        "@njit(cache=True)\ndef total(a):\n    s = 0.0\n    for v in a:\n        s += helper(v)\n"
        "    return s\n"
    )
    (tmp_path / "prog.py").write_text("import numpy as np, ckern\nprint(ckern.total(np.ones(11)))\n")
    profile = ("-m", "numba_lprun", "--once", "-f", "ckern:total", "-f", "ckern:helper", "prog.py")
    cold = _run(tmp_path, *profile)
    assert cold.returncode == 0, cold.stderr
    assert "Numba's cache: 1 entry" in cold.stdout and "(ckern.total)" in cold.stdout
    assert _run(tmp_path, "prog.py").returncode == 0  # a plain run writes total's entry
    warm = _run(tmp_path, *profile)
    assert warm.returncode == 0, warm.stderr
    assert "33.0" in warm.stdout and "Numba's cache:" not in warm.stdout, warm.stdout


def test_a_caller_compiled_during_a_profile_runs_its_own_code_after_it(package, ipshell):
    """The statement imports the package (so its callers are made and compiled during the run):
    after the profile, the same process runs the callers' own code, counting nothing, and a
    new process loads the cache the profile left."""
    sys.path.insert(0, str(package))
    try:
        ipshell.run_cell("import numpy as np\nfrom pkg_c.util import trans\nx = np.linspace(-3, 3, 101)")
        result = ipshell.run_cell(
            "prof = %nlprun -r --no-sample -f trans from pkg_c import callers; y = callers.middle(x)"
        )
        assert result.success, result.error_in_exec
        (stats,) = [f for f in ipshell.user_ns["prof"].profile.functions if f.source.name == "trans"]
        assert sorted(stats.counts.hits.values()) == [1, 1]
        callers = sys.modules["pkg_c.callers"]
        codes = [cres.library.get_llvm_str() for cres in callers.middle.overloads.values()]
        assert not any(SYMBOL.decode() in code for code in codes)  # dropped: it compiles again
        ipshell.run_cell("y2 = callers.middle(x)")
        assert (ipshell.user_ns["y"] == ipshell.user_ns["y2"]).all()
    finally:
        sys.path.remove(str(package))
        for name in [m for m in sys.modules if m == "pkg_c" or m.startswith("pkg_c.")]:
            del sys.modules[name]
    assert not [name for name, data in _entries(package).items() if SYMBOL in data]
    plain = _run(package, "use.py")
    assert plain.returncode == 0, plain.stderr


GENERATOR = """
from numba import njit


@njit
def gen2(x):
    for i in range(x):
        yield i
        for j in range(1, 3):
            yield i + j


def make_consumer(gen_func):
    def consumer(x):
        res = 0.0
        for y in gen_func(x):
            res += y
        return res

    return consumer


consume = njit(make_consumer(gen2))
print(consume(5))
"""


def test_a_generator_consumed_by_a_jitted_caller_is_exact_with_the_twin_cache_cold_and_warm(tmp_path):
    """Numba registers a generator's implementation when it compiles one, not when it loads one
    from a cache: a warm twin cache made the consumer's compile raise KeyError into the script
    (as in Numba's own test_generators under nlprun --source)."""
    (tmp_path / "g.py").write_text(textwrap.dedent(GENERATOR))
    env = dict(os.environ, NUMBA_LPRUN_CACHE_DIR=str(tmp_path / "twins"))
    lprof = tmp_path / "g.lprof"
    for cache in ("cold", "warm"):
        done = subprocess.run(
            [sys.executable, "-m", "numba_lprun", "--hits", "-D", str(lprof), "-f", "gen2", "g.py"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, (cache, done.stderr)
        assert done.stdout.startswith("45.0"), (cache, done.stdout)  # as without the profiler
        stats = line_profiler.load_stats(str(lprof))
        (rows,) = [rows for (_, _, name), rows in stats.timings.items() if name.endswith("gen2")]
        assert [h for _, h, _ in sorted(rows)] == [6, 5, 15, 10], cache  # line_profiler's on the Python gen2


JITCLASS = """
import numba as nb
from numba.experimental import jitclass


@jitclass([("k", nb.float64)])
class Box:
    def __init__(self, k):
        self.k = k

    def get(self, x):
        return x * self.k


@nb.njit(cache=True)
def use(b, x):
    s = 0.0
    for i in range(x.size):
        s += b.get(x[i])
    return s
"""


def test_a_jitclass_method_behind_a_cached_caller_leaves_the_cache_clean(tmp_path):
    (tmp_path / "pj").mkdir()
    (tmp_path / "pj" / "__init__.py").write_text("")
    (tmp_path / "pj" / "mod.py").write_text(textwrap.dedent(JITCLASS))
    (tmp_path / "run.py").write_text(
        "import numpy as np\nfrom pj.mod import Box, use\nprint(use(Box(2.0), np.arange(10.0)))\n"
    )
    lprof = tmp_path / "out.lprof"
    done = _run(tmp_path, "-m", "numba_lprun", "--hits", "-D", str(lprof), "-f", "pj.mod:Box", "run.py")
    assert done.returncode == 0 and done.stdout.startswith("90.0"), done.stderr
    stats = line_profiler.load_stats(str(lprof))
    (rows,) = [rows for (_, _, name), rows in stats.timings.items() if name.endswith("get")]
    assert [hits for _, hits, _ in rows if hits] == [10]  # the cached caller's ten calls
    assert not [name for name, data in _entries(tmp_path).items() if SYMBOL in data]
    plain = _run(tmp_path, "run.py")
    assert plain.returncode == 0 and plain.stdout == "90.0\n", plain.stderr


SAMPLED = """\
from numba import njit


@njit
def total(n):
    s = k = 0
    while k < n:
        s += k % 7
        k += 1
    return s


print(total(100_000))
"""


def test_the_samplers_own_code_is_cached_apart_from_the_programs(tmp_path):
    """A sampled profile compiles the sampler's handler (a cfunc) once and keeps it in
    numba_lprun's own cache directory (``sampler/``): the program's Numba cache directory gets
    nothing a plain run of a program without ``cache=True`` would not write (nothing)."""
    (tmp_path / "sampled.py").write_text(SAMPLED)
    theirs, ours = tmp_path / "numba-cache", tmp_path / "ours"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(theirs), NUMBA_LPRUN_CACHE_DIR=str(ours))
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "-f", "total", "sampled.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Samples:" in done.stdout and "sampling disabled" not in done.stdout
    assert not list(theirs.rglob("*.nb[ic]"))
    assert list((ours / "sampler").rglob("*.nbc"))
