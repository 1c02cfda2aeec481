"""What the sampler costs a one-run profile: a 1 s kernel, sampled against counting twins alone.

Run ``python benchmarks/one_run_sampler.py [--compiles 1200] [--tries 3]``. Issue 31's goal:
a one-run profile at the default rate costs at most 1.05x the counting twins alone
(``--hits``: no sampler, no clock) on a 1 s kernel, in a fresh process and after 1,200
other compiles (each stack walk searches every registered module's unwind tables), with
the default rate not lowered. Each case runs in a fresh process: the kernel's call is
timed inside a one-run profile (``repeat=False``, twins compiled by a first profile),
hits only and sampled, alternating, best of ``--tries``; the sampled profile's achieved
rate and the header's ``lowered`` reason are printed beside the ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

CASE = """
import sys, time
from numba import njit
import numba_lprun

@njit
def spin(n):
    s = 0.0
    for i in range(n):
        s += (i % 7) * 0.5
    return s

for k in range(int(sys.argv[1])):  # other compiles: what a long session has made
    njit(eval(f"lambda x: x + {k}"))(1)

def timed(**options):
    profiler = numba_lprun.LineProfiler(spin, repeat=False, **options)
    def call():
        start = time.perf_counter()
        spin(n)
        return time.perf_counter() - start
    return profiler.runcall(call), profiler.profile

n = 10_000_000
spin(n)
start = time.perf_counter(); spin(n); one = time.perf_counter() - start
n = int(n * 1.0 / one)  # about 1 s
timed(timing=False); timed()  # twins compiled
hits, sampled = [], []
for _ in range(int(sys.argv[2])):
    hits.append(timed(timing=False)[0])
    seconds, profile = timed()
    sampled.append(seconds)
s = profile.sampling
print(min(hits), min(sampled), s.rate_hz, s.achieved_hz, s.lowered)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiles", type=int, default=1200)
    parser.add_argument("--tries", type=int, default=3)
    args = parser.parse_args()
    script = os.path.join(tempfile.mkdtemp(prefix="nlprun-bench-"), "one_run_case.py")
    with open(script, "w") as handle:  # a file: the profiler reads the kernel's source
        handle.write(CASE)
    for compiles in (0, args.compiles):
        out = subprocess.run(
            [sys.executable, script, str(compiles), str(args.tries)], capture_output=True, text=True
        )
        if out.returncode != 0:
            print(f"after {compiles} compiles: failed\n{out.stderr[-2000:]}")
            continue
        hits, sampled, rate, achieved, lowered = out.stdout.split(maxsplit=4)
        ratio = float(sampled) / float(hits)
        print(
            f"after {compiles:5} other compiles: hits only {float(hits):.3f} s, "
            f"sampled {float(sampled):.3f} s: "
            f"{ratio:.3f}x (goal <= 1.05x); rate {float(rate):.0f} Hz asked, {float(achieved):.0f} Hz per "
            f"thread achieved; lowered: {lowered.strip()}"
        )


if __name__ == "__main__":
    main()
