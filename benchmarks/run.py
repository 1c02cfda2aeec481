"""Benchmark numba_lprun: overhead, hits-only overhead, magic wall time, and accuracy.

Run ``python benchmarks/run.py``. Every ratio is measured side by side in this one
process (plain and instrumented twins run the same calls back to back), so a
noisy machine disturbs both sides alike. Absolute times are for orientation.
"""

from __future__ import annotations

import io
import os
import sys
import time
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernels  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402

import numba_lprun  # noqa: E402
from numba_lprun.calibrate import probe_cost_ticks  # noqa: E402
from numba_lprun.clock import current_clock  # noqa: E402

RUNS = 3


def fresh(func):
    """A new dispatcher for the same Python function: nothing compiled yet."""
    return numba.jit(**func.targetoptions)(func.py_func)


def per_call_seconds(prof: numba_lprun.LineProfiler) -> tuple[float, float]:
    (stats,) = prof.profile.functions
    unit = prof.profile.unit
    return stats.plain_ticks * unit / stats.plain_calls, stats.instrumented_ticks * unit / stats.calls


def overheads(func, args) -> tuple[float, float, float, float]:
    func(*args)
    prof = numba_lprun.LineProfiler(func)
    hits = numba_lprun.LineProfiler(func, timing=False)
    for _ in range(RUNS):
        prof.runcall(func, *args)
        hits.runcall(func, *args)
    plain, instrumented = per_call_seconds(prof)
    return plain, instrumented, prof.overhead[func.__name__], hits.overhead[func.__name__]


def magic_wall(shell, func, args) -> tuple[float, float]:
    """Seconds of ``%nlprun`` on a warm function, and of a plain first call (compile + run)."""
    first = fresh(func)
    start = time.perf_counter()
    first(*args)
    first_call = time.perf_counter() - start
    target = fresh(func)
    target(*args)  # the user has called it before profiling
    shell.user_ns.update(target=target, args=args)
    start = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        shell.run_line_magic("nlprun", "-f target target(*args)")
    return time.perf_counter() - start, first_call


def shares(func, args, truth: dict[tuple[int, ...], float]) -> tuple[list[tuple[str, float, float]], float]:
    """Reported % of time per group of lines (offsets from the def's first line) vs the truth."""
    func(*args)
    prof = numba_lprun.LineProfiler(func)
    for _ in range(RUNS):
        prof.runcall(func, *args)
    (stats,) = prof.profile.functions
    total = stats.total_ticks()
    first = stats.first_lineno
    rows = []
    for offsets, true_share in truth.items():
        got = sum(stats.line_ticks(first + o) for o in offsets)
        label = ",".join(str(first + o) for o in offsets)
        rows.append((label, 100.0 * got / total, true_share))
    return rows, prof.overhead[func.__name__]


def main() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    began = time.perf_counter()
    clock = current_clock()
    cost_ns = probe_cost_ticks(clock.kind) * clock.seconds_per_tick * 1e9
    print(f"numba {numba.__version__}, numpy {np.__version__}, clock: {clock.note}")
    print(f"probe cost: {cost_ns:.1f} ns per executed line (target <= 12 ns)\n")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "numba_lprun")

    header = (
        f"{'kernel':24} {'plain ms':>9} {'instr ms':>9} {'overhead':>9} {'hits-only':>9} "
        f"{'magic s':>8} {'1st call s':>10} {'magic/1st':>9}"
    )
    print(header)
    print("-" * len(header))
    for name, (func, args) in kernels.make_kernels().items():
        plain, instrumented, ratio, hits_ratio = overheads(func, args)
        wall, first_call = magic_wall(shell, func, args)
        print(
            f"{name:24} {plain * 1e3:9.2f} {instrumented * 1e3:9.2f} {ratio:8.2f}x {hits_ratio:8.2f}x "
            f"{wall:8.2f} {first_call:10.2f} {wall / first_call:8.2f}x"
        )

    print("\nground truth: % of the function's time per line (instrumented, probe cost taken out)")
    a = np.random.default_rng(1).random(20_000)
    cases = [
        (
            "coarse_lines (spin 1:3:6)",
            kernels.coarse_lines,
            (2000,),
            {(o,): share for o, share in kernels.COARSE_TRUTH.items()},
        ),
        ("tight_body (loops 1:4)", kernels.tight_body, (a, 20), dict(kernels.TIGHT_TRUTH)),
    ]
    for label, func, args, truth in cases:
        rows, ratio = shares(func, args, truth)
        worst = max(abs(got - want) for _, got, want in rows)
        print(f"{label}: overhead {ratio:.2f}x, worst error {worst:.1f} points")
        for lines, got, want in rows:
            error = got - want
            print(f"    line {lines:>7}: reported {got:5.1f}%  true {want:5.1f}%  error {error:+5.1f} points")
    print(f"\nbenchmark wall time: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
