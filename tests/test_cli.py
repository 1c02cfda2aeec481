"""The command line in subprocesses: what it profiles, what it prints, and exit codes."""

import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def nlprun(*args, cwd=SCRIPTS, env_path=None):
    env = dict(os.environ)
    if env_path:
        env["PYTHONPATH"] = os.pathsep.join([str(env_path), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "numba_lprun", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=240,
    )


def test_script_with_argparse_keeps_its_argv_and_exit_status(tmp_path):
    html, lprof, text = tmp_path / "r.html", tmp_path / "r.lprof", tmp_path / "r.txt"
    done = nlprun(
        "--html", str(html), "-D", str(lprof), "-T", str(text), "argv_script.py", "--n", "300", "--exit", "3"
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout.count("smoothed 296 values") == 1  # the extra runs print nothing
    assert "Function:   smooth at line 9" in done.stdout
    assert "out[i] = a[i : i + width].mean()" in done.stdout
    assert "never_called" in done.stdout and "not called during the run" in done.stdout
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "out[i] = a[i : i + width].mean()" in page
    assert "http://" not in page and "https://" not in page and "<script" not in page and "<link" not in page
    assert "Line #      Hits" in text.read_text()
    shown = subprocess.run(
        [sys.executable, "-m", "line_profiler", str(lprof)], capture_output=True, text=True
    )
    assert "def smooth(a, width):" in shown.stdout
    # the .lprof holds the whole profile too: shown again, it is the same table and notes
    assert f"python -m numba_lprun show {lprof}" in done.stdout
    again_text = tmp_path / "again.txt"
    again = nlprun("show", str(lprof), "-T", str(again_text))
    assert again.returncode == 0, again.stderr
    assert again_text.read_text() == text.read_text()

    def table(out: str) -> list[str]:
        return [ln for ln in out.splitlines() if not ln.startswith(("***", "smoothed"))]

    assert table(again.stdout) == table(done.stdout)
    assert "not called during the run" in again.stdout


def test_show_refuses_what_holds_no_profile_and_options_of_a_run(tmp_path, capsys):
    from numba_lprun import cli, session
    from numba_lprun.stats import LineStats, ProfileStats, write_line_stats

    plain = tmp_path / "kernprof.lprof"
    write_line_stats(LineStats({("f.py", 1, "f"): [(2, 3, 40)]}, 1e-6), str(plain))
    assert cli.main(["show", str(plain)]) == 2
    assert "holds line_profiler's stats only" in capsys.readouterr().err
    assert cli.main(["--load", str(tmp_path / "none.lprof")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert cli.main(["--load", str(plain), "--probes"]) == 2
    assert "--probes is for a run" in capsys.readouterr().err
    saved = tmp_path / "p.json"
    profile = ProfileStats(unit=1e-9, clock="a clock")
    saved.write_text(profile.to_json())
    assert session.load(str(saved)) == profile


def test_module_with_f_and_once():
    done = nlprun("--once", "-f", "nlp_pkg.kernels:dot", "-m", "nlp_pkg.run", "40", env_path=SCRIPTS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("dot 40.0") == 1
    assert "Function:   dot at line" in done.stdout and "s += a[i] * b[i]" in done.stdout
    assert "overhead not measured" in done.stdout


def test_the_console_script_finds_a_module_in_the_current_folder_as_python_m_does():
    """``nlprun -m nlp_pkg.run`` from the folder holding the package: the console script starts
    without the current folder on ``sys.path`` (``python -m numba_lprun`` with it), so the
    module was not found, with a traceback. A package that is not there is one line."""
    console = Path(sys.executable).with_name("nlprun")
    assert console.exists(), "the project's console script is installed with it"
    run = [str(console), "--once", "-f", "nlp_pkg.kernels:dot", "-m", "nlp_pkg.run", "40"]
    done = subprocess.run(run, capture_output=True, text=True, cwd=SCRIPTS, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("dot 40.0") == 1 and "Function:   dot at line" in done.stdout
    missing = subprocess.run(
        [str(console), "-m", "no_such_pkg.run"], capture_output=True, text=True, cwd=SCRIPTS, timeout=240
    )
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert "no module named 'no_such_pkg.run'" in missing.stderr + missing.stdout


def test_files_asked_for_are_written_where_nlprun_started_though_the_script_changes_folder(tmp_path):
    """``-D p.lprof`` is relative to the folder ``nlprun`` starts in: a script that ``chdir``s had
    the file written in its new folder, and the message named it as given."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "moving.py").write_text(
        "import os\nfrom numba import njit\n\n@njit\ndef k(n):\n    return n * 2\n\n"
        "os.chdir('elsewhere')\nprint(k(2))\n"
    )
    done = nlprun("--once", "-D", "p.lprof", "--html", "r.html", "-T", "t.txt", "moving.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["elsewhere", "moving.py", "p.lprof", "r.html", "t.txt"]
    assert not list((tmp_path / "elsewhere").iterdir())
    assert str(tmp_path / "p.lprof") in done.stdout


def test_asm_right_before_the_script_and_ctrl_c_exit_as_python(tmp_path):
    """``--asm`` takes an optional number: right before the script, argparse read the script's name
    as it ("invalid int value", exit 2). And a script stopped by Ctrl-C (KeyboardInterrupt) exited
    1 where python exits 130: shells and CI could not tell it from an error."""
    (tmp_path / "k.py").write_text(
        "import sys\nfrom numba import njit\n\n@njit\ndef k(n):\n    s = 0\n    for i in range(n):\n"
        "        s += i\n    return s\n\nprint(k(100))\nif sys.argv[1:] == ['stop']:\n"
        "    raise KeyboardInterrupt\n"
    )
    done = nlprun("--once", "-f", "k", "--asm", "k.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "4950" in done.stdout and "Function:   k at line" in done.stdout
    plain = subprocess.run([sys.executable, "k.py", "stop"], cwd=tmp_path, capture_output=True, timeout=240)
    stopped = nlprun("--once", "-f", "k", "k.py", "stop", cwd=tmp_path)
    # python dies by SIGINT (-2 here, 130 in a shell); nlprun, which shows the profile first, exits 130
    assert plain.returncode in (-2, 130) and stopped.returncode == 130, stopped.stderr
    assert "Function:   k at line" in stopped.stdout and "KeyboardInterrupt" in stopped.stderr


def test_decorated_function_only():
    done = nlprun("--hits", "decorated.py")
    assert done.returncode == 0, done.stderr
    assert "Function:   marked at line" in done.stdout
    assert "unmarked" not in done.stdout
    assert "hits only" in done.stdout


def test_script_that_raises_exits_nonzero_with_traceback():
    done = nlprun("raises.py")
    assert done.returncode == 1
    assert "ValueError: negative input" in done.stderr
    assert "Function:   checked at line" in done.stdout


def test_profiling_failure_exits_2_or_keeps_going():
    done = nlprun("-f", "nlp_pkg.kernels:nope", "decorated.py", env_path=SCRIPTS)
    assert done.returncode == 2
    assert "nlprun: profiling failed: -f nlp_pkg.kernels:nope: AttributeError" in done.stderr
    assert "Traceback" not in done.stderr
    kept = nlprun("--keep-going", "-f", "nlp_pkg.kernels:nope", "decorated.py", env_path=SCRIPTS)
    assert kept.returncode == 0
    assert "running the script unprofiled" in kept.stderr
    assert kept.stdout.count("4956") == 1


def test_usage_errors():
    assert nlprun().returncode == 2
    missing = nlprun("no_such_script.py")
    assert missing.returncode != 0 and "cannot read" in missing.stderr


def test_stateful_kernels_run_as_one_unprofiled_script(tmp_path):
    """Output, results and argument states equal one plain run; hits equal line_profiler's."""
    from numba_lprun.stats import read_line_stats
    from tests.conftest import hits_of
    from tests.stateful import CASES
    from tests.test_isolation import reference_hits

    root = Path(__file__).resolve().parent.parent
    plain_run = subprocess.run(
        [sys.executable, str(SCRIPTS / "stateful_script.py")],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=True,
    )
    stats_file = tmp_path / "s.lprof"
    names = [case.func.py_func.__name__ for case in CASES]
    targets = [arg for name in names for arg in ("-f", f"tests.stateful:{name}")]
    done = nlprun(
        "--sample-time",
        "0.05",
        "-D",
        str(stats_file),
        *targets,
        str(SCRIPTS / "stateful_script.py"),
        cwd=root,
        env_path=root,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout[: done.stdout.index("Timer unit")].strip()
    assert printed == plain_run.stdout.strip()  # once, and the same as an unprofiled run
    stats = read_line_stats(str(stats_file))
    for case in CASES:
        if case.func.py_func.__name__ in names:
            assert hits_of(stats, case.func.py_func.__name__) == reference_hits(case), case.name


def test_dash_f_finds_a_module_next_to_the_script_as_the_script_will(tmp_path):
    """``-f kern:work`` with ``kern.py`` beside the script: python puts the script's folder first
    on ``sys.path``, so the module the script imports is the one ``-f`` names."""
    (tmp_path / "kern.py").write_text(
        "from numba import njit\n\n@njit\ndef work(n):\n    s = 0\n"
        "    for i in range(n):\n        s += i\n    return s\n"
    )
    (tmp_path / "main.py").write_text("from kern import work\nprint('total', work(10))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "-f", "kern:work", str(tmp_path / "main.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "total 45" in done.stdout and "No module named" not in done.stderr
    assert re.search(r"^\s+7\s+10\s", done.stdout, re.M)  # the loop body's hits


def test_sample_counts_shows_the_samples_column(tmp_path):
    text = tmp_path / "r.txt"
    done = nlprun("--sample-counts", "-T", str(text), "argv_script.py", "--n", "300")
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "Line Contents" in line)
    assert "Samples" in header
    assert "Samples per line: " in text.read_text()
    plain = nlprun("--once", "argv_script.py", "--n", "300")
    header = next(line for line in plain.stdout.splitlines() if "Line Contents" in line)
    assert "Samples" not in header


KERNPROF_SCRIPT = """\
import numpy as np
from numba import njit


@profile
@njit
def total(a):
    s = 0.0
    for x in a:
        s += x * x
    return s


@njit
def other(a):
    return a.sum()


@njit
def unmarked(a):
    return a.max()


profile(other)
a = np.arange(10.0)
print("result", total(a) + other(a) + unmarked(a))
"""


def test_a_kernprof_script_runs_as_written_and_every_f_that_names_nothing_exits_2(tmp_path):
    """kernprof puts ``profile`` in builtins: a bare ``@profile`` and ``profile(f)`` mark what
    is profiled, as ``@numba_lprun.profile`` does; ``-f NAME`` that the script never made is a
    profiling failure (2), as ``-f module:nothere`` is, said once the script ran."""
    (tmp_path / "kp.py").write_text(KERNPROF_SCRIPT)
    done = nlprun("--hits", "kp.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("result 339.0") == 1
    assert "Function:   total at line 5" in done.stdout and "Function:   other at line 14" in done.stdout
    assert re.search(r"^\s+10\s+10\s+s \+= x \* x$", done.stdout, re.M)
    assert "unmarked" not in done.stdout
    missing = nlprun("--hits", "-f", "nothere", "-f", "total", "kp.py", cwd=tmp_path)
    assert missing.returncode == 2
    assert "Function:   total at line 5" in missing.stdout  # the named one that exists is shown
    said = "nlprun: profiling failed: -f nothere: the script made no jitted function of that name"
    assert said in missing.stderr and "-f unmarked" in missing.stderr


def test_dash_c_runs_code_with_its_argv_and_version_names_the_releases():
    code = "from numba import njit\n@njit\ndef f(n):\n    s = 0\n    for i in range(n):\n        s += i\n"
    code += "    return s\nimport sys\nprint(f(10), sys.argv)\n"
    done = nlprun("--hits", "-c", code, "a", "-q")
    assert done.returncode == 0, done.stderr
    assert "45 ['-c', 'a', '-q']" in done.stdout
    assert "File:       <string>" in done.stdout and "Function:   f at line 2" in done.stdout
    assert re.search(r"^\s+6\s+10\s+s \+= i$", done.stdout, re.M)
    version = nlprun("--version")
    assert version.returncode == 0
    releases = r"numba \S+, llvmlite \S+, numpy \S+, line_profiler \S+, Python \S+"
    assert re.fullmatch(rf"numba_lprun \S+ \({releases}\)\n", version.stdout), version.stdout


SCRIPT_WITH_IMPORTS = '''\
"""A script's docstring."""
from __future__ import annotations
import math
try:
    import numpy as np
except ImportError:
    np = None
if True:
    from os import path as osp


def scale(x: float) -> float:
    return math.exp(x) + np.sqrt(x) + len(osp.sep)


class Box:
    def grow(self, x):
        return math.floor(x)


print(scale.__annotations__)
'''


def test_a_script_runs_statement_by_statement_with_the_bytecode_of_the_whole_module():
    """Each top-level statement compiled alone must give the functions the bytecode Python gives
    them in the whole module (Numba keys its cache by it): CPython compiles ``math.exp(x)``
    otherwise where it has not seen ``import math``, and the module's ``__future__`` imports
    hold for every statement, the profiler's own for none."""
    import types

    from numba_lprun.run.statements import statement_codes

    def functions(code: types.CodeType) -> dict[str, bytes]:
        found = {}
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found[const.co_qualname] = const.co_code
                found.update(functions(const))
        return found

    whole = functions(compile(SCRIPT_WITH_IMPORTS, "script.py", "exec", dont_inherit=True))
    pieces: dict[str, bytes] = {}
    for code in statement_codes(SCRIPT_WITH_IMPORTS, "script.py"):
        pieces.update(functions(code))
    assert {"scale", "Box", "Box.grow"} <= set(whole) and pieces == whole
    namespace: dict = {}
    without_future = SCRIPT_WITH_IMPORTS.replace("from __future__ import annotations\n", "")
    for code in statement_codes(without_future, "s.py"):
        exec(code, namespace)
    assert namespace["scale"].__annotations__ == {"x": float, "return": float}  # not strings
    namespace = {}
    for code in statement_codes(SCRIPT_WITH_IMPORTS, "script.py"):
        exec(code, namespace)
    assert namespace["scale"].__annotations__ == {"x": "float", "return": "float"}


PARALLEL_SCRIPT = """\
import numpy as np
from numba import njit, prange


@njit(parallel=True)
def scaled_sum(a, k):
    total = 0.0
    for i in prange(a.shape[0]):
        total += a[i] * k
    return total


a = np.ones(1_000_000)
for _ in range(400):  # the run after the compile: the most samples, whose rate the header says
    total = scaled_sum(a, 2.0)
print(total)
"""


def test_a_parallel_function_a_script_defines_is_sampled_as_parallel(tmp_path):
    """A script defines its functions as it runs, after the sampler started: a ``prange``
    function's samples still count for each thread of its loops (the rate its header says it
    lowered to, and why), as where the function exists before the run."""
    import numba

    (tmp_path / "scaled.py").write_text(PARALLEL_SCRIPT)
    done = nlprun("--rate", "1000000", "-f", "scaled_sum", "scaled.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())  # the header wraps
    assert "2000000.0" in done.stdout, text
    assert "your run's rate lowered from 1000000 Hz" in text, text
    loop_threads = min(numba.config.NUMBA_NUM_THREADS, len(os.sched_getaffinity(0)))
    assert ("a sample stops a parallel loop's" in text) == (loop_threads > 1), text
