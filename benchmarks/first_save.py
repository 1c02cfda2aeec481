"""What saving a call's arguments for its replays costs a default profile, copied or fingerprinted.

Run ``python benchmarks/first_save.py [KERNEL...]``. A default profile records the calls
its statement makes so the extra runs can replay them, each from the state it reached: an
array the call writes is copied before it, and one its compiled code never writes (LLVM's
``readonly`` parameter attribute) is only fingerprinted (``run/fingerprints.py``). On a long
statement (past ``--extra-limit``) no replay comes, and what the first saves cost is all the
profile pays over one run. This benchmark measures it side by side in one process, for the
kernels of ``benchmarks/kernels.py`` that take large arrays: the long statement (the call
repeated to about a second, as ``run.py``'s), unprofiled, then a default profile with
``NUMBA_LPRUN_UNSAVED=0`` (every array copied, as before the fingerprints), then one with
the fingerprints (the default), in ``ROUNDS`` alternating rounds; each cell is the best ratio
of a profile's wall time to the unprofiled statement timed just before it. A one-run profile
(``--once``, nothing recorded) is the floor. Twins are compiled by a first profile.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernels

import numba_lprun
from numba_lprun import settings

#: Kernels whose arguments are large arrays (tens to 160 MB), written or only read.
KERNELS = ("vectorizable reduction", "histogram", "scatter-add", "black-scholes", "conv", "prange kernel")
ROUNDS = 3
LONG_SECONDS = 1.0
SIDES = {"copied": ("0", {}), "fingerprinted": ("1", {}), "one run": ("1", {"repeat": False})}


def ratio(kernel, helpers, ns: dict, unsaved: str, options: dict) -> float:
    """A profile's wall time over the statement's, unprofiled, timed just before it."""
    statement = "for _ in range(reps): target(*args)"
    start = time.perf_counter()
    exec(statement, ns)
    plain = time.perf_counter() - start
    os.environ[settings.UNSAVED] = unsaved
    try:
        profiler = numba_lprun.LineProfiler(kernel, *helpers, **options)
        start = time.perf_counter()
        profiler.runctx(statement, ns, None)
        return (time.perf_counter() - start) / plain
    finally:
        os.environ.pop(settings.UNSAVED, None)


def row(name: str, kernel, args) -> str:
    helpers = kernels.HELPERS.get(name, ())
    kernel(*args)
    start = time.perf_counter()
    kernel(*args)
    ns = {"target": kernel, "args": args, "reps": max(1, round(LONG_SECONDS / (time.perf_counter() - start)))}
    for _, options in SIDES.values():  # the twins, compiled and kept
        numba_lprun.LineProfiler(kernel, *helpers, **options).runctx("target(*args)", ns, None)
    best = dict.fromkeys(SIDES, float("inf"))
    for _ in range(ROUNDS):
        for side, (unsaved, options) in SIDES.items():
            best[side] = min(best[side], ratio(kernel, helpers, ns, unsaved, options))
    size = sum(a.nbytes for a in args if hasattr(a, "nbytes")) / 1e6
    return f"{name[:22]:22} {size:7.0f} MB " + "".join(f"{best[side]:14.2f}x" for side in SIDES)


def main() -> None:
    began = time.perf_counter()
    wanted = sys.argv[1:] or KERNELS
    made = kernels.make_kernels()
    print("long statement (~1 s), default profile's wall time / the statement's, best of", ROUNDS, "rounds")
    print(f"{'kernel':22} {'arrays':>10} " + "".join(f"{side:>15}" for side in SIDES))
    for name in wanted:
        print(row(name, *made[name]), flush=True)
    print(f"benchmark wall time: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
