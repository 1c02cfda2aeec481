"""The magics in a real IPython shell: options, output, errors, and the namespace afterwards."""

import linecache
import subprocess
import sys

import pytest
from IPython.core.error import UsageError

import numba_lprun

SETUP = """
import sys

import numpy as np
from numba import njit

@njit
def conv(x, k):
    n = x.size - k.size + 1
    out = np.empty(n)
    for i in range(n):
        window = x[i : i + k.size]
        out[i] = np.sum(np.multiply(window, k))
    return out

@njit
def reduce_sq(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * a[i]
    return s

@njit
def unused(a):
    return a

@njit
def counting(n):
    for i in range(n):
        yield i

x = np.arange(200.0)
k = np.ones(5)
"""


@pytest.fixture(scope="module")
def ip(ipshell):
    shell = ipshell
    result = shell.run_cell(SETUP)
    assert result.success
    shell.run_cell("conv(x, k); reduce_sq(x)")
    return shell


def user_snapshot(ip):
    return {k: id(v) for k, v in ip.user_ns.items() if not k.startswith("_")}


def test_line_magic_table_and_overhead(ip, capsys):
    ip.run_cell("x_long = np.arange(20_000.0)")  # a call long enough to time (calls under 10 us are not)
    ip.run_line_magic("nlprun", "-f conv y = conv(x_long, k)")
    out = capsys.readouterr().out
    assert "Line #" in out and "% Time" in out and "Line Contents" in out
    assert "out[i] = np.sum(np.multiply(window, k))" in out
    assert "counting run" in out and "the plain run" in out
    assert "Signatures:" in out and "Compile:" in out and "Time from:" in out and "95% CI" in out
    assert ip.user_ns["y"].shape == (19_996,)
    assert ip.user_ns["conv"].py_func.__name__ == "conv"


def test_distortion_warning_on_tight_reduction(ip, capsys):
    """Counters leave a tight reduction's loop vectorized; clock probes on it are flagged.

    What is tested is what a busy machine cannot move: the machine code's verdict (the
    counters' loop vectorized as the plain twin's did) and the probes' warning where the
    overhead is not measured. The measured ratios (counters within 1.2x, probes far above) are
    speed claims about a call of about a millisecond, which one preemption can make look slow:
    ``benchmarks/timing_claims.py`` measures them, and the threshold is out of reach here."""
    prof = ip.run_line_magic("nlprun", "-r --threshold 1e9 -f reduce_sq reduce_sq(np.ones(200_000))")
    out = capsys.readouterr().out
    assert "distortion warning" not in out and "counting run" in out, out
    (stats,) = prof.profile.functions
    assert stats.counts.twin == "counting" and stats.distortion.lost_vectorization == set()
    ip.run_line_magic("nlprun", "--probes -f reduce_sq reduce_sq(np.ones(200_000))")
    out = capsys.readouterr().out  # its ratio (a warning on a quiet machine) is the benchmark's
    assert "probed run" in out and "Probe %" in out
    ip.run_line_magic("nlprun", "--probes --once -f reduce_sq reduce_sq(np.ones(200_000))")
    out = capsys.readouterr().out  # the probes rode on the one run: not measured, and said so
    assert "distortion warning" in out and "overhead not measured" in out and "guide, not a" in out


def test_threshold_option_silences_warning(ip, capsys):
    ip.run_line_magic("nlprun", "--probes --threshold 1e9 -f reduce_sq reduce_sq(x)")
    assert "distortion warning" not in capsys.readouterr().out


def test_cell_magic_profiles_functions_it_defines(ip, capsys):
    cell = "@njit\ndef twice(a):\n    t = 0.0\n    for v in a:\n        t += 2 * v\n    return t\n"
    ip.run_cell_magic("nlprun", "", cell + "result = twice(x)\n")
    out = capsys.readouterr().out
    assert "Function:   twice at line 1" in out
    assert "t += 2 * v" in out
    assert ip.user_ns["result"] == pytest.approx(2 * ip.user_ns["x"].sum())
    assert ip.user_ns["twice"](ip.user_ns["x"]) == ip.user_ns["result"]


def test_unit_zero_return_and_files(ip, tmp_path, capsys):
    text_file, dump_file = tmp_path / "t.txt", tmp_path / "p.lprof"
    prof = ip.run_line_magic(
        "nlprun", f"-u 1e-6 -z -r -T {text_file} -D {dump_file} -f conv -f unused conv(x, k)"
    )
    out = capsys.readouterr().out
    assert isinstance(prof, numba_lprun.LineProfiler)
    assert prof.get_stats().timings
    assert "Timer unit: 1e-06 s" in out
    assert "unused at line" not in out  # -z hid it
    text = text_file.read_text()
    assert "Line #      Hits         Time  Per Hit   % Time  Line Contents" in text
    shown = subprocess.run(
        [sys.executable, "-m", "line_profiler", str(dump_file)], capture_output=True, text=True
    )
    assert shown.returncode == 0 and "conv" in shown.stdout


def test_load_shows_a_saved_profile_again(ip, tmp_path, capsys):
    dump = tmp_path / "again.lprof"
    # --once: whether the overhead is measured hangs on how long the call took (a busy machine
    # can make it long enough); one run says "not measured" whatever the load
    ip.run_line_magic("nlprun", f"--once -D {dump} -f conv conv(x, k)")
    first = capsys.readouterr().out
    ip.run_line_magic("nlprun", f"--load {dump}")
    again = capsys.readouterr().out
    assert "overhead not measured" in again and "np.sum(np.multiply(window, k))" in again
    assert again == first[: first.index("*** Profile stats pickled")]
    with pytest.raises(UsageError, match="a statement is for a run"):
        ip.run_line_magic("nlprun", f"--load {dump} conv(x, k)")


def test_once_skips_baseline(ip, capsys):
    ip.user_ns["calls"] = []
    ip.run_line_magic("nlprun", "--once -f conv calls.append(conv(x, k))")
    assert len(ip.user_ns["calls"]) == 1
    assert "overhead not measured: --once asked for one run" in capsys.readouterr().out
    ip.run_line_magic("nlprun", "-f conv calls.append(conv(x, k))")
    assert len(ip.user_ns["calls"]) == 2  # one call's effects, however many runs profiling took


def test_module_option(ip, capsys):
    ip.run_cell("import tests.module_kernels as kernels_mod")
    ip.run_line_magic("nlprun", "-z -m tests.module_kernels kernels_mod.poly(2.0)")
    out = capsys.readouterr().out
    assert "Function:   poly at line" in out
    assert "Function:   busy" not in out
    assert "skipped" in out and "object mode" in out


def test_help_lists_every_option(ip):
    """%nlprun? and nlprun --help come from the one options list, and show all of it."""
    import subprocess
    import sys

    from numba_lprun.options import CLI, MAGIC, options_for

    doc = ip.find_line_magic("nlprun").__doc__
    cli_help = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for front_end, text in ((MAGIC, doc), (CLI, cli_help)):
        listed = options_for(front_end)
        assert len(listed) >= 15
        for opt in listed:
            shown = f"{opt.flags[0]} {opt.metavar}" if opt.takes_value else opt.flags[0]
            assert shown in text, (front_end, shown)
            said = opt.brief if front_end == MAGIC else opt.help  # %nlprun? is one line each
            assert said and said.split()[1].strip(",.:") in text, (front_end, said)
    # %nlprun? opens with two examples and fits a screen (it was 95 lines, with none)
    lines = doc.splitlines()
    assert len(lines) <= 44, len(lines)  # argparse wraps the usage to the terminal: the rest is fixed
    assert all(len(ln) <= 80 for ln in lines if "[-" not in ln), [ln for ln in lines if len(ln) > 80]
    examples = [ln.split("#")[0].strip() for ln in lines[:8] if ln.strip().startswith("%")]
    assert examples == ["%nlprun -f conv y = conv(x, k)", "%%nlprun"], lines[:8]


@pytest.mark.parametrize(
    "line, message",
    [
        ("-f nope conv(x, k)", "-f nope: NameError"),
        ("-f np.sum conv(x, k)", "not a Numba jitted function"),
        ("-f conv.py_func conv(x, k)", "plain Python function.*%lprun"),
        ("-f np.add conv(x, k)", "numpy.ufunc, not a Numba jitted function"),
        ("-f conv conv(x,", "syntax error in the statement"),
        ("-f conv", "no statement to profile"),
        ("conv(x, k)", "nothing to profile"),
        ("--bogus -f conv conv(x, k)", "unrecognized arguments: --bogus"),
        ("-m no_such_module_xyz conv(x, k)", "cannot import"),
        ("-f 1/0 conv(x, k)", "ZeroDivisionError"),
    ],
)
def test_errors_are_one_line_and_leave_namespace(ip, line, message):
    before = user_snapshot(ip)
    with pytest.raises(UsageError, match=message) as info:
        ip.run_line_magic("nlprun", line)
    assert "\n" not in str(info.value)
    assert user_snapshot(ip) == before


def test_no_readable_source(ip):
    ip.run_cell("ns = {}\nexec('def hidden(v):\\n    return v + 1\\n', ns)\nhidden = njit(ns['hidden'])")
    with pytest.raises(UsageError, match="no readable source for hidden"):
        ip.run_line_magic("nlprun", "-f hidden hidden(1)")


def test_a_function_whose_source_was_edited_since_it_was_defined_is_refused(ip):
    """The twin would compute what the edited text says: refused before anything runs."""
    filename = "<edited-after-definition>"
    good = "def edited(v):\n    w = v + 1\n    return w\n"
    linecache.cache[filename] = (len(good), None, good.splitlines(True), filename)
    code = f"compile({good!r}, {filename!r}, 'exec')"
    ip.run_cell(f"ns = {{}}\nexec({code}, ns)\nedited = njit(ns['edited'])\nedited(1)")
    bad = "def edited(v):\n    w = v + 'text'\n    return w\n"
    linecache.cache[filename] = (len(bad), None, bad.splitlines(True), filename)
    before = user_snapshot(ip)
    with pytest.raises(UsageError, match=r"no readable source for edited .*do not define it"):
        ip.run_line_magic("nlprun", "-f edited edited(1)")
    assert user_snapshot(ip) == before
    assert ip.user_ns["edited"](1) == 2


@pytest.mark.parametrize(
    "stop, said",
    [("raise KeyboardInterrupt", "KeyboardInterrupt"), ("sys.exit(3)", "sys.exit(3)")],
)
def test_interrupt_shows_profile_so_far(ip, capsys, stop, said):
    before = user_snapshot(ip)
    ip.run_line_magic("nlprun", f"--once -f conv conv(x, k); {stop}")
    out = capsys.readouterr().out
    assert said in out and "showing the profile gathered so far" in out
    assert "out[i] = np.sum" in out
    assert user_snapshot(ip) == before


def test_statement_exception_propagates_after_profile(ip, capsys):
    before = user_snapshot(ip)
    with pytest.raises(ZeroDivisionError):
        ip.run_line_magic("nlprun", "-f conv conv(x, k); 1/0")
    assert "the statement raised ZeroDivisionError" in capsys.readouterr().out
    assert user_snapshot(ip) == before


def test_hits_only_and_raw_options(ip, capsys):
    ip.run_line_magic("nlprun", "--hits -f reduce_sq reduce_sq(x)")
    out = capsys.readouterr().out
    assert "hits only" in out and "% Time" not in out
    assert "   201 " in out  # the loop header: 200 iterations + 1
    prof = ip.run_line_magic("nlprun", "--probes --raw -r -f conv conv(x, k)")
    (stats,) = prof.profile.functions
    assert not stats.diagnosis.probes_corrected and stats.probes.ticks
    assert "probe times are raw" in capsys.readouterr().out


def test_saved_profile_of_a_cell_shows_its_source_later(ip, tmp_path, capsys):
    dump = tmp_path / "cell.lprof"
    cell = "@njit\ndef in_cell(a):\n    acc = 0.0\n    for v in a:\n        acc += v * 3.0\n    return acc\n"
    ip.run_cell_magic("nlprun", f"-D {dump}", cell + "in_cell(x)\n")
    capsys.readouterr()
    assert (tmp_path / "cell.lprof.sources").is_dir()
    shown = subprocess.run([sys.executable, "-m", "line_profiler", str(dump)], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert "acc += v * 3.0" in shown.stdout and "def in_cell(a):" in shown.stdout


def test_progress_lines_fit_the_terminal():
    """A progress line longer than the terminal wraps, and erasing the line it ends on leaves
    the rest behind (debris in a narrow terminal): each is cut to the terminal's width."""
    from numba_lprun.magic import progress_line

    message = "compiling smooth_" + "x" * 90 + "(array(float64, 1d, C), int64) for the counting run"
    for width in (40, 80, 200):
        line = progress_line(message, width)
        assert len(line) <= width - 1 and line.startswith("numba_lprun: compiling smooth_"), (width, line)
    assert progress_line("compiling f(int64)", 80) == "numba_lprun: compiling f(int64) ..."
