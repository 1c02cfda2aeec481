"""What one profile costs beyond the call itself, for calls too short to matter (0.1 ms).

Run ``python benchmarks/short_calls.py``. A ufunc and a jitted function, each called once
on 20,000 elements, are profiled with ``--once`` through the API and through ``%nlprun`` in
a real IPython shell, five times each: the first profile compiles the twins, the others
reuse them (a second ``%nlprun`` of the same function), and their median wall time beyond
the unprofiled call is the fixed cost per profile. The goal is at most 50 ms.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time

from IPython.testing.globalipapp import start_ipython

import numba_lprun
from numba_lprun.renderers import TextRenderer

SETUP = """
import numpy as np
from numba import njit, vectorize

@vectorize(["float64(float64)"])
def scaled(x):
    y = x * 2.0
    return y + 1.0

@njit
def sum_squares(a):
    s = 0.0
    for v in a:
        s += v * v
    return s

a = np.random.default_rng(0).random(20_000)
scaled(a)
sum_squares(a)
"""


def timed(func) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def main() -> None:
    shell = start_ipython()
    shell.run_line_magic("load_ext", "numba_lprun")
    shell.run_cell(SETUP)
    ns = shell.user_ns
    print("ms beyond the call: first profile (compiles twins), then the median of four reusing them")
    for name in ("scaled", "sum_squares"):
        func = ns[name]
        call = min(timed(lambda func=func: func(ns["a"])) for _ in range(5))

        def api(func=func):
            prof = numba_lprun.LineProfiler(func, repeat=False)
            prof.runcall(func, ns["a"])
            TextRenderer().render(prof.profile)

        def magic(name=name):
            with contextlib.redirect_stdout(io.StringIO()):
                shell.run_line_magic("nlprun", f"--once -f {name} {name}(a)")

        for label, profile in (("API", api), ("%nlprun", magic)):
            spent = [timed(profile) - call for _ in range(5)]
            print(
                f"{name:12} {label:8} call {call * 1e3:6.3f} ms  first {spent[0] * 1e3:7.1f}  "
                f"reused {statistics.median(spent[1:]) * 1e3:6.1f} ms"
            )


if __name__ == "__main__":
    main()
