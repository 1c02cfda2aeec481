"""Calls through the entry point ``dispatcher.compile(sig)`` returns reach no dispatcher, so the
profiler swaps the entry points a program holds for its twin's, and hands out the twin's from
``compile`` during a run: counted like calls of the function, and the program's own entry points
are back when the run ends."""

import subprocess
import sys
from pathlib import Path

import numpy as np
from numba import njit

from tests.conftest import hits_of, reference_hits

SCRIPTS = Path(__file__).resolve().parent / "scripts"
SIG = "float64(float64[:])"
A = np.linspace(0.0, 1.0, 11)


@njit
def accumulate(a):
    total = 0.0
    for x in a:
        if x > 0.5:
            total += x
    return total


def test_an_entry_point_made_before_the_profile_is_counted_and_given_back(ipshell):
    entry = accumulate.compile(SIG)
    ipshell.user_ns.update(entry=entry, accumulate=accumulate, A=A)
    prof = ipshell.run_line_magic("nlprun", "-r -z --hits -f accumulate r = entry(A)")
    assert ipshell.user_ns["r"] == accumulate.py_func(A)
    assert hits_of(prof.get_stats(), "accumulate") == reference_hits(accumulate, A)
    assert ipshell.user_ns["entry"] is entry


def test_an_entry_point_made_during_the_run_is_counted_and_the_originals_left(ipshell):
    ipshell.user_ns.update(accumulate=accumulate, A=A)
    cell = f"made = accumulate.compile({SIG!r})\nr = made(A)\nr = made(A)"
    prof = ipshell.run_cell_magic("nlprun", "-r -z --hits -f accumulate", cell)
    once = reference_hits(accumulate, A)
    assert hits_of(prof.get_stats(), "accumulate") == {line: 2 * n for line, n in once.items()}
    made = ipshell.user_ns["made"]
    original = accumulate.overloads[accumulate.signatures[0]].entry_point
    assert made is original  # the program keeps the original's entry point, not the twin's
    assert made(A) == accumulate.py_func(A)


def test_a_script_calling_through_compile_shows_its_table():
    script = str(SCRIPTS / "entry_points.py")
    done = subprocess.run(
        [sys.executable, "-m", "numba_lprun", "--hits", script], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert "total 4.0" in done.stdout
    assert "not called during the run" not in done.stdout
    row = next(line for line in done.stdout.splitlines() if "total += x" in line)
    assert row.split()[1] == "5", row  # 0.6, 0.7, 0.8, 0.9, 1.0
