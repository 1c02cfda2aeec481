"""Sampled shares against the truth: the attribution corpus and ``coarse_lines``.

Run ``python benchmarks/attribution.py [--runs 3] [--samples 12000] [name ...]``.
``--numba-lprun DIR`` profiles with the ``numba_lprun`` package found in DIR instead
(another checkout: the numbers before a change). Each case (tests/attribution_kernels.py,
and benchmarks/kernels.py's ``coarse_lines``) is profiled ``--runs`` times, each with a
fresh ``LineProfiler`` whose sampled repeats stop at ``--samples`` samples in the
function; per group of marked lines it prints the sampled share, its 95% interval
(Wilson, on the function's sample count: sampling noise only) and the true share,
then the worst error. ``--compiled N`` first compiles N small jitted functions, as a
test session or a long notebook has: each adds a module the unwinder searches on every
frame of every stack walk (``WALK_BUDGET`` in ``numba_lprun/sampling/sampler.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]


def _use_numba_lprun_from(folder: str) -> None:
    """Import ``numba_lprun`` from another checkout before anything imports it."""
    package = os.path.join(os.path.abspath(folder), "numba_lprun")
    spec = importlib.util.spec_from_file_location(
        "numba_lprun", os.path.join(package, "__init__.py"), submodule_search_locations=[package]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["numba_lprun"] = module
    spec.loader.exec_module(module)


if "--numba-lprun" in sys.argv:
    _use_numba_lprun_from(sys.argv[sys.argv.index("--numba-lprun") + 1])

import kernels  # noqa: E402
import numba  # noqa: E402

import numba_lprun  # noqa: E402
from tests import attribution_kernels as K  # noqa: E402

warnings.simplefilter("ignore", numba.NumbaWarning)  # parfor debug lines "may be inaccurate"


def wilson(share: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% interval of a share (%) measured on ``n`` samples."""
    if n == 0:
        return 0.0, 100.0
    p = share / 100.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half)


def compile_many(n: int) -> None:
    """Compile ``n`` distinct small jitted functions (each its own module)."""
    for k in range(n):
        body = f"    s = 0.0\n    for i in range(n):\n        s += a * {k}.5 + i\n    return s\n"
        source = f"def f{k}(a, n):\n" + body
        namespace: dict = {}
        exec(source, namespace)
        numba.njit(namespace[f"f{k}"])(1.0, 3)


def coarse_case() -> K.Case:
    """benchmarks/kernels.py's coarse_lines: three lines calling ``spin`` 1 : 3 : 6."""
    return K.Case("coarse_lines (benchmarks)", kernels.coarse_lines, kernels.coarse_lines, (400,))


def groups(case: K.Case) -> dict[str, set[int]]:
    if case.profiled is kernels.coarse_lines:
        first = kernels.coarse_lines.py_func.__code__.co_firstlineno
        return {str(share // 10): {first + off} for off, share in ((4, 10), (5, 30), (6, 60))}
    return K.marked_lines(case.profiled)


def profile_once(case: K.Case, samples: int, seconds: float) -> tuple[dict[str, float], int, str | None]:
    """Sampled share (%) per group of lines, the function's samples, and why the rate was lowered."""
    prof = numba_lprun.LineProfiler(
        case.profiled, sample_rate=case.rate_hz, min_samples=samples, sample_time=seconds
    )
    prof.runcall(case.entry, *case.args)
    (stats,) = [f for f in prof.profile.functions if f.source.name == case.profiled.__name__]
    shares = {}
    for marker, lines in groups(case).items():
        parts = [stats.samples.share(line) for line in lines]
        shares[marker] = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else 0.0
    return shares, stats.samples.total, prof.profile.sampling.lowered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=12_000)
    parser.add_argument("--sample-time", type=float, default=20.0, help="most seconds of sampled repeats")
    parser.add_argument("--numba-lprun", metavar="DIR", help="profile with the numba_lprun package in DIR")
    parser.add_argument("--compiled", type=int, default=0, help="compile this many functions first")
    parser.add_argument("names", nargs="*", help="run only the cases whose name contains one of these")
    opts = parser.parse_args()
    began = time.perf_counter()
    cases = [*K.CASES, coarse_case()]
    if opts.names:
        cases = [c for c in cases if any(n in c.name for n in opts.names)]
    compile_many(opts.compiled)
    print(f"numba {numba.__version__}, numba_lprun from {os.path.dirname(numba_lprun.__file__)}")
    if opts.compiled:
        print(f"{opts.compiled} other functions compiled first")
    print(f"{opts.runs} runs per case, {opts.samples} samples each (10 kHz; objmode case 4 kHz)\n")
    worst_all = 0.0
    for case in cases:
        case.entry(*case.args)  # compiled before profiling, as a user's function is
        print(case.name + (" (shares among the marked groups)" if case.among_groups else ""))
        worst, covered, checks = 0.0, 0, 0
        for run in range(opts.runs):
            shares, n, lowered = profile_once(case, opts.samples, opts.sample_time)
            cells = []
            for marker, (got, want) in case.compare(shares).items():
                low, high = wilson(got, n)
                worst = max(worst, abs(got - want))
                covered += low <= want <= high
                checks += 1
                cells.append(f"{marker}: {got:5.1f}% [{low:4.1f}, {high:4.1f}] true {want:4.1f}")
            print(
                f"  run {run + 1}: {n:6d} samples  "
                + "  ".join(cells)
                + (f"  ({lowered})" if lowered else "")
            )
        print(f"  worst error {worst:.1f} points; interval covers the truth in {covered} of {checks}")
        worst_all = max(worst_all, worst)
    wall = time.perf_counter() - began
    print(f"\nworst error over all cases: {worst_all:.1f} points; wall time {wall:.0f} s")


if __name__ == "__main__":
    main()
