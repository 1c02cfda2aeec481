"""Charge raw samples to source lines of profiled functions.

Why walk the stack: most time in numeric code is spent in callees that have no
line of the profiled function (libm's ``sin``, Numba's runtime allocating an array,
a jitted helper that is not profiled). Each sample is charged, for every profiled
function, to the innermost frame inside that function: a line's count includes the
time of what it calls, as in line_profiler. Caller frames hold return addresses, so
they are looked up one byte earlier (inside the call instruction).

Why a recovered caller: the walk stops at code without unwind tables, which LLVM
leaves out for functions it proves ``nounwind`` (a jitted helper that is a leaf
loop, or only calls libm). For a sample whose walk was cut short there, the sampler
recovers that code's return address from the stack (``RawSamples.recovered``); it
counts when no frame of the walk is inside the function. Only the immediate caller
is recovered: a profiled function further up (``f`` calling profiled ``g`` calling
such a helper) does not get those samples.

Why two measures: ``lines`` counts samples (wall-clock ticks of each thread);
``seconds`` weighs each sample by the CPU time its thread used since its previous
sample. On a loaded machine, or with threads waiting, the second follows the work
where the first follows the clock; idle threads weigh nothing in it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from .dwarf import LineMap
from .sampler import RawSamples


@dataclass
class SampledLines:
    """Samples per source line of each profiled function.

    ``lines[key]`` maps a line number to the samples charged to it, ``seconds[key]``
    to the CPU seconds they stand for; ``threads[key]`` maps a thread id to that
    function's samples on it. ``outside`` counts samples in none of the profiled
    functions (other code, idle threads), ``total`` all samples; ``*_seconds`` the
    same in CPU seconds. A sample inside a profiled function called from another
    one counts for both. ``addresses[key]`` counts the same samples by the address
    they were charged at (a caller frame's return address less one, so inside its
    call instruction): what the per-instruction view is built from.
    """

    lines: dict[Hashable, dict[int, int]] = field(default_factory=dict)
    seconds: dict[Hashable, dict[int, float]] = field(default_factory=dict)
    threads: dict[Hashable, dict[int, int]] = field(default_factory=dict)
    addresses: dict[Hashable, dict[int, int]] = field(default_factory=dict)
    outside: int = 0
    total: int = 0
    outside_seconds: float = 0.0
    total_seconds: float = 0.0

    def in_function(self, key: Hashable) -> int:
        """Samples charged to any line of ``key``."""
        return sum(self.lines.get(key, {}).values())

    def seconds_in_function(self, key: Hashable) -> float:
        """CPU seconds charged to any line of ``key``."""
        return sum(self.seconds.get(key, {}).values())


def attribute(raw: RawSamples, maps: dict[Hashable, LineMap]) -> SampledLines:
    """Count ``raw``'s samples per line of each function in ``maps`` (key -> line map)."""
    result = SampledLines(total=raw.count)
    n = raw.count
    if n == 0:
        result.lines = {key: {} for key in maps}
        result.seconds = {key: {} for key in maps}
        result.threads = {key: {} for key in maps}
        result.addresses = {key: {} for key in maps}
        return result
    weights = raw.weights()
    lookup = raw.addresses.astype(np.uint64, copy=True)
    callers = lookup[:, 1:]
    callers[callers != 0] -= np.uint64(1)
    anywhere = np.zeros(n, bool)
    tids = np.asarray(raw.tids + [-1], np.int64)
    recovered = raw.recovered if raw.recovered.shape == (n,) else np.zeros(n, np.uint64)
    scan = np.flatnonzero(recovered)
    returns = recovered[scan] - np.uint64(1)  # inside the call instruction
    for key, lmap in maps.items():
        line, address = _innermost(lmap.lookup(lookup), lookup)
        unplaced = line[scan] < 0
        line[scan[unplaced]] = lmap.lookup(returns[unplaced])
        address[scan[unplaced]] = returns[unplaced]
        inside = line >= 0
        line = line[inside]
        a_values, a_counts = np.unique(address[inside], return_counts=True)
        result.addresses[key] = {int(v): int(c) for v, c in zip(a_values, a_counts, strict=True)}
        anywhere |= inside
        values, where, counts = np.unique(line, return_inverse=True, return_counts=True)
        result.lines[key] = {int(v): int(c) for v, c in zip(values, counts, strict=True)}
        sums = np.bincount(where.ravel(), weights=weights[inside], minlength=len(values))
        result.seconds[key] = {int(v): float(w) for v, w in zip(values, sums, strict=True)}
        thread_index = np.minimum(raw.threads[inside], len(raw.tids))
        t_values, t_counts = np.unique(tids[thread_index], return_counts=True)
        result.threads[key] = {int(v): int(c) for v, c in zip(t_values, t_counts, strict=True)}
    result.outside = int(n - anywhere.sum())
    result.total_seconds = float(weights.sum())
    result.outside_seconds = float(weights[~anywhere].sum())
    return result


def _innermost(found: np.ndarray, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the first line that is not -1 (innermost frame), or -1; and its address (or 0)."""
    if found.shape[1] == 0:
        return np.full(found.shape[0], -1, np.int32), np.zeros(found.shape[0], np.uint64)
    hit = found >= 0
    rows, first = np.arange(found.shape[0]), hit.argmax(axis=1)
    anywhere = hit.any(axis=1)
    line = np.where(anywhere, found[rows, first], -1)
    return line, np.where(anywhere, addresses[rows, first], np.uint64(0)).astype(np.uint64)
