"""What it costs a probe to find its counters through a symbol instead of a baked constant.

Run ``python benchmarks/relocatable_probes.py``. Twins used to carry their counter
array's address as a constant in the code, which made the code unfit for a disk
cache. Their probes now name an external symbol (``probes.CounterSlot``) whose
address the JIT's linker patches into the code when it loads it. The same kernels
are compiled three ways and timed side by side, in both probe modes (timing:
a clock read per line; hits: counts only):

* ``constant``: the old code, the address as an ``inttoptr`` constant;
* ``symbol``: what twins do now (an external global, resolved at load);
* ``loaded``: the other way to relocate, loading the address from a pointer cell
  at every probe (what a global set after loading would cost).

Times are the best of ``RUNS`` calls in each of ``ROUNDS`` interleaved rounds, as
a ratio to the uninstrumented function (the machine may be shared: interleaving
spreads its load over the variants). The last column says whether the
``constant`` and ``symbol`` variants compiled to the same instructions (the
multiset of mnemonics of the whole function: LLVM may schedule them in another
order), and how many. The disk cache is off here: the
variants share a cache key.
"""

from __future__ import annotations

import ctypes
import os
import time

os.environ["NUMBA_LPRUN_CACHE"] = "0"

import llvmlite.binding as ll
import numba
import numpy as np
from llvmlite import ir

from numba_lprun.instrument import probes as P
from numba_lprun.instrument.clock import current_clock
from numba_lprun.instrument.rewrite import instrument
from numba_lprun.instrument.source import read_source
from numba_lprun.instrument.twins import compile_like_original, make_twin, objmode_names

RUNS = 10
ROUNDS = 5
_I64 = ir.IntType(64)
_cells = []  # pointer cells of the "loaded" variant, alive as long as the code


def scalar_loop(a):
    s = 0.0
    for i in range(a.size):
        if a[i] > 0.5:
            s += a[i]
        else:
            s -= 1.0
    return s


def int_sum(a):
    s = 0
    for i in range(a.size):
        s += a[i] * a[i]
    return s


def _base_constant(self, builder):
    return builder.inttoptr(ir.Constant(_I64, self.slot.address), _I64.as_pointer())


def _base_loaded(self, builder):
    name = self.slot.name + "_cell"
    cell = builder.module.globals.get(name)
    if cell is None:
        holder = ctypes.c_void_p(self.slot.address)
        _cells.append(holder)
        ll.add_symbol(name, ctypes.addressof(holder))
        cell = ir.GlobalVariable(builder.module, _I64.as_pointer(), name=name)
        cell.linkage = "external"
    return builder.load(cell)


VARIANTS = {"constant": _base_constant, "symbol": P._Emitter.base, "loaded": _base_loaded}


def twin_of(original, timing: bool, variant: str):
    """A twin of ``original`` whose probes find their counters the ``variant`` way."""
    src = read_source(original)
    rewritten = instrument(src.tree, lines=True, objmode_names=objmode_names(src.py_func))
    counters = P.new_counters(len(rewritten.rows))
    cfg = P.ProbeConfig(counters.address, len(rewritten.rows), current_clock().kind, timing=timing)
    twin = make_twin(original, src, rewritten.tree, P.make_probes(cfg), "instrumented", line_tables=True)
    saved = P._Emitter.base
    P._Emitter.base = VARIANTS[variant]
    try:
        compile_like_original(twin, src)
    finally:
        P._Emitter.base = saved
    twin.counters = counters
    return twin.dispatcher


def opcodes(dispatcher) -> list[str]:
    """The instruction mnemonics of the compiled function (labels, directives and operands dropped)."""
    (asm,) = dispatcher.inspect_asm().values()
    out = []
    for line in asm.splitlines():
        words = line.split()
        if words and line.startswith("\t") and not words[0].startswith("."):
            out.append(words[0])
    return out


def best_seconds(func, *args) -> float:
    best = float("inf")
    for _ in range(RUNS):
        t0 = time.perf_counter()
        func(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    inputs = {scalar_loop: rng.random(2_000_000), int_sum: rng.integers(0, 100, 4_000_000)}
    header = f"{'kernel':<13}{'mode':<8}{'plain ms':>10}" + "".join(f"{v:>11}" for v in VARIANTS)
    print(header + "  same instructions")
    for py_func, a in inputs.items():
        original = numba.njit(py_func)
        original(a)
        for timing in (True, False):
            twins = {variant: twin_of(original, timing, variant) for variant in VARIANTS}
            assert all(twin(a) == original(a) for twin in twins.values())
            best = dict.fromkeys(["plain", *VARIANTS], float("inf"))
            for _ in range(ROUNDS):
                best["plain"] = min(best["plain"], best_seconds(original, a))
                for variant, twin in twins.items():
                    best[variant] = min(best[variant], best_seconds(twin, a))
            mode = "timing" if timing else "hits"
            cells = "".join(f"{best[v] / best['plain']:>10.2f}x" for v in VARIANTS)
            ops = {v: sorted(opcodes(twins[v])) for v in ("constant", "symbol")}
            verdict = "yes" if ops["constant"] == ops["symbol"] else "no"
            same = f"{verdict} ({len(ops['constant'])}, {len(ops['symbol'])})"
            print(f"{py_func.__name__:<13}{mode:<8}{best['plain'] * 1e3:>10.2f}{cells}  {same}")


if __name__ == "__main__":
    main()
