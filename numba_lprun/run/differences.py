"""How far the plain run's results were from the user's run's.

Each twin computes what the user's code computes, but ``fastmath`` lets LLVM
reorder floating-point sums, and the counters change how it does so (a
``prange`` reduction's chunks are vectorized differently): the user's run can
then return a result that differs from an unprofiled run's in the last bits. The
plain twin is the unprofiled code, so where a plain run was made its results
(the call's return value and the state it left) are compared with the user's
run's, and any difference is said before the table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .measurements import Differed


def relative_difference(a: Any, b: Any) -> float | None:
    """The largest relative difference between the floating-point numbers of two results of
    the same shape (floats, complex numbers, float arrays, and tuples, lists and dicts of
    them); 0.0 where they are equal, None where they are not numbers alike."""
    if isinstance(a, (float, complex, np.floating, np.complexfloating)) and type(a) is type(b):
        if a == b or (a != a and b != b):  # NaN against NaN: the same result
            return 0.0
        scale = max(abs(a), abs(b))
        return float(abs(a - b) / scale) if scale and math.isfinite(scale) else None
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype or a.dtype.kind not in "fc":
            return None
        equal = (a == b) | (np.isnan(a) & np.isnan(b))
        if equal.all():
            return 0.0
        with np.errstate(all="ignore"):
            scale = np.maximum(np.abs(a), np.abs(b))
            found = np.abs(a - b)[~equal] / scale[~equal]
        return float(np.nanmax(found)) if np.isfinite(found).any() else None
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        parts = [relative_difference(x, y) for x, y in zip(a, b, strict=True)]
    elif isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        parts = [relative_difference(a[k], b[k]) for k in a]
    else:
        return None
    found = [p for p in parts if p is not None]
    return max(found) if found else None


def differences(pairs: list[tuple[str, Any, Any]]) -> dict[str, float]:
    """Name -> relative difference, for each (name, user's, plain run's) pair that differs."""
    out = {}
    for name, mine, plain in pairs:
        found = relative_difference(mine, plain)
        if found:
            out[name] = found
    return out


def compared_with_users(
    result: Any, plain_result: Any, kept: list[tuple[Any, Any]], fastmath: tuple[str, ...]
) -> Differed | None:
    """What differed between the user's run (its ``result`` and the state ``kept`` as it left
    it: (snapshot item, value) pairs) and the plain run that just ended (``plain_result`` and
    the same items read now); None where nothing did and no function is ``fastmath`` (for
    those, equal results are news too)."""
    pairs = [("the result", result, plain_result)]
    for item, mine in kept:
        now = item.read()
        if isinstance(mine, dict) and isinstance(now, dict) and item.kind == "bindings":
            pairs += [(name, mine[name], now.get(name)) for name in mine]
        else:
            pairs.append((item.name, mine, now))
    found = differences(pairs)
    return Differed(found, fastmath) if found or fastmath else None
