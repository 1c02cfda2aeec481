"""Several dispatchers of one Python function profiled together, and ufuncs through the magic.

A profiled function is the dispatcher, not its Python function: ``njit(f)``,
``njit(fastmath=True)(f)`` and ``njit(parallel=True)(f)`` each get their own
table, with exactly line_profiler's hits on ``f`` for their own calls, titled by
the name they are bound to; the ``.lprof`` keeps line_profiler's keys, the first
dispatcher's exactly, the others' with their name in brackets (``run.naming``).
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import njit, prange

import numba_lprun
from numba_lprun.stats import read_line_stats

from .conftest import reference_hits


def sum_log_nz(x):
    s = 0.0
    for i in prange(x.size):
        if x[i] > 0:
            s += np.log(x[i])
    return s


plain_sum = njit(sum_log_nz)
fast_sum_log_nz = njit(fastmath=True)(sum_log_nz)
par_sum = njit(parallel=True)(sum_log_nz)

SMALL, LARGER, SIGNED = np.arange(1.0, 6.0), np.arange(1.0, 9.0), np.array([-1.0, 2.0, 0.0, 3.0])
KEY = (sum_log_nz.__code__.co_filename, sum_log_nz.__code__.co_firstlineno, "sum_log_nz")


def hits_by_key(prof):
    return {key: {ln: h for ln, h, _ in rows if h} for key, rows in prof.get_stats().timings.items()}


def headings(prof):
    return [f.heading for f in prof.profile.functions]


def test_two_dispatchers_each_their_own_table_and_hits():
    prof = numba_lprun.LineProfiler(plain_sum, fast_sum_log_nz, timing=False)
    assert prof.runcall(plain_sum, SMALL) == plain_sum.py_func(SMALL)
    prof.runcall(fast_sum_log_nz, LARGER)
    prof.runcall(fast_sum_log_nz, SIGNED)
    fast_key = (*KEY[:2], "sum_log_nz [fast_sum_log_nz]")
    hits = hits_by_key(prof)
    assert list(hits) == [KEY, fast_key]  # the first keeps line_profiler's own key
    assert hits[KEY] == reference_hits(plain_sum, SMALL)
    both = [reference_hits(fast_sum_log_nz, LARGER), reference_hits(fast_sum_log_nz, SIGNED)]
    assert hits[fast_key] == {ln: both[0].get(ln, 0) + both[1].get(ln, 0) for ln in both[0] | both[1]}
    assert headings(prof) == ["plain_sum (sum_log_nz)", "fast_sum_log_nz (sum_log_nz, fastmath)"]
    assert [f.counts.calls for f in prof.profile.functions] == [1, 2]
    text = __import__("io").StringIO()
    prof.print_stats(text)
    assert "Function: fast_sum_log_nz (sum_log_nz, fastmath) at line" in text.getvalue()


def test_three_dispatchers_plain_fastmath_parallel():
    prof = numba_lprun.LineProfiler(plain_sum, fast_sum_log_nz, par_sum, timing=False)
    for func, x in ((plain_sum, SMALL), (fast_sum_log_nz, LARGER), (par_sum, SIGNED)):
        assert prof.runcall(func, x) == pytest.approx(sum_log_nz(x))
    hits = hits_by_key(prof)
    assert list(hits.values()) == [
        reference_hits(plain_sum, SMALL),
        reference_hits(fast_sum_log_nz, LARGER),
        reference_hits(par_sum, SIGNED),
    ]
    assert headings(prof) == [
        "plain_sum (sum_log_nz)",
        "fast_sum_log_nz (sum_log_nz, fastmath)",
        "par_sum (sum_log_nz, parallel)",
    ]


def test_samples_of_one_dispatcher_are_not_charged_to_another():
    """Both twins carry the same file's line tables: neither is code inlined into the other."""
    # repeats until 300 samples, for up to 1 s: in 0.2 s a kernel pinned to one core of a busy
    # 2-core machine got 244-252, beside a busy loop on its core 161-177; in 1 s 320-349 both ways
    prof = numba_lprun.LineProfiler(plain_sum, fast_sum_log_nz, sample_time=1.0, min_samples=300)
    big = np.random.default_rng(0).random(1_000_000)
    prof.runctx("plain_sum(SMALL); fast_sum_log_nz(big)", {**globals(), "big": big}, None)
    plain, fast = prof.profile.functions
    assert (plain.counts.calls, fast.counts.calls) == (1, 1)
    # not statistical: the small call lasts microseconds, after a sample the next waits at least
    # half a period and its handler's time, so it gets a handful at most of fast's 300 or more
    assert fast.samples.total > 50 and plain.samples.total * 10 < fast.samples.total


def distance(x, y):
    d = 0.0
    for k in range(x.shape[0]):
        t = x[k] - y[k]
        d += t * t
    return np.sqrt(d)


distance_a = njit(distance)
distance_b = njit(fastmath=True)(distance)


@njit
def distance_sum(points, q):  # LLVM inlines distance_a here: its code is the caller's
    s = 0.0
    for j in range(points.shape[0]):
        s += distance_a(points[j], q)
    return s


def test_a_dispatcher_inlined_into_a_caller_lends_its_samples_to_no_other_of_its_def():
    """The caller's code holds lines of ``distance`` that only ``distance_a`` ran: ``distance_b``
    (never called) once showed them as its own, samples and time, line for line."""
    prof = numba_lprun.LineProfiler(
        distance_a, distance_b, distance_sum, sample_time=1.0, min_samples=300, asm=True
    )
    points = np.random.default_rng(1).random((200_000, 3))
    q = np.full(3, 0.5)
    assert prof.runcall(distance_sum, points, q) == pytest.approx(distance_sum(points, q))
    a, b, caller = prof.profile.functions
    assert (a.counts.calls, b.counts.calls, caller.counts.calls) == (200_000, 0, 1)
    assert b.samples.total == 0 and not b.samples.counts  # not statistical: none of its code ran
    assert not b.machine.lines and a.machine.lines  # nor machine code: only distance_a's was read
    # the distance loop is most of the caller's time: of its 300 or more samples, distance_a's
    # share is most (below 50 would take the inlined code unmapped, not bad luck)
    assert caller.samples.total >= 300 and a.samples.total > 50


def test_one_dispatcher_keeps_line_profiler_key_and_gets_its_own_title(tmp_path):
    prof = numba_lprun.LineProfiler(fast_sum_log_nz, timing=False)
    prof.runcall(fast_sum_log_nz, SMALL)
    assert list(prof.get_stats().timings) == [KEY]
    assert headings(prof) == ["fast_sum_log_nz (sum_log_nz, fastmath)"]
    prof.dump_stats(str(tmp_path / "one.lprof"))
    assert list(read_line_stats(str(tmp_path / "one.lprof")).timings) == [KEY]


def test_unbound_dispatcher_of_the_same_function_and_the_lprof(tmp_path):
    again = njit(plain_sum.py_func)  # kde_nothread = jit(kde.py_func), bound to no module name
    prof = numba_lprun.LineProfiler(plain_sum, again, timing=False)
    prof.runcall(again, SMALL)
    prof.runcall(plain_sum, SIGNED)
    assert headings(prof) == ["plain_sum (sum_log_nz)", "sum_log_nz"]
    keys = [KEY, (*KEY[:2], "sum_log_nz [#2]")]
    assert list(hits_by_key(prof).values()) == [
        reference_hits(plain_sum, SIGNED),
        reference_hits(again, SMALL),
    ]
    prof.dump_stats(str(tmp_path / "two.lprof"))
    saved = read_line_stats(str(tmp_path / "two.lprof")).timings
    assert list(saved) == keys and [sum(h for _, h, _ in r) for r in saved.values()] == [
        sum(reference_hits(plain_sum, SIGNED).values()),
        sum(reference_hits(again, SMALL).values()),
    ]


def test_name_given_wins_over_an_ambiguous_binding():
    alias = also = njit(fastmath=True)(sum_log_nz)  # two names: the binding is ambiguous
    prof = numba_lprun.LineProfiler(plain_sum, timing=False)
    prof.add_function(also, name="also")
    prof.runcall(alias, SMALL)
    assert headings(prof) == ["plain_sum (sum_log_nz)", "also (sum_log_nz, fastmath)"]


SHELL_SETUP = """
import numpy as np
from numba import njit, prange, vectorize

def nd_sum(x):
    s = 0.0
    for i in prange(x.size):
        if x[i] > 0:
            s += np.log(x[i])
    return s

nd_plain = njit(nd_sum)
nd_fast = njit(fastmath=True)(nd_sum)
nd_par = njit(parallel=True)(nd_sum)
nd_a, nd_b, nd_c = np.arange(1.0, 6.0), np.arange(1.0, 9.0), np.array([-1.0, 2.0, 0.0, 3.0])

@vectorize
def nd_zero_clamp(v):
    if v < 0:
        return 0.0
    return v
"""


@pytest.fixture(scope="module")
def ip(ipshell):
    assert ipshell.run_cell(SHELL_SETUP).success
    return ipshell


def test_line_magic_three_dispatchers(ip, capsys):
    prof = ip.run_line_magic(
        "nlprun",
        "--hits -r -f nd_plain -f nd_fast -f nd_par nd_plain(nd_a); nd_fast(nd_b); nd_par(nd_c)",
    )
    ns = ip.user_ns
    expected = [
        reference_hits(ns[f], ns[x])
        for f, x in (("nd_plain", "nd_a"), ("nd_fast", "nd_b"), ("nd_par", "nd_c"))
    ]
    assert list(hits_by_key(prof).values()) == expected
    out = capsys.readouterr().out
    for title in ("nd_plain (nd_sum)", "nd_fast (nd_sum, fastmath)", "nd_par (nd_sum, parallel)"):
        assert f"Function:   {title} at line" in out


def test_cell_magic_two_dispatchers_it_calls_and_two_it_defines(ip, capsys):
    prof = ip.run_cell_magic(
        "nlprun", "--no-sample -r -f nd_plain -f nd_fast", "nd_plain(nd_a)\nnd_fast(nd_b)\n"
    )
    ns = ip.user_ns
    assert list(hits_by_key(prof).values()) == [
        reference_hits(ns["nd_plain"], ns["nd_a"]),
        reference_hits(ns["nd_fast"], ns["nd_b"]),
    ]
    cell = textwrap.dedent(
        """\
        @njit
        def nd_g(a):
            t = 0
            for i in range(a.size):
                t += i
            return t
        nd_g2 = njit(fastmath=True)(nd_g.py_func)
        nd_g(nd_a); nd_g2(nd_b)
        """
    )
    prof = ip.run_cell_magic("nlprun", "--no-sample -r", cell)  # defined again by each run: replaced
    assert [f.heading for f in prof.profile.functions] == ["nd_g", "nd_g2 (nd_g, fastmath)"]
    assert list(hits_by_key(prof).values()) == [
        reference_hits(ns["nd_g"], ns["nd_a"]),
        reference_hits(ns["nd_g2"], ns["nd_b"]),
    ]
    assert "Function:   nd_g2 (nd_g, fastmath) at line 1" in capsys.readouterr().out


def test_ufunc_through_the_magic_repeats_like_through_the_api(ip, capsys):
    # a limit no load reaches: the ufunc's loop wrapper is built on its first call, outside
    # Numba's compile events, so a loaded machine took the 4-element call past 0.5 s
    line = "--no-sample --extra-limit 60 -r -f nd_zero_clamp nd_zero_clamp(nd_c)"
    prof = ip.run_line_magic("nlprun", line)
    out = capsys.readouterr().out
    assert "cannot save" not in out and "DUFunc" not in out
    api = numba_lprun.LineProfiler(ip.user_ns["nd_zero_clamp"], sample=False, extra_limit=60.0)
    api.runcall(ip.user_ns["nd_zero_clamp"], ip.user_ns["nd_c"])
    for runs in (prof.profile.runs, api.profile.runs):
        assert any("timed plain replay" in e for e in runs.extra), runs
    assert hits_by_key(prof) == hits_by_key(api)
    assert sorted(hits_by_key(prof)[next(iter(hits_by_key(prof)))].values()) == [1, 3, 4]


def test_cli_picks_dispatchers_by_the_name_they_are_bound_to(tmp_path):
    script = tmp_path / "several.py"
    script.write_text(
        textwrap.dedent(
            """\
            import numpy as np
            from numba import njit

            def f(x):
                s = 0.0
                for v in x:
                    s += v
                return s

            plain = njit(f)
            fast = njit(fastmath=True)(f)
            print(plain(np.arange(3.0)), fast(np.arange(5.0)))
            """
        )
    )
    env = {**os.environ, "NUMBA_LPRUN_CACHE": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "--hits", "-f", "fast", "-f", "plain", str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "Function:   plain (f) at line 4" in done.stdout
    assert "Function:   fast (f, fastmath) at line 4" in done.stdout
    rows = [ln.split() for ln in done.stdout.splitlines() if ln.strip().startswith("6 ")]
    assert [r[1] for r in rows] == ["4", "6"]  # each its own calls' hits (3 and 5 elements)


def report_of(cell) -> str:
    """The profile a notebook cell displayed (its progress lines are display outputs too)."""
    shown = [o.get("data", {}).get("text/plain", "") for o in cell.outputs if o.output_type == "display_data"]
    (report,) = [text for text in shown if "Line #" in text]
    return report


def test_in_a_real_jupyter_kernel(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    cells = [
        "%load_ext numba_lprun\n" + SHELL_SETUP,
        "%%nlprun --no-sample -f nd_plain -f nd_fast -f nd_par\nnd_plain(nd_a)\nnd_fast(nd_b)\nnd_par(nd_c)",
        "%nlprun --no-sample -f nd_zero_clamp nd_zero_clamp(nd_c)",
        # a call of a few microseconds, and a fastmath prange reduction (issue: the notebooks
        # people write): no ratio from noise, and the results compared with the plain run's
        "from numba import prange\n"
        "@njit\ndef nd_tiny(x):\n    return x * 2.0 + 1.0\n"
        "@njit(fastmath=True, parallel=True)\ndef nd_logs(a):\n    s = 0.0\n"
        "    for i in prange(a.size):\n        s += np.log(a[i])\n    return s\n"
        "nd_big = np.random.default_rng(0).random(400_000) + 0.5\nnd_tiny(1.0); nd_logs(nd_big)",
        "%nlprun -f nd_tiny nd_tiny(3.0)",
        "%nlprun --sample-time 0.05 -f nd_logs total = nd_logs(nd_big)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(
        nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert errors == []
    several = report_of(nb.cells[1])
    assert several.count("Function:") == 3
    for title in ("nd_plain (nd_sum)", "nd_fast (nd_sum, fastmath)", "nd_par (nd_sum, parallel)"):
        assert f"Function: {title} at line" in several  # line_profiler's layout in text/plain
    # each its own calls' hits: the loop over 5, 8 and 4 elements
    assert [int(ln.split()[1]) for ln in several.splitlines() if "if x[i] > 0:" in ln] == [5, 8, 4]
    ufunc = report_of(nb.cells[2])
    assert "timed plain replay" in ufunc and "cannot save" not in ufunc
    tiny = report_of(nb.cells[4])
    assert "too short for the clock to compare" in tiny and "x the plain run" not in tiny
    logs = " ".join(report_of(nb.cells[5]).split())
    assert "fastmath (nd_logs)" in logs and ("bit for bit" in logs or "by up to" in logs)
    for cell in nb.cells:  # nothing left behind: the report takes the progress line's place
        for out in cell.outputs:
            data = out.get("data", {})
            assert out.get("text", "").strip() or str(data.get("text/plain", "")).strip(), out
