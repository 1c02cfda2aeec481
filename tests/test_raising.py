"""A statement that raises runs once, and its error reads as it reads unprofiled: the user's
frames only (the profiler's own frames are hidden or gone), in the API, the magic, the cell
magic and the command line."""

import os
import re
import traceback

import line_profiler
import pytest

import numba_lprun
from tests import raising_kernels as K
from tests.conftest import hits_of
from tests.test_cli import nlprun

PACKAGE = os.path.dirname(numba_lprun.__file__) + os.sep
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module", autouse=True)
def compiled():
    K.checked_sum(K.GOOD)


def shown_frames_of_ours(exc):
    """numba_lprun's frames in ``exc``'s traceback that a reader sees (IPython and pytest hide
    frames that set ``__tracebackhide__``)."""
    tb, ours = exc.__traceback__, []
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename.startswith(PACKAGE) and not frame.f_locals.get("__tracebackhide__"):
            ours.append(f"{frame.f_code.co_filename}:{tb.tb_lineno}")
        tb = tb.tb_next
    return ours


def files_in_printed_traceback(stderr: str) -> list[str]:
    """The file of each frame in the last traceback Python printed to ``stderr``."""
    trace = stderr.rsplit("Traceback (most recent call last):", 1)[1]
    return re.findall(r'^  File "(.+)", line \d+', trace, re.M)


def frames_of_ours_printed(stderr: str) -> list[str]:
    """The printed frames from numba_lprun's own files or Python's script runner (``runpy``,
    which ``python -m numba_lprun`` goes through), by the files' real paths: whatever the
    clone's folder is named, its tests and scripts are the user's."""
    ours = os.path.realpath(PACKAGE) + os.sep
    files = files_in_printed_traceback(stderr)
    return [f for f in files if os.path.realpath(f).startswith(ours) or "runpy" in f]


def test_api_runs_a_raising_statement_once_with_the_users_frames():
    for statement, expected in K.CASES.items():
        K.bump.runs = 0
        prof = numba_lprun.LineProfiler(K.checked_sum, sample_time=0.05)
        namespace = vars(K)
        with pytest.raises(expected) as info:
            prof.runctx(statement, namespace, None)
        assert K.bump.runs == 1, statement
        assert shown_frames_of_ours(info.value) == [], statement
        assert "your run raised" in prof.profile.runs.once, statement
        assert K.checked_sum is vars(K)["checked_sum"] and type(K.checked_sum).__name__ == "CPUDispatcher"


def test_runcall_keeps_one_frame_of_ours_and_counts_what_ran():
    """Plain Python shows one frame of ours (where ``runcall`` raises the user's error again),
    IPython and pytest none."""
    prof = numba_lprun.LineProfiler(K.checked_sum, sample_time=0.05)
    with pytest.raises(ValueError, match="negative value") as info:
        prof.runcall(K.checked_sum, K.BAD)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert [f.name for f in frames if f.filename.startswith(PACKAGE)] == ["runcall"]
    assert shown_frames_of_ours(info.value) == []
    (stats,) = prof.profile.functions
    first = K.checked_sum.py_func.__code__.co_firstlineno
    assert stats.counts.hits[first + 4] == 3  # the check ran on 1, 2 and -3, then raised
    assert stats.counts.hits.get(first + 6, 0) == 2


def test_runctx_and_run_keep_one_frame_of_ours_as_runcall_does():
    """Plain Python (no ``__tracebackhide__``) showed three frames of ours above the statement's
    with ``runctx``: the frames its error passed through after the profile left them out."""
    import __main__

    prof = numba_lprun.LineProfiler(K.checked_sum, sample_time=0.05)
    for how, entry in (("runctx", lambda s: prof.runctx(s, vars(K), None)), ("run", prof.run)):
        __main__.checked_sum, __main__.BAD = K.checked_sum, K.BAD
        try:
            with pytest.raises(ValueError, match="negative value") as info:
                entry("checked_sum(BAD)")
        finally:
            del __main__.checked_sum, __main__.BAD
        frames = traceback.extract_tb(info.value.__traceback__)
        assert [f.name for f in frames if f.filename.startswith(PACKAGE)] == [how], frames


def test_magic_runs_a_raising_statement_once(ipshell):
    ipshell.push({"K": K, "bump": K.bump, "checked_sum": K.checked_sum, "GOOD": K.GOOD, "BAD": K.BAD})
    ipshell.push({"around": K.around})
    for statement, expected in K.CASES.items():
        K.bump.runs = 0
        result = ipshell.run_cell(f"%nlprun -f checked_sum {statement}")
        assert isinstance(result.error_in_exec, expected), (statement, result.error_in_exec)
        assert K.bump.runs == 1, statement
        assert shown_frames_of_ours(result.error_in_exec) == [], statement
        assert ipshell.user_ns["checked_sum"] is K.checked_sum
    for statement, expected in K.CASES.items():  # the same in the cell magic, one line a statement
        K.bump.runs = 0
        result = ipshell.run_cell("%%nlprun -f checked_sum\n" + statement.replace("; ", "\n") + "\n")
        assert isinstance(result.error_in_exec, expected), (statement, result.error_in_exec)
        assert K.bump.runs == 1, statement
        assert shown_frames_of_ours(result.error_in_exec) == [], statement
        assert ipshell.user_ns["checked_sum"] is K.checked_sum


def test_scripts_that_raise_run_once_and_show_their_own_frames(tmp_path):
    """The four errors in scripts: each prints its side effect once, exits 1, and its traceback
    is the script's as python prints it (no frame of numba_lprun's files), after the profile."""
    for i, statement in enumerate(K.CASES):
        script = tmp_path / f"raises_{i}.py"
        line = statement.replace("bump(); ", "").replace("around(", "missing_name_around(")
        imports = "from tests.raising_kernels import GOOD, BAD, checked_sum, missing_name_around\n"
        script.write_text(imports + "print('ran once')\n" + line + "\n")
        done = nlprun("-f", "tests.raising_kernels:checked_sum", str(script), env_path=ROOT)
        assert done.returncode == 1, (statement, done.stderr[-2000:])
        assert done.stdout.count("ran once") == 1, statement
        assert "numba_lprun: the script raised" in done.stdout, statement  # the profile, then the error
        trace = done.stderr.split("Traceback (most recent call last):")[1]
        assert f'File "{script}"' in trace.splitlines()[1], (statement, trace)
        assert frames_of_ours_printed(done.stderr) == [], (statement, trace)


def test_script_error_shows_the_scripts_frames_only():
    done = nlprun("raises.py")
    assert done.returncode == 1
    assert done.stderr.count("checked(-1)") == 1 and "ValueError: negative input" in done.stderr
    assert files_in_printed_traceback(done.stderr)[0].endswith(f"{os.sep}raises.py"), done.stderr
    assert frames_of_ours_printed(done.stderr) == [], done.stderr
    assert "Function:   checked at line" in done.stdout


def test_hits_before_an_error_in_a_callee_are_counted_on_every_error_path():
    """The error returns after each call that may raise share one flush of the hits held in
    registers: what ran before the error, in the caller and the callee, is counted as
    line_profiler counts it in the interpreter."""
    reference = line_profiler.LineProfiler(K.three_stages.py_func, K.checked_root.py_func)
    names, jitted = vars(K), K.checked_root
    names["checked_root"] = jitted.py_func  # the interpreted caller calls the interpreted callee
    try:
        with pytest.raises(ValueError):
            reference.runcall(K.three_stages.py_func, K.STAGES_BAD)
    finally:
        names["checked_root"] = jitted
    prof = numba_lprun.LineProfiler(K.three_stages, K.checked_root, repeat=False)
    with pytest.raises(ValueError, match="negative value"):
        prof.runcall(K.three_stages, K.STAGES_BAD)
    for name in ("three_stages", "checked_root"):
        assert hits_of(prof.get_stats(), name) == hits_of(reference.get_stats(), name), name
