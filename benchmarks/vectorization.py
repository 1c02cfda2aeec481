"""Whether the counting twin keeps the SIMD loops of the plain code.

Run ``python benchmarks/vectorization.py [KERNEL...]`` (default: the vectorizable reduction,
conv and Black-Scholes; ``all`` for every kernel of ``kernels.py``). For each kernel it reads
the source lines of vectorized loops (packed arithmetic in the optimized code, as the
``--asm`` view does) from a copy of the kernel compiled as the plain twin is (the user's
options plus line tables), then profiles one call, hits only, and prints the lines that are
vectorized there and not in the counting twin (the profile's own check,
``Distortion.lost_vectorization``). Nothing is timed: this is what the machine code says,
the same on a busy machine.
"""

from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernels
from numba import njit
from numba.core.errors import NumbaDebugInfoWarning

import numba_lprun
from numba_lprun.instrument.twins import line_table_options
from numba_lprun.vectorized import vectorized_lines

DEFAULT = ("vectorizable reduction", "conv", "black-scholes")


def simd_lines(kernel, args) -> set[int]:
    """Source lines of the vectorized loops of ``kernel`` compiled as its plain twin is."""
    options = {k: v for k, v in kernel.targetoptions.items() if k != "nopython"}
    options.update(line_table_options(kernel))
    copy = njit(**options)(kernel.py_func)
    copy(*args)
    return vectorized_lines(copy)


def main() -> int:
    warnings.filterwarnings("ignore", category=NumbaDebugInfoWarning)  # an array expression's lines
    every = kernels.make_kernels()
    chosen = list(every) if sys.argv[1:] == ["all"] else (sys.argv[1:] or list(DEFAULT))
    print(f"{'kernel':24} {'SIMD lines (plain)':>20} {'lost by counting':>18}")
    lost_any = False
    for name in chosen:
        kernel, args = every[name]
        if not hasattr(kernel, "py_func") or "parallel" in kernel.targetoptions:
            continue  # a stencil's or prange kernel's loops are read from its own library
        plain = simd_lines(kernel, args)
        targets = (kernel, *kernels.HELPERS.get(name, ()))
        prof = numba_lprun.LineProfiler(*targets, timing=False)
        prof.runcall(kernel, *args)
        (stats,) = [f for f in prof.profile.functions if f.source.name == kernel.__name__]
        lost = sorted(stats.distortion.lost_vectorization)
        lost_any |= bool(lost)
        said = ", ".join(map(str, sorted(plain))) or "none"
        print(f"{name[:24]:24} {said:>20} {', '.join(map(str, lost)) or 'none':>18}", flush=True)
    return 1 if lost_any else 0


if __name__ == "__main__":
    sys.exit(main())
