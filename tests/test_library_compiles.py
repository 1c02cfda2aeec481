"""A function that a library jit-compiles during the run is the function the user named (issue 64).

pandas' ``engine="numba"`` makes the user's plain Python function callable from its own
jitted loops with ``register_jitable``: Numba's ``@overload`` machinery builds a dispatcher
of it while pandas' loop compiles. That dispatcher is the named function, profiled from
the CLI (``-f f``: the script's ``f``) and the magic (``-f f``: a plain function of the
namespace), the first time pandas compiles it and on later runs (pandas keeps its loops);
nothing of the run stays in Numba's templates, so the plain call after it links the
original code. Hits are line_profiler's on the same function run by pandas' Python engine.
"""

import subprocess
import sys
import textwrap

import line_profiler
import pytest

from tests.conftest import hits_of

pd = pytest.importorskip("pandas")
np = pytest.importorskip("numpy")

SOURCE = textwrap.dedent(
    """\
    import numpy as np
    import pandas as pd


    def mean_of(x):
        s = 0.0
        for v in x:
            s += v
        return s / len(x)


    def big_sum(values, index):
        s = 0.0
        for v in values:
            if v > 100:
                s += v
        return s


    df = pd.DataFrame({"a": np.arange(300.0), "g": np.arange(300) % 3})
    """
)
ROLLING = 'df["a"].rolling(50).apply(mean_of, raw=True, engine="numba")'
GROUPED = 'df.groupby("g").agg(big_sum, engine="numba")'


def _reference() -> tuple[dict, dict, object, object]:
    """line_profiler's hits of both functions run by pandas' Python engine, and the results."""
    ns: dict = {}
    exec(compile(SOURCE, "<reference>", "exec"), ns)
    prof = line_profiler.LineProfiler(ns["mean_of"], ns["big_sum"])
    df = ns["df"]
    rolled = prof.runcall(lambda: df["a"].rolling(50).apply(ns["mean_of"], raw=True))
    groups = {}
    for key, group in df.groupby("g")["a"]:
        groups[key] = prof.runcall(ns["big_sum"], group.to_numpy(), group.index.to_numpy())
    stats = prof.get_stats()
    return hits_of(stats, "mean_of"), hits_of(stats, "big_sum"), rolled.sum(), groups


def _by_line(hits: dict, first: int) -> dict:
    """Hits keyed by the line's offset from the function's ``def``."""
    return {line - first: n for line, n in hits.items()}


def _first_lines(stats) -> dict:
    return {name.rsplit(".", 1)[-1]: first for (_, first, name) in stats.timings}


def test_the_cli_profiles_a_function_pandas_compiles(tmp_path):
    script = tmp_path / "udf.py"
    script.write_text(SOURCE + f"print(round(float({ROLLING}.sum()), 3))\nprint({GROUPED}.to_dict())\n")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    out = tmp_path / "out.lprof"
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "-f", "mean_of", "-f", "big_sum", "-D", str(out), str(script)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert plain.stdout in done.stdout  # the script's own output, unchanged
    assert "not called" not in done.stdout
    from numba_lprun.stats import read_line_stats

    stats = read_line_stats(str(out))
    firsts = _first_lines(stats)
    want_mean, want_sum, _, _ = _reference()
    ref_first = {"mean_of": 5, "big_sum": 12}
    for name, want in (("mean_of", want_mean), ("big_sum", want_sum)):
        assert _by_line(hits_of(stats, name), firsts[name]) == _by_line(want, ref_first[name]), name


OVERLOADED = """
import numpy as np
from numba import njit
from numba.extending import overload

def nlp_ov_norm(v):
    return np.sqrt((v * v).sum())

@overload(nlp_ov_norm)
def _nlp_ov_norm(v):
    def impl(v):
        s = 0.0
        for i in range(v.size):
            s += v[i] * v[i]
        return np.sqrt(s)
    return impl

@njit
def nlp_ov_use(v):
    return nlp_ov_norm(v) + 1.0
"""


def test_an_overload_compiled_first_by_the_statement_is_not_said_uncompiled(ipshell, capsys):
    """``-f`` of an @overload function whose implementation the statement itself compiled first
    said "nothing compiled it with Numba during the statement", which it had: the reason given
    (run the code that calls it once, then profile it) is the whole of it."""
    ipshell.run_cell(OVERLOADED, store_history=False).raise_error()
    capsys.readouterr()
    ipshell.run_line_magic("nlprun", "--hits -f nlp_ov_norm _ov = nlp_ov_use(np.arange(3.0))")
    out = capsys.readouterr().out
    assert ipshell.user_ns["_ov"] == pytest.approx(np.sqrt(5.0) + 1.0)
    assert "run the code that calls it once, then profile it" in out
    assert "nothing compiled it with Numba during the statement" not in out, out


def test_the_magic_profiles_a_plain_function_pandas_compiles_each_time(ipshell, capsys):
    ipshell.run_cell(SOURCE, store_history=False).raise_error()
    want_mean, want_sum, rolled, groups = _reference()
    ns = ipshell.user_ns
    first = ns["mean_of"].__code__.co_firstlineno
    for attempt in ("pandas compiles it in the run", "pandas kept its loop from the run before"):
        prof = ipshell.run_line_magic("nlprun", f"-r -f mean_of -f big_sum _r = {ROLLING}.sum()")
        assert ns["_r"] == rolled, attempt
        stats = prof.get_stats()
        assert _by_line(hits_of(stats, "mean_of"), first) == _by_line(want_mean, 5), attempt
        # not called by this statement: nothing compiled it, and the table says so without failing
        assert "big_sum" not in _first_lines(stats) or not hits_of(stats, "big_sum")
        # the plain call afterwards runs the program's own code, with the same result
        assert ipshell.run_cell(f"_p = {ROLLING}.sum()").success and ns["_p"] == rolled
    out = capsys.readouterr().out
    assert "-f big_sum: " in out and "nothing compiled it with Numba during the statement" in out
    prof = ipshell.run_line_magic("nlprun", f"-r -f big_sum _g = {GROUPED}")
    assert ns["_g"]["a"].to_dict() == groups
    stats = prof.get_stats()
    got = _by_line(hits_of(stats, "big_sum"), ns["big_sum"].__code__.co_firstlineno)
    assert got == _by_line(want_sum, 12)


def test_nothing_of_the_run_stays_in_numbas_templates(ipshell):
    """The entry point the template notes for lowering is the original's after the run."""
    from numba_lprun.instrument.profilable import overload_templates

    ipshell.run_cell(SOURCE, store_history=False).raise_error()
    ns = ipshell.user_ns
    ipshell.run_line_magic("nlprun", f"-f mean_of _r = {ROLLING}.sum()")
    templates = overload_templates(ns["mean_of"])
    assert all(not t._compiled_overloads for t in templates)  # built in the run: gone with it
    assert ipshell.run_cell(f"_p = {ROLLING}.sum()").success
    built = [d for t in templates for d, _ in t._impl_cache.values()]
    entries = {id(c.entry_point) for d in built for c in d.overloads.values()}
    linked = {id(e) for t in templates for e in t._compiled_overloads.values()}
    assert linked and linked <= entries


def test_a_register_jitable_helper_is_counted_for_types_first_compiled_in_the_run(ipshell):
    """Numba's ``@overload`` machinery builds a new implementation for each new argument type;
    one built while the statement runs is the helper too (it ran the original code before)."""
    ipshell.run_cell(
        textwrap.dedent(
            """\
            import numpy as np
            from numba import njit
            from numba.extending import register_jitable


            @register_jitable
            def doubled_plus_one(x):
                y = x * 2
                return y + 1


            @njit
            def total_of(a):
                s = 0
                for v in a:
                    s += doubled_plus_one(v)
                return s


            total_of(np.arange(5.0))  # floats compiled before the profile
            """
        ),
        store_history=False,
    ).raise_error()
    prof = ipshell.run_line_magic(
        "nlprun", "-r -f doubled_plus_one _t = total_of(np.arange(5.0)) + total_of(np.arange(7))"
    )
    assert ipshell.user_ns["_t"] == 25.0 + 49
    hits = {fn.source.signatures: fn.counts.hits for fn in prof.profile.functions}
    first = ipshell.user_ns["doubled_plus_one"].__code__.co_firstlineno
    assert hits[("float64",)] == {first + 2: 5, first + 3: 5}
    assert hits[("int64",)] == {first + 2: 7, first + 3: 7}


def test_the_cli_profiles_a_package_function_pandas_compiles(tmp_path):
    """``-f module:function`` naming a plain function: profiled as pandas compiles it; a plain
    function nothing compiles is said, as a name the script made no jitted function of."""
    (tmp_path / "udfs.py").write_text(SOURCE.split("\n\ndf =")[0] + "\n\n\ndef unused(x):\n    return x\n")
    script = tmp_path / "use.py"
    script.write_text(
        "import numpy as np\nimport pandas as pd\nfrom udfs import mean_of\n"
        'df = pd.DataFrame({"a": np.arange(300.0)})\n'
        'print(df["a"].rolling(50).apply(mean_of, raw=True, engine="numba").sum())\n'
    )
    out = tmp_path / "out.lprof"
    command = [sys.executable, "-m", "numba_lprun", "-f", "udfs:mean_of", "-D", str(out), str(script)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from numba_lprun.stats import read_line_stats

    stats = read_line_stats(str(out))
    want_mean, _, _, _ = _reference()
    assert _by_line(hits_of(stats, "mean_of"), _first_lines(stats)["mean_of"]) == _by_line(want_mean, 5)
    command[4] = "udfs:unused"
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 2 and "-f udfs:unused: the script made no jitted function" in done.stderr


#: A package whose ``@overload`` builds its implementation as a closure per argument type (as
#: numba-mpi's ``_mpi_dtype`` does: the MPI datatype of the array's dtype, in a cell): every
#: closure shares one code object, each with its own value.
CLOSURES = textwrap.dedent(
    """\
    import numpy as np
    import numba
    from numba.extending import overload

    CODES = {"int64": 1, "int32": 2, "float64": 3, "complex128": 4}


    def code_of(arr):
        return CODES[str(arr.dtype)]


    @overload(code_of)
    def _code_of_njit(arr):
        code = CODES[str(arr.dtype)]

        def impl(arr):
            return code

        return impl


    @numba.njit
    def f(data):
        data = np.ascontiguousarray(data)
        return code_of(data)
    """
)
CLOSURES_RUN = textwrap.dedent(
    """\
    import numpy as np
    from codes import f

    kinds = (np.int64, np.int32, np.float64, np.complex128)
    # strided arrays first, then 0-d ones: f compiles again and finds each closure in the template
    print("RESULT", [f(np.zeros(5, k)[::2]) for k in kinds] + [f(np.zeros((), k)) for k in kinds])
    """
)


def test_each_closure_an_overload_builds_keeps_its_own_values(tmp_path):
    """Each closure gets its own twin in the template's caches (they were matched by code object:
    every call linked one closure's twin, and numba-mpi's recv returned MPI_ERR_TRUNCATE)."""
    (tmp_path / "codes").mkdir()
    (tmp_path / "codes" / "__init__.py").write_text(CLOSURES)
    (tmp_path / "run.py").write_text(CLOSURES_RUN)
    command = [sys.executable, "-m", "numba_lprun", "--hits", "--source", "codes", "run.py"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "RESULT [1, 2, 3, 4, 1, 2, 3, 4]" in done.stdout, done.stdout
    tables = done.stdout.split("Function:   ")[1:]
    closures = [t for t in tables if t.startswith("_code_of_njit.<locals>.impl")]
    assert len(closures) == 4, done.stdout
    for table in closures:  # each closure ran for its strided and its 0-d array
        (row,) = [line for line in table.splitlines() if line.rstrip().endswith("return code")]
        assert row.split()[1] == "2", table
