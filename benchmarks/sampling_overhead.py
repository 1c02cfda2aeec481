"""Measure the sampling core: debug-info build vs plain build, sampler overhead, rate.

Run: ``python benchmarks/sampling_overhead.py [--reps 5] [--rate 1000] [--seconds 0.5]``

For each kernel, a plain ``@njit`` build and a twin compiled with line tables
(``debug=True, boundscheck=False, _dbg_extend_lifetimes=False``) run side by side in
this process, interleaved, ``--reps`` times; then the debug build runs under the
sampler. Reported: median debug/plain and sampled/unsampled ratios, in wall time and
in process CPU time (the latter is robust to other load on the machine), the
achieved per-thread sample rate and the CPU-weighted share of samples charged to
lines of the kernel. Each kernel is scaled to run about ``--seconds``.
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import time
import warnings

import numba
import numpy as np
from numba import prange

from numba_lprun.sampling import Sampler, attribute, line_map

DEBUG = dict(debug=True, boundscheck=False, _dbg_extend_lifetimes=False)


def k_libm(a, reps):
    s = 0.0
    for _ in range(reps):
        for i in range(a.size):
            s += np.sin(a[i]) * np.exp(-a[i])
    return s


def k_reduction(a, reps):
    s = 0.0
    for _ in range(reps):
        for i in range(a.size):
            s += a[i] * a[i]
    return s


def k_branchy(a, reps):
    steps = 0
    for r in range(reps):
        for i in range(a.size):
            n = int(a[i] * 1000.0) + r + 1
            while n != 1:
                n = n // 2 if n % 2 == 0 else 3 * n + 1
                steps += 1
    return steps


def k_parallel(a, reps):
    s = 0.0
    for _ in range(reps):
        for i in prange(a.size):
            s += np.exp(a[i]) * np.cos(a[i])
    return s


KERNELS = [(k_libm, {}), (k_reduction, {}), (k_branchy, {}), (k_parallel, {"parallel": True})]


def timed(func, *args) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    func(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def mnemonics(dispatcher) -> list[str]:
    """The instruction mnemonics of the first overload's own function."""
    sig = dispatcher.signatures[0]
    name = dispatcher.overloads[sig].fndesc.llvm_func_name
    body = dispatcher.inspect_asm(sig).split(name + ":", 1)[1].split(".Lfunc_end", 1)[0]
    lines = (line.strip() for line in body.splitlines())
    return [
        line.split()[0]
        for line in lines
        if line and not line.startswith((".", "#")) and not line.endswith(":")
    ]


def calibrate(func, a, seconds: float) -> int:
    """Repetitions that make ``func(a, reps)`` run about ``seconds``."""
    reps = 1
    while (took := timed(func, a, reps)[0]) < 0.05:
        reps *= 2
    return max(1, round(reps * seconds / took))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=0.5)
    args = parser.parse_args()
    warnings.simplefilter("ignore", numba.NumbaWarning)
    small = np.random.default_rng(0).random(20_000)
    big = np.random.default_rng(1).random(1_000_000)  # prange regions long enough to be work
    print(f"numba {numba.__version__}, {args.reps} reps, {args.rate:g} Hz, load {os.getloadavg()[0]:.2f}")
    print(
        f"{'kernel':<12}{'plain s':>8}{'dbg/plain':>10}{'(cpu)':>7}{'overhead':>9}{'(cpu)':>7}"
        f"{'rate Hz':>8}{'samples':>8}{'in kernel':>10}{'same':>5}"
    )
    for py_func, opts in KERNELS:
        a = big if opts.get("parallel") else small
        plain = numba.njit(**opts)(py_func)
        debug = numba.njit(**opts, **DEBUG)(py_func)
        plain(a, 1)
        debug(a, 1)
        reps = calibrate(plain, a, args.seconds)
        same = "yes" if mnemonics(plain) == mnemonics(debug) else "no"
        lines, first = inspect.getsourcelines(py_func)
        lmap = line_map(debug, py_func.__code__.co_filename, first, first + len(lines) - 1)
        rows: dict[str, list[float]] = {k: [] for k in ("plain", "dbg", "dbg_cpu", "ovh", "ovh_cpu", "hz")}
        samples, cpu, cpu_in = 0, 0.0, 0.0
        for _ in range(args.reps):
            tp = timed(plain, a, reps)
            td = timed(debug, a, reps)
            with Sampler(rate_hz=args.rate, numba_threads=bool(opts)) as sampler:
                ts = timed(debug, a, reps)
            td2 = timed(debug, a, reps)
            rows["plain"].append(tp[0])
            rows["dbg"].append(td[0] / tp[0])
            rows["dbg_cpu"].append(td[1] / tp[1])
            rows["ovh"].append(ts[0] / ((td[0] + td2[0]) / 2))
            rows["ovh_cpu"].append(ts[1] / ((td[1] + td2[1]) / 2))
            if sampler.unavailable:
                print("sampler unavailable:", sampler.unavailable)
                continue
            raw = sampler.samples
            rows["hz"].append(raw.achieved_hz)
            result = attribute(raw, {py_func: lmap})
            samples += result.total
            cpu += result.total_seconds
            cpu_in += result.functions[py_func].cpu_seconds
        med = {k: statistics.median(v) if v else 0.0 for k, v in rows.items()}
        print(
            f"{py_func.__name__:<12}{med['plain']:>8.3f}{med['dbg']:>10.3f}{med['dbg_cpu']:>7.3f}"
            f"{med['ovh']:>9.3f}{med['ovh_cpu']:>7.3f}{med['hz']:>8.0f}{samples // max(1, args.reps):>8}"
            f"{cpu_in / max(cpu, 1e-12):>10.1%}{same:>5}"
        )
    print(f"threading layer: {numba.threading_layer()}, threads: {numba.get_num_threads()}")
    print("dbg/plain: debug build time / plain build time, median of per-rep ratios; (cpu): same in")
    print("  process CPU time. overhead: sampled debug run / mean of the unsampled debug runs around it.")
    print("rate: signals per thread per second; samples: per run, all threads (idle ones too);")
    print("in kernel: CPU-weighted share of samples charged to the kernel's lines;")
    print("same: the debug build's instructions (mnemonics, entry function) equal the plain build's.")
    print("Wall ratios are only meaningful on an idle machine (see load): a CPU hog elsewhere makes")
    print("sampled runs *faster* (each signal wakes the thread, which then preempts the hog).")


if __name__ == "__main__":
    main()
