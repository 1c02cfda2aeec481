"""What the counting run costs the user's code, against the user's own compiled function.

Run ``python benchmarks/counting_cost.py [KERNEL...]``. The profile's overhead figure
compares the counting twin with the plain twin, and both twins carry the entry and exit
probes (a clock read at each end of every call): so for a jitted helper called in a hot
loop, which LLVM inlines, both twins pay per call and the figure reads about 1.0 while the
user's run is slower than the unprofiled code. This benchmark measures that directly, side
by side in one process: the kernel's call timed inside a one-run profile (``--once``; the
second call, so no compile is timed), hits only and with the sampler, against the same call
of the original function, best of three each, in ``ROUNDS`` alternating rounds (the best of
each side over all of them: a 3-12 ms call's single best of three wandered by 0.1-0.4x between
runs here, once 6.6x). The profile's own overhead figure (a default profile of one call) is
printed beside it. Twins are compiled by a first profile.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernels

import numba_lprun
from numba_lprun.sampling import USERS_RUN_SIGNALS, Sampler
from numba_lprun.sampling._native import libc
from numba_lprun.sampling.sample_cost import signal_seconds
from numba_lprun.sampling.sampler import WALK_BUDGET

MODES = {"hits only": {"timing": False}, "sampled": {}}
ROUNDS = 3  # alternating rounds of the original's calls and a profile's


def best_call(entry, args, tries: int = 3) -> float:
    """The best of ``tries`` timed calls of ``entry(*args)``, after one untimed call."""
    entry(*args)
    spent = []
    for _ in range(tries):
        start = time.perf_counter()
        entry(*args)
        spent.append(time.perf_counter() - start)
    return min(spent)


def row(name: str, kernel, args) -> str:
    targets = (kernel, *kernels.HELPERS.get(name, ()))
    cells = []
    for options in MODES.values():
        numba_lprun.LineProfiler(*targets, repeat=False, **options).runcall(kernel, *args)  # twins
        plain = inside = float("inf")
        for _ in range(ROUNDS):
            plain = min(plain, best_call(kernel, args))
            profiler = numba_lprun.LineProfiler(*targets, repeat=False, **options)
            inside = min(inside, profiler.runcall(best_call, kernel, args))
        cells.append(f"{inside / min(plain, best_call(kernel, args)):9.2f}x")
    prof = numba_lprun.LineProfiler(*targets)
    prof.runcall(kernel, *args)
    figures = [f.distortion.overhead for f in prof.profile.functions]
    said = " ".join("-" if f is None else f"{f:.2f}x" for f in figures)
    return f"{name[:22]:22} {plain:8.3f} " + " ".join(cells) + f"   {said}"


def main() -> None:
    chosen = sys.argv[1:]
    print(
        f"ratio: the call in a one-run profile / the original's call (best of 3 each in {ROUNDS}"
        " alternating rounds, twins compiled)\n"
        "figure: the profile's overhead figure, counting twin / plain twin (kernel, helpers)"
    )
    with Sampler(rate_hz=100.0):  # the handler installed, as when a profile measures it
        signal = signal_seconds(libc())
    print(
        f"a timer signal costs about {signal * 1e6:.0f} us here: the sampler's rate is lowered to keep"
        f" its signals under {WALK_BUDGET:.0%} of the CPU (in the user's run, a sample counted as"
        f" {USERS_RUN_SIGNALS:g} signals)"
    )
    print(f"{'kernel':22} {'plain s':>8} {'hits only':>10} {'sampled':>10}   figure")
    for name, (kernel, args) in kernels.make_kernels().items():
        if not chosen or name in chosen:
            print(row(name, kernel, args), flush=True)


if __name__ == "__main__":
    main()
