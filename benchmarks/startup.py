"""How long ``nlprun`` and ``%nlprun`` take to start, first and second run, against plain Python.

Run ``python benchmarks/startup.py [--repeats N] [--compare /path/to/other/checkout]``.

Each command runs in a new process, ``--repeats`` times, interleaved with the
others, and the median wall time and CPU time (user + system: what the process
itself used, which a busy shared machine inflates less) are shown, each also as a
ratio to ``python trivial.py`` and as the difference from ``import numba``. ``first`` runs start from an empty
cache directory (a new one each time), ``second`` runs from one that a run of the
same script filled. The scripts: ``trivial`` only prints; ``small_jit`` defines
one ``@njit`` loop and calls it once. ``--once`` runs the script once, with no
extra (sampled) runs: the run model the command line is moving to. The magic runs
the same small function under ``%nlprun -f`` in ``ipython --quick``, against the
same file without the magic.

The goal (issue 24): ``nlprun trivial.py`` within 0.5 s of ``python -c "import
numba"``, and a second ``nlprun`` of an unchanged script compiling no twin
(tests/test_disk_cache.py checks that; this only times it). With ``--compare``,
every profiled command also runs against another checkout of numba_lprun (put
first on ``PYTHONPATH``), e.g. ``main``, side by side in the same run.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRIVIAL = 'print("hello")\n'
SMALL_JIT = """\
import numpy as np
from numba import njit


@njit
def total(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * 0.5
    return s


a = np.arange(1000.0)
print(total(a))
"""
MAGIC = """\
%load_ext numba_lprun
%run -i small_jit.py
%nlprun -f total total(a)
"""
NO_MAGIC = """\
%run -i small_jit.py
"""


def timed(argv: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``argv``.

    On a machine shared with other work the wall time grows with everyone's load;
    the CPU time the process itself used moves much less, so both are shown.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def commands(work: Path, checkouts: dict[str, str | None]) -> list[tuple[str, list[str], str | None, str]]:
    """(label, argv, checkout or None, cache state: "none", "first" or "second")."""
    py = sys.executable
    ipython = [py, "-m", "IPython", "--quick", "--no-banner", "--colors=NoColor"]
    out = [
        ("python trivial.py", [py, "trivial.py"], None, "none"),
        ('python -c "import numba"', [py, "-c", "import numba"], None, "none"),
        ("python small_jit.py", [py, "small_jit.py"], None, "none"),
        ("ipython small_jit (no magic)", [*ipython, "no_magic.ipy"], None, "none"),
    ]
    for name, root in checkouts.items():
        out.append((f"[{name}] import numba_lprun", [py, "-c", "import numba_lprun"], root, "none"))
        for flags, script in (([], "trivial.py"), (["--once"], "trivial.py"), ([], "small_jit.py")):
            for state in ("first", "second"):
                argv = [py, "-m", "numba_lprun", *flags, script]
                words = " ".join(["nlprun", *flags, script])
                out.append((f"[{name}] {words} ({state})", argv, root, state))
        for state in ("first", "second"):
            out.append((f"[{name}] %nlprun small_jit ({state})", [*ipython, "magic.ipy"], root, state))
    return out


def environment(root: str | None, cache: Path | None) -> dict:
    env = dict(os.environ)
    env.pop("NUMBA_LPRUN_CACHE", None)
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if cache is not None:
        env["NUMBA_LPRUN_CACHE_DIR"] = str(cache)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compare", help="another checkout of numba_lprun to time side by side")
    options = parser.parse_args()
    here = str(Path(__file__).resolve().parent.parent)
    checkouts = {"this": here}
    if options.compare:
        checkouts["other"] = str(Path(options.compare).resolve())
    work = Path(tempfile.mkdtemp(prefix="nlp-startup-"))
    try:
        for name, text in (("trivial.py", TRIVIAL), ("small_jit.py", SMALL_JIT)):
            (work / name).write_text(text)
        (work / "magic.ipy").write_text(MAGIC)
        (work / "no_magic.ipy").write_text(NO_MAGIC)
        runs = commands(work, checkouts)
        times: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in runs}
        for repeat in range(options.repeats):
            for label, argv, root, state in runs:
                if state == "none":
                    cache = work / "unused-cache"
                elif state == "first":
                    cache = work / f"cache-first-{repeat}-{len(times[label])}-{abs(hash(label))}"
                else:  # a cache filled by one run of the same command
                    cache = work / f"cache-second-{abs(hash(label))}"
                    if not cache.exists():
                        timed(argv, work, environment(root, cache))
                times[label].append(timed(argv, work, environment(root, cache)))
        report(times, checkouts)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(times: dict[str, list[tuple[float, float]]], checkouts: dict[str, str | None]) -> None:
    wall = {label: statistics.median(w for w, _ in runs) for label, runs in times.items()}
    cpu = {label: statistics.median(c for _, c in runs) for label, runs in times.items()}
    print(f"median of {len(next(iter(times.values())))} runs each; checkouts: {checkouts}")
    columns = f"{'wall s':>8}{'x python':>10}{'- numba':>9}{'cpu s':>8}{'x python':>10}{'- numba':>9}"
    print(f"{'command':<46}{columns}")
    for label in times:
        cells = []
        for table in (wall, cpu):
            seconds = table[label]
            base, numba_import = table["python trivial.py"], table['python -c "import numba"']
            cells.append(f"{seconds:>8.2f}{seconds / base:>9.1f}x{seconds - numba_import:>+9.2f}")
        print(f"{label:<46}{''.join(cells)}")
    for name in checkouts:
        for command in ("nlprun trivial.py", "nlprun --once trivial.py"):
            label = f"[{name}] {command} (second)"
            for what, table in (("wall", wall), ("cpu", cpu)):
                margin = table[label] - table['python -c "import numba"']
                verdict = "met" if margin <= 0.5 else "not met"
                goal = f"{command} within 0.5 s of import numba"
                print(f"[{name}] goal ({what}): {goal}: {margin:+.2f} s ({verdict})")


if __name__ == "__main__":
    main()
