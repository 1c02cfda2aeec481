"""Package code at full size: a script's wall time unprofiled, under a first ``nlprun``, and a second.

Run ``python benchmarks/package_code.py [--tries 2] [--points 10000]``. Issue 31's goal: a
script calling a ``parallel=True, fastmath=True`` package routine of a few hundred lines
on real-sized data (``package_stand_in.matrix_profile`` on 10,000 points, with its
helper ``_refine`` profiled too) costs at most 1.3x its unprofiled wall time on the
first ``nlprun`` (empty twin cache) and at most 1.1x on the second (the same cache:
nothing of numba_lprun's compiled again). Numba compiles the package's own code in
every run, profiled or not (it does not use ``cache=True``), as in the issue's case.

The first ``nlprun`` is timed twice: with an empty cache directory (the first profile
ever made on this machine: it also measures the TSC's rate and reads the unwind tables
of libc, libm and Numba's libraries, once per boot and per library file), and with a
cache that knows only those machine facts (a new script profiled on a machine that has
profiled anything before: ``first nlprun``, the goal's figure).

Each try runs the commands in fresh processes, one after another; the best of
``--tries`` is shown for each, and each ratio is of two such bests measured side by
side in this one run. The script prints a checksum, which must be the same in all
runs (the profiled run computes what the unprofiled one does).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = """\
import sys
import numpy as np
from package_stand_in import matrix_profile

series = np.cumsum(np.random.default_rng(0).normal(size=int(sys.argv[1])))
profile, index = matrix_profile(series, 50)
print(f"checksum {profile.sum():.6f} {int(index.sum())}")
"""
FUNCTIONS = ("package_stand_in:matrix_profile", "package_stand_in:_refine")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    began = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - began
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    checksum = next((line for line in out.stdout.splitlines() if line.startswith("checksum")), "?")
    return seconds, checksum


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=2)
    parser.add_argument("--points", type=int, default=10_000)
    args = parser.parse_args()
    where = Path(tempfile.mkdtemp(prefix="nlprun-package-"))
    script = where / "run_matrix_profile.py"
    script.write_text(SCRIPT)
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    profiled = [sys.executable, "-m", "numba_lprun"]
    for name in FUNCTIONS:
        profiled += ["-f", name]
    profiled += [str(script), str(args.points)]
    machine = where / "machine-facts"  # what a profile of anything else leaves: no twin of these
    other = "from numba import njit\n\n@njit\ndef other(n):\n    return sum(range(n))\n\nother(10)\n"
    (where / "other.py").write_text(other + "print('checksum -')\n")
    timed(
        [sys.executable, "-m", "numba_lprun", str(where / "other.py")],
        dict(env, NUMBA_LPRUN_CACHE_DIR=str(machine)),
    )
    labels = ("unprofiled", "first nlprun, new machine", "first nlprun", "second nlprun")
    best = dict.fromkeys(labels, float("inf"))
    sums = set()
    for attempt in range(args.tries):
        shutil.copytree(machine, where / f"cache-{attempt}")
        cache = dict(env, NUMBA_LPRUN_CACHE_DIR=str(where / f"cache-{attempt}"))
        runs = {
            "unprofiled": ([sys.executable, str(script), str(args.points)], env),
            "first nlprun, new machine": (
                profiled,
                dict(env, NUMBA_LPRUN_CACHE_DIR=str(where / f"new-{attempt}")),
            ),
            "first nlprun": (profiled, cache),
            "second nlprun": (profiled, cache),
        }
        for label, (command, run_env) in runs.items():
            seconds, checksum = timed(command, run_env)
            best[label] = min(best[label], seconds)
            sums.add(checksum)
    sums.discard("checksum -")
    base = best["unprofiled"]
    goals = {"first nlprun": 1.3, "second nlprun": 1.1}
    print(f"matrix_profile on {args.points} points, best of {args.tries}:")
    for label, seconds in best.items():
        ratio = "" if label == "unprofiled" else f"  {seconds / base:.2f}x"
        goal = f" (goal <= {goals[label]}x)" if label in goals else ""
        print(f"  {label:25} {seconds:6.2f} s{ratio}{goal}")
    print(f"  checksums: {' / '.join(sorted(sums))}{'' if len(sums) == 1 else '  DIFFER'}")


if __name__ == "__main__":
    main()
