"""Facts about a line read from its machine code, as short sentences.

Only what the code shows for certain is said:

* allocation: the line's allocations were counted in a run of the plain twin
  (``allocations.count_allocations``); when they equal its executions, the line
  allocates on each of them;
* SIMD: the line's instructions include packed arithmetic (several lanes at once),
  or, for a loop line, include none;
* calls: what the line's code still calls (libm, Numba's runtime, other jitted
  functions, helpers), by name;
* reference counting: calls of ``NRT_incref``/``NRT_decref`` on a line that runs
  more often than the function is called (inside a loop);
* where a line's samples went: the share inside one callee (the samples of a
  ``call`` instruction are the time spent in what it calls);
* a line that ran but owns no instruction: its work was merged into other lines or
  optimized away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .values import Hint, LineCode

ALLOCATORS = ("NRT_MemInfo_alloc", "NRT_MemInfo_new", "NRT_Allocate", "NRT_MemInfo_varsize_alloc")
REFCOUNT = ("NRT_incref", "NRT_decref")
HOT_SHARE = 5.0  # % of samples (or of time, without samples) from which a line counts as hot


@dataclass(frozen=True)
class CodeFacts:
    """What the hints are read from: one function's code by line and its counts."""

    code: dict[int, LineCode]
    hits: dict[int, int]
    calls: int  # completed calls: a line that ran more often is inside a loop
    allocations_unavailable: str | None = None


def hot_lines(shares: dict[int, float], limit: int | None = None) -> list[int]:
    """Lines by share (% of the function's time), hottest first, at or above HOT_SHARE.

    One ranking serves the hints and the instruction listings, so both always
    name the same lines."""
    lines = sorted((line for line, s in shares.items() if s >= HOT_SHARE), key=lambda n: (-shares[n], n))
    return lines[:limit] if limit is not None else lines


def line_hints(facts: CodeFacts, line: int) -> list[Hint]:
    """The facts about ``line``'s code, most telling first."""
    code = facts.code.get(line)
    hits = facts.hits.get(line, 0)
    if code is None or not code.instructions:
        if hits:
            return [Hint(line, "no-code", f"line {line} has no machine code of its own (merged or removed)")]
        return []
    out: list[Hint] = []
    calls = code.calls
    allocators = [c for c in calls if c.startswith(ALLOCATORS)]
    if code.allocations is not None and code.allocations > 0:
        runs = code.executions or 0
        if runs and code.allocations == runs:
            said = f"line {line} allocates on each of its {runs:,} executions"
        elif runs and code.allocations % runs == 0:
            said = (
                f"line {line} allocates {code.allocations // runs} times on each of its {runs:,} executions"
            )
        else:
            said = f"line {line} allocated {code.allocations:,} times in {runs:,} executions"
        via = f" ({', '.join(allocators)})" if allocators else " (in what it calls)"
        out.append(Hint(line, "alloc", said + via + ": a new array or buffer each time"))
    elif allocators:
        why = f" (not counted: {facts.allocations_unavailable})" if facts.allocations_unavailable else ""
        out.append(Hint(line, "alloc", f"line {line} calls Numba's allocator ({', '.join(allocators)}){why}"))
    packed = code.packed
    loop_line = hits > max(facts.calls, 1)
    scalar = list(dict.fromkeys(i.text.split()[0] for i in code.instructions if _is_float_arith(i.text)))
    if packed:
        said = f"line {line} runs packed SIMD arithmetic ({', '.join(packed[:4])})"
        if scalar:
            said += f" and scalar floating-point arithmetic ({', '.join(scalar[:4])})"
        out.append(Hint(line, "simd", said))
    elif loop_line and scalar:
        out.append(Hint(line, "simd", f"line {line} runs in a loop with scalar arithmetic only (no SIMD)"))
    refcounts = [c for c in calls if c in REFCOUNT]
    if refcounts:
        out.append(Hint(line, "refcount", f"line {line} updates reference counts ({', '.join(refcounts)})"))
    calls_hot = [i for i in code.instructions if i.target and i.samples]
    if calls_hot and code.samples >= 20:
        top = max(calls_hot, key=lambda i: i.samples)
        if top.samples >= 0.2 * code.samples:
            said = f"line {line} spends {top.samples} of its {code.samples} samples inside {top.target}"
            out.append(Hint(line, "hot-call", said))
    origins = code.call_origins
    others = [c for c in calls if not c.startswith(ALLOCATORS) and c not in REFCOUNT]
    if others:
        said = ", ".join(f"{name} ({origins[name]})" for name in others[:4])
        more = f" and {len(others) - 4} more" if len(others) > 4 else ""
        out.append(Hint(line, "call", f"line {line} calls {said}{more}: calls that were not inlined"))
    return out


_SCALAR = re.compile(r"^v?(?:(?:add|sub|mul|div|min|max|sqrt)s[sd]|f(?:n?m(?:add|sub))\d{3}s[sd])$")


def _is_float_arith(text: str) -> bool:
    """Scalar floating-point arithmetic (``vmulsd``, ``addss``, ``vfmadd213sd``)."""
    return bool(_SCALAR.match(text.split()[0])) if text else False


def function_hints(facts: CodeFacts, hot: list[int]) -> list[Hint]:
    """Hints for the ``hot`` lines (see :func:`hot_lines`), hottest first."""
    out: list[Hint] = []
    for line in hot:
        out += line_hints(facts, line)
    return out
