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
from numba_lprun.instrument.calibrate import probe_cost_ticks  # noqa: E402
from numba_lprun.instrument.clock import current_clock  # noqa: E402
from numba_lprun.stats import share_interval  # noqa: E402

RUNS = 3


def fresh(func):
    """A new dispatcher for the same Python function: nothing compiled yet."""
    return numba.jit(**func.targetoptions)(func.py_func)


def per_call_seconds(prof: numba_lprun.LineProfiler) -> tuple[float, float]:
    (stats,) = prof.profile.functions
    unit = prof.profile.unit
    return stats.plain_ticks * unit / stats.plain_calls, stats.instrumented_ticks * unit / stats.calls


def overheads(func, args) -> tuple[float, float, float, float, float]:
    """Plain and instrumented seconds per call, their ratio, the hits-only ratio, and the
    plain twin (line tables, entry/exit probes) against the original itself."""
    func(*args)
    prof = numba_lprun.LineProfiler(func, sample=False)
    hits = numba_lprun.LineProfiler(func, timing=False, sample=False)
    original = []
    for _ in range(RUNS):
        prof.runcall(func, *args)
        hits.runcall(func, *args)
        start = time.perf_counter()
        func(*args)
        original.append(time.perf_counter() - start)
    plain, instrumented = per_call_seconds(prof)
    unsampled, _ = per_call_seconds(hits)
    name = func.__name__
    return (
        plain,
        instrumented,
        prof.overhead[name],
        hits.overhead[name],
        unsampled / (sum(original) / len(original)),
    )


def magic_wall(shell, func, args) -> tuple[float, float, float, int, int]:
    """Seconds of ``%nlprun`` on a warm function (with its default sample budget), of a
    second ``%nlprun`` of it, of a plain first call (compile + run), and the samples and
    sampled repeats the first got."""
    first = fresh(func)
    start = time.perf_counter()
    first(*args)
    first_call = time.perf_counter() - start
    target = fresh(func)
    target(*args)  # the user has called it before profiling
    shell.user_ns.update(target=target, args=args)
    start = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        prof = shell.run_line_magic("nlprun", "-r -f target target(*args)")
    wall = time.perf_counter() - start
    start = time.perf_counter()
    with redirect_stdout(io.StringIO()):  # again: the twins are kept on the function, nothing compiles
        shell.run_line_magic("nlprun", "-f target target(*args)")
    again = time.perf_counter() - start
    profile = prof.profile
    return wall, again, first_call, profile.functions[0].samples, profile.sampling.repeats


def shares(func, args, truth: dict[tuple[int, ...], float]) -> tuple[list, float, int, int]:
    """% per group of lines (offsets from the def's first line): instrumented, sampled with
    its 95% interval, true.

    The sampled view comes from a hits-only profiler (so its instrumented run is
    quick) whose plain run is repeated under the sampler until 5,000 samples land in
    the function: one call, as a user would profile it.
    """
    func(*args)
    timed = numba_lprun.LineProfiler(func, sample=False)
    sampled = numba_lprun.LineProfiler(func, timing=False, min_samples=5000, sample_time=10.0)
    for _ in range(RUNS):
        timed.runcall(func, *args)
    sampled.runcall(func, *args)
    (t,), (s,) = timed.profile.functions, sampled.profile.functions
    total_t, total_s = t.total_ticks(), sum(s.sampled.values())
    rows = []
    for offsets, true_share in truth.items():
        lines = [t.first_lineno + o for o in offsets]
        got_t = 100.0 * sum(t.line_ticks(line) for line in lines) / total_t
        got_s = 100.0 * sum(s.sampled.get(line, 0.0) for line in lines) / total_s if total_s else float("nan")
        rows.append((",".join(map(str, lines)), got_t, got_s, share_interval(got_s, s.samples), true_share))
    return rows, timed.overhead[func.__name__], s.samples, sampled.profile.sampling.repeats


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
        f"{'kernel':24} {'plain ms':>9} {'plain/orig':>10} {'instr ms':>9} {'overhead':>9} {'hits-only':>9} "
        f"{'magic s':>8} {'again s':>8} {'samples':>8} {'repeats':>7} {'1st call s':>10} {'magic/1st':>9}"
    )
    print(header)
    print("-" * len(header))
    for name, (func, args) in kernels.make_kernels().items():
        plain, instrumented, ratio, hits_ratio, twin_speed = overheads(func, args)
        wall, again, first_call, samples, repeats = magic_wall(shell, func, args)
        print(
            f"{name:24} {plain * 1e3:9.2f} {twin_speed:9.3f}x {instrumented * 1e3:9.2f} {ratio:8.2f}x "
            f"{hits_ratio:8.2f}x {wall:8.2f} {again:8.2f} {samples:8d} {repeats:7d} {first_call:10.2f} "
            f"{wall / first_call:8.2f}x"
        )
    print(
        "magic s: the whole %nlprun (two twin compiles, plain run, sampled repeats until 2,000 samples "
        "or 1 s, instrumented run, rendering); again s: the same %nlprun a second time (twins reused)"
    )

    print("\nground truth: % of the function's time per group of lines")
    print(
        "  instr: instrumented view, probe cost taken out; sampled: plain run's sampled repeats, 95% interval"
    )
    rng = np.random.default_rng(1)
    a, b = rng.random(1_000_000), rng.random(4_000_000)
    cases = [
        (
            "coarse_lines (spin 1:3:6)",
            kernels.coarse_lines,
            (400,),
            {(o,): share for o, share in kernels.COARSE_TRUTH.items()},
        ),
        ("tight_body (loops 1:4)", kernels.tight_body, (rng.random(20_000), 20), dict(kernels.TIGHT_TRUTH)),
        ("tight_vectorized (1:4)", kernels.tight_vectorized, (a, b), dict(kernels.TIGHT_VEC_TRUTH)),
    ]
    for label, func, args, truth in cases:
        rows, ratio, samples, repeats = shares(func, args, truth)
        worst_t = max(abs(t - want) for _, t, _, _, want in rows)
        worst_s = max(abs(s - want) for _, _, s, _, want in rows)
        covered = sum(low <= want <= high for _, _, _, (low, high), want in rows)
        print(
            f"{label}: overhead {ratio:.2f}x, {samples} samples in {repeats} repeats; worst error: "
            f"instr {worst_t:.1f} points, sampled {worst_s:.1f} points; interval covers the truth "
            f"on {covered} of {len(rows)} groups"
        )
        for lines, got_t, got_s, (low, high), want in rows:
            print(
                f"    lines {lines:>7}: instr {got_t:5.1f}%  sampled {got_s:5.1f}% "
                f"[{low:4.1f}, {high:4.1f}]  true {want:5.1f}%"
            )
    print(f"\nbenchmark wall time: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
