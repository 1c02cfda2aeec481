"""Kernels whose lines cost known amounts: the ground truth of the sampled view.

Each profiled function spends its time on lines marked ``# 1``, ``# 3`` and ``# 6``
(or ``# A``/``# B``), whose costs are in those proportions by construction: the same
work, repeated that many times. Everything else in the functions is negligible
next to it. The helpers are *not* profiled: the samples they get must reach the
calling line through the stack walk. ``CASES`` lists them for the tests and
``benchmarks/attribution.py``.

Compiled at import (module level), so a session compiles each once.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numba import njit, objmode, prange, types
from numba.extending import intrinsic

from tests.attribution_other import spin_elsewhere

UNIT = 2000  # dependent multiply-adds per unit: a few microseconds
LIBM_UNIT = 60  # log + exp pairs per unit
SIN_UNIT = 100  # sines per unit
ALLOC_UNIT = 300  # small arrays allocated and freed per unit
PAR_REPS = 400  # multiply-adds per element of the prange loops


# --- helpers that are not profiled -------------------------------------------------------
@njit
def spin(units, seed):
    """A pure loop: a leaf, LLVM proves it ``nounwind``."""
    x = 1.0 + seed * 1e-9
    for _ in range(units * UNIT):
        x = x * 0.9999999 + 1e-7
    return x


@njit
def log_exp(units, seed):
    """Calls libm in its loop: most samples land in libm, two frames below the line."""
    x = 1.0 + seed * 1e-9
    for _ in range(units * LIBM_UNIT):
        x = math.log(x + 2.0) + math.exp(-x)
    return x


@njit
def allocate(units, seed):
    """Allocates and frees arrays through Numba's runtime (NRT, then libc's malloc)."""
    s = seed * 1e-9
    for _ in range(units * ALLOC_UNIT):
        a = np.empty(64)
        a[0] = s
        a[63] = 1.0
        s = a[0] * 0.5 + a[63]
    return s


@njit
def deep3(units, seed):
    x = seed * 1e-9
    for _ in range(units * SIN_UNIT):
        x = math.sin(x) + 0.5
    return x


@njit
def deep2(units, seed):
    y = deep3(units, seed)
    if y > 1e300:
        y = deep3(units, seed + 1)
    return y + 1.0


@njit
def deep1(units, seed):
    z = deep2(units, seed)
    if z > 1e300:
        z = deep2(units, seed + 1)
    return z + 1.0


@njit
def folded_in(x):
    """Small enough that LLVM inlines it at every call."""
    return x * 0.9999999 + 1e-7


@intrinsic
def _never_inlined(typingctx):
    """Marks the jitted function that calls it ``noinline`` for LLVM (Numba's public
    ``intrinsic``: its code is emitted into the caller's own LLVM function)."""

    def codegen(context, builder, signature, args):
        builder.function.attributes.add("noinline")
        return context.get_dummy_value()

    return types.none(), codegen


@njit
def kept_apart(units, seed):
    """A function of its own in the machine code, whatever the CPU and LLVM (the test checks).

    Its size alone decided that on some CPUs only: LLVM's inliner weighs a call's cost by the
    target's, and inlined it for a CPU without AVX-512 (AMD EPYC, Haswell) and under Numba
    0.59 (LLVM 14) on one with it. ``noinline`` takes the choice from LLVM.
    """
    _never_inlined()
    x = 1.0 + seed * 1e-9
    y = 2.0 + seed * 1e-9
    for k in range(units * UNIT // 4):
        x = x * 0.9999999 + 1e-7
        if k % 3 == 0:
            y = y * 0.9999998 + 2e-7
        elif k % 3 == 1:
            y = y * 0.9999997 + 3e-7
        else:
            y = y * 0.9999996 + 4e-7
        x = x * 0.9999999 + y * 1e-12
        x = x * 0.9999999 + 1e-7
        x = x * 0.9999999 + 1e-7
    return x + y


@njit(debug=True, boundscheck=False, _dbg_extend_lifetimes=False)
def spin_with_tables(units, seed):
    """``spin`` with debug info, called from object mode (so through its own code).

    Numba's own build of a jitted function called from Python runs, not a copy
    numba_lprun compiled; with debug info LLVM writes unwind tables for it, so the
    walk from inside it reaches the ``with objmode`` line. (Without them it stops
    there: ``SampledLines.stopped``.) Its code is ``spin``'s, instruction for
    instruction, so the block costs what its units say (plus a few microseconds).
    """
    x = 1.0 + seed * 1e-9
    for _ in range(units * UNIT):
        x = x * 0.9999999 + 1e-7
    return x


# --- profiled functions --------------------------------------------------------------
@njit
def calls_pure(n):
    acc = 0.0
    for i in range(n):
        acc += spin(1, i)  # 1
        acc += spin(3, i)  # 3
        acc += spin(6, i)  # 6
    return acc


@njit
def calls_libm(n):
    acc = 0.0
    for i in range(n):
        acc += log_exp(1, i)  # 1
        acc += log_exp(3, i)  # 3
        acc += log_exp(6, i)  # 6
    return acc


@njit
def calls_allocating(n):
    acc = 0.0
    for i in range(n):
        acc += allocate(1, i)  # 1
        acc += allocate(3, i)  # 3
        acc += allocate(6, i)  # 6
    return acc


@njit
def calls_three_deep(n):
    acc = 0.0
    for i in range(n):
        acc += deep1(1, i)  # 1
        acc += deep1(3, i)  # 3
        acc += deep1(6, i)  # 6
    return acc


@njit
def calls_other_module(n):
    acc = 0.0
    for i in range(n):
        acc += spin_elsewhere(1, i)  # 1
        acc += spin_elsewhere(3, i)  # 3
        acc += spin_elsewhere(6, i)  # 6
    return acc


@njit
def calls_inlined(n):
    # not a constant (1.0 is the loops' fixed point): LLVM would fold the loops
    x = 2.0 + n * 1e-9
    for _i in range(n):
        for _ in range(UNIT):
            x = folded_in(x)  # 1
        for _ in range(3 * UNIT):
            x = folded_in(x)  # 3
        for _ in range(6 * UNIT):
            x = folded_in(x)  # 6
    return x


@njit
def calls_not_inlined(n):
    acc = 0.0
    u = 1 + (n < 0)  # one, unknown to the compiler: the three calls run one compiled kept_apart
    for i in range(n):
        acc += kept_apart(u, i)  # 1
        acc += kept_apart(3 * u, i)  # 3
        acc += kept_apart(6 * u, i)  # 6
    return acc


@njit(parallel=True)
def prange_small(a, b):
    """Loop bodies small enough that LLVM inlines them into Numba's gufunc wrapper."""
    for i in prange(a.size):
        x = a[i]  # A
        for _ in range(PAR_REPS):
            x = x * 0.9999999 + 1e-7  # A
        a[i] = x  # A
    for i in prange(b.size):
        y = b[i]  # B
        for _ in range(PAR_REPS):
            y = y * 0.9999999 + 1e-7  # B
        b[i] = y  # B
    return a[0] + b[0]


@njit(parallel=True)
def prange_large(a, b):
    """Loop bodies LLVM keeps apart from the wrapper (several branches and libm calls)."""
    for i in prange(a.size):
        x = a[i]  # A
        z = math.sqrt(x + 1.0)  # A
        for _k in range(PAR_REPS):  # A
            x = x * 0.9999999 + 1e-7  # A
        if x > 0.5:  # A
            z = math.log(x + z)  # A
        else:  # A
            z = math.exp(x - z)  # A
        a[i] = x + z * 1e-9  # A
    for i in prange(b.size):
        y = b[i]  # B
        w = math.sqrt(y + 1.0)  # B
        for _k in range(PAR_REPS):  # B
            y = y * 0.9999999 + 1e-7  # B
        if y > 0.5:  # B
            w = math.log(y + w)  # B
        else:  # B
            w = math.exp(y - w)  # B
        b[i] = y + w * 1e-9  # B
    return a[0] + b[0]


@njit
def libm_call_then_add(x):
    """A libm call in a small loop LLVM unrolls (4 copies): three of the copies' calls lost their
    source line, and a line table that lets such code take the line before it put them, and the
    samples inside ``sin``, on the loop header and the add after (59% on the call's line, where
    the other two lines are one multiply-add each)."""
    total = 0.0
    for i in range(x.size):
        total += np.sin(x[i]) * 1.5  # SIN
        total += x[i] * 0.5
    return total


@njit
def sincos_then_add(x):
    """As ``libm_call_then_add`` with LLVM's ``sincos`` (one call for a sine and a cosine of one
    value), whose results are read back from memory after it by code without a line: 54% on the
    call's line when only a call that ends such code took the line after it."""
    total = 0.0
    for i in range(x.size):
        total += np.sin(x[i]) * np.cos(x[i])  # SIN
        total += x[i] * 0.5
    return total


@njit
def caller_of_profiled(n):
    """Not profiled: calls the profiled ``calls_pure``."""
    return calls_pure(n) + 1.0


@njit
def with_objmode(n):
    """One long block per call: entering object mode costs some microseconds."""
    acc = 0.0
    for i in range(n):
        acc += spin(800, i)  # 1
        with objmode(t="float64"):  # 3
            t = spin_with_tables(2400, i)  # 3
        acc += t
        acc += spin(4800, i)  # 6
    return acc


# --- the cases -----------------------------------------------------------------------
TENTHS = {"1": 10.0, "3": 30.0, "6": 60.0}
QUARTERS = {"A": 25.0, "B": 75.0}


@dataclass(frozen=True)
class Case:
    """One profiled call and the true share (%) of each group of marked lines."""

    name: str
    profiled: Callable  # the function profiled
    entry: Callable  # the function called (the profiled one, or a jitted caller of it)
    args: tuple
    truth: dict[str, float] = field(default_factory=lambda: dict(TENTHS))
    #: Compare the groups' shares of the groups' samples (prange: the loop bodies; the
    #: calling thread's time launching and waiting is on the loops' own lines).
    among_groups: bool = False
    #: Sampling rate: 10 kHz gets the samples quickly; the objmode case is sampled at
    #: the profiler's default 4 kHz (at 10 kHz its block read 0.5-3 points heavier than
    #: it is, from run to run: the sampler's own cost per sample, which depends on
    #: where the thread is, shows through there; at 4 kHz, 0.1-0.3).
    rate_hz: float = 10_000.0
    #: Profiled in a fresh interpreter: the objmode block's share depends on the sampler's
    #: own cost, a stack walk's, which grows with every module the process has compiled (the
    #: unwinder searches them all): in a suite worker that had compiled hundreds, walks cost
    #: 33 us, the rate was lowered to 3.2 kHz, the walks took a tenth of the CPU, and the
    #: block (interpreted code, dearer to walk from) read 36% for its true 30%.
    fresh_process: bool = False
    #: Points a share may be off by, where not the corpus's own (``TOLERANCE``): see the case.
    tolerance: float | None = None

    def compare(self, shares: dict[str, float]) -> dict[str, tuple[float, float]]:
        """Marker -> (sampled share, true share), from the function's shares by marker."""
        got = {marker: shares.get(marker, 0.0) for marker in self.truth}
        if self.among_groups:
            total = sum(got.values())
            got = {m: 100.0 * v / total if total else 0.0 for m, v in got.items()}
        return {m: (got[m], want) for m, want in self.truth.items()}


def _par_args() -> tuple:
    rng = np.random.default_rng(0)
    return rng.random(2000), rng.random(6000)  # 1 : 3 elements, the same work each


CASES = [
    Case("pure-loop helper", calls_pure, calls_pure, (100,)),
    Case("helper calling libm", calls_libm, calls_libm, (100,)),
    # The truth holds only where the stack lies well: on an AMD Zen 2 (session 32) this call took
    # 7.3 ms at most Python stack depths and 11.2-12.7 ms at some (a stack slot and the heap
    # block each iteration reuses colliding in the caches' address bits, it seems), and about
    # one profile in three read the middle loop 32.5-34.8% and the last 55.7-57.6% (clock
    # probes, another run at another depth, read 29.7-30.5%): the sampler saw a real shift.
    # The machine-code view puts each loop's allocator calls on its own line, and 8 points
    # still tells a walk that stops in the allocator from one that reaches the calling line.
    Case("helper allocating (NRT)", calls_allocating, calls_allocating, (100,), tolerance=8.0),
    Case("helpers three deep", calls_three_deep, calls_three_deep, (100,)),
    Case("helper from another module", calls_other_module, calls_other_module, (100,)),
    Case("helper LLVM inlines", calls_inlined, calls_inlined, (100,)),
    Case("helper LLVM keeps apart", calls_not_inlined, calls_not_inlined, (100,)),
    Case("prange, small bodies", prange_small, prange_small, _par_args(), dict(QUARTERS), among_groups=True),
    Case("prange, large bodies", prange_large, prange_large, _par_args(), dict(QUARTERS), among_groups=True),
    Case("jitted caller of the profiled function", calls_pure, caller_of_profiled, (100,)),
    Case(
        "objmode block between two lines",
        with_objmode,
        with_objmode,
        (100,),  # 3 s in one call: a function with an objmode block is never replayed (it calls Python)
        rate_hz=4000.0,
        fresh_process=True,
    ),
]


def marked_lines(func: Callable) -> dict[str, set[int]]:
    """Marker -> line numbers of ``func``'s source lines whose comment starts with it.

    A marked line that is the body of an unmarked ``for`` header just above it takes
    the header with it (not a ``prange`` header, whose line the calling thread waits on):
    the loop's own control code costs in proportion to its
    iterations, and LLVM's line table gives it to the header or the body as it likes.
    """
    source, first = inspect.getsourcelines(func.py_func)
    out: dict[str, set[int]] = {}
    for offset, text in enumerate(source):
        if "  # " in text:
            marker = text.split("  # ", 1)[1].split()[0]
            out.setdefault(marker, set()).add(first + offset)
            above = source[offset - 1].strip() if offset else ""
            if above.startswith("for ") and "prange" not in above and "  # " not in source[offset - 1]:
                out[marker].add(first + offset - 1)
    return out
