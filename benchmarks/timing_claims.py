"""Timing claims the tests leave to a quiet machine: probe-cost correction, the overhead verdicts.

Run ``python benchmarks/timing_claims.py [--runs 10]``. The tests check what load cannot
move (the subtraction's arithmetic, the machine code's verdict, the hits); the figures here
are ratios of wall times, measured side by side in this one process:

* ``probe correction``: the probed lines' corrected total against the plain twin's time,
  for a coarse function (``coarse(200)``, about a millisecond): within 10% on a quiet machine.
* ``counters on a tight reduction``: the counting run against the plain run of a
  vectorized reduction (200,000 elements): within the 1.2x threshold.
* ``probes on a tight reduction``: the probed run against the plain run: far above it.

Each line gives the median and range over ``--runs`` profiles.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from numba import njit

import numba_lprun


@njit
def coarse(n):
    a = 0.0
    for _ in range(n):
        a += np.sin(np.arange(400.0)).sum()
    b = np.cos(np.arange(4000.0)).sum()
    return a + b


@njit
def reduce_sq(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * a[i]
    return s


def probe_correction() -> float:
    prof = numba_lprun.LineProfiler(coarse, probes=True, sample_time=0.05)
    prof.runcall(coarse, 200)
    (stats,) = prof.profile.functions
    return stats.probe_total() / stats.distortion.plain_ticks


def overhead(probes: bool) -> float:
    prof = numba_lprun.LineProfiler(reduce_sq, probes=probes, sample_time=0.05)
    prof.runcall(reduce_sq, np.ones(200_000))
    (stats,) = prof.profile.functions
    return stats.distortion.overhead


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    coarse(3), reduce_sq(np.ones(10))
    claims = {
        "probe correction (corrected total / plain)": probe_correction,
        "counters on a tight reduction (counting / plain)": lambda: overhead(False),
        "probes on a tight reduction (probed / plain)": lambda: overhead(True),
    }
    for name, measure in claims.items():
        figures = [measure() for _ in range(runs)]
        figures = [f for f in figures if f is not None]
        if not figures:
            print(f"{name:52s} not measured")
            continue
        print(
            f"{name:52s} median {statistics.median(figures):6.2f}  "
            f"range {min(figures):.2f}-{max(figures):.2f}  ({len(figures)} runs)"
        )


if __name__ == "__main__":
    main()
