"""Recursive jitclasses (a member typed ``optional(deferred_type)``) profiled cold.

Describing such a type in debug info asks LLVM to size a struct that is still
opaque, and LLVM aborts the process on an assertion (plain Numba with
``NUMBA_DEBUGINFO=1`` does the same). The twins' line tables describe no type, so
the profile goes on with exact hits and its sampled view. Each case runs in a
process of its own, before anything is compiled there: an abort shows as a
return code instead of taking the test run down.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import nlprun

SCRIPTS = Path(__file__).parent / "scripts"
N = 2000


def cold_env(cache: Path) -> dict:
    """The environment of a process with nothing compiled: an empty twin cache."""
    return {**os.environ, "NUMBA_LPRUN_CACHE_DIR": str(cache)}


@pytest.mark.parametrize("pattern", ["list", "tree", "stack"])
def test_profiled_cold_in_its_own_process(tmp_path, pattern):
    done = subprocess.run(
        [sys.executable, "recursive_profile.py", pattern, str(N)],
        capture_output=True,
        text=True,
        cwd=SCRIPTS,
        env=cold_env(tmp_path),
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["profiled"] == report["unprofiled"] == report["python"]
    assert report["hits"] == report["reference_hits"]
    assert report["line_tables_only"]  # line tables kept, so the sampler can place samples


def line_of(text: str) -> int:
    """The line of recursive_types.py that reads ``text`` (stripped)."""
    lines = (SCRIPTS / "recursive_types.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.strip() == text)


def table_hits(stdout: str, header: str) -> dict[int, int]:
    """{line: hits} of the table under ``header``, up to the next function's header."""
    table = stdout.split(header, 1)[1].split("Function:", 1)[0]
    rows = [ln.split() for ln in table.splitlines()]
    return {int(r[0]): int(r[1]) for r in rows if len(r) > 1 and r[0].isdigit() and r[1].isdigit()}


def test_cli_profiles_the_linked_list_cold(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_LPRUN_CACHE_DIR", str(tmp_path))  # nlprun passes the environment on
    done = nlprun("-f", "Node", "recursive_types.py", "list", str(N))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count(f"result {N * (N - 1) // 2}") == 1
    first = line_of("def total(self):")
    hits = table_hits(done.stdout, f"Function:   Node.total at line {first}")
    assert hits == {first + 1: 1, first + 2: 1, first + 3: N + 1, first + 4: N, first + 5: N, first + 6: 1}
